// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues (`struct ib_srq`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{driver::Driver, pd::Pd};
use crate::{
    bindings,
    init::PinInit,
    new_spinlock, pin_init,
    prelude::*,
    sync::{Arc, SpinLock},
};
use core::ptr::NonNull;

/// The attributes of an SRQ (`struct ib_srq_attr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqAttr {
    /// Work requests the SRQ holds.
    pub max_wr: u32,
    /// Scatter/gather entries per work request.
    pub max_sge: u32,
    /// When fewer work requests remain, the SRQ limit event fires (0: disarmed).
    pub srq_limit: u32,
}

impl SrqAttr {
    pub(crate) fn from_raw(a: &bindings::ib_srq_attr) -> Self {
        Self {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            srq_limit: a.srq_limit,
        }
    }

    pub(crate) fn write_raw(&self, a: &mut bindings::ib_srq_attr) {
        a.max_wr = self.max_wr;
        a.max_sge = self.max_sge;
        a.srq_limit = self.srq_limit;
    }
}

/// Which attributes a modify concerns (`enum ib_srq_attr_mask`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqAttrMask(pub u32);

impl SrqAttrMask {
    /// Resize the SRQ (`IB_SRQ_MAX_WR`).
    pub const MAX_WR: u32 = bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR;
    /// Arm the limit event (`IB_SRQ_LIMIT`).
    pub const LIMIT: u32 = bindings::ib_srq_attr_mask_IB_SRQ_LIMIT;

    /// Returns whether every bit of `bits` is set.
    pub fn has(self, bits: u32) -> bool {
        self.0 & bits == bits
    }
}

/// The kind of an SRQ (`enum ib_srq_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrqType {
    /// A basic SRQ.
    Basic,
    /// Any other kind (XRC, tag matching), with its raw value.
    Other(u32),
}

impl SrqType {
    pub(crate) fn from_raw(raw: u32) -> Self {
        if raw == bindings::ib_srq_type_IB_SRQT_BASIC {
            Self::Basic
        } else {
            Self::Other(raw)
        }
    }
}

super::object::driver_object!(
    /// A shared receive queue of driver `T`: ib_core's `struct ib_srq` followed by the
    /// driver's data.
    Srq,
    ib_srq,
    Srq,
    events: Option<Arc<SrqEvents>>
);

/// An SRQ's C part, while it exists.
struct RawSrq(NonNull<bindings::ib_srq>);

// SAFETY: Only used under the lock of `SrqEvents`, whose revocation the destroy trampoline
// waits for; ib_core's handlers may run on any thread.
unsafe impl Send for RawSrq {}

/// The asynchronous events of an SRQ, for the data path to raise; inert once the SRQ is
/// destroyed.
///
/// # Invariants
///
/// `srq` is `Some` only while the SRQ it points to is alive: the destroy trampoline clears it
/// (under the lock) before ib_core frees the SRQ.
#[pin_data]
pub struct SrqEvents {
    #[pin]
    srq: SpinLock<Option<RawSrq>>,
}

impl SrqEvents {
    pub(crate) fn new(srq: NonNull<bindings::ib_srq>) -> impl PinInit<Self> {
        // INVARIANT: The SRQ is alive: its create trampoline makes the handle.
        pin_init!(Self {
            srq <- new_spinlock!(Some(RawSrq(srq)), "SrqEvents::srq"),
        })
    }

    /// Reports that fewer receive WQEs than the armed limit remain
    /// (`IB_EVENT_SRQ_LIMIT_REACHED`).
    pub fn limit_reached(&self) {
        let guard = self.srq.lock();
        if let Some(RawSrq(srq)) = &*guard {
            let srq = srq.as_ptr();
            // SAFETY: `ib_event` holds pointers, a union and an enum, for which zero is valid.
            let mut ev: bindings::ib_event = unsafe { core::mem::zeroed() };
            ev.event = bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED;
            ev.element.srq = srq;
            // SAFETY: The SRQ is alive while the handle is not revoked (type invariant) and
            // the lock is held; ib_core sets the handler, its context and the device.
            unsafe {
                ev.device = (*srq).device;
                if let Some(handler) = (*srq).event_handler {
                    handler(&mut ev, (*srq).srq_context);
                }
            }
        }
    }

    /// Makes the handle inert.
    pub(crate) fn revoke(&self) {
        // INVARIANT: Cleared before the SRQ is freed.
        *self.srq.lock() = None;
    }
}

impl<T: Driver> Srq<T> {
    /// Returns whether the SRQ belongs to a user process (rather than a kernel ULP).
    pub fn is_user(&self) -> bool {
        // SAFETY: `uobject` is set by ib_core at creation and never changes.
        !unsafe { (*self.raw()).uobject }.is_null()
    }

    /// Returns the PD of the SRQ.
    pub fn pd(&self) -> &Pd<T> {
        // SAFETY: ib_core sets `pd` at creation; it outlives the SRQ and is a `Pd<T>`.
        unsafe { Pd::from_raw((*self.raw()).pd) }
    }
}

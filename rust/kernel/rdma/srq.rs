// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues (`struct ib_srq`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{
    driver::{Adapter, Driver},
    pd::Pd,
    ucontext::User,
    udata::UData,
};
use crate::{
    bindings,
    error::from_result,
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

super::typed::flag_set! {
    /// Which attributes a modify concerns (`enum ib_srq_attr_mask`).
    pub struct SrqAttrMask(u32) {
        /// Resize the SRQ (`IB_SRQ_MAX_WR`).
        const MAX_WR = bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR;
        /// Arm the limit event (`IB_SRQ_LIMIT`).
        const LIMIT = bindings::ib_srq_attr_mask_IB_SRQ_LIMIT;
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

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// ib_core passes a zeroed SRQ of `size_ib_srq` bytes whose `device` and `pd` are set,
    /// valid attributes, and `udata` null or valid.
    pub(crate) unsafe extern "C" fn create_srq(
        ibsrq: *mut bindings::ib_srq,
        init: *mut bindings::ib_srq_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core sets `pd` before calling the driver.
            let pd = unsafe { Pd::<T>::from_raw((*ibsrq).pd) };
            // SAFETY: `init` is valid for the call.
            let (srq_type, attr) = unsafe {
                (
                    SrqType::from_raw((*init).srq_type),
                    SrqAttr::from_raw(&(*init).attr),
                )
            };
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            // SAFETY: ib_core passes a valid SRQ.
            let events = Arc::pin_init(
                SrqEvents::new(unsafe { NonNull::new_unchecked(ibsrq) }),
                GFP_KERNEL,
            )?;
            let (data, real) = match T::create_srq(pd, srq_type, &attr, events.clone(), user) {
                Ok(created) => created,
                Err(e) => {
                    // ib_core frees the SRQ without `destroy_srq`.
                    events.revoke();
                    return Err(e);
                }
            };
            // SAFETY: ib_core just allocated the SRQ (`destroy_srq` drops the data and the
            // events); the real attributes are reported back through `init`.
            unsafe {
                Srq::<T>::extra_slot(ibsrq).write(Some(events));
                Srq::<T>::init_data(ibsrq, data);
                real.write_raw(&mut (*init).attr);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core calls this once for an SRQ that `create_srq` initialised.
    pub(crate) unsafe extern "C" fn destroy_srq(
        ibsrq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: `create_srq` set the events of the SRQ; nothing else touches the slot.
        if let Some(events) = unsafe { (*Srq::<T>::extra_slot(ibsrq)).take() } {
            events.revoke();
        }
        // SAFETY: ib_core destroys an object whose create operation initialised the data.
        unsafe { Srq::<T>::drop_data(ibsrq) };
        0
    }

    /// # Safety
    ///
    /// ib_core passes a live SRQ of `T` and valid attributes.
    pub(crate) unsafe extern "C" fn modify_srq(
        ibsrq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
        mask: bindings::ib_srq_attr_mask,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live SRQ of `T`.
            let srq = unsafe { Srq::<T>::from_raw(ibsrq) };
            // SAFETY: `attr` is valid for the call.
            let attr = SrqAttr::from_raw(unsafe { &*attr });
            // SAFETY: `udata` is null or valid for the call.
            let udata = unsafe { UData::from_raw(udata) };
            T::modify_srq(srq, &attr, SrqAttrMask::from_bits_retain(mask), udata)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a live SRQ of `T` and a valid output.
    pub(crate) unsafe extern "C" fn query_srq(
        ibsrq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live SRQ of `T`.
            let srq = unsafe { Srq::<T>::from_raw(ibsrq) };
            let value = T::query_srq(srq)?;
            // SAFETY: `attr` is valid for writes.
            value.write_raw(unsafe { &mut *attr });
            Ok(0)
        })
    }
}

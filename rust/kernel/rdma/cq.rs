// SPDX-License-Identifier: GPL-2.0

//! Completion queues (`struct ib_cq`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{device::Device, driver::Driver};
use crate::{bindings, types::Opaque};
use core::ops::Deref;

/// The attributes a CQ is created with (`struct ib_cq_init_attr`).
#[derive(Clone, Copy, Debug)]
pub struct CqInitAttr {
    /// Minimum number of entries.
    pub cqe: u32,
    /// Completion vector for events.
    pub comp_vector: u32,
    /// `IB_UVERBS_CQ_FLAGS_*`.
    pub flags: u32,
}

/// A completion queue of driver `T`: ib_core's `struct ib_cq` followed by the driver's data.
///
/// # Invariants
///
/// A `&Cq<T>` is only handed out while the CQ is alive with `data` initialised, and its
/// `device` is a `Device<T>`.
#[repr(C)]
pub struct Cq<T: Driver> {
    ib: Opaque<bindings::ib_cq>,
    pub(crate) data: T::Cq,
}

// SAFETY: `T::Cq` is `Send + Sync`; the C part is managed by ib_core.
unsafe impl<T: Driver> Send for Cq<T> {}
// SAFETY: See `Send`.
unsafe impl<T: Driver> Sync for Cq<T> {}

impl<T: Driver> Cq<T> {
    /// # Safety
    ///
    /// `ptr` must be a live, initialised CQ of `T` for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_cq) -> &'a Self {
        // SAFETY: The CQ is the first field of a `repr(C)` `Cq<T>` (caller guarantee).
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Returns the device of the CQ.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: ib_core sets `device` before calling the driver; it is a `Device<T>`.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }

    /// Returns the number of entries the CQ was created with.
    pub fn cqe(&self) -> u32 {
        // SAFETY: `cqe` is written once at creation, before the CQ is shared.
        unsafe { (*self.ib.get()).cqe as u32 }
    }
}

impl<T: Driver> Deref for Cq<T> {
    type Target = T::Cq;

    fn deref(&self) -> &T::Cq {
        &self.data
    }
}

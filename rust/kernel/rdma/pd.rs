// SPDX-License-Identifier: GPL-2.0

//! Protection domains (`struct ib_pd`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{device::Device, driver::Driver};
use crate::{bindings, types::Opaque};
use core::ops::Deref;

/// A protection domain of driver `T`: ib_core's `struct ib_pd` followed by the driver's data.
///
/// # Invariants
///
/// A `&Pd<T>` is only handed out while the PD is alive with `data` initialised, and its
/// `device` is a `Device<T>`.
#[repr(C)]
pub struct Pd<T: Driver> {
    ib: Opaque<bindings::ib_pd>,
    pub(crate) data: T::Pd,
}

// SAFETY: `T::Pd` is `Send + Sync`; the C part is managed by ib_core.
unsafe impl<T: Driver> Send for Pd<T> {}
// SAFETY: See `Send`.
unsafe impl<T: Driver> Sync for Pd<T> {}

impl<T: Driver> Pd<T> {
    /// # Safety
    ///
    /// `ptr` must be a live, initialised PD of `T` for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_pd) -> &'a Self {
        // SAFETY: The PD is the first field of a `repr(C)` `Pd<T>` (caller guarantee).
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Returns the device of the PD.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: ib_core sets `device` before calling the driver; it is a `Device<T>`.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }

    /// Returns whether the PD belongs to a user process (rather than a kernel ULP).
    pub fn is_user(&self) -> bool {
        // SAFETY: `uobject` is set by ib_core before the PD is used and never changes.
        !unsafe { (*self.ib.get()).uobject }.is_null()
    }
}

impl<T: Driver> Deref for Pd<T> {
    type Target = T::Pd;

    fn deref(&self) -> &T::Pd {
        &self.data
    }
}

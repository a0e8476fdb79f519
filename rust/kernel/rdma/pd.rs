// SPDX-License-Identifier: GPL-2.0

//! Protection domains (`struct ib_pd`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{
    device::Device,
    driver::{Adapter, Driver},
    ucontext::User,
};
use crate::error::from_result;

super::object::driver_object!(
    /// A protection domain of driver `T`: ib_core's `struct ib_pd` followed by the driver's
    /// data.
    Pd,
    ib_pd,
    Pd
);

impl<T: Driver> Pd<T> {
    /// Returns whether the PD belongs to a user process (rather than a kernel ULP).
    pub fn is_user(&self) -> bool {
        // SAFETY: `uobject` is set by ib_core before the PD is used and never changes.
        !unsafe { (*self.raw()).uobject }.is_null()
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// ib_core passes a zeroed PD of `size_ib_pd` bytes on a device of `T`, and `udata` null
    /// (kernel caller) or valid.
    pub(crate) unsafe extern "C" fn alloc_pd(
        ibpd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core sets `device` before calling the driver.
            let dev = unsafe { Device::<T>::from_raw((*ibpd).device) };
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            let data = T::alloc_pd(dev, user)?;
            // SAFETY: ib_core just allocated the object; its destroy operation drops the data.
            unsafe { Pd::<T>::init_data(ibpd, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core calls this once for a PD that `alloc_pd` initialised.
    pub(crate) unsafe extern "C" fn dealloc_pd(
        ibpd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: ib_core destroys an object whose create operation initialised the data.
        unsafe { Pd::<T>::drop_data(ibpd) };
        0
    }
}

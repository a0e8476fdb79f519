// SPDX-License-Identifier: GPL-2.0

//! Address handles (`struct ib_ah`): where a UD work request goes.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{
    driver::{Adapter, Driver},
    pd::Pd,
    qp::AhAttr,
    ucontext::User,
};
use crate::error::{code::EINVAL, from_result};

/// Flags of address handle creation and destruction (`RDMA_*_AH_SLEEPABLE`).
pub mod flags {
    /// The caller may sleep.
    pub const SLEEPABLE: u32 = crate::bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE;
}

super::object::driver_object!(
    /// An address handle of driver `T`: ib_core's `struct ib_ah` followed by the driver's data.
    Ah,
    ib_ah,
    Ah
);

impl<T: Driver> Ah<T> {
    /// Returns the PD of the AH.
    pub fn pd(&self) -> &Pd<T> {
        // SAFETY: ib_core sets `pd` before calling the driver; it outlives the AH.
        unsafe { Pd::from_raw((*self.raw()).pd) }
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// ib_core passes a zeroed AH of `size_ib_ah` bytes whose `device` and `pd` are set, valid
    /// attributes, and `udata` null or valid.
    pub(crate) unsafe extern "C" fn create_ah(
        ibah: *mut bindings::ib_ah,
        init: *mut bindings::rdma_ah_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core sets `pd` before calling the driver.
            let pd = unsafe { Pd::<T>::from_raw((*ibah).pd) };
            // SAFETY: `init` and its `ah_attr` are valid for the call.
            let attr = AhAttr::from_raw(unsafe { &*(*init).ah_attr }).ok_or(EINVAL)?;
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            let data = T::create_ah(pd, &attr, user)?;
            // SAFETY: ib_core just allocated the object; its destroy operation drops the data.
            unsafe { Ah::<T>::init_data(ibah, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core calls this once for an AH that `create_ah` initialised.
    pub(crate) unsafe extern "C" fn destroy_ah(
        ibah: *mut bindings::ib_ah,
        _flags: u32,
    ) -> crate::ffi::c_int {
        // SAFETY: ib_core destroys an object whose create operation initialised the data.
        unsafe { Ah::<T>::drop_data(ibah) };
        0
    }
}

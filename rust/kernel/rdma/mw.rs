// SPDX-License-Identifier: GPL-2.0

//! Memory windows (`struct ib_mw`): remote access to part of a memory region, granted and
//! revoked by work requests.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{
    driver::{Adapter, Driver},
    pd::Pd,
    ucontext::User,
};
use crate::{
    bindings,
    error::{code::EINVAL, from_result},
};

/// The type of a memory window (`enum ib_mw_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum MwType {
    /// Bound by `ibv_bind_mw` to the PD; cannot be invalidated.
    Type1 = bindings::ib_mw_type_IB_MW_TYPE_1,
    /// Bound by a work request to the posting QP; invalidated by work requests.
    Type2 = bindings::ib_mw_type_IB_MW_TYPE_2,
}

impl MwType {
    pub(crate) fn from_raw(raw: u32) -> Option<Self> {
        match raw {
            bindings::ib_mw_type_IB_MW_TYPE_1 => Some(Self::Type1),
            bindings::ib_mw_type_IB_MW_TYPE_2 => Some(Self::Type2),
            _ => None,
        }
    }
}

super::object::driver_object!(
    /// A memory window of driver `T`: ib_core's `struct ib_mw` followed by the driver's data.
    Mw,
    ib_mw,
    Mw
);

impl<T: Driver> Mw<T> {
    /// Returns the PD of the window.
    pub fn pd(&self) -> &Pd<T> {
        // SAFETY: ib_core sets `pd` before calling the driver; it outlives the window.
        unsafe { Pd::from_raw((*self.raw()).pd) }
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// ib_core passes a zeroed window of `size_ib_mw` bytes whose `device`, `pd` and `type` are
    /// set, and `udata` null or valid.
    pub(crate) unsafe extern "C" fn alloc_mw(
        ibmw: *mut bindings::ib_mw,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core sets `pd` and `type` before calling the driver.
            let (pd, mw_type) = unsafe { (Pd::<T>::from_raw((*ibmw).pd), (*ibmw).type_) };
            let mw_type = MwType::from_raw(mw_type).ok_or(EINVAL)?;
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            let (data, rkey) = T::alloc_mw(pd, mw_type, user)?;
            // SAFETY: ib_core just allocated the object; `dealloc_mw` drops the data. The rkey
            // is the driver's to set before ib_core reports it.
            unsafe {
                Mw::<T>::init_data(ibmw, data);
                (*ibmw).rkey = rkey;
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core calls this once for a window that `alloc_mw` initialised.
    pub(crate) unsafe extern "C" fn dealloc_mw(ibmw: *mut bindings::ib_mw) -> crate::ffi::c_int {
        // SAFETY: ib_core destroys an object whose create operation initialised the data.
        unsafe { Mw::<T>::drop_data(ibmw) };
        0
    }
}

// SPDX-License-Identifier: GPL-2.0

//! User contexts: one per process that opened the device (`struct ib_ucontext`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{
    device::Device,
    driver::{Adapter, Driver, UcontextInit},
    mmap::{MmapEntry, SharedPages},
    udata::UData,
};
use crate::{bindings, error::from_result, prelude::*, sync::Arc};
use core::marker::PhantomData;

super::object::driver_object!(
    /// A user context of driver `T`: ib_core's `struct ib_ucontext` followed by the driver's
    /// data. ib_core allocates it when a process opens the device and frees it after every
    /// object of the process is destroyed.
    Ucontext,
    ib_ucontext,
    Ucontext
);

impl<T: Driver> Ucontext<T> {
    /// Publishes `pages` to this process: it can `mmap` them at the returned entry's offset.
    pub fn insert_mmap(&self, pages: Arc<SharedPages>) -> Result<MmapEntry> {
        // SAFETY: The context is valid; `Adapter<T>` maps entries with `remap_vmalloc_range` and
        // frees them with `EntryInner::free`.
        unsafe { MmapEntry::insert(self.raw(), pages) }
    }
}

/// The caller of a verb from userspace: its user context and the command's driver data.
/// Kernel callers (kernel ULPs) have none.
pub struct User<'a, T: Driver> {
    /// The context of the calling process.
    pub ucontext: &'a Ucontext<T>,
    /// The driver-specific request and response of the command.
    pub udata: UData<'a>,
}

impl<'a, T: Driver> User<'a, T> {
    /// # Safety
    ///
    /// `udata` must be null or the `driver_udata` of a uverbs command on a device of `T`,
    /// valid for `'a`.
    pub(crate) unsafe fn from_udata(udata: *mut bindings::ib_udata) -> Option<Self> {
        // SAFETY: Valid or null for `'a` (caller guarantee).
        let udata = unsafe { UData::from_raw(udata) }?;
        // SAFETY: A command's `driver_udata` lives inside its `uverbs_attr_bundle`, whose
        // context is the calling process's context on this device, hence a `Ucontext<T>`.
        let ucontext = unsafe { bindings::rdma_udata_to_ucontext(udata.as_raw()) };
        if ucontext.is_null() {
            return None;
        }
        Some(Self {
            // SAFETY: See above; the context outlives the command.
            ucontext: unsafe { Ucontext::from_raw(ucontext) },
            udata,
        })
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// ib_core passes a zeroed context of `size_ib_ucontext` bytes on a device of `T`, and a
    /// valid `udata`.
    pub(crate) unsafe extern "C" fn alloc_ucontext(
        ibuctx: *mut bindings::ib_ucontext,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core sets `device` to the device the context is opened on, a `T` one.
            let dev = unsafe { Device::<T>::from_raw((*ibuctx).device) };
            // SAFETY: `udata` is the command's valid driver data.
            let mut udata = unsafe { UData::from_raw(udata) }.ok_or(EINVAL)?;
            let init = UcontextInit {
                raw: ibuctx,
                _p: PhantomData,
            };
            let data = T::alloc_ucontext(dev, init, &mut udata)?;
            // SAFETY: ib_core just allocated the object; its destroy operation drops the data.
            unsafe { Ucontext::<T>::init_data(ibuctx, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core calls this once for a context that `alloc_ucontext` initialised.
    pub(crate) unsafe extern "C" fn dealloc_ucontext(ibuctx: *mut bindings::ib_ucontext) {
        // SAFETY: ib_core destroys an object whose create operation initialised the data.
        unsafe { Ucontext::<T>::drop_data(ibuctx) };
    }
}

// SPDX-License-Identifier: GPL-2.0

//! User contexts: one per process that opened the device (`struct ib_ucontext`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{
    device::Device,
    driver::Driver,
    mmap::{MmapEntry, SharedPages},
    udata::UData,
};
use crate::{bindings, prelude::*, sync::Arc, types::Opaque};
use core::ops::Deref;

/// A user context of driver `T`: ib_core's `struct ib_ucontext` followed by the driver's data.
///
/// ib_core allocates it (`size_ib_ucontext`) when a process opens the device and frees it after
/// every object of the process is destroyed.
///
/// # Invariants
///
/// A `&Ucontext<T>` is only handed out while the context is alive, with `data` initialised, and
/// `ib.device` is a `Device<T>`.
#[repr(C)]
pub struct Ucontext<T: Driver> {
    ib: Opaque<bindings::ib_ucontext>,
    pub(crate) data: T::Ucontext,
}

// SAFETY: ib_core may call operations on a context from any thread of the process, and
// `T::Ucontext` is `Send + Sync` (required by `Driver`).
unsafe impl<T: Driver> Send for Ucontext<T> {}
// SAFETY: See `Send`.
unsafe impl<T: Driver> Sync for Ucontext<T> {}

impl<T: Driver> Ucontext<T> {
    /// # Safety
    ///
    /// `ptr` must be a live, initialised user context of `T` for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_ucontext) -> &'a Self {
        // SAFETY: The context is the first field of a `repr(C)` `Ucontext<T>` (caller).
        unsafe { &*ptr.cast::<Self>() }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::ib_ucontext {
        self.ib.get()
    }

    /// Returns the device of the context.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: `device` is set by ib_core before the context is handed to the driver and is a
        // `Device<T>` (type invariant), alive at least as long as the context.
        unsafe { Device::from_raw((*self.as_raw()).device) }
    }

    /// Publishes `pages` to this process: it can `mmap` them at the returned entry's offset.
    pub fn insert_mmap(&self, pages: Arc<SharedPages>) -> Result<MmapEntry> {
        // SAFETY: The context is valid; `Adapter<T>` maps entries with `remap_vmalloc_range` and
        // frees them with `EntryInner::free`.
        unsafe { MmapEntry::insert(self.as_raw(), pages) }
    }
}

impl<T: Driver> Deref for Ucontext<T> {
    type Target = T::Ucontext;

    fn deref(&self) -> &T::Ucontext {
        &self.data
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

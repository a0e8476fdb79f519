// SPDX-License-Identifier: GPL-2.0

//! Link operations: creating software RDMA devices on top of network devices from userspace
//! (`rdma link add NAME type TYPE netdev DEV`).
//!
//! C header: [`include/rdma/rdma_netlink.h`](srctree/include/rdma/rdma_netlink.h).

use crate::{bindings, error::from_result, net, prelude::*, str::CStr, types::Opaque};
use core::marker::PhantomData;

/// The link type of a software RDMA driver.
pub trait LinkOps: 'static {
    /// The `type` that `rdma link add` names. The module should also carry the alias
    /// `rdma-link-TYPE`, so that ib_core can load it on demand.
    const TYPE: &'static CStr;

    /// Creates and registers a device named `name` bound to `ndev`.
    ///
    /// Called without locks held, concurrently with other link operations.
    fn newlink(name: &CStr, ndev: &net::device::Device) -> Result;
}

/// A registration of link operations with ib_core.
///
/// # Invariants
///
/// `ops` is registered with `rdma_link_register` for the lifetime of the value.
#[pin_data(PinnedDrop)]
pub struct Registration<T: LinkOps> {
    #[pin]
    ops: Opaque<bindings::rdma_link_ops>,
    _p: PhantomData<T>,
}

// SAFETY: The registration is only touched by ib_core under its link_ops lock.
unsafe impl<T: LinkOps> Send for Registration<T> {}
// SAFETY: `&Registration` offers no methods.
unsafe impl<T: LinkOps> Sync for Registration<T> {}

impl<T: LinkOps> Registration<T> {
    /// Registers the link type `T::TYPE`.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            ops <- Opaque::ffi_init(|slot: *mut bindings::rdma_link_ops| {
                // SAFETY: `slot` is pinned memory for the ops; it is fully written before it is
                // registered, and `drop` unregisters it before the memory goes away.
                unsafe {
                    slot.write(bindings::rdma_link_ops {
                        list: core::mem::zeroed(),
                        type_: T::TYPE.as_char_ptr(),
                        newlink: Some(Self::newlink),
                    });
                    bindings::rdma_link_register(slot);
                }
            }),
            _p: PhantomData,
        })
        // INVARIANT: The ops were registered by the initialiser.
    }

    /// # Safety
    ///
    /// ib_core passes a NUL-terminated name and a network device it holds a reference to.
    unsafe extern "C" fn newlink(
        name: *const crate::ffi::c_char,
        ndev: *mut bindings::net_device,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: `name` is a NUL-terminated string valid for the call.
            let name = unsafe { CStr::from_char_ptr(name) };
            // SAFETY: ib_core holds a reference to `ndev` for the duration of the call.
            let ndev = unsafe { net::device::Device::from_raw(ndev) };
            T::newlink(name, ndev)?;
            Ok(0)
        })
    }
}

#[pinned_drop]
impl<T: LinkOps> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: The ops are registered (type invariant); unregistering waits for running
        // `newlink` calls to return.
        unsafe { bindings::rdma_link_unregister(self.ops.get()) };
    }
}

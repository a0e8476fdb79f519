// SPDX-License-Identifier: GPL-2.0

//! RDMA (InfiniBand, RoCE, iWARP) devices.
//!
//! Abstractions over ib_core for RDMA drivers written in Rust: a driver implements
//! [`Driver`] (the operations ib_core calls, built into a C `ib_device_ops` table), allocates
//! its devices with [`Device::alloc`] and hands them to ib_core with [`Unregistered::register`].
//! Software devices that bind to a network device are created from userspace with
//! `rdma link add NAME type TYPE netdev DEV`, through a [`link::Registration`].
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/rdma/rdma_netlink.h`](srctree/include/rdma/rdma_netlink.h).

pub mod ah;
pub mod attr;
pub mod counter;
pub mod cq;
pub mod device;
pub mod driver;
pub mod link;
pub mod mmap;
pub mod mr;
pub mod mw;
mod object;
pub mod pages;
pub mod pd;
pub mod qp;
pub mod restrack;
pub mod roce;
pub mod srq;
pub mod stats;
mod typed;
pub mod uapi;
pub mod ucontext;
pub mod udata;
pub mod wr;

pub use device::{Device, DeviceRef, DriverGuard, PortEvent, Unregistered};
pub use driver::Driver;

use crate::{bindings, str::CStr};

/// Identifies the driver of a device to userspace (`enum rdma_driver_id`); rdma-core uses it to
/// match a provider library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverId(bindings::rdma_driver_id);

impl DriverId {
    /// The Rust software RDMA device (`srdma`).
    pub const SRDMA: DriverId = DriverId(bindings::rdma_driver_id_RDMA_DRIVER_SRDMA);

    /// Returns the raw `enum rdma_driver_id` value.
    pub const fn as_raw(self) -> bindings::rdma_driver_id {
        self.0
    }
}

/// Returns whether an RDMA device of any driver is registered under `name`.
///
/// Device names are unique across drivers; a driver checks this to give a clear error before
/// it allocates a device. The answer can be stale by the time it is used, and registration
/// still refuses a taken name.
pub fn name_in_use(name: &CStr) -> bool {
    // SAFETY: `name` is a valid NUL-terminated string for the duration of the call.
    let dev = unsafe {
        bindings::ib_device_get_by_name(
            name.as_char_ptr(),
            bindings::rdma_driver_id_RDMA_DRIVER_UNKNOWN,
        )
    };
    if dev.is_null() {
        return false;
    }
    // SAFETY: `ib_device_get_by_name` returned a registration reference that we now drop.
    unsafe { bindings::ib_device_put(dev) };
    true
}

// SPDX-License-Identifier: GPL-2.0

//! The operations an RDMA driver provides to ib_core (`struct ib_device_ops`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{
    attr::{DeviceAttr, LinkLayer, PortAttr, PortImmutable},
    device::Device,
    DriverId,
};
use crate::{
    bindings, build_error,
    error::{from_result, VTABLE_DEFAULT_ERROR},
    prelude::*,
};
use core::marker::PhantomData;

/// An RDMA driver: the per-device data and the operations ib_core calls on its devices.
///
/// The implementing type is the driver's per-device data, reached from a [`Device<Self>`] by
/// dereference. Optional operations that the driver does not implement are left out of the C
/// operations table, so ib_core sees them as unsupported.
#[vtable]
pub trait Driver: Sized + Send + Sync + 'static {
    /// The driver ID reported to userspace; rdma-core matches providers by it.
    const DRIVER_ID: DriverId;

    /// Reports the device's attributes and limits (`query_device`).
    fn query_device(dev: &Device<Self>) -> Result<DeviceAttr>;

    /// Reports the attributes of port `port` (`query_port`); ports are numbered from 1.
    fn query_port(dev: &Device<Self>, port: u32) -> Result<PortAttr>;

    /// Reports the fixed attributes of port `port` (`get_port_immutable`); ib_core asks
    /// once, while registering the device.
    fn port_immutable(dev: &Device<Self>, port: u32) -> Result<PortImmutable>;

    /// Returns the link layer of port `port` (`get_link_layer`). Without it, ib_core derives
    /// the link layer from the node type, which says InfiniBand for a channel adapter.
    fn link_layer(_dev: &Device<Self>, _port: u32) -> LinkLayer {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Returns entry `index` of the P_Key table of port `port` (`query_pkey`).
    fn query_pkey(_dev: &Device<Self>, _port: u32, _index: u16) -> Result<u16> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// Builds the C operations table of driver `T` and holds its trampolines.
pub(crate) struct Adapter<T: Driver>(PhantomData<T>);

impl<T: Driver> Adapter<T> {
    /// The operations table; [`Device::alloc`] copies it into each device and sets its owner.
    pub(crate) const OPS: bindings::ib_device_ops = bindings::ib_device_ops {
        driver_id: T::DRIVER_ID.as_raw(),
        dealloc_driver: Some(Self::dealloc_driver),
        query_device: Some(Self::query_device),
        query_port: Some(Self::query_port),
        get_port_immutable: Some(Self::get_port_immutable),
        get_link_layer: if T::HAS_LINK_LAYER {
            Some(Self::get_link_layer)
        } else {
            None
        },
        query_pkey: if T::HAS_QUERY_PKEY {
            Some(Self::query_pkey)
        } else {
            None
        },
        // SAFETY: The table holds only pointers and integers; zero means "not provided".
        ..unsafe { core::mem::MaybeUninit::<bindings::ib_device_ops>::zeroed().assume_init() }
    };

    /// # Safety
    ///
    /// ib_core calls this once per device of `T`, after which it makes no other call.
    unsafe extern "C" fn dealloc_driver(ibdev: *mut bindings::ib_device) {
        let dev = ibdev.cast::<Device<T>>();
        // SAFETY: The ops of `T` are only installed on devices allocated by `Device::<T>::alloc`
        // with initialised data, and ib_core calls `dealloc_driver` exactly once per device.
        unsafe { Device::drop_data(dev) };
    }

    /// # Safety
    ///
    /// `ibdev` is a live device of `T` and `attr` and `udata` are valid, as ib_core guarantees.
    unsafe extern "C" fn query_device(
        ibdev: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: `udata`, if not null, is a valid `ib_udata` for the duration of the call.
            if let Some(udata) = unsafe { udata.as_ref() } {
                // No driver-specific query data is defined.
                if udata.inlen != 0 || udata.outlen != 0 {
                    return Err(EINVAL);
                }
            }
            // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
            let dev = unsafe { Device::<T>::from_raw(ibdev) };
            let value = T::query_device(dev)?.to_raw();
            // SAFETY: `attr` is valid for writes.
            unsafe { attr.write(value) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ibdev` is a live device of `T` and `attr` is valid, as ib_core guarantees.
    unsafe extern "C" fn query_port(
        ibdev: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
            let dev = unsafe { Device::<T>::from_raw(ibdev) };
            let value = T::query_port(dev, port)?.to_raw();
            // SAFETY: `attr` is valid for writes.
            unsafe { attr.write(value) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ibdev` is a live device of `T` and `imm` is valid, as ib_core guarantees.
    unsafe extern "C" fn get_port_immutable(
        ibdev: *mut bindings::ib_device,
        port: u32,
        imm: *mut bindings::ib_port_immutable,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
            let dev = unsafe { Device::<T>::from_raw(ibdev) };
            let value = T::port_immutable(dev, port)?.to_raw();
            // SAFETY: `imm` is valid for writes.
            unsafe { imm.write(value) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ibdev` is a live device of `T`, as ib_core guarantees.
    unsafe extern "C" fn get_link_layer(
        ibdev: *mut bindings::ib_device,
        port: u32,
    ) -> bindings::rdma_link_layer {
        // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
        let dev = unsafe { Device::<T>::from_raw(ibdev) };
        T::link_layer(dev, port) as bindings::rdma_link_layer
    }

    /// # Safety
    ///
    /// `ibdev` is a live device of `T` and `pkey` is valid, as ib_core guarantees.
    unsafe extern "C" fn query_pkey(
        ibdev: *mut bindings::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
            let dev = unsafe { Device::<T>::from_raw(ibdev) };
            let value = T::query_pkey(dev, port, index)?;
            // SAFETY: `pkey` is valid for writes.
            unsafe { pkey.write(value) };
            Ok(0)
        })
    }
}

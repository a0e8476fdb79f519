// SPDX-License-Identifier: GPL-2.0

//! RDMA devices: allocation, registration with ib_core, and the references a driver holds.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::driver::{Adapter, Driver};
use crate::{
    bindings, device,
    error::{from_result, to_result},
    net,
    prelude::*,
    str::CStr,
    types::{ARef, Opaque},
    ThisModule,
};
use core::{
    any::TypeId,
    marker::PhantomData,
    mem::ManuallyDrop,
    ops::Deref,
    ptr::{addr_of_mut, NonNull},
};

/// The part of [`Device`] whose layout does not depend on the driver's data.
#[repr(C)]
struct Header {
    ibdev: Opaque<bindings::ib_device>,
    /// The driver type that allocated the device; checked before a looked-up `ib_device` is
    /// turned into a `Device<T>`.
    type_id: TypeId,
    /// The driver's sysfs attributes ([`Driver::SYSFS_ATTRS`]), the null-terminated list of
    /// them and their group: in the device's own allocation, which outlives the sysfs files.
    sysfs_attrs: [bindings::device_attribute; MAX_SYSFS_ATTRS],
    sysfs_list: [*mut bindings::attribute; MAX_SYSFS_ATTRS + 1],
    sysfs_group: bindings::attribute_group,
}

/// The most sysfs attributes a driver may declare in [`Driver::SYSFS_ATTRS`].
pub const MAX_SYSFS_ATTRS: usize = 4;

/// An RDMA device of driver `T`: ib_core's `struct ib_device` followed by the driver's data.
///
/// ib_core allocates the memory (`_ib_alloc_device`) and frees it when the last reference to the
/// device is gone; the driver's data is dropped from the `dealloc_driver` callback, which ib_core
/// makes once, when the device is unregistered (or when an unregistered device is freed).
///
/// # Invariants
///
/// - The memory was allocated by [`Device::alloc`] for this `T`: `header.ibdev` is an initialised
///   `ib_device` at offset 0 whose ops were built by `Adapter<T>`, `header.type_id` is
///   `TypeId::of::<T>()`, and `data` is initialised.
/// - A `&Device<T>` is only handed out while the device's memory and data are alive: by an owner
///   ([`Unregistered`]), a registration reference ([`DeviceRef`]), or inside an ib_core callback.
#[repr(C)]
pub struct Device<T: Driver> {
    header: Header,
    data: T,
}

// SAFETY: ib_core calls device operations from any thread; `T` is `Send + Sync` (required by
// `Driver`) and the `ib_device` part is only touched through ib_core's own synchronisation.
unsafe impl<T: Driver> Send for Device<T> {}
// SAFETY: See `Send`; `&Device<T>` only gives shared access to `T` and to ib_core functions that
// are safe to call concurrently.
unsafe impl<T: Driver> Sync for Device<T> {}

super::typed::c_enum! {
    /// What kind of node a device is (`RDMA_NODE_*`): ib_core derives the device's transport
    /// from it. The kinds that Rust drivers are so far.
    pub enum NodeType: u32 {
        /// A channel adapter: an InfiniBand or RoCE device.
        IbCa = bindings::RDMA_NODE_IB_CA,
    }
}

/// Port events a driver reports to ib_core and its clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortEvent {
    /// The port became active (`IB_EVENT_PORT_ACTIVE`).
    Active,
    /// The port left the active state (`IB_EVENT_PORT_ERR`).
    Err,
}

impl<T: Driver> Device<T> {
    /// Allocates a device and initialises the driver's data in place.
    ///
    /// The device is not visible to anyone until [`Unregistered::register`]; dropping the
    /// returned value frees it.
    pub fn alloc(
        module: &'static ThisModule,
        data: impl PinInit<T, Error>,
    ) -> Result<Unregistered<T>> {
        build_assert!(core::mem::align_of::<Self>() <= bindings::ARCH_SLAB_MINALIGN);
        // SAFETY: The size covers `Self`, whose first field is the `ib_device` (`repr(C)`), as
        // `_ib_alloc_device` requires.
        let ibdev = unsafe { bindings::_ib_alloc_device(core::mem::size_of::<Self>()) };
        if ibdev.is_null() {
            return Err(ENOMEM);
        }
        let this = ibdev.cast::<Self>();
        // SAFETY: `this` points to zeroed memory large and aligned enough for `Self`; the header
        // field is written before anything reads it.
        unsafe { addr_of_mut!((*this).header.type_id).write(TypeId::of::<T>()) };
        // SAFETY: `data` is uninitialised memory inside the allocation, and it is pinned: the
        // allocation never moves until ib_core frees it.
        if let Err(e) = unsafe { data.__pinned_init(addr_of_mut!((*this).data)) } {
            // SAFETY: No ops are installed yet, so `ib_dealloc_device` frees the memory without
            // calling `dealloc_driver` on the uninitialised data.
            unsafe { bindings::ib_dealloc_device(ibdev) };
            return Err(e);
        }
        let mut ops = Adapter::<T>::OPS;
        ops.owner = module.as_ptr();
        // SAFETY: `this` is the new device, not shared yet.
        ops.device_group = unsafe { Self::init_sysfs(this) };
        // SAFETY: `ibdev` is a valid, unregistered device; `ib_set_device_ops` copies the table.
        unsafe {
            bindings::ib_set_device_ops(ibdev, &ops);
            (*ibdev).node_type = T::NODE_TYPE as u8;
            (*ibdev).phys_port_cnt = 1;
            (*ibdev).num_comp_vectors = 1;
            // A doorbell kick of a user QP is either the doorbell method (an ioctl) or the
            // legacy write command POST_SEND with no work request, which is off by default. The
            // method's definition is a static table of the helpers, never written, which
            // ib_uverbs reads while the device lives.
            if T::HAS_POST_SEND_USER {
                (*ibdev).uverbs_cmd_mask |=
                    1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND;
                (*ibdev).driver_def = bindings::rdma_doorbell_defs().cast_mut();
            }
        }
        // INVARIANT: The header and the data are initialised and the ops are `Adapter<T>`'s.
        Ok(Unregistered {
            // SAFETY: `ibdev` is not null (checked above).
            ptr: unsafe { NonNull::new_unchecked(this) },
            parent: None,
        })
    }

    /// Returns a device from the `ib_device` pointer that ib_core passes to an operation.
    ///
    /// # Safety
    ///
    /// `ibdev` must belong to a `Device<T>` allocated by [`Device::alloc`] that stays alive for
    /// `'a`. This holds for the device argument of every `Adapter<T>` operation.
    pub(crate) unsafe fn from_raw<'a>(ibdev: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: The caller guarantees that `ibdev` is the first field of a live `Device<T>`.
        unsafe { &*ibdev.cast::<Self>() }
    }

    /// Drops the driver's data in place.
    ///
    /// # Safety
    ///
    /// `this` must be a `Device<T>` with initialised data that nothing uses any more; the data
    /// must not be dropped again.
    pub(crate) unsafe fn drop_data(this: *mut Self) {
        // SAFETY: The caller guarantees that the data is initialised and unused.
        unsafe { core::ptr::drop_in_place(addr_of_mut!((*this).data)) };
    }

    /// Prepares the driver's sysfs attributes ([`Driver::SYSFS_ATTRS`]) in the device's header
    /// and returns their group for `ib_device_ops.device_group` (null without attributes);
    /// registration creates the files.
    ///
    /// # Safety
    ///
    /// `this` must be a device being allocated, zeroed and not shared yet.
    unsafe fn init_sysfs(this: *mut Self) -> *const bindings::attribute_group {
        let names = T::SYSFS_ATTRS;
        if names.is_empty() || !T::HAS_SYSFS_SHOW {
            return core::ptr::null();
        }
        // SAFETY: The header fields lie in the device's zeroed allocation (caller guarantee),
        // which lives until the device is freed, after its sysfs files are gone.
        unsafe {
            let h = addr_of_mut!((*this).header);
            for (i, name) in names.iter().take(MAX_SYSFS_ATTRS).enumerate() {
                let a = addr_of_mut!((*h).sysfs_attrs[i]);
                (*a).attr.name = name.as_char_ptr();
                (*a).attr.mode = if T::HAS_SYSFS_STORE { 0o644 } else { 0o444 };
                // What `sysfs_attr_init` does for attributes outside static storage: lockdep
                // needs a static key for the file's lock.
                #[cfg(CONFIG_DEBUG_LOCK_ALLOC)]
                {
                    (*a).attr.key = crate::static_lock_class!().as_ptr();
                }
                (*a).show = Some(sysfs_show::<T>);
                if T::HAS_SYSFS_STORE {
                    (*a).store = Some(sysfs_store::<T>);
                }
                (*h).sysfs_list[i] = addr_of_mut!((*a).attr);
            }
            (*h).sysfs_group.attrs = addr_of_mut!((*h).sysfs_list).cast();
            addr_of_mut!((*h).sysfs_group).cast_const()
        }
    }

    /// Returns the raw `struct ib_device` pointer.
    pub fn as_raw(&self) -> *mut bindings::ib_device {
        self.header.ibdev.get()
    }

    /// Returns the device name, such as `srdma0`.
    pub fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array inside the valid `ib_device`.
        unsafe { CStr::from_char_ptr((*self.as_raw()).name.as_ptr()) }
    }

    /// Returns the network device bound to `port`, if any.
    pub fn netdev(&self, port: u32) -> Option<ARef<net::device::Device>> {
        // SAFETY: The device is valid; `ib_device_get_netdev` returns a held reference or null.
        let ndev = unsafe { bindings::ib_device_get_netdev(self.as_raw(), port) };
        // SAFETY: A non-null result carries a `dev_hold` reference that the `ARef` now owns.
        NonNull::new(ndev).map(|p| unsafe { ARef::from_raw(p.cast()) })
    }

    /// Returns the link speed and width (`IB_SPEED_*`, `IB_WIDTH_*`) derived from the Ethernet
    /// link speed of the network device bound to `port`.
    ///
    /// Takes the RTNL lock; must not be called with it held.
    pub fn eth_speed(&self, port: u32) -> Result<(u16, u8)> {
        let mut speed = 0u16;
        let mut width = 0u8;
        // SAFETY: The device is valid and the out-pointers point to live locals.
        to_result(unsafe {
            bindings::ib_get_eth_speed(self.as_raw(), port, &mut speed, &mut width)
        })?;
        Ok((speed, width))
    }

    /// Returns the GID at `index` of the GID table of `port`, from ib_core's cache.
    pub fn query_gid(&self, port: u32, index: u32) -> Result<[u8; 16]> {
        // SAFETY: `ib_gid` is a union of byte arrays, for which zero is valid.
        let mut gid: bindings::ib_gid = unsafe { core::mem::zeroed() };
        let index = i32::try_from(index).map_err(|_| EINVAL)?;
        // SAFETY: The device is valid and `gid` is a live local.
        to_result(unsafe { bindings::rdma_query_gid(self.as_raw(), port, index, &mut gid) })?;
        // SAFETY: Every member of the union is 16 bytes of plain data.
        Ok(unsafe { gid.raw })
    }

    /// Reports a port event to ib_core, which updates its caches and tells its clients
    /// (including userspace through `ibv_get_async_event`).
    pub fn dispatch_port_event(&self, port: u32, event: PortEvent) {
        // SAFETY: `ib_event` holds pointers, a union and an enum, for which zero is valid.
        let mut ev: bindings::ib_event = unsafe { core::mem::zeroed() };
        ev.device = self.as_raw();
        ev.element.port_num = port;
        ev.event = match event {
            PortEvent::Active => bindings::ib_event_type_IB_EVENT_PORT_ACTIVE,
            PortEvent::Err => bindings::ib_event_type_IB_EVENT_PORT_ERR,
        };
        // SAFETY: The device is valid and `ev` is a fully initialised event.
        unsafe { bindings::ib_dispatch_event(&ev) };
    }

    /// Returns the registered device of driver `T` bound to `ndev`, with a registration
    /// reference.
    pub fn get_by_netdev(ndev: &net::device::Device) -> Option<DeviceRef<T>> {
        // SAFETY: `ndev` is valid; the result is a registration reference or null.
        let ibdev =
            unsafe { bindings::ib_device_get_by_netdev(ndev.as_raw(), T::DRIVER_ID.as_raw()) };
        let ibdev = NonNull::new(ibdev)?;
        // SAFETY: Devices with `T::DRIVER_ID` were allocated by `Device::alloc` for a driver with
        // that ID, so the header is in place; the `TypeId` tells whether it was for `T`.
        let ours = unsafe { (*ibdev.as_ptr().cast::<Header>()).type_id } == TypeId::of::<T>();
        if !ours {
            // SAFETY: Drops the reference taken by `ib_device_get_by_netdev`.
            unsafe { bindings::ib_device_put(ibdev.as_ptr()) };
            return None;
        }
        // INVARIANT: We own the registration reference of a `Device<T>`.
        Some(DeviceRef {
            ptr: ibdev.cast(),
            _p: PhantomData,
        })
    }
}

impl<T: Driver> Deref for Device<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.data
    }
}

/// A device that is allocated but not yet registered; the driver owns it and may configure it.
///
/// # Invariants
///
/// `ptr` is a valid [`Device<T>`] that is not registered and that only this value owns.
pub struct Unregistered<T: Driver> {
    ptr: NonNull<Device<T>>,
    /// The parent set by [`Unregistered::set_parent`], kept valid until registration takes a
    /// reference of its own.
    parent: Option<ARef<device::Device>>,
}

impl<T: Driver> Unregistered<T> {
    fn raw(&mut self) -> *mut bindings::ib_device {
        self.ptr.as_ptr().cast()
    }

    /// Sets the node GUID, given in wire (big-endian) byte order.
    pub fn set_node_guid(&mut self, guid: [u8; 8]) {
        // SAFETY: We own the unregistered device (type invariant), so nothing reads concurrently.
        unsafe { (*self.raw()).node_guid = u64::from_ne_bytes(guid) };
    }

    /// Sets the node description shown by `ibv_devinfo` and in sysfs (`node_desc`); longer
    /// descriptions are truncated.
    pub fn set_node_desc(&mut self, desc: &CStr) {
        // SAFETY: We own the unregistered device (type invariant).
        let dst = unsafe { &mut (*self.raw()).node_desc };
        let src = desc.as_bytes();
        let n = src.len().min(dst.len() - 1);
        dst.fill(0);
        for (d, s) in dst.iter_mut().zip(&src[..n]) {
            *d = *s as crate::ffi::c_char;
        }
    }

    /// Sets the number of physical ports (default 1).
    pub fn set_phys_port_cnt(&mut self, ports: u32) {
        // SAFETY: We own the unregistered device (type invariant).
        unsafe { (*self.raw()).phys_port_cnt = ports };
    }

    /// Sets the number of completion vectors (default 1).
    pub fn set_num_comp_vectors(&mut self, vectors: u32) {
        let vectors = i32::try_from(vectors).unwrap_or(i32::MAX);
        // SAFETY: We own the unregistered device (type invariant).
        unsafe { (*self.raw()).num_comp_vectors = vectors };
    }

    /// Binds `ndev` to `port`: ib_core then derives the port's RoCE GIDs from the addresses
    /// of `ndev` and keeps a reference to it until the device is unregistered.
    pub fn set_netdev(&mut self, ndev: &net::device::Device, port: u32) -> Result {
        // SAFETY: We own the unregistered device and `ndev` is valid.
        to_result(unsafe { bindings::ib_device_set_netdev(self.raw(), ndev.as_raw(), port) })
    }

    /// Places the device under `parent` in the device model (as a NIC's RDMA function sits
    /// under its PCI device), so that `/sys/class/infiniband/NAME/device` leads to it and to
    /// the network interfaces beside it. DMA is not affected.
    pub fn set_parent(&mut self, parent: ARef<device::Device>) {
        // SAFETY: We own the unregistered device (type invariant). `parent` stays valid while
        // it is stored (the `ARef` in `self.parent`), and registration takes its own reference.
        unsafe { bindings::ib_device_set_parent(self.raw(), parent.as_raw()) };
        self.parent = Some(parent);
    }

    /// Registers the device with ib_core under `name` (a `%d` in it is replaced by a free
    /// number).
    ///
    /// On success ib_core owns the device: it stays registered until it is unregistered by
    /// `rdma link delete`, [`DeviceRef::unregister_queued`] or [`DriverGuard`], and the driver
    /// reaches it again only through lookups such as [`Device::get_by_netdev`]. On failure the
    /// device is freed.
    pub fn register(mut self, name: &CStr) -> Result {
        // Dropped once registration is over: `device_add` holds the parent from then on.
        let _parent = self.parent.take();
        let this = ManuallyDrop::new(self);
        let ibdev = this.ptr.as_ptr().cast::<bindings::ib_device>();
        // SAFETY: The device is valid and unregistered; a null DMA device selects virtual DMA,
        // as software devices need.
        let ret = unsafe {
            bindings::ib_register_device(ibdev, name.as_char_ptr(), core::ptr::null_mut())
        };
        if ret != 0 {
            // SAFETY: After a failed registration the caller must free the device; this also
            // calls `dealloc_driver`, which drops the driver's data.
            unsafe { bindings::ib_dealloc_device(ibdev) };
            return Err(Error::from_errno(ret));
        }
        Ok(())
    }
}

impl<T: Driver> Deref for Unregistered<T> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        // SAFETY: `ptr` is valid while we own it (type invariant).
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: Driver> Drop for Unregistered<T> {
    fn drop(&mut self) {
        // SAFETY: We own the unregistered device; `ib_dealloc_device` calls `dealloc_driver`,
        // which drops the data, and frees the memory.
        unsafe { bindings::ib_dealloc_device(self.raw()) };
    }
}

/// A registration reference to a registered [`Device<T>`] (`ib_device_try_get`).
///
/// While it exists the device stays registered, or unregistration waits for it.
///
/// # Invariants
///
/// `ptr` is a `Device<T>` for which this value owns one registration reference.
pub struct DeviceRef<T: Driver> {
    ptr: NonNull<Device<T>>,
    _p: PhantomData<Device<T>>,
}

// SAFETY: The reference may be dropped on any thread (`ib_device_put` is thread-safe) and
// `Device<T>` is `Sync`.
unsafe impl<T: Driver> Send for DeviceRef<T> {}
// SAFETY: `&DeviceRef<T>` only gives `&Device<T>`, which is `Sync`.
unsafe impl<T: Driver> Sync for DeviceRef<T> {}

impl<T: Driver> DeviceRef<T> {
    /// Queues the unregistration of the device on ib_core's workqueue.
    ///
    /// For contexts that must not wait for unregistration, such as netdevice notifiers (which
    /// hold the RTNL lock that unregistration may need).
    pub fn unregister_queued(&self) {
        // SAFETY: We hold a registration reference, as `ib_unregister_device_queued` requires,
        // and the device has a `dealloc_driver` op (installed by `Adapter<T>`).
        unsafe { bindings::ib_unregister_device_queued(self.as_raw()) };
    }
}

impl<T: Driver> Deref for DeviceRef<T> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        // SAFETY: The registration reference keeps the device and its data alive.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: Driver> Drop for DeviceRef<T> {
    fn drop(&mut self) {
        // SAFETY: We own one registration reference (type invariant).
        unsafe { bindings::ib_device_put(self.ptr.as_ptr().cast()) };
    }
}

/// Unregisters every device of driver `T` when dropped, and waits for work its devices queued
/// on the unbound system workqueue; a driver module keeps one so that no device (and no queued
/// unregistration or work) outlives the module's code.
pub struct DriverGuard<T: Driver>(PhantomData<T>);

impl<T: Driver> DriverGuard<T> {
    /// Creates the guard.
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T: Driver> Default for DriverGuard<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Driver> Drop for DriverGuard<T> {
    fn drop(&mut self) {
        // SAFETY: Unregistering all devices with our driver ID is always allowed; ib_core
        // waits for each unregistration, including queued ones, to finish, and frees each
        // device's data, so work a device owns has drained before the module's code goes.
        unsafe { bindings::ib_unregister_driver(T::DRIVER_ID.as_raw()) };
    }
}

/// Returns the device and the index of the attribute that sysfs calls about.
///
/// # Safety
///
/// `dev` must be the `struct device` of a live device of `T` and `attr` one of its
/// [`Driver::SYSFS_ATTRS`] set up by `init_sysfs`.
unsafe fn sysfs_target<'a, T: Driver>(
    dev: *mut bindings::device,
    attr: *mut bindings::device_attribute,
) -> (&'a Device<T>, usize) {
    // SAFETY: `dev` is the `struct device` of an `ib_device` of `T` (caller guarantee), which
    // the helper finds as C code does.
    let this = unsafe { Device::<T>::from_raw(bindings::rdma_device_to_ibdev(dev)) };
    // SAFETY: `attr` is an element of the header's array (caller guarantee).
    let index = unsafe {
        attr.cast_const()
            .offset_from(this.header.sysfs_attrs.as_ptr())
    };
    (this, index as usize)
}

/// # Safety
///
/// Called by sysfs for an attribute that `init_sysfs` set up, with a buffer of
/// `PAGE_SIZE` bytes.
unsafe extern "C" fn sysfs_show<T: Driver>(
    dev: *mut bindings::device,
    attr: *mut bindings::device_attribute,
    buf: *mut crate::ffi::c_char,
) -> isize {
    // SAFETY: sysfs calls for one of our attributes while the device exists.
    let (this, index) = unsafe { sysfs_target::<T>(dev, attr) };
    // SAFETY: sysfs passes a page-sized buffer, ours during the call.
    let out = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), crate::page::PAGE_SIZE) };
    match T::sysfs_show(this, index, out) {
        Ok(n) => n.min(crate::page::PAGE_SIZE) as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// # Safety
///
/// Called by sysfs for an attribute that `init_sysfs` set up, with `count` bytes
/// at `buf`.
unsafe extern "C" fn sysfs_store<T: Driver>(
    dev: *mut bindings::device,
    attr: *mut bindings::device_attribute,
    buf: *const crate::ffi::c_char,
    count: usize,
) -> isize {
    // SAFETY: sysfs calls for one of our attributes while the device exists.
    let (this, index) = unsafe { sysfs_target::<T>(dev, attr) };
    // SAFETY: sysfs passes `count` readable bytes, valid during the call.
    let input = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), count) };
    match T::sysfs_store(this, index, input) {
        Ok(()) => count as isize,
        Err(e) => e.to_errno() as isize,
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// `ibdev` is a live device of `T` and `attr` and `udata` are valid, as ib_core guarantees.
    pub(crate) unsafe extern "C" fn query_device(
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
    pub(crate) unsafe extern "C" fn query_port(
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
    pub(crate) unsafe extern "C" fn get_port_immutable(
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
    pub(crate) unsafe extern "C" fn get_link_layer(
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
    pub(crate) unsafe extern "C" fn query_pkey(
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

// SPDX-License-Identifier: GPL-2.0

//! Network devices.
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h).

use crate::{
    bindings, device,
    str::CStr,
    types::{ARef, AlwaysRefCounted, Opaque},
};
use core::ptr::NonNull;

/// The hardware type of a network device (`ARPHRD_*`, the `type` field of `struct net_device`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwType(u16);

impl HwType {
    /// Ethernet (`ARPHRD_ETHER`).
    pub const ETHER: HwType = HwType(bindings::ARPHRD_ETHER as u16);

    /// Returns the raw `ARPHRD_*` value.
    pub const fn as_raw(self) -> u16 {
        self.0
    }
}

/// A network device.
///
/// Wraps the kernel's [`struct net_device`]. References to it are only handed out while the
/// device is known to be alive: inside a callback that the networking core makes for it, or
/// behind an [`ARef`] that holds a `dev_hold` reference.
///
/// # Invariants
///
/// The inner `net_device` is valid for as long as a `&Device` exists; shared references only
/// use fields and functions that may be read concurrently with the networking core.
///
/// [`struct net_device`]: srctree/include/linux/netdevice.h
#[repr(transparent)]
pub struct Device(Opaque<bindings::net_device>);

// SAFETY: `net_device` is reference counted with `dev_hold`/`dev_put`, which may be called from
// any thread, and the methods of `Device` only read state that the networking core publishes for
// concurrent readers.
unsafe impl Send for Device {}
// SAFETY: See the `Send` implementation; `&Device` only offers concurrent-safe reads.
unsafe impl Sync for Device {}

// SAFETY: `dev_hold` and `dev_put` keep the device alive while the count is non-zero.
unsafe impl AlwaysRefCounted for Device {
    fn inc_ref(&self) {
        // SAFETY: By the type invariant the device is valid, so taking a reference is sound.
        unsafe { bindings::dev_hold(self.as_raw()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller owns a reference taken by `inc_ref` (or handed over as one).
        unsafe { bindings::dev_put(obj.cast::<bindings::net_device>().as_ptr()) };
    }
}

impl Device {
    /// Returns the device of namespace `net` that has the local address `addr` (`ip_dev_find`,
    /// `ipv6_dev_find`), holding a reference to it.
    pub fn find_by_addr(
        net: &super::namespace::Net,
        addr: super::ip::Addr,
    ) -> Option<crate::types::ARef<Self>> {
        // The namespace is alive (its invariant) for the lookups below.
        let net = net.as_raw();
        let dev = match addr {
            super::ip::Addr::V4(a) => {
                // SAFETY: Looks the address up; the result is held or null.
                unsafe { bindings::ip_dev_find(net, u32::from_ne_bytes(a)) }
            }
            super::ip::Addr::V6(a) => {
                // SAFETY: `in6_addr` is 16 bytes of any value; the helper returns a held device
                // or null.
                unsafe {
                    let a: bindings::in6_addr = core::mem::transmute(a);
                    bindings::ipv6_dev_find_hold(net, &a)
                }
            }
        };
        // SAFETY: A non-null result carries a reference that the `ARef` now owns.
        NonNull::new(dev).map(|d| unsafe { crate::types::ARef::from_raw(d.cast()) })
    }

    /// Creates a reference to a [`Device`] from a raw pointer.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a valid `net_device` that stays alive for the lifetime `'a`.
    pub unsafe fn from_raw<'a>(ptr: *const bindings::net_device) -> &'a Self {
        // SAFETY: `Device` is a transparent wrapper of `net_device`, and the caller guarantees
        // that the pointer is valid for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Returns the raw pointer to the `struct net_device`.
    pub fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// Returns the interface name, such as `eth0`.
    ///
    /// The name can change while it is being read (a concurrent rename); it is meant for
    /// messages, not for identifying the device.
    pub fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array inside a valid `net_device` (type invariant);
        // the networking core always keeps a terminating NUL in it.
        unsafe { CStr::from_char_ptr((*self.as_raw()).name.as_ptr()) }
    }

    /// Returns the namespace the device is in now, with a reference, or `None` if that
    /// namespace is going away.
    pub fn net(&self) -> Option<crate::types::ARef<super::namespace::Net>> {
        // A device may move to another namespace meanwhile; the one it was in stays allocated
        // until readers that saw it there are done.
        // SAFETY: The device is valid (type invariant); under the RCU read lock the namespace
        // it names stays allocated, and `maybe_get_net` takes a reference unless its count
        // already reached zero.
        let net = unsafe {
            bindings::rcu_read_lock();
            let net = bindings::maybe_get_net(bindings::dev_net(self.as_raw()));
            bindings::rcu_read_unlock();
            net
        };
        // SAFETY: A non-null result carries a reference that the `ARef` now owns.
        NonNull::new(net).map(|n| unsafe { crate::types::ARef::from_raw(n.cast()) })
    }

    /// Returns the bytes to reserve in front of a packet for the link-layer header of this
    /// device (`LL_RESERVED_SPACE`).
    pub fn ll_reserved_space(&self) -> usize {
        // SAFETY: The device is valid (type invariant); the helper reads two of its fields.
        unsafe { bindings::ll_reserved_space(self.as_raw()) as usize }
    }

    /// Returns the interface index.
    pub fn ifindex(&self) -> i32 {
        // SAFETY: `ifindex` is set once at registration and only read afterwards.
        unsafe { (*self.as_raw()).ifindex }
    }

    /// Returns the hardware type (`ARPHRD_*`).
    pub fn hw_type(&self) -> HwType {
        // SAFETY: `type` is set by the driver before registration and not changed afterwards.
        HwType(unsafe { (*self.as_raw()).type_ })
    }

    /// Returns the MTU.
    pub fn mtu(&self) -> u32 {
        // SAFETY: `mtu` is updated with `WRITE_ONCE` by the core; a racy read of an aligned
        // `u32` yields either the old or the new value.
        unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*self.as_raw()).mtu)) }
    }

    /// Returns whether the device is administratively up (`netif_running`).
    pub fn is_running(&self) -> bool {
        // SAFETY: The device is valid (type invariant); the helper only tests a state bit.
        unsafe { bindings::netif_running(self.as_raw()) }
    }

    /// Returns whether the device has a carrier (`netif_carrier_ok`).
    pub fn carrier_ok(&self) -> bool {
        // SAFETY: The device is valid (type invariant); the helper only tests a state bit.
        unsafe { bindings::netif_carrier_ok(self.as_raw()) }
    }

    /// Returns whether this is a VLAN device stacked on another device.
    pub fn is_vlan(&self) -> bool {
        // SAFETY: The device is valid (type invariant); the helper only tests a flag.
        unsafe { bindings::is_vlan_dev(self.as_raw()) }
    }

    /// Returns the device this network device sits under (the PCI or virtio device of a
    /// NIC), with a reference, or `None` for a virtual device or one being unregistered.
    ///
    /// Takes RTNL: call it from process context, never with RTNL held (a netdev notifier).
    pub fn parent(&self) -> Option<ARef<device::Device>> {
        let dev = self.as_raw();
        // SAFETY: The device is valid (type invariant). Under RTNL a device in the registered
        // state is not being unregistered, and a registered device holds a reference to its
        // parent (taken by `device_add`), so a non-null parent is a valid device.
        unsafe {
            bindings::rtnl_lock();
            let parent = if bindings::netdev_is_registered(dev) {
                NonNull::new((*dev).dev.parent).map(|p| device::Device::get_device(p.as_ptr()))
            } else {
                None
            };
            bindings::rtnl_unlock();
            parent
        }
    }

    /// Returns the 6-byte hardware address of an Ethernet device, or `None` for other
    /// address lengths.
    pub fn mac_addr(&self) -> Option<[u8; 6]> {
        let dev = self.as_raw();
        // SAFETY: `addr_len` and `dev_addr` are valid for a registered device; `dev_addr` points
        // to at least `addr_len` bytes.
        unsafe {
            if (*dev).addr_len != 6 || (*dev).dev_addr.is_null() {
                return None;
            }
            let mut mac = [0u8; 6];
            core::ptr::copy_nonoverlapping((*dev).dev_addr, mac.as_mut_ptr(), mac.len());
            Some(mac)
        }
    }
}

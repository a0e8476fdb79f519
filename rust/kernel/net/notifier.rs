// SPDX-License-Identifier: GPL-2.0

//! Network device notifiers.
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h).

use super::device::Device;
use crate::{bindings, error::to_result, prelude::*, types::Opaque};
use core::marker::PhantomData;

/// A network device event, as delivered by the netdevice notifier chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The device was brought up (`NETDEV_UP`).
    Up,
    /// The device was brought down (`NETDEV_DOWN`).
    Down,
    /// The device state changed, for example its carrier (`NETDEV_CHANGE`).
    Change,
    /// The MTU changed (`NETDEV_CHANGEMTU`).
    ChangeMtu,
    /// The hardware address changed (`NETDEV_CHANGEADDR`).
    ChangeAddr,
    /// The device is being unregistered (`NETDEV_UNREGISTER`).
    Unregister,
    /// Any other event, with its raw `NETDEV_*` value.
    Other(u64),
}

impl Event {
    fn from_raw(event: u64) -> Self {
        match event as u32 {
            bindings::netdev_cmd_NETDEV_UP => Event::Up,
            bindings::netdev_cmd_NETDEV_DOWN => Event::Down,
            bindings::netdev_cmd_NETDEV_CHANGE => Event::Change,
            bindings::netdev_cmd_NETDEV_CHANGEMTU => Event::ChangeMtu,
            bindings::netdev_cmd_NETDEV_CHANGEADDR => Event::ChangeAddr,
            bindings::netdev_cmd_NETDEV_UNREGISTER => Event::Unregister,
            _ => Event::Other(event),
        }
    }
}

/// Receives network device events.
///
/// Events arrive in process context with the RTNL lock held; the callback must not take RTNL.
pub trait Notifier: 'static {
    /// Called for every event of every network device in every namespace.
    fn notify(event: Event, dev: &Device);
}

/// A registration of a [`Notifier`] on the global netdevice notifier chain.
///
/// Registering replays `NETDEV_REGISTER` and `NETDEV_UP` for the devices that already exist;
/// dropping the registration removes the notifier.
///
/// # Invariants
///
/// `nb` is registered with `register_netdevice_notifier` for the lifetime of the value.
#[pin_data(PinnedDrop)]
pub struct Registration<T: Notifier> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    _p: PhantomData<T>,
}

// SAFETY: The registration only holds the notifier block, which the notifier chain protects with
// its own lock; it can be dropped from any thread.
unsafe impl<T: Notifier> Send for Registration<T> {}
// SAFETY: `&Registration` offers no methods.
unsafe impl<T: Notifier> Sync for Registration<T> {}

impl<T: Notifier> Registration<T> {
    /// Creates and registers a netdevice notifier that calls `T::notify`.
    pub fn new() -> impl PinInit<Self, Error> {
        // SAFETY: `notifier_block` holds only pointers and integers, for which zero is valid.
        let zeroed: bindings::notifier_block = unsafe { core::mem::zeroed() };
        let nb = bindings::notifier_block {
            notifier_call: Some(Self::notifier_call),
            ..zeroed
        };
        try_pin_init!(Self {
            nb <- PinInit::<_, Error>::pin_chain(Opaque::new(nb), |nb| {
                // SAFETY: `nb` is pinned and initialised, and it stays registered until `drop`
                // unregisters it before the memory goes away.
                to_result(unsafe { bindings::register_netdevice_notifier(nb.get()) })
            }),
            _p: PhantomData,
        })
        // INVARIANT: `nb` was registered by the chained initialiser above.
    }

    /// # Safety
    ///
    /// Called by the netdevice notifier chain with a `netdev_notifier_info` in `ptr`.
    unsafe extern "C" fn notifier_call(
        _nb: *mut bindings::notifier_block,
        event: crate::ffi::c_ulong,
        ptr: *mut crate::ffi::c_void,
    ) -> crate::ffi::c_int {
        // SAFETY: The netdevice notifier chain always passes a `netdev_notifier_info`.
        let dev = unsafe { bindings::netdev_notifier_info_to_dev(ptr.cast()) };
        if dev.is_null() {
            return bindings::NOTIFY_DONE as crate::ffi::c_int;
        }
        // SAFETY: The device outlives the notifier call that reports on it.
        let dev = unsafe { Device::from_raw(dev) };
        T::notify(Event::from_raw(event as u64), dev);
        bindings::NOTIFY_OK as crate::ffi::c_int
    }
}

#[pinned_drop]
impl<T: Notifier> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant `nb` is registered; unregistering waits for callers.
        unsafe { bindings::unregister_netdevice_notifier(self.nb.get()) };
    }
}

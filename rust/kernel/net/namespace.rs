// SPDX-License-Identifier: GPL-2.0

//! Network namespaces, and data kept per namespace.
//!
//! C headers: [`include/net/net_namespace.h`](srctree/include/net/net_namespace.h),
//! [`include/net/netns/generic.h`](srctree/include/net/netns/generic.h).

use crate::{
    bindings,
    error::{from_result, to_result},
    prelude::*,
    types::{AlwaysRefCounted, Opaque},
};
use core::{
    marker::PhantomData,
    ptr::NonNull,
    sync::atomic::{AtomicU32, Ordering},
};

/// A network namespace.
///
/// # Invariants
///
/// A `&Net` is only handed out while the namespace is alive: behind an
/// [`ARef`](crate::types::ARef) that holds a reference, or inside a callback the networking core
/// makes for the namespace.
#[repr(transparent)]
pub struct Net(Opaque<bindings::net>);

// SAFETY: Namespaces are reference counted with atomic operations and may be used from any
// thread; `&Net` only reads fields written once at creation.
unsafe impl Send for Net {}
// SAFETY: See `Send`.
unsafe impl Sync for Net {}

// SAFETY: `get_net` and `put_net` keep the namespace alive while the count is non-zero.
unsafe impl AlwaysRefCounted for Net {
    fn inc_ref(&self) {
        // SAFETY: The namespace is alive (type invariant), so its count is non-zero.
        unsafe { bindings::get_net(self.as_raw()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller owns a reference taken by `inc_ref` or handed over as one.
        unsafe { bindings::put_net(obj.cast::<bindings::net>().as_ptr()) };
    }
}

impl Net {
    /// The initial network namespace, which lives as long as the kernel.
    pub fn init_ns() -> &'static Net {
        // SAFETY: `init_net` is never freed; taking its address needs no unsafe, using it as a
        // `Net` is fine for the whole life of the kernel.
        unsafe { Self::from_raw(core::ptr::addr_of_mut!(bindings::init_net)) }
    }

    /// Creates a reference to a [`Net`] from a raw pointer.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a namespace that stays alive for the lifetime `'a`.
    pub unsafe fn from_raw<'a>(ptr: *const bindings::net) -> &'a Self {
        // SAFETY: `Net` is a transparent wrapper of `struct net`, valid for `'a` (caller).
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Returns the raw pointer to the `struct net`.
    pub fn as_raw(&self) -> *mut bindings::net {
        self.0.get()
    }

    /// A number that identifies the namespace and is never given to another one, unlike its
    /// address, which a later namespace may reuse.
    pub fn cookie(&self) -> u64 {
        // SAFETY: `net_cookie` is written once when the namespace is set up, before it is
        // visible to anyone who could call this.
        unsafe { (*self.as_raw()).net_cookie }
    }

    /// Whether `self` and `other` are the same namespace.
    pub fn is(&self, other: &Net) -> bool {
        core::ptr::eq(self, other)
    }
}

/// Data kept for every network namespace: created with each namespace (and for every existing
/// one at registration), dropped when the namespace exits (and for every one at
/// unregistration).
pub trait PernetData: Sized + Send + Sync + 'static {
    /// The `static` that registers this kind of data.
    fn pernet() -> &'static Pernet<Self>;

    /// Creates the data of `net`, which is being set up (or exists, at registration).
    fn init(net: &Net) -> Result<Self>;

    /// `net` is going away: undo what ties `data` to it. The data is dropped right after.
    fn exit(net: &Net, data: &Self);
}

/// The state bit of a [`Pernet`] that says it is registered; the users count above it.
const REGISTERED: u32 = 1;
const USER: u32 = 2;

/// A kind of per-namespace data, `T` in every namespace (the kernel's `pernet_operations` with
/// an `id` and a `size`). Declared as a `static`, as C code does; [`Pernet::register`] makes
/// it live, and while registered [`Pernet::get`] finds the data of a namespace.
///
/// # Invariants
///
/// While `state` has `REGISTERED` set or counts users, `ops` is registered with
/// `register_pernet_subsys`, so every live namespace has an initialised `T` in its generic
/// slot `id`.
pub struct Pernet<T: PernetData> {
    ops: Opaque<bindings::pernet_operations>,
    id: Opaque<crate::ffi::c_uint>,
    state: AtomicU32,
    _p: PhantomData<T>,
}

// SAFETY: `ops` and `id` are written by `register` before the state says registered, and then
// only by the kernel under its pernet lock; readers go through `state`.
unsafe impl<T: PernetData> Sync for Pernet<T> {}

impl<T: PernetData> Pernet<T> {
    const SIZE: usize = {
        let size = core::mem::size_of::<T>();
        assert!(size != 0, "per-namespace data must not be zero-sized");
        // `kmalloc` aligns to at least 8 bytes.
        assert!(core::mem::align_of::<T>() <= 8);
        size
    };

    /// Unregistered per-namespace data.
    pub const fn new() -> Self {
        Self {
            ops: Opaque::uninit(),
            id: Opaque::new(0),
            state: AtomicU32::new(0),
            _p: PhantomData,
        }
    }

    /// Registers the data: `T::init` runs for every existing namespace now and for every new
    /// one until the registration is dropped. Fails with `EBUSY` if registered already.
    pub fn register(&'static self) -> Result<Registration<T>> {
        self.state
            .compare_exchange(0, REGISTERED, Ordering::Acquire, Ordering::Relaxed)
            .map_err(|_| EBUSY)?;
        // SAFETY: Nobody else uses `ops` or `id` now: the state was 0 (nothing registered, no
        // users) and we claimed it. The operations hold pointers and integers, for which zero is
        // valid, and the fields set here; the `const` fields are written through raw pointers
        // before the kernel sees the structure.
        let ret = unsafe {
            let ops = self.ops.get();
            core::ptr::write_bytes(ops, 0, 1);
            (*ops).init = Some(init_callback::<T>);
            (*ops).exit = Some(exit_callback::<T>);
            core::ptr::addr_of_mut!((*ops).id)
                .cast::<*mut crate::ffi::c_uint>()
                .write(self.id.get());
            core::ptr::addr_of_mut!((*ops).size)
                .cast::<usize>()
                .write(Self::SIZE);
            bindings::register_pernet_subsys(ops)
        };
        if let Err(e) = to_result(ret) {
            self.state.store(0, Ordering::Release);
            return Err(e);
        }
        // INVARIANT: registered above, and the state says so.
        Ok(Registration { pernet: self })
    }

    /// The data of `net`, or `None` when not registered. The data stays while the reference
    /// exists: dropping the registration waits for it.
    pub fn get<'a>(&'static self, net: &'a Net) -> Option<PernetRef<'a, T>> {
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            if state & REGISTERED == 0 {
                return None;
            }
            match self.state.compare_exchange(
                state,
                state + USER,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => state = now,
            }
        }
        // SAFETY: Registered, and stays so while we count as a user (type invariant); the live
        // namespace `net` has its initialised `T` in slot `id`, freed only after its exit.
        let data = unsafe { &*bindings::net_generic(net.as_raw(), *self.id.get()).cast::<T>() };
        Some(PernetRef { pernet: self, data })
    }

    /// The slot of `net`.
    ///
    /// # Safety
    ///
    /// `ops` must be registered and `net` set up by it.
    unsafe fn slot(&self, net: &Net) -> *mut T {
        // SAFETY: Registered (caller), so `id` is assigned and `net` has the slot.
        unsafe { bindings::net_generic(net.as_raw(), *self.id.get()).cast::<T>() }
    }
}

impl<T: PernetData> Default for Pernet<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// # Safety
///
/// Called by the kernel for a namespace being set up, with its zeroed slot allocated.
unsafe extern "C" fn init_callback<T: PernetData>(net: *mut bindings::net) -> crate::ffi::c_int {
    from_result(|| {
        // SAFETY: The namespace is being set up and outlives this callback.
        let net = unsafe { Net::from_raw(net) };
        let data = T::init(net)?;
        // SAFETY: The kernel calls us only while the operations are registered, with the slot
        // allocated (`size`, `kmalloc` alignment, checked in `SIZE`) and holding nothing yet.
        unsafe { T::pernet().slot(net).write(data) };
        Ok(0)
    })
}

/// # Safety
///
/// Called by the kernel for a namespace that `init_callback` set up, as it goes away.
unsafe extern "C" fn exit_callback<T: PernetData>(net: *mut bindings::net) {
    // SAFETY: The namespace stays valid until its exit callbacks have returned.
    let net = unsafe { Net::from_raw(net) };
    // SAFETY: `init_callback` succeeded for this namespace, so its slot holds the data; the slot
    // is freed after this callback, and no `PernetRef` to it exists: a namespace that is exiting
    // has no references left to look it up with, and unregistering waits for all users first.
    unsafe {
        let slot = T::pernet().slot(net);
        T::exit(net, &*slot);
        core::ptr::drop_in_place(slot);
    }
}

/// The registration of a [`Pernet`]; dropping it drops the data of every namespace.
pub struct Registration<T: PernetData> {
    pernet: &'static Pernet<T>,
}

impl<T: PernetData> Drop for Registration<T> {
    fn drop(&mut self) {
        let state = &self.pernet.state;
        state.fetch_and(!REGISTERED, Ordering::AcqRel);
        // Users are short-lived lookups; no new ones start now.
        while state.load(Ordering::Acquire) != 0 {
            // SAFETY: Sleeping is fine: registrations are dropped in process context.
            unsafe { bindings::msleep(1) };
        }
        // SAFETY: Registered (the invariant of `Pernet`); unregistering runs the exit callback
        // of every namespace.
        unsafe { bindings::unregister_pernet_subsys(self.pernet.ops.get()) };
    }
}

/// The data of one namespace, found with [`Pernet::get`].
pub struct PernetRef<'a, T: PernetData> {
    pernet: &'static Pernet<T>,
    data: &'a T,
}

impl<T: PernetData> core::ops::Deref for PernetRef<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.data
    }
}

impl<T: PernetData> Drop for PernetRef<'_, T> {
    fn drop(&mut self) {
        self.pernet.state.fetch_sub(USER, Ordering::Release);
    }
}

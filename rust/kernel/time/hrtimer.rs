// SPDX-License-Identifier: GPL-2.0

//! High-resolution timers (`struct hrtimer`) embedded in reference-counted objects.
//!
//! An [`HrTimer<T>`] is a field of a `T` that lives in an [`Arc`]. Starting the timer hands one
//! reference to the timer, which keeps the object alive until the callback has run or the
//! timer was cancelled; so a callback never meets a freed object, and dropping the last
//! reference elsewhere never races with a pending timer.
//!
//! The callback runs in softirq context (`HRTIMER_MODE_REL_SOFT`): it must not sleep.
//!
//! C header: [`include/linux/hrtimer.h`](srctree/include/linux/hrtimer.h).
//!
//! # Examples
//!
//! ```
//! use core::sync::atomic::{AtomicU32, Ordering};
//! use kernel::{
//!     impl_has_hr_timer,
//!     prelude::*,
//!     sync::{Arc, ArcBorrow},
//!     time::hrtimer::{HrTimer, HrTimerCallback},
//! };
//!
//! #[pin_data]
//! struct Beeper {
//!     #[pin]
//!     timer: HrTimer<Beeper>,
//!     beeps: AtomicU32,
//! }
//!
//! impl_has_hr_timer! {
//!     impl HasHrTimer for Beeper { self.timer }
//! }
//!
//! impl HrTimerCallback for Beeper {
//!     fn run(this: ArcBorrow<'_, Self>) {
//!         this.beeps.fetch_add(1, Ordering::Relaxed);
//!     }
//! }
//!
//! let b = Arc::pin_init(
//!     pin_init!(Beeper { timer <- HrTimer::new(), beeps: AtomicU32::new(0) }),
//!     GFP_KERNEL,
//! )?;
//! assert!(HrTimer::start(&b, 1_000_000_000));
//! // Armed already: the first expiry stands.
//! assert!(!HrTimer::start(&b, 1));
//! assert!(HrTimer::cancel(&b));
//! assert!(!HrTimer::cancel(&b));
//! assert_eq!(b.beeps.load(Ordering::Relaxed), 0);
//! # Ok::<(), Error>(())
//! ```

use crate::{
    bindings,
    init::PinInit,
    pin_init,
    prelude::pin_data,
    sync::{Arc, ArcBorrow},
    types::Opaque,
};
use core::{
    marker::PhantomData,
    sync::atomic::{AtomicBool, Ordering},
};

/// What an object does when its [`HrTimer`] expires. `'static`: the callback runs later, in
/// another context, when whatever the object borrowed may be gone.
pub trait HrTimerCallback: HasHrTimer + Send + Sync + Sized + 'static {
    /// Runs once per start of the timer that was not cancelled, in softirq context.
    fn run(this: ArcBorrow<'_, Self>);
}

/// An object that embeds an [`HrTimer`] of its own type; use [`impl_has_hr_timer!`] to
/// implement it.
///
/// # Safety
///
/// [`HasHrTimer::raw_get_timer`] returns a pointer to a field of type `HrTimer<Self>` of the
/// object, and [`HasHrTimer::timer_container_of`] is its inverse.
///
/// [`impl_has_hr_timer!`]: crate::impl_has_hr_timer
pub unsafe trait HasHrTimer: Sized {
    /// Returns a pointer to the timer field of the object at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a valid `Self`.
    unsafe fn raw_get_timer(ptr: *const Self) -> *const HrTimer<Self>;

    /// Returns a pointer to the object whose timer field is at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to the timer field of a valid `Self`.
    unsafe fn timer_container_of(ptr: *const HrTimer<Self>) -> *const Self;
}

/// Implements [`HasHrTimer`] for a type with an [`HrTimer`] field.
#[macro_export]
macro_rules! impl_has_hr_timer {
    (impl HasHrTimer for $self:ty { self.$field:ident }) => {
        // SAFETY: `raw_get_timer` projects to the field, which only compiles if the field is an
        // `HrTimer<Self>`, and `timer_container_of` subtracts the same field's offset.
        unsafe impl $crate::time::hrtimer::HasHrTimer for $self {
            unsafe fn raw_get_timer(
                ptr: *const Self,
            ) -> *const $crate::time::hrtimer::HrTimer<Self> {
                // SAFETY: The caller promises that `ptr` points to a valid `Self`.
                unsafe { ::core::ptr::addr_of!((*ptr).$field) }
            }

            unsafe fn timer_container_of(
                ptr: *const $crate::time::hrtimer::HrTimer<Self>,
            ) -> *const Self {
                // SAFETY: The caller promises that `ptr` points to the field of a `Self`.
                unsafe { $crate::container_of!(ptr, Self, $field) }
            }
        }
    };
}

/// A high-resolution timer of an object `T` in an [`Arc`], on `CLOCK_MONOTONIC`.
///
/// # Invariants
///
/// - `timer` was set up by `hrtimer_init` for a relative soft expiry, with `HrTimer::expired`
///   as its function, and is only started by [`HrTimer::start`].
/// - `armed` is `true` exactly while the timer owns one reference to the `Arc<T>` that holds
///   it: from the [`HrTimer::start`] that set it until the callback or a cancellation that
///   dequeued the timer clears it. The timer is queued only while `armed` is `true`.
#[pin_data]
#[repr(C)]
pub struct HrTimer<T> {
    #[pin]
    timer: Opaque<bindings::hrtimer>,
    armed: AtomicBool,
    _t: PhantomData<T>,
}

// SAFETY: The C timer may be started, cancelled and expire on any CPU; the only Rust state is an
// atomic flag.
unsafe impl<T: Send + Sync> Send for HrTimer<T> {}

// SAFETY: Every method takes `&self`-like access and synchronises through the hrtimer core's
// locks and the atomic flag.
unsafe impl<T: Send + Sync> Sync for HrTimer<T> {}

impl<T: HrTimerCallback> HrTimer<T> {
    /// Creates a timer that is not armed.
    pub fn new() -> impl PinInit<Self> {
        // INVARIANT: `hrtimer_init` sets the timer up and `expired` becomes its function; it is
        // not armed and owns no reference.
        pin_init!(Self {
            timer <- Opaque::ffi_init(|slot: *mut bindings::hrtimer| {
                // SAFETY: `slot` is valid for writes and pinned; `hrtimer_init` initialises all
                // of it, after which its function may be set.
                unsafe {
                    bindings::hrtimer_init(
                        slot,
                        bindings::CLOCK_MONOTONIC as i32,
                        bindings::hrtimer_mode_HRTIMER_MODE_REL_SOFT,
                    );
                    (*slot).function = Some(Self::expired);
                }
            }),
            armed: AtomicBool::new(false),
            _t: PhantomData,
        })
    }

    fn of(this: &Arc<T>) -> &Self {
        let ptr: *const T = &**this;
        // SAFETY: `ptr` points to the live `T` that `this` holds; by the `HasHrTimer` contract
        // the result is its timer field, which lives as long as `this`.
        unsafe { &*T::raw_get_timer(ptr) }
    }

    /// Arms the timer of `this` to expire `ns` nanoseconds from now; returns `false`, changing
    /// nothing, if it is armed already (the earlier expiry stands).
    pub fn start(this: &Arc<T>, ns: u64) -> bool {
        let timer = Self::of(this);
        if timer
            .armed
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        // INVARIANT: The timer now owns this reference, until the callback or a cancellation
        // that dequeues the timer takes it back.
        let _ = Arc::into_raw(this.clone());
        let ns = i64::try_from(ns).unwrap_or(i64::MAX);
        // SAFETY: The timer was set up by `new` and is pinned in `this`; it is not queued, as
        // `armed` was `false`.
        unsafe {
            bindings::hrtimer_start_range_ns(
                timer.timer.get(),
                ns,
                0,
                bindings::hrtimer_mode_HRTIMER_MODE_REL_SOFT,
            )
        };
        true
    }

    /// Disarms the timer of `this` if it is queued; returns whether it was. A callback already
    /// running is not waited for.
    pub fn try_cancel(this: &Arc<T>) -> bool {
        let timer = Self::of(this);
        // SAFETY: The timer was set up by `new` and lives as long as `this`.
        let dequeued = unsafe { bindings::hrtimer_try_to_cancel(timer.timer.get()) } == 1;
        if dequeued {
            timer.release();
        }
        dequeued
    }

    /// Disarms the timer of `this` and waits for a callback that is running; returns whether
    /// the timer was queued. Must not be called from the callback itself.
    pub fn cancel(this: &Arc<T>) -> bool {
        let timer = Self::of(this);
        // SAFETY: The timer was set up by `new` and lives as long as `this`; the caller is not
        // the callback, which `hrtimer_cancel` would wait for forever.
        let dequeued = unsafe { bindings::hrtimer_cancel(timer.timer.get()) } == 1;
        if dequeued {
            timer.release();
        }
        dequeued
    }

    /// Takes back the reference that the timer owned, after it was dequeued without running.
    fn release(&self) {
        let was = self.armed.swap(false, Ordering::AcqRel);
        if was {
            // SAFETY: By the type invariant, a timer that was queued (`armed`) owned one
            // reference to the `Arc<T>` that holds it, leaked by `start`; it is given back once.
            drop(unsafe { Arc::from_raw(T::timer_container_of(self)) });
        }
    }

    /// # Safety
    ///
    /// Called by the hrtimer core when a timer set up by [`HrTimer::new`] expires.
    unsafe extern "C" fn expired(ptr: *mut bindings::hrtimer) -> bindings::hrtimer_restart {
        // `timer` is the first field of a `repr(C)` `HrTimer<T>`.
        let timer = ptr.cast::<Self>().cast_const();
        // SAFETY: The timer only runs while armed (type invariant), when it owns a reference to
        // its `Arc<T>`, so the `HrTimer<T>` and the `T` around it are alive.
        let t = unsafe { T::timer_container_of(timer) };
        // SAFETY: As above: the timer is alive.
        unsafe { (*timer).armed.store(false, Ordering::Release) };
        // SAFETY: The reference the timer owned (type invariant), taken back once: the timer
        // was dequeued to run, so no cancellation takes it too. A `start` from here on leaks a
        // new one.
        let this = unsafe { Arc::from_raw(t) };
        T::run(this.as_arc_borrow());
        // The last reference may go here: the hrtimer core no longer touches a timer that
        // returns `HRTIMER_NORESTART` except to compare its address.
        drop(this);
        bindings::hrtimer_restart_HRTIMER_NORESTART
    }
}

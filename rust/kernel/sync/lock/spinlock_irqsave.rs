// SPDX-License-Identifier: GPL-2.0

//! A spinlock that disables local interrupts while held.
//!
//! This module allows Rust code to use the kernel's `spinlock_t` with `spin_lock_irqsave` and
//! `spin_unlock_irqrestore`, for data that code in interrupt or softirq context reaches too
//! (a plain [`SpinLock`](super::spinlock::SpinLock) held in process context would deadlock
//! against an interrupt on the same CPU that takes it).

/// Creates a [`SpinLockIrqSave`] initialiser with the given name and a newly-created lock
/// class.
#[macro_export]
macro_rules! new_spinlock_irqsave {
    ($inner:expr $(, $name:literal)? $(,)?) => {
        $crate::sync::SpinLockIrqSave::new(
            $inner, $crate::optional_name!($($name)?), $crate::static_lock_class!())
    };
}
pub use new_spinlock_irqsave;

/// A spinlock that saves and disables local interrupts while held.
///
/// Its guard restores the interrupt state when dropped; guards of such locks must be dropped
/// in the reverse order of their creation, which scoping gives. Never sleep while holding it.
///
/// # Examples
///
/// ```
/// use kernel::sync::{new_spinlock_irqsave, SpinLockIrqSave};
///
/// let counter = KBox::pin_init(new_spinlock_irqsave!(0u32), GFP_KERNEL)?;
/// *counter.lock() += 1;
/// assert_eq!(*counter.lock(), 1);
/// # Ok::<(), Error>(())
/// ```
pub type SpinLockIrqSave<T> = super::Lock<T, SpinLockIrqSaveBackend>;

/// A kernel `spinlock_t` lock backend that disables local interrupts while held.
pub struct SpinLockIrqSaveBackend;

// SAFETY: The underlying kernel `spinlock_t` object ensures mutual exclusion. `relock` uses the
// default implementation, which calls `lock` again: the same locking method.
unsafe impl super::Backend for SpinLockIrqSaveBackend {
    type State = bindings::spinlock_t;
    /// The interrupt state `spin_lock_irqsave` saved, restored on unlock.
    type GuardState = crate::ffi::c_ulong;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const crate::ffi::c_char,
        key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: The safety requirements ensure that `ptr` is valid for writes, and `name` and
        // `key` are valid for read indefinitely.
        unsafe { bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: The safety requirements of this function ensure that `ptr` points to valid
        // memory, and that it has been initialised before.
        unsafe { bindings::spin_lock_irqsave(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, flags: &Self::GuardState) {
        // SAFETY: The safety requirements of this function ensure that `ptr` is valid and that
        // the caller is the owner of the spinlock; `flags` is what its `lock` saved.
        unsafe { bindings::spin_unlock_irqrestore(ptr, *flags) }
    }
}

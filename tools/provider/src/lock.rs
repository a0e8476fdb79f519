//! A lock that one thread may hold across calls from C, which a `std::sync::Mutex` guard cannot
//! express: a send queue's, held by `ibv_post_send` for one call and by the work-request API
//! from `ibv_wr_start` to `ibv_wr_complete` or `ibv_wr_abort`, and a CQ's, held by
//! `ibv_poll_cq` for one call and by the extended CQ from `ibv_start_poll` to `ibv_end_poll`.
//! A futex word with three states (unlocked, locked, locked with waiters) keeps the
//! uncontended path free of syscalls.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::ptr::null;
use core::sync::atomic::{AtomicU32, Ordering};

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
const CONTENDED: u32 = 2;

/// A mutex around `T` that can be held from one call to another.
///
/// # Invariants
///
/// `value` is only accessed by the holder of the lock (`state != UNLOCKED`).
pub struct CallLock<T> {
    state: AtomicU32,
    value: UnsafeCell<T>,
}

// SAFETY: The lock hands out access to `value` to one thread at a time.
unsafe impl<T: Send> Sync for CallLock<T> {}
// SAFETY: Moving the lock moves the value; the state word holds no thread identity.
unsafe impl<T: Send> Send for CallLock<T> {}

impl<T> CallLock<T> {
    /// Creates an unlocked lock around `value`.
    pub const fn new(value: T) -> Self {
        Self {
            state: AtomicU32::new(UNLOCKED),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock for the lifetime of the returned guard.
    pub fn lock(&self) -> CallGuard<'_, T> {
        self.acquire();
        CallGuard { lock: self }
    }

    /// Takes the lock without a guard; [`CallLock::release`] gives it back.
    pub fn acquire(&self) {
        if self
            .state
            .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        // Mark the lock contended before sleeping, so that the holder wakes us on release.
        while self.state.swap(CONTENDED, Ordering::Acquire) != UNLOCKED {
            // SAFETY: A futex wait on a word we own; it returns at once if the word is no
            // longer `CONTENDED`.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.state.as_ptr(),
                    libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                    CONTENDED,
                    null::<libc::timespec>(),
                )
            };
        }
    }

    /// Gives back a lock taken with [`CallLock::acquire`].
    ///
    /// # Safety
    ///
    /// The calling code must hold the lock and must not use references from [`CallLock::get`]
    /// any more.
    pub unsafe fn release(&self) {
        if self.state.swap(UNLOCKED, Ordering::Release) == CONTENDED {
            // SAFETY: Wakes one waiter of a word we own.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.state.as_ptr(),
                    libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                    1,
                )
            };
        }
    }

    /// Returns the protected value.
    ///
    /// # Safety
    ///
    /// The calling code must hold the lock (taken with [`CallLock::acquire`]) for as long as it
    /// uses the reference, and must not make a second one.
    #[expect(
        clippy::mut_from_ref,
        reason = "exclusive through the lock, as the guard is"
    )]
    pub unsafe fn get(&self) -> &mut T {
        // SAFETY: The caller holds the lock (type invariant), so nobody else accesses `value`.
        unsafe { &mut *self.value.get() }
    }
}

/// Holds an [`CallLock`] until dropped.
pub struct CallGuard<'a, T> {
    lock: &'a CallLock<T>,
}

impl<T> Deref for CallGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: The guard holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for CallGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: The guard holds the lock and is borrowed mutably.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for CallGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: The guard took the lock; its references end with it.
        unsafe { self.lock.release() };
    }
}

#[cfg(test)]
mod tests {
    use super::CallLock;
    use std::sync::Arc;

    #[test]
    fn counts_under_contention() {
        let lock = Arc::new(CallLock::new(0u64));
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        if i % 2 == 0 {
                            *lock.lock() += 1;
                        } else {
                            lock.acquire();
                            // SAFETY: Held since `acquire`, released right after.
                            unsafe {
                                *lock.get() += 1;
                                lock.release();
                            }
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*lock.lock(), 80_000);
    }
}

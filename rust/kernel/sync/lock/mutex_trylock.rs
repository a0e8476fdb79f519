// SPDX-License-Identifier: GPL-2.0

//! Taking a [`Mutex`](super::mutex::Mutex) only when it is free.
//!
//! For callers with something better to do than sleep until the owner is done: a doorbell
//! whose work the owner is doing already, for instance, can leave that work to it.

use super::{mutex::MutexBackend, Guard, Lock};

impl<T: ?Sized> Lock<T, MutexBackend> {
    /// Acquires the mutex if it is free, without sleeping; returns `None` if it is held.
    ///
    /// Like `mutex_trylock()`, it must not be called in interrupt context.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::sync::new_mutex;
    ///
    /// let m = KBox::pin_init(new_mutex!(7u32), GFP_KERNEL)?;
    /// let held = m.lock();
    /// assert!(m.try_lock().is_none());
    /// drop(held);
    /// assert_eq!(m.try_lock().map(|g| *g), Some(7));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn try_lock(&self) -> Option<Guard<'_, T, MutexBackend>> {
        // SAFETY: The constructor of `Lock` initialised the mutex, whose memory is valid as
        // long as `self` is.
        if unsafe { bindings::mutex_trylock(self.state.get()) } == 0 {
            return None;
        }
        // SAFETY: The mutex was acquired just above and is owned by the caller now.
        Some(unsafe { Guard::new(self, ()) })
    }
}

// SPDX-License-Identifier: GPL-2.0

//! Work queues that their user allocates and owns.
//!
//! Work on a system queue can outlive whatever queued it unless someone flushes the whole
//! system queue, which other users share (and which the kernel warns against). A driver that
//! owns its queue drains exactly its own work when it drops the queue.
//!
//! C header: [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h).

use super::Queue;
use crate::{bindings, c_str, prelude::*, str::CStr};
use core::{ops::Deref, ptr::NonNull};

/// Flags of a new work queue (`WQ_*`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct QueueFlags(u32);

impl QueueFlags {
    /// No flags: a per-CPU queue.
    pub const NONE: Self = Self(0);
    /// Items are not bound to the CPU that queued them (`WQ_UNBOUND`).
    pub const UNBOUND: Self = Self(bindings::wq_flags_WQ_UNBOUND);
    /// The queue has a rescuer thread, for work that memory reclaim may wait on
    /// (`WQ_MEM_RECLAIM`).
    pub const MEM_RECLAIM: Self = Self(bindings::wq_flags_WQ_MEM_RECLAIM);
    /// Items run on workers of the highest priority (`WQ_HIGHPRI`, nice -20).
    pub const HIGHPRI: Self = Self(bindings::wq_flags_WQ_HIGHPRI);
}

impl core::ops::BitOr for QueueFlags {
    type Output = Self;

    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// A work queue owned by this value; dropping it drains and destroys the queue.
///
/// # Invariants
///
/// `ptr` is a work queue returned by `alloc_workqueue` that this value owns.
pub struct OwnedQueue {
    ptr: NonNull<bindings::workqueue_struct>,
}

// SAFETY: Work queues may be used and destroyed from any thread.
unsafe impl Send for OwnedQueue {}
// SAFETY: Queueing work through `&OwnedQueue` is thread-safe.
unsafe impl Sync for OwnedQueue {}

impl OwnedQueue {
    /// Allocates a queue called `name` (as `ps` shows its workers) with `flags`, running at
    /// most `max_active` items at once per CPU or pool (0: the default).
    pub fn new(name: &CStr, flags: QueueFlags, max_active: i32) -> Result<Self> {
        // SAFETY: The format takes exactly the one string argument passed, which outlives the
        // call (the queue copies the formatted name).
        let ptr = unsafe {
            bindings::alloc_workqueue(
                c_str!("%s").as_char_ptr(),
                flags.0,
                max_active,
                name.as_char_ptr(),
            )
        };
        // INVARIANT: A non-null result is a queue we own.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
        })
    }
}

impl Deref for OwnedQueue {
    type Target = Queue;

    fn deref(&self) -> &Queue {
        // SAFETY: The queue is valid while `self` owns it (type invariant).
        unsafe { Queue::from_raw(self.ptr.as_ptr()) }
    }
}

impl Drop for OwnedQueue {
    /// Waits for every item queued on the queue to finish, including items that queue
    /// themselves again while it drains, then frees the queue. Must not run on the queue itself.
    fn drop(&mut self) {
        // SAFETY: We own the queue (type invariant); nothing can queue on it afterwards, as
        // every `&Queue` borrowed from `self` has ended.
        unsafe { bindings::destroy_workqueue(self.ptr.as_ptr()) };
    }
}

// SPDX-License-Identifier: GPL-2.0

//! Kernel thread workers (`struct kthread_worker`): a thread of its owner's that runs queued
//! work items one at a time, in the order they were queued.
//!
//! The workers of a work queue are shared, and the most a queue can ask of the scheduler is a
//! nice value: a woken worker waits until the task running on its CPU has used its time slice.
//! A worker thread belongs to its owner, who can give it a short slice of its own, so that work
//! standing in for hardware (a NIC's receive engine) preempts a busy-polling task when it
//! arrives.
//!
//! A [`Work<T>`] is a field of a `T` that lives in an [`Arc`]. Queueing it hands one reference
//! to the worker, which gives it to [`WorkItem::run`]; so an item never runs on a freed object.
//!
//! C header: [`include/linux/kthread.h`](srctree/include/linux/kthread.h).
//!
//! # Examples
//!
//! ```
//! use core::sync::atomic::{AtomicU32, Ordering};
//! use kernel::{
//!     c_str, impl_has_kthread_work,
//!     kthread::{Work, WorkItem, Worker},
//!     prelude::*,
//!     sync::Arc,
//! };
//!
//! #[pin_data]
//! struct Counter {
//!     #[pin]
//!     work: Work<Counter>,
//!     runs: AtomicU32,
//! }
//!
//! impl_has_kthread_work! {
//!     impl HasWork for Counter { self.work }
//! }
//!
//! impl WorkItem for Counter {
//!     fn run(this: Arc<Self>) {
//!         this.runs.fetch_add(1, Ordering::Relaxed);
//!     }
//! }
//!
//! let worker = Worker::new(c_str!("kthread_doc"))?;
//! worker.set_normal_slice(-20, 100_000)?;
//! let c = Arc::pin_init(
//!     pin_init!(Counter { work <- Work::new(), runs: AtomicU32::new(0) }),
//!     GFP_KERNEL,
//! )?;
//! assert!(worker.enqueue(c.clone()).is_ok());
//! worker.flush();
//! assert_eq!(c.runs.load(Ordering::Relaxed), 1);
//! # Ok::<(), Error>(())
//! ```

use crate::{
    bindings, c_str,
    error::{from_err_ptr, to_result},
    init::PinInit,
    pin_init,
    prelude::*,
    str::CStr,
    sync::Arc,
    types::Opaque,
};
use core::{marker::PhantomData, ptr::NonNull};

/// What an object does when its [`Work`] with this `ID` runs. `'static`: the item runs later,
/// on another thread, when whatever the object borrowed may be gone.
pub trait WorkItem<const ID: u64 = 0>: HasWork<ID> + Send + Sync + Sized + 'static {
    /// Runs in the worker's thread, which may sleep, with the reference that queueing the
    /// item handed over.
    fn run(this: Arc<Self>);
}

/// An object that embeds a [`Work`] of its own type with this `ID`; use
/// [`impl_has_kthread_work!`] to implement it.
///
/// # Safety
///
/// [`HasWork::raw_get_work`] returns a pointer to a field of type `Work<Self, ID>` of the
/// object, and [`HasWork::work_container_of`] is its inverse.
///
/// [`impl_has_kthread_work!`]: crate::impl_has_kthread_work
pub unsafe trait HasWork<const ID: u64 = 0>: Sized {
    /// Returns a pointer to the work field of the object at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a valid `Self`.
    unsafe fn raw_get_work(ptr: *const Self) -> *const Work<Self, ID>;

    /// Returns a pointer to the object whose work field is at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to the work field of a valid `Self`.
    unsafe fn work_container_of(ptr: *const Work<Self, ID>) -> *const Self;
}

/// Implements [`HasWork`] for a type with a [`Work`] field.
#[macro_export]
macro_rules! impl_has_kthread_work {
    (impl HasWork for $self:ty { self.$field:ident }) => {
        $crate::impl_has_kthread_work! { impl HasWork<0> for $self { self.$field } }
    };
    (impl HasWork<$id:tt> for $self:ty { self.$field:ident }) => {
        // SAFETY: `raw_get_work` projects to the field, which only compiles if the field is a
        // `Work<Self, ID>`, and `work_container_of` subtracts the same field's offset.
        unsafe impl $crate::kthread::HasWork<{ $id }> for $self {
            unsafe fn raw_get_work(
                ptr: *const Self,
            ) -> *const $crate::kthread::Work<Self, { $id }> {
                // SAFETY: The caller promises that `ptr` points to a valid `Self`.
                unsafe { ::core::ptr::addr_of!((*ptr).$field) }
            }

            unsafe fn work_container_of(
                ptr: *const $crate::kthread::Work<Self, { $id }>,
            ) -> *const Self {
                // SAFETY: The caller promises that `ptr` points to the field of a `Self`.
                unsafe { $crate::container_of!(ptr, Self, $field) }
            }
        }
    };
}

/// A work item of an object `T` in an [`Arc`], for a [`Worker`].
///
/// An item is pending at most once: queueing it again before it runs changes nothing.
///
/// # Invariants
///
/// `work` was set up by `kthread_init_work` with `Work::<T, ID>::run` as its function, and is
/// only queued by [`Worker::enqueue`], which hands the worker one reference to the `Arc<T>`
/// that holds it for as long as it is pending.
#[pin_data]
#[repr(C)]
pub struct Work<T, const ID: u64 = 0> {
    #[pin]
    work: Opaque<bindings::kthread_work>,
    _t: PhantomData<T>,
}

// SAFETY: The C work item may be queued and run from any thread; it has no Rust state.
unsafe impl<T: Send + Sync, const ID: u64> Send for Work<T, ID> {}

// SAFETY: Queueing takes the worker's lock; nothing else touches the item through `&Work`.
unsafe impl<T: Send + Sync, const ID: u64> Sync for Work<T, ID> {}

impl<T: WorkItem<ID>, const ID: u64> Work<T, ID> {
    /// Creates a work item that is not pending.
    pub fn new() -> impl PinInit<Self> {
        // INVARIANT: `kthread_init_work` sets the item up with `run` as its function.
        pin_init!(Self {
            work <- Opaque::ffi_init(|slot: *mut bindings::kthread_work| {
                // SAFETY: `slot` is valid for writes and pinned; `kthread_init_work` initialises
                // all of it.
                unsafe { bindings::kthread_init_work(slot, Some(Self::run)) }
            }),
            _t: PhantomData,
        })
    }

    /// # Safety
    ///
    /// Called by a worker thread for an item set up by [`Work::new`] that was pending.
    unsafe extern "C" fn run(ptr: *mut bindings::kthread_work) {
        // `work` is the first field of a `repr(C)` `Work<T, ID>`.
        let work = ptr.cast::<Self>().cast_const();
        // SAFETY: A pending item owns a reference to its `Arc<T>` (type invariant), so the
        // `Work` and the `T` around it are alive.
        let t = unsafe { T::work_container_of(work) };
        // SAFETY: The reference the pending item owned (type invariant), taken back once: the
        // worker took the item off its list before calling this, so queueing it again from
        // here on hands over a new one.
        T::run(unsafe { Arc::from_raw(t) });
    }
}

/// A kernel thread that runs [`Work`] items; dropping it runs what is queued and stops the
/// thread.
///
/// # Invariants
///
/// `ptr` is a worker returned by `kthread_create_worker` that this value owns; its thread runs
/// until the value is dropped.
pub struct Worker {
    ptr: NonNull<bindings::kthread_worker>,
}

// SAFETY: A worker may be used and destroyed from any thread.
unsafe impl Send for Worker {}
// SAFETY: Queueing and flushing through `&Worker` take the worker's lock.
unsafe impl Sync for Worker {}

impl Worker {
    /// Starts a thread called `name` (as `ps` shows it, cut to 15 bytes) of the normal
    /// scheduling policy.
    pub fn new(name: &CStr) -> Result<Self> {
        // SAFETY: The format takes exactly the one string argument passed, which outlives the
        // call (the thread's name is a copy).
        let ptr = from_err_ptr(unsafe {
            bindings::kthread_create_worker(0, c_str!("%s").as_char_ptr(), name.as_char_ptr())
        })?;
        // INVARIANT: A result that is not an error is a worker we own, its thread started.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
        })
    }

    /// Queues `item`'s [`Work`] with `ID`; gives `item` back if it is pending already (it will
    /// run once for both). An item belongs to the first worker it is queued on: the kernel
    /// warns if it is queued on another.
    pub fn enqueue<T: WorkItem<ID>, const ID: u64>(&self, item: Arc<T>) -> Result<(), Arc<T>> {
        let t = Arc::into_raw(item);
        // SAFETY: `t` points to the `T` that the leaked reference keeps alive.
        let work = unsafe { T::raw_get_work(t) };
        // SAFETY: By the `HasWork` contract `work` is the `Work<T, ID>` field of that `T`.
        let field = unsafe { core::ptr::addr_of!((*work).work) };
        let raw = Opaque::raw_get(field);
        // SAFETY: The worker is alive (type invariant) and `raw` was set up by `Work::new`,
        // pinned in the `Arc`.
        if unsafe { bindings::kthread_queue_work(self.ptr.as_ptr(), raw) } {
            // INVARIANT: The pending item owns the reference leaked above, until it runs.
            Ok(())
        } else {
            // SAFETY: Not queued: the reference leaked above is still ours.
            Err(unsafe { Arc::from_raw(t) })
        }
    }

    /// Keeps the thread in the normal policy at `nice`, with a time slice of `slice_ns`, which
    /// the scheduler holds to 0.1-100 ms. A woken thread with a slice shorter than the running
    /// task's preempts it when it is due first (EEVDF's `PREEMPT_SHORT`), where with the
    /// default slice it waits until that task has used its own, a scheduler tick or more; and
    /// unlike a real-time thread it is woken on an idle CPU if there is one.
    pub fn set_normal_slice(&self, nice: i32, slice_ns: u64) -> Result {
        let attr = bindings::sched_attr {
            size: core::mem::size_of::<bindings::sched_attr>() as u32,
            sched_policy: bindings::SCHED_NORMAL,
            sched_nice: nice,
            sched_runtime: slice_ns,
            ..Default::default()
        };
        // SAFETY: The worker is ours and its thread runs until the drop (type invariant), so
        // `task` is set and the task is alive; `attr` is valid and outlives the call.
        to_result(unsafe { bindings::sched_setattr_nocheck((*self.ptr.as_ptr()).task, &attr) })
    }

    /// Waits until every item queued before the call has run. Must not be called from an item
    /// of this worker, which would wait for itself.
    pub fn flush(&self) {
        // SAFETY: The worker is alive (type invariant).
        unsafe { bindings::kthread_flush_worker(self.ptr.as_ptr()) };
    }
}

impl Drop for Worker {
    /// Runs every item queued so far, then stops the thread. An item queued while the worker
    /// is being dropped (by an item that queues itself again) may never run and keeps its
    /// reference, and the kernel warns. Must not run on the worker's own thread.
    fn drop(&mut self) {
        // SAFETY: We own the worker (type invariant); nothing can queue on it afterwards, as
        // every `&Worker` borrowed from `self` has ended.
        unsafe { bindings::kthread_destroy_worker(self.ptr.as_ptr()) };
    }
}

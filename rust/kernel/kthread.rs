// SPDX-License-Identifier: GPL-2.0

//! Kernel threads of their owner's: a [`Thread`] runs one function until its owner stops it.
//!
//! The workers of a work queue are shared, and the most a queue can ask of the scheduler is a
//! nice value: a woken worker waits until the task running on its CPU has used its time slice.
//! A thread belongs to its owner, who can give it a short slice of its own, so that work
//! standing in for hardware (a NIC's receive engine) preempts a busy-polling task when it
//! arrives.
//!
//! C header: [`include/linux/kthread.h`](srctree/include/linux/kthread.h).
//!
//! # Examples
//!
//! ```
//! use core::sync::atomic::{AtomicU32, Ordering};
//! use kernel::{c_str, kthread::Thread, new_condvar, new_mutex, prelude::*, sync::*};
//!
//! #[pin_data]
//! struct Mailbox {
//!     #[pin]
//!     letters: Mutex<u32>,
//!     #[pin]
//!     posted: CondVar,
//!     read: AtomicU32,
//! }
//!
//! let mb = Arc::pin_init(
//!     pin_init!(Mailbox {
//!         letters <- new_mutex!(0),
//!         posted <- new_condvar!(),
//!         read: AtomicU32::new(0),
//!     }),
//!     GFP_KERNEL,
//! )?;
//! let reader = mb.clone();
//! let thread = Thread::spawn(c_str!("kthread_doc"), move |running| loop {
//!     let mut letters = reader.letters.lock();
//!     while *letters == 0 && !running.should_stop() {
//!         let _ = reader.posted.wait_interruptible(&mut letters);
//!     }
//!     if running.should_stop() {
//!         return;
//!     }
//!     reader.read.fetch_add(*letters, Ordering::Relaxed);
//!     *letters = 0;
//! })?;
//! thread.set_normal_slice(-20, 100_000)?;
//! *mb.letters.lock() = 3;
//! mb.posted.notify_one();
//! while mb.read.load(Ordering::Relaxed) != 3 {
//!     kernel::task::cond_resched();
//! }
//! drop(thread);
//! # Ok::<(), Error>(())
//! ```

use crate::{
    bindings, c_str,
    error::{code::EINTR, from_err_ptr, to_result},
    prelude::*,
    str::CStr,
};
use core::{
    ffi::{c_int, c_void},
    marker::PhantomData,
    ptr::NonNull,
};

/// Keeps `task` in the normal policy at `nice`, with a time slice of `slice_ns`.
///
/// # Safety
///
/// `task` is alive.
unsafe fn set_normal_slice(task: *mut bindings::task_struct, nice: i32, slice_ns: u64) -> Result {
    let attr = bindings::sched_attr {
        size: core::mem::size_of::<bindings::sched_attr>() as u32,
        sched_policy: bindings::SCHED_NORMAL,
        sched_nice: nice,
        sched_runtime: slice_ns,
        ..Default::default()
    };
    // SAFETY: The caller promises that `task` is alive; `attr` is valid and outlives the call.
    to_result(unsafe { bindings::sched_setattr_nocheck(task, &attr) })
}

/// A kernel thread of its owner's that runs one function; dropping it stops the thread.
///
/// The function runs until it returns or [`Running::should_stop`] says to; a thread that sleeps
/// must wait interruptibly (as [`CondVar::wait_interruptible`] does), so that the stop wakes it.
///
/// # Invariants
///
/// `task` is a kernel thread made by `kthread_create_on_node` and started, of which this value
/// holds a reference and which nothing else stops. `start` is the box that thread's start
/// function takes; until the thread has run that, the box is leaked and [`Thread::drop`] frees
/// it with `free`.
///
/// [`CondVar::wait_interruptible`]: crate::sync::CondVar::wait_interruptible
pub struct Thread {
    task: NonNull<bindings::task_struct>,
    start: *mut c_void,
    free: unsafe fn(*mut c_void),
}

// SAFETY: A thread may be stopped from any thread but its own (which `drop` documents).
unsafe impl Send for Thread {}
// SAFETY: Nothing but `drop` uses the fields; `set_normal_slice` goes through the scheduler.
unsafe impl Sync for Thread {}

impl Thread {
    /// Starts a thread called `name` (as `ps` shows it, cut to 15 bytes) of the normal
    /// scheduling policy that runs `f`.
    pub fn spawn<F: FnOnce(&Running) + Send + 'static>(name: &CStr, f: F) -> Result<Self> {
        let start = KBox::into_raw(KBox::new(f, GFP_KERNEL)?).cast::<c_void>();
        // SAFETY: `start::<F>` takes the box at `start`, which outlives the thread (the thread
        // frees it). The format takes exactly the one string argument passed, which outlives
        // the call (the thread's name is a copy).
        let task = from_err_ptr(unsafe {
            bindings::kthread_create_on_node(
                Some(Self::start::<F>),
                start,
                bindings::NUMA_NO_NODE,
                c_str!("%s").as_char_ptr(),
                name.as_char_ptr(),
            )
        });
        let task = match task.and_then(|t| NonNull::new(t).ok_or(ENOMEM)) {
            Ok(task) => task,
            Err(e) => {
                // SAFETY: No thread was made: the box is ours again.
                drop(unsafe { KBox::from_raw(start.cast::<F>()) });
                return Err(e);
            }
        };
        // SAFETY: A new kernel thread that has not run `start` yet: alive, and ours to hold
        // and wake.
        unsafe {
            bindings::get_task_struct(task.as_ptr());
            bindings::wake_up_process(task.as_ptr());
        }
        // INVARIANT: The thread is started and we hold a reference; the box is the thread's.
        Ok(Self {
            task,
            start,
            free: Self::free::<F>,
        })
    }

    /// # Safety
    ///
    /// Called once, by the thread [`Thread::spawn`] made, with the box it leaked.
    unsafe extern "C" fn start<F: FnOnce(&Running)>(data: *mut c_void) -> c_int {
        // SAFETY: The caller promises that `data` is the box, which nothing else frees once
        // the thread has run this (`drop` learns so from `kthread_stop`).
        let f = KBox::into_inner(unsafe { KBox::from_raw(data.cast::<F>()) });
        // INVARIANT: On the thread `spawn` made.
        f(&Running {
            _not_send: PhantomData,
        });
        0
    }

    /// # Safety
    ///
    /// `data` is the box [`Thread::spawn`] leaked for an `F`, which nothing else frees.
    unsafe fn free<F>(data: *mut c_void) {
        // SAFETY: The caller promises that the box is ours to free.
        drop(unsafe { KBox::from_raw(data.cast::<F>()) });
    }

    /// Keeps the thread in the normal policy at `nice`, with a time slice of `slice_ns`, which
    /// the scheduler holds to 0.1-100 ms. A woken thread with a slice shorter than the running
    /// task's preempts it when it is due first (EEVDF's `PREEMPT_SHORT`), where with the
    /// default slice it waits until that task has used its own, a scheduler tick or more; and
    /// unlike a real-time thread it is woken on an idle CPU if there is one.
    pub fn set_normal_slice(&self, nice: i32, slice_ns: u64) -> Result {
        // SAFETY: We hold a reference to the task (type invariant).
        unsafe { set_normal_slice(self.task.as_ptr(), nice, slice_ns) }
    }
}

impl Drop for Thread {
    /// Tells the thread to stop, wakes it and waits until it has returned. Must not run on the
    /// thread itself, which would wait for itself.
    fn drop(&mut self) {
        // SAFETY: The thread is ours to stop and we hold a reference (type invariant), so the
        // task is alive even if the thread has returned.
        let ret = unsafe { bindings::kthread_stop(self.task.as_ptr()) };
        if ret == EINTR.to_errno() {
            // Stopped before it ran `start`, which never runs now.
            // SAFETY: The box was never taken (type invariant), and is freed only here.
            unsafe { (self.free)(self.start) };
        }
        // SAFETY: The reference `spawn` took.
        unsafe { bindings::put_task_struct(self.task.as_ptr()) };
    }
}

/// What the function of a [`Thread`] is given: the thread it runs on.
///
/// # Invariants
///
/// Exists only on the kernel thread of a [`Thread`], while its function runs.
pub struct Running {
    _not_send: PhantomData<*mut ()>,
}

impl Running {
    /// Whether the function is to return: the thread's owner is dropping the [`Thread`].
    pub fn should_stop(&self) -> bool {
        // SAFETY: The current task is a kernel thread that `kthread_create_on_node` made (type
        // invariant), which is what `kthread_should_stop` needs.
        unsafe { bindings::kthread_should_stop() }
    }
}

// SPDX-License-Identifier: GPL-2.0

//! Rate limits: at most a burst of events per interval, as the kernel counts them for its log
//! (`struct ratelimit_state`).
//!
//! C header: [`include/linux/ratelimit.h`](srctree/include/linux/ratelimit.h).
//!
//! ```
//! use kernel::{c_str, ratelimit::Ratelimit, sync::Arc};
//!
//! let limit = Arc::pin_init(Ratelimit::new(c_str!("doctest"), 60_000, 3), GFP_KERNEL)?;
//! let allowed = (0..10).filter(|_| limit.allow()).count();
//! assert_eq!(allowed, 3);
//! assert_eq!(limit.name().as_bytes(), b"doctest");
//! # Ok::<(), Error>(())
//! ```

use crate::{
    bindings,
    prelude::*,
    str::{CStr, CString},
    time::msecs_to_jiffies,
    types::Opaque,
};

/// At most `burst` events per interval; the kernel log says how many were suppressed when the
/// first event of a later interval comes.
///
/// # Invariants
///
/// `state` was initialised by `ratelimit_state_init` and stays where it is (pinned).
#[pin_data]
pub struct Ratelimit {
    #[pin]
    state: Opaque<bindings::ratelimit_state>,
    /// A copy of its own, so that a limit may be named after something that comes and goes
    /// (a device).
    name: CString,
}

// SAFETY: Every change to the state happens under its own lock, taken with interrupts off, so
// the value may be used from any thread and any context.
unsafe impl Send for Ratelimit {}
// SAFETY: See `Send`.
unsafe impl Sync for Ratelimit {}

impl Ratelimit {
    /// A limit of `burst` events per `interval_ms` milliseconds; `name` is what the kernel log
    /// calls it when it reports suppressed events.
    pub fn new(name: &CStr, interval_ms: u32, burst: u32) -> impl PinInit<Self, Error> + '_ {
        let interval = i32::try_from(msecs_to_jiffies(interval_ms)).unwrap_or(i32::MAX);
        let burst = i32::try_from(burst).unwrap_or(i32::MAX);
        try_pin_init!(Self {
            name: CString::try_from_fmt(crate::fmt!("{}", name))?,
            state <- Opaque::ffi_init(move |slot| {
                // SAFETY: `ratelimit_state_init` initialises all of the state in place, its lock
                // included; the slot is pinned memory for it.
                unsafe { bindings::ratelimit_state_init(slot, interval, burst) }
            }),
        })
    }

    /// The kernel log's own limit: 10 events per 5 seconds.
    pub fn default_for(name: &CStr) -> impl PinInit<Self, Error> + '_ {
        Self::new(name, 5000, 10)
    }

    /// Whether one more event may pass now; counts it as suppressed if not.
    pub fn allow(&self) -> bool {
        // SAFETY: The state is initialised and pinned (type invariant); `___ratelimit` takes
        // its lock. `name` is a NUL-terminated string that the call only reads.
        unsafe { bindings::___ratelimit(self.state.get(), self.name.as_char_ptr()) != 0 }
    }

    /// What the kernel log calls the limit.
    pub fn name(&self) -> &CStr {
        &self.name
    }
}

// SPDX-License-Identifier: GPL-2.0-only

//! The time a pass over a send queue works with: read from the clock once, and only if the
//! pass needs it (a retry or a timeout to check or to set). Most passes need none, and on a
//! machine whose clocksource is slow to read (an emulated HPET) a read costs more than the rest
//! of a small message.

use core::cell::Cell;
use kernel::time::Ktime;

/// `ktime` (ns) of a pass, read on first use.
pub(crate) struct Now(Cell<Option<i64>>);

impl Now {
    pub(crate) fn new() -> Self {
        Self(Cell::new(None))
    }

    /// The time, read from the clock the first time it is asked for.
    pub(crate) fn get(&self) -> i64 {
        match self.0.get() {
            Some(t) => t,
            None => {
                let t = Ktime::ktime_get().to_ns();
                self.0.set(Some(t));
                t
            }
        }
    }
}

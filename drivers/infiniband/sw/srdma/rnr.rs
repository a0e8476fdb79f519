// SPDX-License-Identifier: GPL-2.0-only

//! Receiver-not-ready retries of RC send queues.
//!
//! A SEND (or RDMA WRITE with immediate) that finds no receive WQE is answered, on a wire, with
//! an RNR NAK carrying the responder's `min_rnr_timer`; the requester waits that long and tries
//! the same WQE again, `rnr_retry` times (7: without end) before it completes it with
//! `RNR_RETRY_EXC_ERR`. srdma does the same: the send queue stops at the WQE, and the device's
//! worker processes it again when the time is up.

use crate::{clock::Now, trace};
use core::sync::atomic::{AtomicI64, AtomicU8, Ordering};

/// `rnr_retry` value that retries without end.
const INFINITE: u8 = 7;

/// Marks a retry budget not yet taken from the QP's attributes (the WQE at the head has not
/// been refused yet).
const FRESH: u8 = u8::MAX;

/// The RNR NAK timer of IBA table 45, in microseconds, by the 5-bit `min_rnr_timer` code.
const TIMER_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

/// Returns the wait of `min_rnr_timer` code `code`, in nanoseconds.
pub(crate) fn timer_ns(code: u8) -> i64 {
    i64::from(TIMER_US[usize::from(code & 31)]) * 1000
}

/// The RNR state of a send queue; changed only under the SQ lock.
pub(crate) struct RnrState {
    /// Retries left for the WQE at the head, or `FRESH`.
    left: AtomicU8,
    /// `ktime` (ns) before which the head WQE is not tried again; 0 when not waiting.
    until: AtomicI64,
}

/// What to do with a WQE the responder refused for want of a receive WQE.
pub(crate) enum Verdict {
    /// Try again at this `ktime` (ns).
    RetryAt(i64),
    /// No retries left: complete it with `RNR_RETRY_EXC_ERR`.
    GiveUp,
}

impl RnrState {
    pub(crate) fn new() -> Self {
        Self {
            left: AtomicU8::new(FRESH),
            until: AtomicI64::new(0),
        }
    }

    /// Whether the head WQE is waiting for its retry time at `now`.
    pub(crate) fn waiting(&self, now: &Now) -> bool {
        let until = self.until.load(Ordering::Relaxed);
        until != 0 && until > now.get()
    }

    /// Records a refusal at `now` of QP `qpn` with `rnr_retry` retries whose responder asked
    /// for `timer_code`.
    pub(crate) fn refused(&self, qpn: u32, now: i64, rnr_retry: u8, timer_code: u8) -> Verdict {
        let left = match self.left.load(Ordering::Relaxed) {
            FRESH => rnr_retry,
            left => left,
        };
        if left == 0 {
            self.reset();
            return Verdict::GiveUp;
        }
        if left != INFINITE {
            self.left.store(left - 1, Ordering::Relaxed);
        } else {
            self.left.store(INFINITE, Ordering::Relaxed);
        }
        let wait = timer_ns(timer_code);
        trace::srdma_rnr_wait(qpn, self.left.load(Ordering::Relaxed).into(), wait as u64);
        let at = now.saturating_add(wait);
        self.until.store(at, Ordering::Relaxed);
        Verdict::RetryAt(at)
    }

    /// The head WQE went through (or the queue was reset): the next refusal starts afresh.
    /// The retries left for the WQE at the head (`None`: it was never refused) and how long
    /// it still waits (ns), for `rdma resource show qp -dd`.
    pub(crate) fn show(&self, now: i64) -> (Option<u8>, i64) {
        let left = Some(self.left.load(Ordering::Relaxed)).filter(|&l| l != FRESH);
        (left, (self.until.load(Ordering::Relaxed) - now).max(0))
    }

    pub(crate) fn reset(&self) {
        self.left.store(FRESH, Ordering::Relaxed);
        self.until.store(0, Ordering::Relaxed);
    }
}

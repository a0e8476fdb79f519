// SPDX-License-Identifier: GPL-2.0-only

//! The packets of a message, handed to the IP layer a burst at a time.
//!
//! A packet handed over alone to a peer on this host (behind a veth or the loopback device)
//! is received at once on this CPU, in the softirq that ends the hand-over, and wakes the peer
//! device's receive thread; that thread takes the CPU at the sender's next allocation and goes
//! back to sleep after the one packet: two context switches a packet, the most of what a long
//! message costs when the receive thread shares the sender's CPU. A burst is built first,
//! allocating as it may, then handed over with softirqs held off, so that its receive
//! processing runs once and wakes the receive thread once for all of it.
//!
//! A requester's burst spans the WQEs of a run of its send queue (a list of one-packet WRITEs
//! is one burst), and goes before the lock that orders its PSNs does (`requester::Locked`).

use super::Ready;
use kernel::{bh, prelude::*, task::cond_resched};

/// Packets per burst: a 64 KiB message at a 4096-byte MTU is one burst.
const BURST: usize = 16;

/// Packets built and not handed over yet, oldest first.
///
/// # Invariants
///
/// `ready[..len]` are `Some`, the rest `None`.
pub(crate) struct Burst {
    ready: [Option<Ready>; BURST],
    len: usize,
}

impl Burst {
    pub(crate) fn new() -> Self {
        // INVARIANT: Empty.
        Self {
            ready: core::array::from_fn(|_| None),
            len: 0,
        }
    }

    /// Adds packet `p`; a burst that is then full is handed over.
    pub(crate) fn push(&mut self, p: Ready) -> Result {
        // INVARIANT: A full burst is handed over before `push` returns, so `len < BURST` here.
        self.ready[self.len] = Some(p);
        self.len += 1;
        if self.len == BURST {
            return self.flush();
        }
        Ok(())
    }

    /// Hands the packets over in order; after one fails, the rest are dropped and the error
    /// returned, as if sending had stopped there. Then gives the CPU up if the scheduler asks:
    /// a message may be gigabytes of packets, and a retransmission sends them again.
    pub(crate) fn flush(&mut self) -> Result {
        if self.len == 0 {
            return Ok(());
        }
        let mut sent = Ok(());
        {
            let _held = bh::disable();
            for slot in &mut self.ready[..self.len] {
                if let Some(p) = slot.take() {
                    if sent.is_ok() {
                        sent = p.send();
                    }
                }
            }
        }
        // INVARIANT: Every slot was taken.
        self.len = 0;
        cond_resched();
        sent
    }
}

// SPDX-License-Identifier: GPL-2.0-only

//! Hardware counters: what the device did, exactly, shown in
//! `/sys/class/infiniband/<dev>/ports/1/hw_counters/` and by `rdma statistic`.
//!
//! Every QP counts into blocks of its own ([`QpCounters`]): the send side into one that only
//! the holder of the QP's SQ lock writes, the receive side into one that only the holder of
//! the lock of its receive queue (its RQ's or its SRQ's) writes. With one writer at a time an
//! increment is a plain load and store, no locked instruction, on cache lines no other QP
//! writes. The one count other QPs make, `rcvd_pkts` of a destination, is an atomic add. A
//! read sums the blocks of the device's QPs and the counts that destroyed QPs left behind
//! ([`DeviceCounters`]); reads are rare, so the work goes there.
//! Documentation/infiniband/srdma.rst says what increments each counter.

use crate::{
    qp::QpShared,
    table::Table,
    wc::{WcStatus, WrOpcode, WC_RECV_BIT},
};
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::{
    c_str, new_mutex,
    prelude::*,
    rdma::{stats::Desc, uapi::srdma_cqe},
    sync::{Arc, Mutex},
};

/// Declares the counters: the [`Counter`] names and the table of their names for ib_core, in
/// one order, so that the two cannot disagree.
macro_rules! counters {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// One counter; the value is its index in [`DESCS`] and in a [`Counters`] block.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub(crate) enum Counter {
            $($(#[$doc])* $variant,)*
        }

        /// The names of the counters, in the order of [`Counter`].
        pub(crate) static DESCS: [Desc; NUM] = [$(Desc::new(c_str!($name)),)*];

        /// The number of counters.
        pub(crate) const NUM: usize = [$(stringify!($variant)),*].len();
    };
}

counters! {
    /// Requests the requester sent: one per message to an srdma device on this host (loopback
    /// has no MTU segmentation and no acknowledgement packets), one per packet on the wire.
    SentPkts => "sent_pkts",
    /// Request messages that reached a QP of this device.
    RcvdPkts => "rcvd_pkts",
    /// SEND and SEND with immediate WQEs that completed successfully.
    RdmaSends => "rdma_sends",
    /// Successful receive completions (SEND, RDMA WRITE with immediate).
    RdmaRecvs => "rdma_recvs",
    /// Messages that needed a receive WQE and found none posted.
    OutOfBuffer => "out_of_buffer",
    /// RNR NAKs received by RC requesters.
    RcvdRnrErr => "rcvd_rnr_err",
    /// RNR NAKs sent by RC responders.
    SendRnrErr => "send_rnr_err",
    /// RC WQEs that gave up because the destination did not answer.
    RetryExceededErr => "retry_exceeded_err",
    /// RC WQEs that gave up after RNR NAKs.
    RetryRnrExceededErr => "retry_rnr_exceeded_err",
    /// SEND and RDMA WRITE WQEs whose payload was inline in the WQE.
    InlinePosts => "inline_posts",
    /// Payload bytes of [`Counter::InlinePosts`].
    InlineBytes => "inline_bytes",
    /// SEND and RDMA WRITE WQEs whose payload was gathered from SGEs.
    SgePosts => "sge_posts",
    /// Payload bytes of [`Counter::SgePosts`].
    SgeBytes => "sge_bytes",
    /// Inline requests refused for size (by the provider; stays 0 until it reports them).
    #[expect(dead_code, reason = "no mechanism reports it yet")]
    InlineRefused => "inline_refused",
    /// Kicks that found new WQEs behind the SQ doorbell.
    Doorbells => "doorbells",
    /// `post_send` calls of user QPs into the engine (syscalls).
    Kicks => "kicks",
    /// Wake-ups of the device's doorbell poller by a kick.
    PollerWakeups => "poller_wakeups",
    /// Times the device's doorbell poller went to sleep, idle.
    PollerSleeps => "poller_sleeps",
    /// CQEs written to a CQ.
    Completions => "completions",
    /// Error completions with `IBV_WC_LOC_PROT_ERR`.
    ErrLocalProt => "err_local_prot",
    /// Error completions with `IBV_WC_REM_ACCESS_ERR`.
    ErrRemoteAccess => "err_remote_access",
    /// Error completions with `IBV_WC_LOC_LEN_ERR`.
    ErrLength => "err_length",
    /// Completions with `IBV_WC_WR_FLUSH_ERR`.
    ErrFlush => "err_flush",
    /// CQEs lost because their CQ was full.
    CqOverflows => "cq_overflows",
    /// Ring contents refused as invalid: producer indices beyond the ring, unknown opcodes,
    /// more SGEs or inline bytes than the queue was created for.
    RingErrors => "ring_errors",
    /// Packets the RoCEv2 transport could not hand to the IP layer (no route, no memory,
    /// dropped on the way out).
    TxErrors => "send_err",
    /// Received RoCEv2 packets dropped for a bad ICRC.
    IcrcErrors => "rx_icrc_errors",
    /// Received packets dropped as malformed: IP or UDP lengths, transport headers.
    RxMalformed => "rx_malformed",
    /// Received packets dropped as not for the device: another IP address, an unknown QP, a
    /// QP that does not take their transport service.
    RxNotOurs => "rx_not_ours",
    /// Received packets dropped because the device's receive backlog was full.
    RxDropped => "rx_dropped",
    /// RC requests that arrived with a PSN ahead of the expected one (packets lost before
    /// them); the first of a gap is answered with a PSN sequence error NAK.
    OutOfSequence => "out_of_sequence",
    /// RC requests that arrived again (their PSN behind the expected one): answered again,
    /// not carried out again.
    DuplicateRequest => "duplicate_request",
    /// Times an RC requester's local ACK timeout ran out with packets unacknowledged.
    LocalAckTimeoutErr => "local_ack_timeout_err",
    /// PSN sequence error NAKs received by RC requesters.
    PacketSeqErr => "packet_seq_err",
}

/// A block of counters with one writer at a time: the holder of the lock that owns the block
/// (the QP's SQ lock for [`QpCounters::send`], its receive queue's lock for
/// [`QpCounters::recv`]). Readers may read it at any time and see each counter's latest store.
#[repr(align(64))]
pub(crate) struct Counters {
    v: [AtomicU64; NUM],
}

impl Counters {
    fn new() -> Self {
        Self {
            v: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Adds `n` to counter `c`. The caller holds the lock that owns the block, so no other
    /// writer can come between the load and the store.
    #[inline]
    pub(crate) fn add(&self, c: Counter, n: u64) {
        if crate::params::COUNTING {
            let v = &self.v[c as usize];
            v.store(v.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
        }
    }

    /// Adds one to counter `c`; see [`Counters::add`].
    #[inline]
    pub(crate) fn inc(&self, c: Counter) {
        self.add(c, 1);
    }

    /// Counts a look at the SQ doorbell that found `pending` new WQEs.
    pub(crate) fn doorbell(&self, pending: u32) {
        if pending != 0 {
            self.inc(Counter::Doorbells);
        }
    }

    /// Counts the payload of a SEND or RDMA WRITE taken inline or from SGEs.
    pub(crate) fn gathered(&self, inline: bool, bytes: usize) {
        let (posts, total) = if inline {
            (Counter::InlinePosts, Counter::InlineBytes)
        } else {
            (Counter::SgePosts, Counter::SgeBytes)
        };
        self.inc(posts);
        self.add(total, bytes as u64);
    }

    /// Counts a request message from this (requester) QP to `dest`, if it reached one.
    pub(crate) fn sent(&self, dest: Option<&QpCounters>) {
        self.inc(Counter::SentPkts);
        if let Some(dest) = dest {
            dest.received();
        }
    }

    /// Counts a message that found the receive queue of this (responder) QP empty; `rc` says
    /// whether an RNR NAK answers it.
    pub(crate) fn no_receive(&self, rc: bool) {
        self.inc(Counter::OutOfBuffer);
        if rc {
            self.inc(Counter::SendRnrErr);
        }
    }

    /// Counts the outcome of an SQ WQE with opcode `opcode` that the engine carried out
    /// (signaled or not), by its completion status.
    pub(crate) fn executed(&self, opcode: Option<WrOpcode>, status: WcStatus) {
        match status {
            WcStatus::Success if opcode.is_some_and(WrOpcode::is_send) => {
                self.inc(Counter::RdmaSends)
            }
            WcStatus::RetryExcErr => self.inc(Counter::RetryExceededErr),
            WcStatus::RnrRetryExcErr => self.inc(Counter::RetryRnrExceededErr),
            _ => {}
        }
    }

    /// Counts a completion of this QP; `written` says whether the CQ had room for it.
    pub(crate) fn completion(&self, cqe: &srdma_cqe, written: bool) {
        self.inc(if written {
            Counter::Completions
        } else {
            Counter::CqOverflows
        });
        let class = match cqe.status {
            s if s == WcStatus::Success as u32 && cqe.opcode & WC_RECV_BIT != 0 => {
                Counter::RdmaRecvs
            }
            s if s == WcStatus::LocProtErr as u32 => Counter::ErrLocalProt,
            s if s == WcStatus::RemAccessErr as u32 => Counter::ErrRemoteAccess,
            s if s == WcStatus::LocLenErr as u32 => Counter::ErrLength,
            s if s == WcStatus::WrFlushErr as u32 => Counter::ErrFlush,
            _ => return,
        };
        self.inc(class);
    }

    /// Moves every count to `to` and zeroes the block; the caller holds the block's lock.
    fn drain_into(&self, to: &SharedCounters) {
        for (c, v) in self.v.iter().enumerate() {
            let n = v.swap(0, Ordering::Relaxed);
            if n != 0 {
                to.0.v[c].fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// Adds the counts of the block to `values`.
    fn sum_into(&self, values: &mut [u64]) {
        for (v, c) in values.iter_mut().zip(self.v.iter()) {
            *v = v.wrapping_add(c.load(Ordering::Relaxed));
        }
    }
}

/// A block of counters that any context may add to, with an atomic add each: for rare events
/// and for counts kept on behalf of others.
struct SharedCounters(Counters);

impl SharedCounters {
    fn add(&self, c: Counter, n: u64) {
        if crate::params::COUNTING {
            self.0.v[c as usize].fetch_add(n, Ordering::Relaxed);
        }
    }
}

/// The counters of a device that belong to no live QP.
pub(crate) struct DeviceCounters {
    /// What destroyed QPs counted, and the device's own events.
    retired: SharedCounters,
    /// Held by readers and by a QP moving its counts to `retired`, so that a reader sees each
    /// count in exactly one place. Taken before the QP table's lock.
    lock: Pin<KBox<Mutex<()>>>,
}

impl DeviceCounters {
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(
            Self {
                retired: SharedCounters(Counters::new()),
                lock: KBox::pin_init(new_mutex!(()), GFP_KERNEL)?,
            },
            GFP_KERNEL,
        )?)
    }

    /// Counts an event of the device rather than of a QP (rare: the poller's sleeps and
    /// wake-ups).
    pub(crate) fn inc(&self, c: Counter) {
        self.retired.add(c, 1);
    }

    /// Adds `n` to a count of the device's own; as [`DeviceCounters::inc`].
    pub(crate) fn add(&self, c: Counter, n: u64) {
        self.retired.add(c, n);
    }

    /// Writes the device's totals into `values` (one entry per counter, in [`DESCS`] order):
    /// the counts of destroyed QPs plus those of every QP in `qps`.
    pub(crate) fn read(&self, qps: &Table<QpShared>, values: &mut [u64]) {
        values.fill(0);
        let _guard = self.lock.lock();
        self.retired.0.sum_into(values);
        qps.lock()
            .for_each(|q: &QpShared| q.counters.sum_into(values));
    }
}

/// The counters of one QP; what it counted stays in its device's totals after it is
/// destroyed.
pub(crate) struct QpCounters {
    /// Written by the holder of the QP's SQ lock: the requester side.
    pub(crate) send: Counters,
    /// Written by the holder of the lock of the queue the QP's receive WQEs come from (its
    /// RQ's, or its SRQ's): the responder side.
    pub(crate) recv: Counters,
    /// `rcvd_pkts`, which the senders count, each under its own lock.
    rcvd_pkts: AtomicU64,
    dev: Arc<DeviceCounters>,
}

impl QpCounters {
    pub(crate) fn new(dev: Arc<DeviceCounters>) -> Self {
        Self {
            send: Counters::new(),
            recv: Counters::new(),
            rcvd_pkts: AtomicU64::new(0),
            dev,
        }
    }

    /// Counts a request message that reached this QP.
    pub(crate) fn received(&self) {
        if crate::params::COUNTING {
            self.rcvd_pkts.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn sum_into(&self, values: &mut [u64]) {
        self.send.sum_into(values);
        self.recv.sum_into(values);
        let v = &mut values[Counter::RcvdPkts as usize];
        *v = v.wrapping_add(self.rcvd_pkts.load(Ordering::Relaxed));
    }

    /// Moves the counts so far to the device's totals, as the QP is destroyed. Only
    /// [`crate::qp::QpShared::retire`] calls it, holding the locks that own
    /// [`QpCounters::send`] and [`QpCounters::recv`]. A message still in flight to the QP is
    /// counted when the last reference goes.
    pub(crate) fn retire(&self) {
        let _guard = self.dev.lock.lock();
        self.drain();
    }

    fn drain(&self) {
        self.send.drain_into(&self.dev.retired);
        self.recv.drain_into(&self.dev.retired);
        let n = self.rcvd_pkts.swap(0, Ordering::Relaxed);
        self.dev.retired.add(Counter::RcvdPkts, n);
    }
}

impl Drop for QpCounters {
    fn drop(&mut self) {
        // The QP is out of the QP table (the table holds a reference), so readers no longer see
        // these counts there; no lock, as the last reference may go while a table lock is
        // held, and none is needed: nothing else refers to the blocks any more. Until here, a
        // reader misses what arrived after `retire`.
        self.drain();
    }
}

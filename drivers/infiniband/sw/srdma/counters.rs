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
use core::{
    num::NonZeroU32,
    sync::atomic::{AtomicU64, Ordering},
};
use kernel::{
    c_str, new_mutex,
    prelude::*,
    rbtree::{RBTree, RBTreeNodeReservation},
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
    /// has no MTU segmentation and no acknowledgment packets), one per packet on the wire.
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
    /// Completion events raised by CQs (one per `ibv_get_cq_event`); with CQ moderation
    /// fewer than the completions that armed CQs received.
    CqEvents => "cq_events",
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
    /// Times an RC requester took a response to a later PSN than one a READ or atomic waits
    /// for as the sign that the response was lost, and asked again at once.
    ImpliedNakSeqErr => "implied_nak_seq_err",
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
        let v = &self.v[c as usize];
        v.store(v.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
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
        self.0.v[c as usize].fetch_add(n, Ordering::Relaxed);
    }
}

/// The counters of a device that belong to no live QP, and the bindings of QPs to the
/// counters of `rdma statistic qp`.
///
/// ib_core shows a port's figures as the driver's plus those of its bound counters (and of
/// counters gone, which it keeps), so a QP's counts belong to exactly one of them: to its
/// counter from the moment it is bound until it is unbound, to the port otherwise. The QP's
/// own blocks keep counting either way; what moved to counters is subtracted when the port is
/// read (see [`QpAccount`]).
pub(crate) struct DeviceCounters {
    /// What destroyed QPs counted, and the device's own events.
    retired: SharedCounters,
    /// Held by readers and by a QP moving its counts to `retired`, so that a reader sees each
    /// count in exactly one place. Taken before the QP table's lock.
    accounts: Pin<KBox<Mutex<Accounts>>>,
}

/// One value per counter, in [`DESCS`] order.
type Values = [u64; NUM];

/// The counts of a live QP that belong to counters: kept for each QP that was ever bound.
struct QpAccount {
    /// The counter the QP is bound to, if any.
    bound: Option<NonZeroU32>,
    /// The QP's counts when it was bound; what it counted since belongs to `bound`.
    base: Values,
    /// What the QP counted during earlier bindings, which belongs to their counters.
    moved: Values,
}

struct Accounts {
    /// By QP number.
    qps: RBTree<u32, QpAccount>,
    /// What QPs counted while bound to a counter and are no longer, by counter number.
    closed: RBTree<u32, Values>,
    /// The last counter number given.
    last_id: u32,
}

impl Accounts {
    fn new() -> Self {
        Self {
            qps: RBTree::new(),
            closed: RBTree::new(),
            last_id: 0,
        }
    }

    /// Gives a new counter a number that no live counter has. There are fewer live counters
    /// than QPs, so the search ends soon.
    fn new_id(&mut self) -> NonZeroU32 {
        loop {
            self.last_id = self.last_id.wrapping_add(1);
            if let Some(id) = NonZeroU32::new(self.last_id) {
                if self.closed.get(&id.get()).is_none() {
                    return id;
                }
            }
        }
    }
}

fn add(to: &mut Values, from: &Values) {
    for (t, f) in to.iter_mut().zip(from) {
        *t = t.wrapping_add(*f);
    }
}

/// `now - then`, counter by counter.
fn since(now: &Values, then: &Values) -> Values {
    core::array::from_fn(|i| now[i].wrapping_sub(then[i]))
}

impl DeviceCounters {
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(
            Self {
                retired: SharedCounters(Counters::new()),
                accounts: KBox::pin_init(new_mutex!(Accounts::new()), GFP_KERNEL)?,
            },
            GFP_KERNEL,
        )?)
    }

    /// Counts an event of the device rather than of a QP (rare: the poller's sleeps and
    /// wake-ups, completion events).
    pub(crate) fn inc(&self, c: Counter) {
        self.retired.add(c, 1);
    }

    /// Adds `n` to a count of the device's own; as [`DeviceCounters::inc`].
    pub(crate) fn add(&self, c: Counter, n: u64) {
        self.retired.add(c, n);
    }

    /// Writes the port's own figures into `values` (one entry per counter, in [`DESCS`]
    /// order): the counts of destroyed QPs plus those of every QP in `qps`, less what belongs
    /// to counters.
    pub(crate) fn read(&self, qps: &Table<QpShared>, values: &mut [u64]) {
        values.fill(0);
        let acc = self.accounts.lock();
        self.retired.0.sum_into(values);
        qps.lock().for_each(|q: &QpShared| {
            let now = q.counters.values();
            let ours = match acc.qps.get(&q.qpn) {
                None => now,
                Some(a) => since(if a.bound.is_some() { &a.base } else { &now }, &a.moved),
            };
            for (v, o) in values.iter_mut().zip(ours) {
                *v = v.wrapping_add(o);
            }
        });
    }

    /// Binds QP `q` to the counter `id` (a new one if `None`, which gets a number); returns
    /// the counter's number.
    pub(crate) fn bind(&self, q: &QpShared, id: Option<NonZeroU32>) -> Result<NonZeroU32> {
        // Room first, so that nothing fails half done.
        let set_node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let qp_node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let mut acc = self.accounts.lock();
        if acc.qps.get(&q.qpn).is_some_and(|a| a.bound.is_some()) {
            return Err(EBUSY);
        }
        let id = match id {
            Some(id) if acc.closed.get(&id.get()).is_some() => id,
            Some(_) => return Err(EINVAL),
            None => {
                let id = acc.new_id();
                acc.closed.insert(set_node.into_node(id.get(), [0; NUM]));
                id
            }
        };
        let base = q.counters.values();
        match acc.qps.get_mut(&q.qpn) {
            Some(a) => {
                a.bound = Some(id);
                a.base = base;
            }
            None => {
                let a = QpAccount {
                    bound: Some(id),
                    base,
                    moved: [0; NUM],
                };
                acc.qps.insert(qp_node.into_node(q.qpn, a));
            }
        }
        Ok(id)
    }

    /// Unbinds QP `q` from its counter: what it counted while bound stays the counter's.
    pub(crate) fn unbind(&self, q: &QpShared) -> Result {
        let mut acc = self.accounts.lock();
        Self::close(&mut acc, q.qpn, &q.counters.values())
    }

    /// Ends the binding of QP `qpn`, whose counts are `now`.
    fn close(acc: &mut Accounts, qpn: u32, now: &Values) -> Result {
        let a = acc.qps.get_mut(&qpn).ok_or(EINVAL)?;
        let id = a.bound.take().ok_or(EINVAL)?;
        let bound = since(now, &a.base);
        add(&mut a.moved, &bound);
        if let Some(closed) = acc.closed.get_mut(&id.get()) {
            add(closed, &bound);
        }
        Ok(())
    }

    /// Writes the figures of counter `id` into `values`: what its QPs counted while bound.
    pub(crate) fn counter_values(
        &self,
        qps: &Table<QpShared>,
        id: NonZeroU32,
        values: &mut [u64],
    ) -> Result {
        let acc = self.accounts.lock();
        let mut sum = *acc.closed.get(&id.get()).ok_or(EINVAL)?;
        let table = qps.lock();
        for (qpn, a) in acc.qps.iter().filter(|(_, a)| a.bound == Some(id)) {
            if let Some(q) = table.get(*qpn) {
                add(&mut sum, &since(&q.counters.values(), &a.base));
            }
        }
        for (v, s) in values.iter_mut().zip(sum) {
            *v = s;
        }
        Ok(())
    }

    /// Forgets counter `id`, which no QP is bound to any more.
    pub(crate) fn drop_counter(&self, id: NonZeroU32) {
        self.accounts.lock().closed.remove(&id.get());
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
        self.rcvd_pkts.fetch_add(1, Ordering::Relaxed);
    }

    /// What the QP counted so far.
    fn values(&self) -> Values {
        let mut values = [0; NUM];
        self.send.sum_into(&mut values);
        self.recv.sum_into(&mut values);
        let v = &mut values[Counter::RcvdPkts as usize];
        *v = v.wrapping_add(self.rcvd_pkts.load(Ordering::Relaxed));
        values
    }

    /// Moves the counts so far of QP `qpn` to the device's totals, as the QP is destroyed,
    /// less what belongs to counters. Only [`crate::qp::QpShared::retire`] calls it, holding
    /// the locks that own [`QpCounters::send`] and [`QpCounters::recv`]. A message still in
    /// flight to the QP is counted when the last reference goes.
    pub(crate) fn retire(&self, qpn: u32) {
        let mut acc = self.dev.accounts.lock();
        // ib_core unbinds a QP before it destroys it; a binding left would end here.
        if acc.qps.get(&qpn).is_some_and(|a| a.bound.is_some()) {
            let _ = DeviceCounters::close(&mut acc, qpn, &self.values());
        }
        self.drain();
        if let Some(a) = acc.qps.remove(&qpn) {
            for (c, moved) in a.moved.iter().enumerate() {
                self.dev.retired.0.v[c].fetch_sub(*moved, Ordering::Relaxed);
            }
        }
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

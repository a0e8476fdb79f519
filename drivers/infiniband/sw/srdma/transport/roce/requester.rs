// SPDX-License-Identifier: GPL-2.0-only

//! The RC and UC requester on the wire, and the RC completer that its responses feed.
//!
//! A request leaves as packets of at most the path MTU, one PSN each (a READ request takes as
//! many PSNs as its responses), the last asking for an acknowledgment. An RC WQE then waits
//! in flight, in SQ order, with the memory it names, until the responder acknowledges it: an
//! ACK of its last PSN or a later one (coalesced), a READ response or atomic acknowledgment
//! that comes after it (implied), or its own READ responses and atomic acknowledgment. The
//! send queue goes on while the oldest WQEs wait, up to a window of unacknowledged PSNs; a
//! message longer than the window leaves as acknowledgments make room, the engine (most often
//! the completer that took the acknowledgment) sending the next packets, so that no one run
//! sends more than a window of new packets.
//!
//! What goes wrong is handled as IBA 9.7 says: a PSN sequence error NAK sends again from the
//! PSN it names, spending one of `retry_cnt` retries when it acknowledges nothing new (as rxe
//! does); an RNR NAK waits the responder's timer (`rnr_retry` times) and sends the WQE
//! again; the other NAKs fail the WQE and the QP; with no answer within the QP's `timeout`
//! everything in flight is sent again from the oldest (go-back-N), `retry_cnt` times, and
//! then the oldest fails with `RETRY_EXC_ERR`. UC WQEs complete once their packets are built
//! (with their payload: they leave with the run's burst).

use super::{build_pages, build_with, responder::mtu_bytes, Arrived, Burst, Dropped, Ends, Ready};
use crate::{
    clock::Now,
    comp::{self, Judged},
    counters::Counter,
    device::{SrdmaDevice, PORT},
    message::{Atomic, Path, Remote, PSN_MASK},
    payload::Segments,
    qp::QpShared,
    req,
    rnr::Verdict,
    trace::{self, Resend},
    wc::WcStatus,
    wqe::SendWqe,
};
use core::{
    ops::{Deref, DerefMut},
    sync::atomic::Ordering,
};
use kernel::{
    prelude::*,
    rdma::{
        qp::{QpAttr, QpState, QpType},
        roce::{AtomicEth, Bth, Headers, Opcode, Operation, Packet, Reth, Service},
        Device,
    },
    sync::{
        lock::{mutex::MutexBackend, Guard},
        Arc,
    },
    time::Ktime,
};

/// The most PSNs in flight without an acknowledgment. rxe allows 128; here the next packets go
/// when an acknowledgment has woken the peer's receive thread and then this one, which under
/// load can take longer than 128 packets take to send, and the wire then idles (1 MiB
/// bandwidth 0.6x of what 512 gave, measured on this VM). A peer's receive backlog holds the
/// windows of eight QPs.
const WINDOW: u32 = 512;

/// How long a timeout waits for received packets to be processed before it counts (1 ms).
const RX_GRACE_NS: i64 = 1_000_000;

/// Inside a long message every this many packets ask for an acknowledgment too, so that the
/// requester sees progress (and restarts its timer) before the message ends.
const ACK_EVERY: u32 = 16;

/// A connected request with the memory it names: what a WQE asks of the responder.
pub(crate) enum Outgoing {
    Send {
        data: Segments,
        imm: Option<u32>,
        invalidate: Option<u32>,
    },
    Write {
        data: Segments,
        to: Remote,
        imm: Option<u32>,
    },
    /// The response data goes to `sink`.
    Read { from: Remote, sink: Segments },
    /// The original value goes to `sink`.
    Atomic {
        at: Remote,
        op: Atomic,
        sink: Segments,
    },
    /// An RDMA ATOMIC WRITE of `value` (native byte order).
    AtomicWrite { at: Remote, value: u64 },
}

/// A WQE in flight: sent, waiting for its acknowledgment.
struct InFlight {
    wqe: SendWqe,
    /// `None` for a WQE that needs nothing more from the wire: one that failed before it was
    /// sent, or a READ or atomic answered in full while an older WQE waited. It completes in
    /// its turn, with `status`.
    out: Option<Outgoing>,
    status: WcStatus,
    first_psn: u32,
    /// The PSNs it takes.
    psns: u32,
    /// How many of them went out: all, but for a long message the window holds back.
    psns_sent: u32,
    /// A READ: the PSN of the response expected next.
    next_psn: u32,
    /// A READ: the requests sent for it, the first included.
    asked: u32,
    /// A READ: the responses that arrived and did not move `next_psn` on.
    unmoved: u32,
    /// A READ or atomic: the PSN it was last asked again from because a response to a later
    /// PSN came first (see [`implied_nak`]).
    reasked: Option<u32>,
}

impl InFlight {
    fn last_psn(&self) -> u32 {
        self.first_psn.wrapping_add(self.psns.max(1) - 1) & PSN_MASK
    }

    /// Whether an ACK completes it (READs and atomics need their own responses; an ATOMIC
    /// WRITE has its own, but a later PSN acknowledged implies it, as for a WRITE).
    fn acked_by_ack(&self) -> bool {
        !matches!(
            self.out,
            Some(Outgoing::Read { .. } | Outgoing::Atomic { .. })
        )
    }

    /// Whether PSN `psn` is one of its PSNs.
    fn holds(&self, psn: u32) -> bool {
        self.psns != 0 && !psn_before(psn, self.first_psn) && !psn_before(self.last_psn(), psn)
    }

    /// The PSN a READ or atomic waits for a response to; `None` for what an ACK completes.
    fn awaited(&self) -> Option<u32> {
        match self.out {
            Some(Outgoing::Read { .. }) => Some(self.next_psn),
            Some(Outgoing::Atomic { .. }) => Some(self.first_psn),
            _ => None,
        }
    }

    /// Whether it takes one of the responder's resources (`max_rd_atomic` of them at once).
    fn takes_resource(&self) -> bool {
        matches!(
            self.out,
            Some(Outgoing::Read { .. } | Outgoing::Atomic { .. } | Outgoing::AtomicWrite { .. })
        )
    }
}

/// Whether PSN `a` comes before PSN `b` (within half the PSN space).
fn psn_before(a: u32, b: u32) -> bool {
    let d = b.wrapping_sub(a) & PSN_MASK;
    d != 0 && d < PSN_MASK / 2
}

/// The WQEs in flight, oldest first: a ring of slots that grows when the window outgrows it
/// and is kept while WQEs come and go, so that a message costs no allocation (an allocation
/// that may sleep would also let the engine's workers preempt the kick that holds the SQ,
/// only to wait for it).
///
/// # Invariants
///
/// `len <= slots.len()`, and `head < slots.len()` unless there are no slots (then it is 0).
struct Queue {
    /// Slot `(head + i) % slots.len()` holds the `i`-th oldest of `len`; the others are `None`.
    slots: KVec<Option<InFlight>>,
    head: usize,
    len: usize,
}

impl Queue {
    const fn new() -> Self {
        Self {
            slots: KVec::new(),
            head: 0,
            len: 0,
        }
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn len(&self) -> usize {
        self.len
    }

    /// The slot of the `i`-th oldest, for `i < slots.len()`.
    fn slot(&self, i: usize) -> usize {
        (self.head + i) % self.slots.len().max(1)
    }

    /// How many of the WQEs in flight lie from `head` to the ring's end; the rest wrapped
    /// around to its start.
    fn before_wrap(&self) -> usize {
        // By the type invariant `head <= slots.len()`.
        self.len.min(self.slots.len() - self.head)
    }

    fn iter(&self) -> impl Iterator<Item = &InFlight> {
        let first = self.before_wrap();
        let (wrapped, from_head) = self.slots.split_at(self.head);
        Iterator::chain(
            from_head[..first].iter(),
            wrapped[..self.len - first].iter(),
        )
        .flatten()
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut InFlight> {
        let (first, len) = (self.before_wrap(), self.len);
        let (wrapped, from_head) = self.slots.split_at_mut(self.head);
        Iterator::chain(
            from_head[..first].iter_mut(),
            wrapped[..len - first].iter_mut(),
        )
        .flatten()
    }

    fn first(&self) -> Option<&InFlight> {
        if self.is_empty() {
            return None;
        }
        self.slots.get(self.head)?.as_ref()
    }

    fn last(&self) -> Option<&InFlight> {
        let i = self.len.checked_sub(1)?;
        self.slots.get(self.slot(i))?.as_ref()
    }

    fn last_mut(&mut self) -> Option<&mut InFlight> {
        let i = self.len.checked_sub(1)?;
        let slot = self.slot(i);
        self.slots.get_mut(slot)?.as_mut()
    }

    fn pop_front(&mut self) -> Option<InFlight> {
        if self.is_empty() {
            return None;
        }
        let f = self.slots.get_mut(self.head)?.take();
        self.len -= 1;
        self.head = if self.len == 0 { 0 } else { self.slot(1) };
        f
    }

    fn push(&mut self, f: InFlight) -> Result {
        if self.len == self.slots.len() {
            self.grow()?;
        }
        let i = self.slot(self.len);
        let slot = self.slots.get_mut(i).ok_or(EINVAL)?;
        *slot = Some(f);
        self.len += 1;
        Ok(())
    }

    /// Moves the WQEs in flight to a ring twice as large, oldest first.
    fn grow(&mut self) -> Result {
        let n = (self.slots.len() * 2).max(4);
        let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
        for i in 0..self.len {
            let at = self.slot(i);
            let f = self.slots.get_mut(at).and_then(Option::take);
            slots.push(f, GFP_KERNEL)?;
        }
        for _ in self.len..n {
            slots.push(None, GFP_KERNEL)?;
        }
        self.slots = slots;
        self.head = 0;
        Ok(())
    }

    fn clear(&mut self) {
        *self = Self::new();
    }

    /// Takes all that is in flight, leaving the queue empty.
    fn take(&mut self) -> Self {
        core::mem::replace(self, Self::new())
    }
}

/// The requester's side of an RC or UC QP on the wire. Taken after `sq_ci`.
pub(crate) struct WireReq {
    /// The SQ index of the next WQE to send; the consumer index when nothing is in flight.
    sent: u32,
    inflight: Queue,
    /// When everything in flight is sent again (ktime ns), if something is.
    deadline: Option<i64>,
    /// Timeouts left before the oldest WQE fails.
    retries: Option<u8>,
    /// An RNR NAK holds the oldest WQE until `rnr` says it may go again.
    rnr_wait: bool,
    /// The last PSN the responder acknowledged, if one of those in flight.
    acked: Option<u32>,
    /// Packets built and not handed over yet: empty while the lock is free ([`lock`]).
    burst: Burst,
}

impl WireReq {
    pub(crate) fn new() -> Self {
        Self {
            sent: 0,
            inflight: Queue::new(),
            deadline: None,
            retries: None,
            rnr_wait: false,
            acked: None,
            burst: Burst::new(),
        }
    }

    /// Whether WQEs wait in flight.
    pub(crate) fn busy(&self) -> bool {
        !self.inflight.is_empty()
    }

    /// The SQ index processing goes on from, given the consumer index `ci`.
    pub(crate) fn next(&self, ci: u32) -> u32 {
        if self.busy() {
            self.sent
        } else {
            ci
        }
    }

    /// Whether another WQE may go: the newest one went whole, the window has room and no
    /// error waits to complete.
    pub(crate) fn has_room(&self, q: &QpShared, attr: &QpAttr) -> bool {
        let reads = self.inflight.iter().filter(|f| f.takes_resource()).count();
        self.unsent() == 0
            && self.outstanding(q) < WINDOW
            && reads < usize::from(attr.max_rd_atomic.max(1))
            && self.inflight.iter().all(|f| f.status == WcStatus::Success)
    }

    /// The PSNs of the newest WQE that the window held back; only the newest can have some.
    fn unsent(&self) -> u32 {
        self.inflight.last().map_or(0, |f| f.psns - f.psns_sent)
    }

    /// The PSN after the last one sent.
    fn frontier(&self, q: &QpShared) -> u32 {
        q.sq_psn.load(Ordering::Relaxed).wrapping_sub(self.unsent()) & PSN_MASK
    }

    /// The PSNs sent and not acknowledged (a READ's count as sent with its request).
    fn outstanding(&self, q: &QpShared) -> u32 {
        let Some(from) = self.unacked_from(q) else {
            return 0;
        };
        self.frontier(q).wrapping_sub(from) & PSN_MASK
    }

    /// The oldest PSN in flight that the responder has not acknowledged, if any is in flight.
    /// The last acknowledgment counts only while it lies among the PSNs sent: once READ
    /// responses or atomic acknowledgments (which do not move it) have retired the WQEs past
    /// it, it is old, and after half the PSN space it would look newer than the frontier.
    fn unacked_from(&self, q: &QpShared) -> Option<u32> {
        let first = self.inflight.first()?.first_psn;
        let sent = self.frontier(q).wrapping_sub(first) & PSN_MASK;
        Some(match self.acked {
            Some(a) if (a.wrapping_sub(first) & PSN_MASK) < sent => a.wrapping_add(1) & PSN_MASK,
            _ => first,
        })
    }

    /// Where the responder's answers have got to: WQEs in flight, the last PSN acknowledged,
    /// and the next READ response the oldest WQE waits for.
    fn progress(&self) -> (usize, Option<u32>, Option<u32>) {
        (
            self.inflight.len(),
            self.acked,
            self.inflight.first().map(|f| f.next_psn),
        )
    }

    /// Drops what is in flight (the QP is in the error state: the SQ is flushed from `ci`).
    pub(crate) fn clear(&mut self, ci: u32) {
        self.inflight.clear();
        self.sent = ci;
        self.deadline = None;
        self.rnr_wait = false;
        self.acked = None;
    }
}

/// The endpoints of the QP's packets: its address vector.
fn ends(dev: &Device<SrdmaDevice>, q: &QpShared, attr: &QpAttr) -> Option<Ends> {
    let sgid = dev
        .query_gid(PORT, u32::from(attr.ah_attr.sgid_index))
        .ok()?;
    Some(Ends {
        sgid,
        dgid: attr.ah_attr.dgid,
        path: Path {
            traffic_class: attr.ah_attr.traffic_class,
            hop_limit: attr.ah_attr.hop_limit,
            flow_label: attr.ah_attr.flow_label,
        },
        src_qpn: q.qpn,
        dest_qpn: attr.dest_qp_num,
    })
}

/// The requester's side of a QP, locked.
///
/// The packets its holder sends wait in the requester's burst and go out before the lock does,
/// so that the next holder's come after them: PSN order on the wire is lock order. Whoever
/// takes the lock otherwise sends nothing (a modify, a destroy), so the burst is empty then.
pub(crate) struct Locked<'a> {
    q: &'a QpShared,
    wr: Guard<'a, WireReq, MutexBackend>,
}

/// Takes the lock of the requester's side of `q`.
pub(crate) fn lock(q: &QpShared) -> Locked<'_> {
    Locked {
        q,
        wr: q.wire_req.lock(),
    }
}

impl Deref for Locked<'_> {
    type Target = WireReq;

    fn deref(&self) -> &WireReq {
        &self.wr
    }
}

impl DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut WireReq {
        &mut self.wr
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // One that does not leave the host is sent again on the timeout, like a lost packet.
        if self.wr.burst.flush().is_err() {
            self.q.counters.send.inc(Counter::TxErrors);
        }
    }
}

/// The local ACK timeout of `attr` in ns (4.096 µs × 2^timeout), `None` for no timer.
fn timeout_ns(attr: &QpAttr) -> Option<i64> {
    (attr.timeout != 0).then(|| 4096i64 << attr.timeout.min(31))
}

/// Sends the packets of `f` that went out before or are to go now (its first `psns_sent`),
/// from PSN `from` on, by way of `burst`.
fn send_packets(
    dev: &Device<SrdmaDevice>,
    q: &QpShared,
    ends: &Ends,
    f: &InFlight,
    from: u32,
    pmtu: usize,
    burst: &mut Burst,
) -> Result {
    let Some(out) = &f.out else {
        return Ok(());
    };
    let service = if q.qp_type == QpType::Uc {
        Service::Uc
    } else {
        Service::Rc
    };
    let (data, imm, invalidate, remote) = match out {
        Outgoing::Send {
            data,
            imm,
            invalidate,
        } => (Some(data), *imm, *invalidate, None),
        Outgoing::Write { data, to, imm } => (Some(data), *imm, None, Some(*to)),
        Outgoing::Read { from: at, sink } => {
            // Asked again, a READ asks for what is still missing: the responses from PSN
            // `from` on, which answer for the bytes from its place in the message.
            let offset = ((from.wrapping_sub(f.first_psn) & PSN_MASK) as usize)
                .saturating_mul(pmtu)
                .min(sink.len());
            let headers = Headers {
                bth: ack_req(Bth::new(
                    op(service, Operation::ReadRequest)?,
                    ends.dest_qpn,
                    from,
                    0,
                )),
                reth: Some(Reth {
                    va: at.va.wrapping_add(offset as u64),
                    rkey: at.rkey,
                    len: (sink.len() - offset) as u32,
                }),
                ..Headers::default()
            };
            return send(dev, q, ends, &headers, burst);
        }
        Outgoing::Atomic { at, op: a, .. } => {
            let (operation, swap_add, compare) = match *a {
                Atomic::CmpSwap { compare, swap } => (Operation::CompareSwap, swap, compare),
                Atomic::FetchAdd { add } => (Operation::FetchAdd, add, 0),
            };
            let headers = Headers {
                bth: ack_req(Bth::new(
                    op(service, operation)?,
                    ends.dest_qpn,
                    f.first_psn,
                    0,
                )),
                atomic: Some(AtomicEth {
                    va: at.va,
                    rkey: at.rkey,
                    swap_add,
                    compare,
                }),
                ..Headers::default()
            };
            return send(dev, q, ends, &headers, burst);
        }
        Outgoing::AtomicWrite { at, value } => {
            let headers = Headers {
                bth: ack_req(Bth::new(
                    op(service, Operation::AtomicWrite)?,
                    ends.dest_qpn,
                    f.first_psn,
                    8,
                )),
                reth: Some(Reth {
                    va: at.va,
                    rkey: at.rkey,
                    len: 8,
                }),
                ..Headers::default()
            };
            let bytes = value.to_ne_bytes();
            q.counters.send.inc(Counter::SentPkts);
            // The packet has room for exactly the 8 bytes.
            let built = build_with(dev, ends, &headers, bytes.len(), |out| {
                out.iter_mut().zip(bytes).for_each(|(o, b)| *o = b);
                Ok(())
            });
            return add(q, built, burst);
        }
    };
    let data = data.ok_or(EINVAL)?;
    let len = data.len();
    let packets = f.psns;
    let is_send = remote.is_none();
    let begin = if psn_before(from, f.first_psn) {
        0
    } else {
        from.wrapping_sub(f.first_psn) & PSN_MASK
    };
    let solicited = f.wqe.solicited;
    for i in begin..f.psns_sent {
        let psn = f.first_psn.wrapping_add(i) & PSN_MASK;
        let at = i as usize * pmtu;
        let n = (len - at.min(len)).min(pmtu);
        let (first, last) = (i == 0, i == packets - 1);
        use Operation::*;
        let operation = match (is_send, first, last, imm.is_some(), invalidate.is_some()) {
            (true, true, true, _, true) => SendOnlyInv,
            (true, true, true, true, _) => SendOnlyImm,
            (true, true, true, ..) => SendOnly,
            (true, true, false, ..) => SendFirst,
            (true, false, false, ..) => SendMiddle,
            (true, false, true, _, true) => SendLastInv,
            (true, false, true, true, _) => SendLastImm,
            (true, false, true, ..) => SendLast,
            (false, true, true, true, _) => WriteOnlyImm,
            (false, true, true, ..) => WriteOnly,
            (false, true, false, ..) => WriteFirst,
            (false, false, false, ..) => WriteMiddle,
            (false, false, true, true, _) => WriteLastImm,
            (false, false, true, ..) => WriteLast,
        };
        let mut bth = Bth::new(op(service, operation)?, ends.dest_qpn, psn, n);
        bth.solicited = last && solicited;
        // The last packet the window lets go asks too: its acknowledgment opens the window.
        if service == Service::Rc && (last || i + 1 == f.psns_sent || (i + 1) % ACK_EVERY == 0) {
            bth = ack_req(bth);
        }
        let headers = Headers {
            bth,
            reth: remote.filter(|_| first).map(|r| Reth {
                va: r.va,
                rkey: r.rkey,
                len: len as u32,
            }),
            imm: imm.filter(|_| last),
            ieth: invalidate.filter(|_| last),
            ..Headers::default()
        };
        q.counters.send.inc(Counter::SentPkts);
        // RC learns of the delivery from the ACK, so the pages may leave as they are; UC
        // completes at once, so its payload is copied out now.
        let built = if service == Service::Rc {
            build_pages(dev, ends, &headers, data, at, n)
        } else {
            build_with(dev, ends, &headers, n, |buf| data.read(at, buf))
        };
        add(q, built, burst)?;
    }
    Ok(())
}

/// Adds packet `built` of `q` to `burst`; one that could not be built stops the message there
/// (the packets before it still go).
fn add(q: &QpShared, built: Result<Ready>, burst: &mut Burst) -> Result {
    built
        .and_then(|p| burst.push(p))
        .inspect_err(|_| q.counters.send.inc(Counter::TxErrors))
}

fn op(service: Service, operation: Operation) -> Result<Opcode> {
    Opcode::new(service, operation).ok_or(EINVAL)
}

fn ack_req(mut bth: Bth) -> Bth {
    bth.ack_req = true;
    bth
}

/// Sends request packet `headers` of `q`, with no payload, by way of `burst`.
fn send(
    dev: &Device<SrdmaDevice>,
    q: &QpShared,
    ends: &Ends,
    headers: &Headers,
    burst: &mut Burst,
) -> Result {
    q.counters.send.inc(Counter::SentPkts);
    add(q, build_with(dev, ends, headers, 0, |_| Ok(())), burst)
}

/// Sends WQE `wqe` of connected QP `q` (attributes `attr`) asking `out` on the wire. An RC WQE
/// is then in flight ([`Judged::Sent`]); a UC one is done.
pub(crate) fn start(
    dev: &Device<SrdmaDevice>,
    q: &QpShared,
    attr: &QpAttr,
    wr: &mut WireReq,
    wqe: &SendWqe,
    out: Outgoing,
    now: i64,
) -> Judged {
    let Some(ends) = ends(dev, q, attr) else {
        return Judged::Done(WcStatus::LocQpOpErr);
    };
    let pmtu = mtu_bytes(attr.path_mtu);
    let psns = match &out {
        Outgoing::Send { data, .. } | Outgoing::Write { data, .. } => {
            data.len().div_ceil(pmtu).max(1)
        }
        Outgoing::Read { sink, .. } => sink.len().div_ceil(pmtu).max(1),
        Outgoing::Atomic { .. } | Outgoing::AtomicWrite { .. } => 1,
    } as u32;
    // UC has no acknowledgments to wait for, and a READ or an atomic is one request.
    let windowed =
        q.qp_type == QpType::Rc && matches!(out, Outgoing::Send { .. } | Outgoing::Write { .. });
    let psns_sent = if windowed {
        psns.min(WINDOW.saturating_sub(wr.outstanding(q)).max(1))
    } else {
        psns
    };
    let first_psn = q.sq_psn.load(Ordering::Relaxed);
    q.sq_psn
        .store(first_psn.wrapping_add(psns) & PSN_MASK, Ordering::Relaxed);
    let f = InFlight {
        wqe: wqe.clone(),
        out: Some(out),
        status: WcStatus::Success,
        first_psn,
        psns,
        psns_sent,
        next_psn: first_psn,
        asked: 1,
        unmoved: 0,
        reasked: None,
    };
    if send_packets(dev, q, &ends, &f, first_psn, pmtu, &mut wr.burst).is_err() {
        // Not even out of the host: sent again on the timeout like a lost packet.
    }
    if q.qp_type == QpType::Uc {
        return Judged::Done(WcStatus::Success);
    }
    if wr.inflight.push(f).is_err() {
        return Judged::Done(WcStatus::LocQpOpErr);
    }
    if wr.deadline.is_none() {
        wr.deadline = timeout_ns(attr).map(|t| now + t);
        wr.retries = Some(attr.retry_cnt);
    }
    Judged::Sent
}

/// Puts a WQE that is done without going on the wire (it failed before it was sent) behind
/// the others in flight, to complete in its turn.
pub(crate) fn done_in_turn(wr: &mut WireReq, wqe: &SendWqe, status: WcStatus) -> Result {
    let psn = wr.inflight.last().map_or(0, InFlight::last_psn);
    wr.inflight.push(InFlight {
        wqe: wqe.clone(),
        out: None,
        status,
        first_psn: psn,
        psns: 0,
        psns_sent: 0,
        next_psn: psn,
        asked: 0,
        unmoved: 0,
        reasked: None,
    })
}

/// Records that the WQE at index `idx` went (in flight or done).
pub(crate) fn advance(wr: &mut WireReq, idx: u32) {
    wr.sent = idx.wrapping_add(1);
}

/// Sends more of the newest WQE in flight, a message the window held back, as far as the
/// window now allows (not while an RNR NAK holds the queue: the responder takes nothing of
/// the refused message until it comes again).
pub(crate) fn push(dev: &Device<SrdmaDevice>, q: &QpShared, attr: &QpAttr, wr: &mut WireReq) {
    let unsent = wr.unsent();
    if unsent == 0 || wr.rnr_wait {
        return;
    }
    let room = WINDOW.saturating_sub(wr.outstanding(q)).min(unsent);
    if room == 0 {
        return;
    }
    let Some(ends) = ends(dev, q, attr) else {
        return;
    };
    let Some(f) = wr.inflight.last_mut() else {
        return;
    };
    let from = f.first_psn.wrapping_add(f.psns_sent) & PSN_MASK;
    f.psns_sent += room;
    // One that does not leave the host is sent again on the timeout, like a lost packet.
    let pmtu = mtu_bytes(attr.path_mtu);
    let _ = send_packets(dev, q, &ends, f, from, pmtu, &mut wr.burst);
}

/// Retires the oldest WQE in flight with `status`; on a failure the rest follow flushed.
/// Returns whether the QP failed.
fn retire_head(q: &QpShared, ci: &mut u32, wr: &mut WireReq, status: WcStatus) -> bool {
    let Some(f) = wr.inflight.pop_front() else {
        return false;
    };
    // The last acknowledgment, once behind what is in flight, says nothing more (and after
    // half the PSN space would look ahead of it).
    let stale = match (wr.acked, wr.inflight.first()) {
        (Some(a), Some(next)) => psn_before(a, next.first_psn),
        (acked, None) => acked.is_some(),
        (None, Some(_)) => false,
    };
    if stale {
        wr.acked = None;
    }
    let failed = comp::retire(q, ci, &f.wqe, status, false).unwrap_or(true);
    if failed {
        let rest = wr.inflight.take();
        for f in rest.iter() {
            let _ = comp::retire(q, ci, &f.wqe, WcStatus::WrFlushErr, true);
        }
        wr.clear(*ci);
    }
    failed
}

/// Retires the WQEs at the head that need nothing more from the wire (`out` is `None`).
fn retire_done(q: &QpShared, ci: &mut u32, wr: &mut WireReq) -> bool {
    while let Some(f) = wr.inflight.first() {
        if f.out.is_some() {
            break;
        }
        let status = f.status;
        if retire_head(q, ci, wr, status) {
            return true;
        }
    }
    false
}

/// Retires the WQEs an acknowledgment of PSN `psn` covers: those an ACK completes, wholly at
/// or before `psn` (`through`) or before it; then what was answered already behind them
/// ([`retire_answered`]).
fn acked(q: &QpShared, ci: &mut u32, wr: &mut WireReq, psn: u32, through: bool) -> bool {
    loop {
        if retire_done(q, ci, wr) {
            return true;
        }
        let Some(f) = wr.inflight.first() else {
            return false;
        };
        let last = f.last_psn();
        let covered = psn_before(last, psn) || (through && last == psn);
        if !covered || !f.acked_by_ack() {
            return retire_answered(q, ci, wr);
        }
        if retire_head(q, ci, wr, WcStatus::Success) {
            return true;
        }
    }
}

/// Retires the WQEs at the head that the responder answered in full while an older READ or
/// atomic waited: READs and atomics done ([`retire_done`]), and what an ACK completes that the
/// last acknowledgment covers.
fn retire_answered(q: &QpShared, ci: &mut u32, wr: &mut WireReq) -> bool {
    loop {
        if retire_done(q, ci, wr) {
            return true;
        }
        let Some(f) = wr.inflight.first() else {
            return false;
        };
        let acked = f.acked_by_ack() && wr.acked.is_some_and(|a| !psn_before(a, f.last_psn()));
        if !acked {
            return false;
        }
        if retire_head(q, ci, wr, WcStatus::Success) {
            return true;
        }
    }
}

/// Carries out response packet `pkt` for the RC QP `q`: the completer.
pub(crate) fn response(
    dev: &Device<SrdmaDevice>,
    q: &Arc<QpShared>,
    arrived: &Arrived,
    pkt: &Packet<'_>,
) -> core::result::Result<(), Dropped> {
    let taken = complete_response(dev, q, arrived, pkt);
    // The kicks that found the SQ held meanwhile.
    let _ = req::run_kicked(dev, q, req::Runner::Engine);
    taken
}

/// [`response`], under the SQ's lock.
fn complete_response(
    dev: &Device<SrdmaDevice>,
    q: &Arc<QpShared>,
    arrived: &Arrived,
    pkt: &Packet<'_>,
) -> core::result::Result<(), Dropped> {
    if q.qp_type != QpType::Rc || pkt.headers.bth.opcode.service() != Service::Rc {
        return Err(Dropped::NotOurs);
    }
    let mut sq = q.sq_run.lock();
    if !q.is_alive() || q.state() != QpState::Rts {
        return Err(Dropped::NotOurs);
    }
    let attr = *q.attr.lock();
    if !arrived.is_between(dev, &attr) {
        return Err(Dropped::NotOurs);
    }
    let now = Ktime::ktime_get().to_ns();
    let mut wr = lock(q);
    // A response is to a PSN the QP sent: one beyond that answers nothing (forged, or from a
    // peer gone wrong); one before what is in flight is a late duplicate.
    let psn = pkt.headers.bth.psn;
    let last_sent = wr.frontier(q).wrapping_sub(1) & PSN_MASK;
    if psn_before(last_sent, psn) {
        return Err(Dropped::NotOurs);
    }
    match wr.inflight.first() {
        Some(f) if !psn_before(psn, f.first_psn) => {}
        _ => return Ok(()),
    }
    let before = wr.progress();
    let failed = complete(dev, q, &attr, &mut sq.ci, &mut wr, pkt, now)
        || retire_answered(q, &mut sq.ci, &mut wr);
    if !failed && !is_nak(pkt) {
        implied_nak(dev, q, &attr, &mut wr, psn);
    }
    if wr.progress() != before {
        // Progress (a long READ's responses included): the timer starts again, with all its
        // retries; an RNR NAK that acknowledged what came before the refused request keeps
        // its own time.
        wr.retries = Some(attr.retry_cnt);
        if !wr.rnr_wait {
            wr.deadline = timeout_ns(&attr).map(|t| now + t);
        }
    }
    if wr.inflight.is_empty() {
        wr.deadline = None;
    }
    let resend_from = wr.deadline;
    drop(wr);
    if failed {
        // The QP is in the error state: the WQEs not sent yet are flushed.
        let _ = req::process_sq(dev, q, &mut sq, req::Runner::Engine);
        return Ok(());
    }
    // The window moved: more of the SQ may go.
    let _ = req::process_sq(dev, q, &mut sq, req::Runner::Engine);
    if let Some(at) = resend_from {
        let _ = dev.worker().retry_at(dev.queue(), q, at);
    }
    Ok(())
}

/// Whether `pkt` is an RNR or other NAK, which says itself what goes again and when.
fn is_nak(pkt: &Packet<'_>) -> bool {
    pkt.headers.bth.opcode.operation() == Operation::Acknowledge
        && pkt.headers.aeth.is_some_and(|a| a.syndrome >> 5 != 0)
}

/// Asks the READs and atomics that wait for a response to a PSN before `psn` again at once,
/// `psn` being that of a response or acknowledgment that came: a responder answers requests
/// in order, so what they wait for was lost (IBA's implied NAK), and the timer would find that
/// out only after its timeout. Only those go again: the responses and acknowledgments after
/// them show that the responder has the requests in between, and the responses to a later
/// READ are taken as they come ([`complete`]). Once for each PSN a request waits for: the
/// responses still on their way behind the lost one are not each a reason to ask again; the
/// first response to the request sent again moves the PSN it waits for, and a later loss asks
/// once more.
fn implied_nak(dev: &Device<SrdmaDevice>, q: &QpShared, attr: &QpAttr, wr: &mut WireReq, psn: u32) {
    // An RNR NAK holds the queue (the refused request goes when its timer says, the READs
    // with it).
    if wr.rnr_wait {
        return;
    }
    let pmtu = mtu_bytes(attr.path_mtu);
    let mut ends_once = None;
    let mut asked = false;
    for f in wr.inflight.iter_mut() {
        if !psn_before(f.first_psn, psn) {
            break;
        }
        let Some(awaited) = f.awaited() else {
            continue;
        };
        if !psn_before(awaited, psn) || f.reasked == Some(awaited) {
            continue;
        }
        if ends_once.is_none() {
            ends_once = ends(dev, q, attr);
        }
        let Some(ends) = &ends_once else {
            return;
        };
        f.reasked = Some(awaited);
        f.asked = f.asked.saturating_add(1);
        trace::srdma_retransmit(q.qpn, awaited, Resend::ImpliedNak as u32);
        let _ = send_packets(dev, q, ends, f, awaited, pmtu, &mut wr.burst);
        asked = true;
    }
    if asked {
        q.counters.send.inc(Counter::ImpliedNakSeqErr);
    }
}

/// What a response does to the WQEs in flight; returns whether the QP failed.
fn complete(
    dev: &Device<SrdmaDevice>,
    q: &QpShared,
    attr: &QpAttr,
    ci: &mut u32,
    wr: &mut WireReq,
    pkt: &Packet<'_>,
    now: i64,
) -> bool {
    let h = &pkt.headers;
    let psn = h.bth.psn;
    let pmtu = mtu_bytes(attr.path_mtu);
    match h.bth.opcode.operation() {
        Operation::Acknowledge => {
            let Some(aeth) = h.aeth else {
                return false;
            };
            match aeth.syndrome >> 5 {
                // ACK.
                0 => {
                    note_acked(wr, psn);
                    acked(q, ci, wr, psn, true)
                }
                // RNR NAK: what came before is done; the WQE of `psn` waits and goes again.
                1 => {
                    note_acked(wr, psn.wrapping_sub(1) & PSN_MASK);
                    if acked(q, ci, wr, psn, false) {
                        return true;
                    }
                    q.counters.send.inc(Counter::RcvdRnrErr);
                    match q
                        .rnr
                        .refused(q.qpn, now, attr.rnr_retry, aeth.syndrome & 0x1f)
                    {
                        Verdict::RetryAt(at) => {
                            wr.rnr_wait = true;
                            wr.deadline = Some(at);
                            false
                        }
                        Verdict::GiveUp => retire_head(q, ci, wr, WcStatus::RnrRetryExcErr),
                    }
                }
                // NAK: what came before is done, as for an RNR NAK.
                3 => {
                    let before = wr.progress();
                    note_acked(wr, psn.wrapping_sub(1) & PSN_MASK);
                    if acked(q, ci, wr, psn, false) {
                        return true;
                    }
                    let status = match aeth.syndrome & 0x1f {
                        0 => {
                            // PSN sequence error: send again from the PSN it names. A
                            // responder that refused a request for want of a receive takes
                            // the requests behind it for lost ones and says so: that NAK
                            // names the refused PSN, which goes again when the RNR timer
                            // says, not at once into the next refusal.
                            q.counters.send.inc(Counter::PacketSeqErr);
                            if wr.rnr_wait {
                                return false;
                            }
                            // A NAK that acknowledges nothing new spends a retry, as a
                            // timeout does (progress gives them all back): a responder that
                            // NAKs every copy does not have the window sent for ever.
                            if wr.progress() == before {
                                match wr.retries {
                                    Some(0) => {
                                        return retire_head(q, ci, wr, WcStatus::RetryExcErr)
                                    }
                                    Some(n) => wr.retries = Some(n - 1),
                                    None => wr.retries = Some(attr.retry_cnt),
                                }
                            }
                            trace::srdma_retransmit(q.qpn, psn, Resend::NakSeq as u32);
                            resend(dev, q, attr, wr, psn);
                            return false;
                        }
                        1 => WcStatus::RemInvReqErr,
                        2 => WcStatus::RemAccessErr,
                        _ => WcStatus::RemOpErr,
                    };
                    retire_head(q, ci, wr, status)
                }
                _ => false,
            }
        }
        Operation::AtomicAcknowledge => {
            if acked(q, ci, wr, psn, false) {
                return true;
            }
            // The atomic it answers: the oldest, or one behind a READ or atomic that waits
            // (it completes in its turn).
            let Some(old) = h.atomic_ack else {
                return false;
            };
            let Some(f) = wr.inflight.iter_mut().find(|f| f.holds(psn)) else {
                return false;
            };
            let Some(Outgoing::Atomic { sink, .. }) = &f.out else {
                return false;
            };
            f.status = match sink.write(0, &old.to_ne_bytes()) {
                Ok(()) => WcStatus::Success,
                Err(_) => WcStatus::LocProtErr,
            };
            f.out = None;
            retire_done(q, ci, wr)
        }
        op @ (Operation::ReadResponseFirst
        | Operation::ReadResponseMiddle
        | Operation::ReadResponseLast
        | Operation::ReadResponseOnly) => {
            if acked(q, ci, wr, psn, false) {
                return true;
            }
            // The WQE the response is to: the oldest, or a READ behind it, whose responses are
            // no less good for a loss before them (the READ completes in its turn).
            let mut at_head = true;
            let mut to = None;
            for f in wr.inflight.iter_mut() {
                if f.holds(psn) {
                    to = Some(f);
                    break;
                }
                at_head = false;
            }
            let Some(f) = to else {
                return false;
            };
            if let Some(Outgoing::AtomicWrite { .. }) = f.out {
                // Answered by an RDMA READ response without data (IBA annex A19) whose AETH
                // says ACK; a NAK comes as an acknowledgment packet.
                let done = at_head
                    && op == Operation::ReadResponseOnly
                    && psn == f.first_psn
                    && pkt.payload.is_empty()
                    && h.aeth.is_some_and(|a| a.syndrome >> 5 == 0);
                if !done {
                    return false;
                }
                note_acked(wr, psn);
                return retire_head(q, ci, wr, WcStatus::Success);
            }
            let Some(Outgoing::Read { sink, .. }) = &f.out else {
                return false;
            };
            // In order only; a gap is made good by sending the request again. A responder
            // answers its requests one after the other, each in full: the rest of the
            // responses to an earlier request (beyond the gap) and, to a request sent again
            // before those arrived, the responses from its PSN on, ones that arrived already
            // among them. A long READ's can take seconds, longer than the timer, so each such
            // response is a sign of life that holds the timer off, as many as the requests
            // sent for the READ can have asked for.
            if psn != f.next_psn {
                f.unmoved = f.unmoved.saturating_add(1);
                if f.unmoved <= f.psns.saturating_mul(f.asked) {
                    wr.deadline = timeout_ns(attr).map(|t| now + t);
                }
                return false;
            }
            let i = (psn.wrapping_sub(f.first_psn) & PSN_MASK) as usize;
            let at = i * pmtu;
            let data = pkt.payload;
            let len = sink.len();
            let last = matches!(
                op,
                Operation::ReadResponseLast | Operation::ReadResponseOnly
            );
            let expected = (len - at.min(len)).min(pmtu);
            let size_ok = if last {
                data.len() == expected && at + data.len() == len
            } else {
                data.len() == pmtu
            };
            // A READ behind the oldest fails only at the head: until then what fails is
            // dropped, and the READ asked again in its turn.
            if !size_ok {
                return at_head && retire_head(q, ci, wr, WcStatus::RemInvReqErr);
            }
            if !data.is_empty() && sink.write(at, data).is_err() {
                return at_head && retire_head(q, ci, wr, WcStatus::LocProtErr);
            }
            f.next_psn = psn.wrapping_add(1) & PSN_MASK;
            if at_head {
                return last && retire_head(q, ci, wr, WcStatus::Success);
            }
            if last {
                f.out = None;
            }
            // Not progress of the oldest WQE, but a sign of life.
            if !wr.rnr_wait {
                wr.deadline = timeout_ns(attr).map(|t| now + t);
            }
            false
        }
        _ => false,
    }
}

/// Notes that the responder acknowledged PSN `psn`, if it is one in flight and later than what
/// it acknowledged before.
fn note_acked(wr: &mut WireReq, psn: u32) {
    let Some(first) = wr.inflight.first().map(|f| f.first_psn) else {
        return;
    };
    let in_flight = !psn_before(psn, first);
    let later = !matches!(wr.acked, Some(a) if !psn_before(a, psn));
    if in_flight && later {
        wr.acked = Some(psn);
    }
}

/// Sends again everything in flight from PSN `from` on (go-back-N), and the READs and atomics
/// before it that wait for their responses.
fn resend(dev: &Device<SrdmaDevice>, q: &QpShared, attr: &QpAttr, wr: &mut WireReq, from: u32) {
    let Some(ends) = ends(dev, q, attr) else {
        return;
    };
    let pmtu = mtu_bytes(attr.path_mtu);
    for f in wr.inflight.iter_mut() {
        // A READ or atomic still waits for its responses whatever was acknowledged after it
        // (an acknowledgment says nothing of the responses before it that were lost): a READ
        // is asked again from the first response it misses (its responses arrive in order),
        // an atomic whole. What an ACK completes goes again from `from` on.
        let start = match f.out {
            None => continue,
            Some(Outgoing::Read { .. }) => {
                f.asked = f.asked.saturating_add(1);
                f.next_psn
            }
            Some(Outgoing::Atomic { .. }) => f.first_psn,
            _ if psn_before(f.last_psn(), from) => continue,
            _ => from,
        };
        let _ = send_packets(dev, q, &ends, f, start, pmtu, &mut wr.burst);
    }
}

/// Called as the SQ of `q` is processed at `now`: sends again what the timeout or an RNR
/// wait holds, or fails the oldest WQE when the retries are spent. Returns whether the QP
/// failed.
pub(crate) fn on_timer(
    dev: &Device<SrdmaDevice>,
    q: &QpShared,
    attr: &QpAttr,
    ci: &mut u32,
    wr: &mut WireReq,
    now: &Now,
) -> bool {
    let Some(deadline) = wr.deadline else {
        return false;
    };
    if wr.inflight.is_empty() || now.get() < deadline {
        return false;
    }
    if dev.worker().rx_pending() {
        // The answers may be among the packets not processed yet: they go first.
        wr.deadline = Some(now.get() + RX_GRACE_NS);
        return false;
    }
    let Some(from) = wr.unacked_from(q) else {
        return false;
    };
    let cause = if wr.rnr_wait {
        Resend::Rnr
    } else {
        Resend::Timeout
    };
    if wr.rnr_wait {
        wr.rnr_wait = false;
    } else {
        match wr.retries {
            Some(0) => {
                q.counters.send.inc(Counter::LocalAckTimeoutErr);
                return retire_head(q, ci, wr, WcStatus::RetryExcErr);
            }
            Some(n) => {
                q.counters.send.inc(Counter::LocalAckTimeoutErr);
                wr.retries = Some(n - 1);
            }
            None => wr.retries = Some(attr.retry_cnt),
        }
    }
    trace::srdma_retransmit(q.qpn, from, cause as u32);
    resend(dev, q, attr, wr, from);
    wr.deadline = timeout_ns(attr).map(|t| now.get() + t);
    false
}

/// When the QP's timer runs out next, if it runs.
pub(crate) fn deadline(wr: &WireReq) -> Option<i64> {
    wr.deadline
}

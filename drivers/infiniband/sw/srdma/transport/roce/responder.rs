// SPDX-License-Identifier: GPL-2.0-only

//! The RC and UC responder on the wire: requests arrive a packet at a time, in PSN order, and
//! each packet's payload goes straight from the packet into the receive WQE's or the RDMA
//! WRITE's memory, resolved and checked at the message's first packet.
//!
//! An RC responder answers as IBA 9.7 says and rxe does: an ACK for every packet that asks
//! for one (AckReq), READ responses and atomic acknowledgments carrying the request's PSN,
//! one PSN sequence error NAK for a gap (then silence until the expected PSN comes), ACKs
//! again for duplicate SENDs and WRITEs, READs served again and atomics answered from their
//! saved result without executing them twice, RNR NAKs when no receive WQE is posted, and
//! NAKs for invalid requests and access errors. UC answers nothing and drops a message with a
//! gap.
//!
//! A duplicate READ or atomic is answered only from the responder resources (the last
//! `max_dest_rd_atomic` READs and atomics carried out): a READ again only within the PSNs,
//! key and range of the one it repeats, so that a small packet cannot make the responder send
//! more than it was asked for once.

use super::{build_with, transmit, Arrived, Burst, Dropped, Ends};
use crate::{
    comp::complete,
    counters::Counter,
    device::SrdmaDevice,
    message::{Atomic, Nak, Path, Remote, Response, PSN_MASK},
    params::MAX_MSG_SZ,
    payload::Segments,
    qp::QpShared,
    resp::{self, finish_receive, release_receive, take_receive, Asked, ReceiveDone, Taken},
    wc::{cqe, WcOpcode, WcStatus},
};
use core::sync::atomic::Ordering;
use kernel::{
    alloc::{flags::GFP_KERNEL, KVec},
    error::Result,
    rdma::{
        qp::{QpAttr, QpState, QpType},
        roce::{Aeth, Bth, Headers, Opcode, Operation, Packet, Reth, Service},
        Device,
    },
    sync::Arc,
};

/// What the responder keeps of a READ or atomic it carried out, to answer its duplicates: a
/// requester only repeats one that is still in flight, which is one of the last
/// `max_dest_rd_atomic`.
#[derive(Clone, Copy)]
enum Resource {
    /// A READ, answered with PSNs `first..=last`, of `len` bytes at `va` under `rkey`.
    Read {
        first: u32,
        last: u32,
        va: u64,
        len: u32,
        rkey: u32,
    },
    /// An atomic at `psn`, with the value it found.
    Atomic { psn: u32, old: u64 },
}

/// The responder resources of a QP: a ring of the last READs and atomics.
pub(crate) struct Resources {
    ring: KVec<Option<Resource>>,
    next: usize,
}

impl Resources {
    /// Room for `n` READs and atomics (at least one).
    pub(crate) fn new(n: u8) -> Result<Self> {
        Ok(Self {
            ring: KVec::from_elem(None, usize::from(n.max(1)), GFP_KERNEL)?,
            next: 0,
        })
    }

    const fn empty() -> Self {
        Self {
            ring: KVec::new(),
            next: 0,
        }
    }

    fn keep(&mut self, r: Resource) {
        let n = self.ring.len();
        if let Some(slot) = self.ring.get_mut(self.next) {
            *slot = Some(r);
            self.next = (self.next + 1) % n;
        }
    }

    fn iter(&self) -> impl Iterator<Item = &Resource> {
        self.ring.iter().flatten()
    }
}

/// The AETH syndrome of an ACK: no end-to-end credits (the responder does not count them).
const SYNDROME_ACK: u8 = 0x1f;
/// The AETH syndrome of a PSN sequence error NAK.
const SYNDROME_NAK_SEQ: u8 = 0x60;

/// The message a QP is in the middle of receiving.
enum InMsg {
    /// A SEND into a receive WQE: its `wr_id`, memory (`None`: the WQE was bad, and the
    /// message fails at its end) and, while it stays in the RQ, its index there.
    Send {
        wr_id: u64,
        sink: Option<Segments>,
        at: usize,
        held: Option<u32>,
    },
    /// An RDMA WRITE of `len` bytes into `target`.
    Write {
        target: Option<Segments>,
        at: usize,
        len: usize,
    },
}

impl InMsg {
    /// Goes back to where the message was before its last `n` bytes.
    fn rewind(&mut self, n: usize) {
        match self {
            InMsg::Send { at, .. } | InMsg::Write { at, .. } => *at = at.saturating_sub(n),
        }
    }
}

/// The responder's side of an RC or UC QP on the wire.
pub(crate) struct WireResp {
    msg: Option<InMsg>,
    /// Messages completed (the MSN of acknowledgments).
    msn: u32,
    /// A PSN sequence error NAK went out for the expected PSN: the gap is not reported again.
    nak_sent: bool,
    /// The last READs and atomics, for their duplicates.
    resources: Resources,
    /// A receive WQE taken from an SRQ by a UC message that was dropped: the QP's next message
    /// takes it, as an RQ's stays at the head of its ring for the next.
    spare: Option<Taken>,
    /// The ACK (its ends, PSN and MSN) that the receive thread sends at the end of its batch
    /// of packets, unless another answer to the QP or [`ACK_HOLD`] requests send it first: the
    /// ACK of a later request stands for the earlier ones (a coalesced acknowledgment).
    pending_ack: Option<(Ends, u32, u32)>,
    /// The requests that `pending_ack` stands for.
    held: u32,
}

impl WireResp {
    pub(crate) const fn new() -> Self {
        Self {
            msg: None,
            msn: 0,
            nak_sent: false,
            resources: Resources::empty(),
            spare: None,
            pending_ack: None,
            held: 0,
        }
    }

    /// Takes `r` as the responder resources (the QP's `max_dest_rd_atomic` changed).
    pub(crate) fn set_resources(&mut self, r: Resources) {
        self.resources = r;
    }
}

impl WireResp {
    /// Drops the message under way as the QP enters the error state. A receive WQE it took
    /// from an SRQ, or a dropped UC message left for the next, completes, flushed, since
    /// nothing else would: an RQ's stays in its ring, which is flushed.
    pub(crate) fn abandon(&mut self, qp: &QpShared) {
        self.drop_message();
        if let Some(taken) = self.spare.take() {
            let flushed = cqe(taken.wr_id, WcStatus::WrFlushErr, WcOpcode::Recv, qp.qpn);
            complete(qp, false, &flushed, false);
        }
    }

    /// Drops the message under way (UC: a packet was lost, or the message was refused),
    /// keeping a receive WQE it took from an SRQ for the next.
    fn drop_message(&mut self) {
        if let Some(InMsg::Send {
            wr_id,
            sink,
            held: None,
            ..
        }) = self.msg.take()
        {
            self.spare = Some(Taken {
                wr_id,
                sink,
                held: None,
            });
        }
    }

    /// The receive WQE for a SEND that starts: the one a dropped UC message left, or the
    /// next of the QP's RQ or SRQ ([`take_receive`]; `hold` keeps an RQ's at the head of its
    /// ring until the message ends).
    fn take_receive(
        &mut self,
        qp: &Arc<QpShared>,
        hold: bool,
    ) -> core::result::Result<Taken, Response> {
        if self.spare.is_none() {
            return take_receive(qp, hold);
        }
        // As `take_receive` looks: a QP that left RTR or RTS keeps it, to flush.
        if !qp.is_alive() || !matches!(qp.state(), QpState::Rtr | QpState::Rts) {
            return Err(Response::Lost);
        }
        self.spare.take().ok_or(Response::Lost)
    }

    /// Forgets the message under way (the QP failed or is destroyed).
    pub(crate) fn reset(&mut self) {
        self.msg = None;
        self.spare = None;
    }
}

/// The bytes of path MTU `mtu` (an `IB_MTU_*` value).
pub(crate) fn mtu_bytes(mtu: u32) -> usize {
    256 << (mtu.clamp(1, 5) - 1)
}

/// How a packet stands in its message.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    First,
    Middle,
    Last,
    Only,
}

fn place(op: Operation) -> Option<Place> {
    use Operation::*;
    Some(match op {
        SendFirst | WriteFirst => Place::First,
        SendMiddle | WriteMiddle => Place::Middle,
        SendLast | SendLastImm | SendLastInv | WriteLast | WriteLastImm => Place::Last,
        SendOnly | SendOnlyImm | SendOnlyInv | WriteOnly | WriteOnlyImm => Place::Only,
        _ => return None,
    })
}

fn is_send(op: Operation) -> bool {
    use Operation::*;
    matches!(
        op,
        SendFirst
            | SendMiddle
            | SendLast
            | SendLastImm
            | SendLastInv
            | SendOnly
            | SendOnlyImm
            | SendOnlyInv
    )
}

/// What a packet's answer goes between: back to where it came from.
fn reply_ends(qp: &QpShared, attr: &QpAttr, arrived: &Arrived) -> Ends {
    Ends {
        sgid: arrived.dgid,
        dgid: arrived.sgid,
        path: Path {
            traffic_class: attr.ah_attr.traffic_class,
            hop_limit: attr.ah_attr.hop_limit,
            flow_label: attr.ah_attr.flow_label,
        },
        src_qpn: qp.qpn,
        dest_qpn: attr.dest_qp_num,
    }
}

/// Sends an acknowledgment of `op` (ACK, NAK, atomic ACK) with PSN `psn`.
fn answer(
    dev: &Device<SrdmaDevice>,
    ends: &Ends,
    op: Operation,
    psn: u32,
    aeth: Aeth,
    atomic_ack: Option<u64>,
) {
    let Some(opcode) = Opcode::new(Service::Rc, op) else {
        return;
    };
    let headers = Headers {
        bth: Bth::new(opcode, ends.dest_qpn, psn, 0),
        aeth: Some(aeth),
        atomic_ack,
        ..Headers::default()
    };
    let _ = transmit(dev, ends, &headers, &[]);
}

/// The most requests one held-back ACK stands for: the requester's window moves at least
/// this often within a long batch.
const ACK_HOLD: u32 = 32;

/// Sends the ACK that `w` holds back, if any.
fn flush_ack(dev: &Device<SrdmaDevice>, w: &mut WireResp) {
    w.held = 0;
    if let Some((ends, psn, msn)) = w.pending_ack.take() {
        ack(dev, &ends, psn, msn);
    }
}

/// Sends the ACKs held back for `qps` (the receive thread, at the end of its batch); a QP that
/// left RTR and RTS meanwhile answers nothing.
pub(crate) fn flush_acks(dev: &Device<SrdmaDevice>, qps: &[Arc<QpShared>]) {
    for q in qps {
        let mut w = q.wire.lock();
        if !q.is_alive() || !matches!(q.state(), QpState::Rtr | QpState::Rts) {
            w.pending_ack = None;
        }
        flush_ack(dev, &mut w);
    }
}

fn ack(dev: &Device<SrdmaDevice>, ends: &Ends, psn: u32, msn: u32) {
    let aeth = Aeth {
        syndrome: SYNDROME_ACK,
        msn,
    };
    answer(dev, ends, Operation::Acknowledge, psn, aeth, None);
}

fn nak_syndrome(nak: Nak) -> u8 {
    match nak {
        Nak::Rnr(timer) => 0x20 | (timer & 0x1f),
        Nak::InvalidRequest => 0x61,
        Nak::RemoteAccess => 0x62,
        Nak::RemoteOperational => 0x63,
    }
}

/// Carries out request packet `pkt` for RC or UC QP `qp`.
pub(crate) fn request(
    dev: &Device<SrdmaDevice>,
    qp: &Arc<QpShared>,
    arrived: &Arrived,
    pkt: &Packet<'_>,
) -> core::result::Result<(), Dropped> {
    let h = &pkt.headers;
    let service = match h.bth.opcode.service() {
        Service::Rc => QpType::Rc,
        Service::Uc => QpType::Uc,
        _ => return Err(Dropped::NotOurs),
    };
    if qp.qp_type != service || !matches!(qp.state(), QpState::Rtr | QpState::Rts) {
        return Err(Dropped::NotOurs);
    }
    let attr = *qp.attr.lock();
    // Connected: only the peer of the address vector talks to the QP, and to its address.
    if !arrived.is_between(dev, &attr) {
        return Err(Dropped::NotOurs);
    }
    let ends = reply_ends(qp, &attr, arrived);
    let rc = service == QpType::Rc;
    let op = h.bth.opcode.operation();
    let psn = h.bth.psn;
    let mut w = qp.wire.lock();
    // A QP destroyed since this packet found it keeps its state, but destroy forgot the message
    // under way (under this lock): a QP that is gone answers nothing.
    if !qp.is_alive() {
        return Err(Dropped::NotOurs);
    }
    // The packet reached the QP: counted whatever its PSN and contents make of it, as a
    // sender's retransmissions are in its `sent_pkts`.
    qp.counters.received();
    let epsn = qp.epsn.load(Ordering::Relaxed);
    let ahead = psn.wrapping_sub(epsn) & PSN_MASK;
    if ahead != 0 || place(op).is_none() {
        flush_ack(dev, &mut w);
    }
    if ahead != 0 {
        if !rc {
            // UC: what was under way is lost; a new message may start here.
            w.drop_message();
            if !matches!(place(op), Some(Place::First | Place::Only)) {
                return Ok(());
            }
        } else if ahead < PSN_MASK / 2 {
            // Ahead: packets were lost. Say so once, then wait for the expected PSN.
            qp.counters.recv.inc(Counter::OutOfSequence);
            if !w.nak_sent {
                w.nak_sent = true;
                let aeth = Aeth {
                    syndrome: SYNDROME_NAK_SEQ,
                    msn: w.msn,
                };
                answer(dev, &ends, Operation::Acknowledge, epsn, aeth, None);
            }
            return Ok(());
        } else {
            qp.counters.recv.inc(Counter::DuplicateRequest);
            duplicate(dev, qp, &attr, &ends, &w, pkt);
            return Ok(());
        }
    }
    w.nak_sent = false;
    let pmtu = mtu_bytes(attr.path_mtu);
    let outcome = match op {
        // A message under way goes on with its own packets only: anything else in its place
        // is an opcode sequence error, refused as rxe refuses it, not a request to carry out.
        _ if w.msg.is_some() && place(op).is_none() => Err(Nak::InvalidRequest.into()),
        Operation::ReadRequest if rc => {
            read(dev, qp, &ends, pkt, pmtu, w.msn.wrapping_add(1) & PSN_MASK).inspect(|&n| {
                if let Some(reth) = h.reth {
                    w.resources.keep(Resource::Read {
                        first: psn,
                        last: psn.wrapping_add(n - 1) & PSN_MASK,
                        va: reth.va,
                        len: reth.len,
                        rkey: reth.rkey,
                    });
                }
            })
        }
        Operation::CompareSwap | Operation::FetchAdd if rc => atomic(dev, qp, &ends, &mut w, pkt),
        Operation::AtomicWrite if rc => atomic_write(dev, qp, &ends, w.msn, pkt),
        _ => match place(op) {
            Some(p) => message(qp, &mut w, pkt, p, pmtu),
            None => Err(Nak::InvalidRequest.into()),
        },
    };
    match outcome {
        Ok(psns) => {
            qp.epsn
                .store(psn.wrapping_add(psns) & PSN_MASK, Ordering::Relaxed);
            if matches!(
                op,
                Operation::ReadRequest
                    | Operation::CompareSwap
                    | Operation::FetchAdd
                    | Operation::AtomicWrite
            ) || matches!(place(op), Some(Place::Last | Place::Only))
            {
                w.msn = w.msn.wrapping_add(1) & PSN_MASK;
            }
            if rc && h.bth.ack_req && place(op).is_some() {
                let first = w.pending_ack.is_none();
                w.pending_ack = Some((ends, psn, w.msn));
                w.held += 1;
                if w.held >= ACK_HOLD || (first && dev.worker().ack_later(qp.clone()).is_err()) {
                    flush_ack(dev, &mut w);
                }
            }
        }
        // The QP left RTR or RTS (destroyed, or moved to the error state) while the request was
        // under way: nothing answers, as for a QP that is gone; the requester times out.
        Err(Refusal::Drop) => {
            flush_ack(dev, &mut w);
            w.abandon(qp);
            return Err(Dropped::NotOurs);
        }
        Err(Refusal::Nak(nak)) if rc => {
            flush_ack(dev, &mut w);
            let aeth = Aeth {
                syndrome: nak_syndrome(nak),
                msn: w.msn,
            };
            answer(dev, &ends, Operation::Acknowledge, psn, aeth, None);
            if !matches!(nak, Nak::Rnr(_)) {
                // The request was bad: the responder fails too (IBA 9.9.3.1.2).
                w.abandon(qp);
                drop(w);
                crate::log::nak(qp, psn, nak);
                resp::fail(qp);
            }
        }
        // UC: the message is dropped; the requester never learns.
        Err(_) => w.drop_message(),
    }
    Ok(())
}

/// Why a request was not carried out.
enum Refusal {
    /// Answered with a NAK (RC; UC drops the message).
    Nak(Nak),
    /// Dropped without an answer.
    Drop,
}

impl From<Nak> for Refusal {
    fn from(nak: Nak) -> Self {
        Refusal::Nak(nak)
    }
}

impl From<Response> for Refusal {
    /// What the receive side (`resp`) answered, for a request it did not carry out: a QP that
    /// no longer takes requests drops it, anything else but a NAK of its own is an invalid
    /// request.
    fn from(response: Response) -> Self {
        match response {
            Response::Nak(nak) => Refusal::Nak(nak),
            Response::Lost => Refusal::Drop,
            _ => Refusal::Nak(Nak::InvalidRequest),
        }
    }
}

/// A packet of a SEND or RDMA WRITE, in position `p` of its message.
fn message(
    qp: &Arc<QpShared>,
    w: &mut WireResp,
    pkt: &Packet<'_>,
    p: Place,
    pmtu: usize,
) -> core::result::Result<u32, Refusal> {
    let h = &pkt.headers;
    let op = h.bth.opcode.operation();
    let data = pkt.payload;
    // FIRST and MIDDLE packets are full; LAST ones carry something; ONLY ones fit.
    let size_ok = match p {
        Place::First | Place::Middle => data.len() == pmtu,
        Place::Last => !data.is_empty() && data.len() <= pmtu,
        Place::Only => data.len() <= pmtu,
    };
    // A message starts only when none is under way, and continues only one of its kind.
    let sequence_ok = match (&w.msg, p) {
        (None, Place::First | Place::Only) => true,
        (Some(InMsg::Send { .. }), Place::Middle | Place::Last) => is_send(op),
        (Some(InMsg::Write { .. }), Place::Middle | Place::Last) => !is_send(op),
        _ => false,
    };
    if !size_ok || !sequence_ok {
        return Err(Nak::InvalidRequest.into());
    }
    if matches!(p, Place::First | Place::Only) {
        w.msg = Some(if is_send(op) {
            // The receive WQE of a message that is not over stays in the RQ until it is: if
            // it never is, the WQE completes all the same, flushed with the RQ.
            let taken = w
                .take_receive(qp, p == Place::First)
                .map_err(Refusal::from)?;
            InMsg::Send {
                wr_id: taken.wr_id,
                sink: taken.sink,
                at: 0,
                held: taken.held,
            }
        } else {
            let reth = h.reth.ok_or(Nak::InvalidRequest)?;
            let target = reth_memory(qp, &reth, Asked::Write)?;
            InMsg::Write {
                target,
                at: 0,
                len: reth.len as usize,
            }
        });
    }
    let Some(msg) = w.msg.as_mut() else {
        return Err(Nak::InvalidRequest.into());
    };
    match msg {
        InMsg::Send { sink, at, held, .. } => {
            let fits = sink.as_ref().is_some_and(|s| *at + data.len() <= s.len());
            if fits && !data.is_empty() {
                let ci = qp.rq_ci.lock();
                // A held WQE flushed meanwhile (the QP failed on another path, its requester's)
                // is the process's again: nothing more is written into its memory.
                if held.is_some_and(|slot| *ci != slot) {
                    return Err(Refusal::Drop);
                }
                if sink
                    .as_ref()
                    .map(|s| s.write(*at, data))
                    .transpose()
                    .is_err()
                {
                    *sink = None;
                }
            } else if !fits {
                // Too long for the WQE: the message fails where it ends.
                *sink = None;
            }
            *at += data.len();
        }
        InMsg::Write { target, at, len } => {
            if *at + data.len() > *len {
                return Err(Nak::InvalidRequest.into());
            }
            if let Some(t) = target {
                let _responder = qp.rq_ci.lock();
                t.write(*at, data).map_err(|_| Nak::RemoteAccess)?;
            }
            *at += data.len();
        }
    }
    if matches!(p, Place::Last | Place::Only) {
        let mut msg = w.msg.take();
        match finish(qp, pkt, msg.as_ref()) {
            Err(Refusal::Nak(Nak::Rnr(timer))) => {
                // No receive WQE for an RDMA WRITE's immediate data: a message of several
                // packets stays as it was before this packet, which the requester sends again
                // after its RNR wait; an ONLY packet starts its message again.
                if p == Place::Last {
                    if let Some(m) = msg.as_mut() {
                        m.rewind(data.len());
                    }
                    w.msg = msg;
                }
                return Err(Nak::Rnr(timer).into());
            }
            done => done?,
        }
    }
    Ok(1)
}

/// The end of a message: the receive completion of a SEND or of an RDMA WRITE with
/// immediate data.
fn finish(
    qp: &Arc<QpShared>,
    pkt: &Packet<'_>,
    msg: Option<&InMsg>,
) -> core::result::Result<(), Refusal> {
    let h = &pkt.headers;
    let (wr_id, ok, byte_len, opcode) = match msg {
        Some(InMsg::Send {
            wr_id,
            sink,
            at,
            held,
        }) => {
            if held.is_some_and(|slot| !release_receive(qp, slot)) {
                return Err(Refusal::Drop);
            }
            (*wr_id, sink.is_some(), *at, WcOpcode::Recv)
        }
        Some(&InMsg::Write { at, len, .. }) => {
            if at != len {
                return Err(Nak::InvalidRequest.into());
            }
            if h.imm.is_none() {
                return Ok(());
            }
            // The immediate data takes a receive WQE, whose memory stays untouched.
            let wr_id = take_receive(qp, false).map_err(Refusal::from)?.wr_id;
            (wr_id, true, len, WcOpcode::RecvRdmaWithImm)
        }
        None => return Err(Nak::InvalidRequest.into()),
    };
    let done = ReceiveDone {
        wr_id,
        wc_opcode: opcode,
        byte_len: byte_len as u32,
        imm: h.imm,
        invalidate: h.ieth,
        src_qpn: qp.attr.lock().dest_qp_num,
        network: None,
        solicited: h.bth.solicited,
    };
    let status = if ok {
        WcStatus::Success
    } else {
        WcStatus::LocLenErr
    };
    match finish_receive(qp, &done, status, None) {
        Response::Ack if ok => Ok(()),
        response => Err(response.into()),
    }
}

/// An RDMA READ request: the data goes back in READ response packets of at most `pmtu` bytes,
/// which take the PSNs from the request's on, the last with MSN `msn`; a duplicate is served
/// again from the memory as it is now. Returns how many PSNs the request takes.
fn read(
    dev: &Device<SrdmaDevice>,
    qp: &Arc<QpShared>,
    ends: &Ends,
    pkt: &Packet<'_>,
    pmtu: usize,
    msn: u32,
) -> core::result::Result<u32, Refusal> {
    let reth = pkt.headers.reth.ok_or(Nak::InvalidRequest)?;
    let len = reth.len as usize;
    let source = reth_memory(qp, &reth, Asked::Read)?;
    Ok(send_read_responses(
        dev,
        ends,
        pkt.headers.bth.psn,
        source.as_ref(),
        len,
        pmtu,
        msn,
    )?)
}

/// The memory an RDMA WRITE or READ names in its RETH, checked for what it is `asked` (the
/// QP's access flags and resources, the key's rights and range); `None` for a zero-length
/// one, which names none and has only the QP's checks.
fn reth_memory(
    qp: &Arc<QpShared>,
    reth: &Reth,
    asked: Asked,
) -> core::result::Result<Option<Segments>, Refusal> {
    let _responder = resp::lock(qp, asked).map_err(Refusal::from)?;
    // No message is longer than max_msg_sz (2^31 bytes, the most IBA allows): a longer one is
    // malformed whatever the key would cover.
    if reth.len > MAX_MSG_SZ {
        return Err(Nak::InvalidRequest.into());
    }
    let len = reth.len as usize;
    if len == 0 {
        return Ok(None);
    }
    let at = Remote {
        va: reth.va,
        rkey: reth.rkey,
    };
    let span = resp::resolve_remote(qp, at, asked.access(), len).ok_or(Nak::RemoteAccess)?;
    Ok(Some(
        resp::one_span(span).map_err(|_| Nak::RemoteOperational)?,
    ))
}

/// Sends the READ response packets for `len` bytes of `source` from PSN `psn` on.
fn send_read_responses(
    dev: &Device<SrdmaDevice>,
    ends: &Ends,
    psn: u32,
    source: Option<&Segments>,
    len: usize,
    pmtu: usize,
    msn: u32,
) -> core::result::Result<u32, Nak> {
    let packets = len.div_ceil(pmtu).max(1);
    let mut burst = Burst::new();
    for i in 0..packets {
        let at = i * pmtu;
        let n = (len - at.min(len)).min(pmtu);
        let op = match (packets, i) {
            (1, _) => Operation::ReadResponseOnly,
            (_, 0) => Operation::ReadResponseFirst,
            (p, i) if i == p - 1 => Operation::ReadResponseLast,
            _ => Operation::ReadResponseMiddle,
        };
        let Some(opcode) = Opcode::new(Service::Rc, op) else {
            return Err(Nak::RemoteOperational);
        };
        let has_aeth = !matches!(op, Operation::ReadResponseMiddle);
        let headers = Headers {
            bth: Bth::new(opcode, ends.dest_qpn, psn.wrapping_add(i as u32), n),
            aeth: has_aeth.then_some(Aeth {
                syndrome: SYNDROME_ACK,
                msn,
            }),
            ..Headers::default()
        };
        // The data goes from the responder's memory straight into the packet.
        let mut unreadable = false;
        let built = build_with(dev, ends, &headers, n, |out| match source {
            Some(src) => src.read(at, out).inspect_err(|_| unreadable = true),
            None => Ok(()),
        });
        if unreadable {
            // The responses before it still go; the NAK follows them.
            let _ = burst.flush();
            return Err(Nak::RemoteAccess);
        }
        // A response that could not be built or sent is lost, as on a wire; the requester
        // asks again. A READ may ask for a whole MR (again, as a duplicate): each burst gives
        // the CPU up when the scheduler asks.
        if let Ok(p) = built {
            let _ = burst.push(p);
        }
    }
    let _ = burst.flush();
    Ok(packets as u32)
}

/// An atomic request: carried out once, its original value saved for a duplicate.
fn atomic(
    dev: &Device<SrdmaDevice>,
    qp: &Arc<QpShared>,
    ends: &Ends,
    w: &mut WireResp,
    pkt: &Packet<'_>,
) -> core::result::Result<u32, Refusal> {
    let h = &pkt.headers;
    let a = h.atomic.ok_or(Nak::InvalidRequest)?;
    let op = if h.bth.opcode.operation() == Operation::CompareSwap {
        Atomic::CmpSwap {
            compare: a.compare,
            swap: a.swap_add,
        }
    } else {
        Atomic::FetchAdd { add: a.swap_add }
    };
    let at = Remote {
        va: a.va,
        rkey: a.rkey,
    };
    let old = match resp::atomic(qp, QpType::Rc, at, op) {
        Response::AtomicAck(old) => old,
        response => return Err(response.into()),
    };
    w.resources.keep(Resource::Atomic {
        psn: h.bth.psn,
        old,
    });
    let aeth = Aeth {
        syndrome: SYNDROME_ACK,
        msn: w.msn.wrapping_add(1) & PSN_MASK,
    };
    answer(
        dev,
        ends,
        Operation::AtomicAcknowledge,
        h.bth.psn,
        aeth,
        Some(old),
    );
    Ok(1)
}

/// An RDMA ATOMIC WRITE: exactly 8 bytes for 8 bytes of the RETH, carried out once and
/// answered with an RDMA READ response without data, as rxe answers. Its answer carries
/// nothing, so unlike a READ's or an atomic's it needs no responder resource to be given
/// again (see [`duplicate`]).
fn atomic_write(
    dev: &Device<SrdmaDevice>,
    qp: &Arc<QpShared>,
    ends: &Ends,
    msn: u32,
    pkt: &Packet<'_>,
) -> core::result::Result<u32, Refusal> {
    let h = &pkt.headers;
    let reth = h.reth.ok_or(Nak::InvalidRequest)?;
    let value: [u8; 8] = pkt.payload.try_into().map_err(|_| Nak::InvalidRequest)?;
    if reth.len != 8 || h.bth.pad != 0 {
        return Err(Nak::InvalidRequest.into());
    }
    let at = Remote {
        va: reth.va,
        rkey: reth.rkey,
    };
    match resp::atomic_write(qp, QpType::Rc, at, u64::from_ne_bytes(value)) {
        Response::Ack => {}
        response => return Err(response.into()),
    }
    answer_atomic_write(dev, ends, h.bth.psn, msn.wrapping_add(1) & PSN_MASK);
    Ok(1)
}

fn answer_atomic_write(dev: &Device<SrdmaDevice>, ends: &Ends, psn: u32, msn: u32) {
    let aeth = Aeth {
        syndrome: SYNDROME_ACK,
        msn,
    };
    answer(dev, ends, Operation::ReadResponseOnly, psn, aeth, None);
}

/// A request the QP has carried out already (its PSN is behind the expected one): answered
/// again, never executed again, except READs, whose data is read again. A READ or atomic that
/// matches no responder resource is dropped, as rxe does.
fn duplicate(
    dev: &Device<SrdmaDevice>,
    qp: &Arc<QpShared>,
    attr: &QpAttr,
    ends: &Ends,
    w: &WireResp,
    pkt: &Packet<'_>,
) {
    let h = &pkt.headers;
    let psn = h.bth.psn;
    match h.bth.opcode.operation() {
        Operation::ReadRequest => {
            let Some(reth) = h.reth else {
                return;
            };
            if w.resources.iter().any(|r| repeats(r, psn, &reth)) {
                let _ = read(dev, qp, ends, pkt, mtu_bytes(attr.path_mtu), w.msn);
            }
        }
        Operation::CompareSwap | Operation::FetchAdd => {
            let old = w.resources.iter().find_map(|r| match *r {
                Resource::Atomic { psn: p, old } if p == psn => Some(old),
                _ => None,
            });
            if let Some(old) = old {
                let aeth = Aeth {
                    syndrome: SYNDROME_ACK,
                    msn: w.msn,
                };
                answer(
                    dev,
                    ends,
                    Operation::AtomicAcknowledge,
                    psn,
                    aeth,
                    Some(old),
                );
            }
        }
        // Behind the expected PSN, so carried out (a refused one ended the QP): answered
        // again, however old, where rxe drops what its resources forgot, and its requester
        // would retry into nothing.
        Operation::AtomicWrite => answer_atomic_write(dev, ends, psn, w.msn),
        // SENDs and WRITEs: acknowledged up to the last PSN carried out.
        _ if h.bth.ack_req => {
            let last = qp.epsn.load(Ordering::Relaxed).wrapping_sub(1) & PSN_MASK;
            ack(dev, ends, last, w.msn);
        }
        _ => {}
    }
}

/// Whether a READ request at `psn` for `reth` asks again for (part of) READ resource `r`: a PSN
/// among its responses, the same key, and a range within its range.
fn repeats(r: &Resource, psn: u32, reth: &Reth) -> bool {
    let Resource::Read {
        first,
        last,
        va,
        len,
        rkey,
    } = *r
    else {
        return false;
    };
    let within_psns = (psn.wrapping_sub(first) & PSN_MASK) <= (last.wrapping_sub(first) & PSN_MASK);
    let end = |va: u64, len: u32| va.checked_add(u64::from(len));
    let within_range = reth.va >= va
        && matches!((end(reth.va, reth.len), end(va, len)), (Some(e), Some(oe)) if e <= oe);
    within_psns && reth.rkey == rkey && within_range
}

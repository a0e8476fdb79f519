// SPDX-License-Identifier: GPL-2.0-only

//! The responder: the only code that touches a QP's receive queue and its memory on behalf
//! of a peer.
//!
//! A request is checked as a packet from the wire would be before anything of the QP moves:
//! the transport service, the QP's state, the source (the QP must be connected to the
//! requester: its destination QP number and the GID of its address vector), the PSN, and for
//! RDMA the QP's access flags, the key, its rights and the range. A request that fails the
//! first checks is dropped unseen ([`Response::Lost`]); the others are answered with a NAK, as
//! an RC responder does.

use crate::{
    comp::{complete, flush},
    grh::GRH_SIZE,
    message::{Atomic, Nak, Op, Payload, Remote, Request, Response, PSN_MASK},
    mr::{resolve, Span},
    mw,
    payload::{self, Failed, Segments},
    qp::{CiGuard, QpShared, DB_RQ_CI, DB_RQ_PI},
    wc::{cqe, flags, WcOpcode, WcStatus},
    wqe::{bad_producer_index, BadRecv, RecvWqe},
};
use core::sync::atomic::Ordering;
use kernel::{
    prelude::*,
    rdma::{
        mr::Access,
        qp::{QpState, QpType},
    },
    sync::Arc,
};

/// Carries out `req` at QP `qp`, and says what goes back to the requester.
pub(crate) fn receive(qp: &Arc<QpShared>, req: &Request<'_>) -> Response {
    if let Op::Datagram {
        grh,
        data,
        qkey,
        imm,
        network,
    } = req.op
    {
        // A datagram that is not for a datagram QP with its Q_Key, or that finds no receive
        // WQE or one too small, is lost to the sender.
        if matches!(qp.qp_type, QpType::Ud | QpType::Gsi)
            && matches!(req.service, QpType::Ud | QpType::Gsi)
            && qp.attr.lock().qkey == qkey
        {
            let mut a = Arrival::new(data, imm, req, WcOpcode::Recv);
            a.grh = Some(grh);
            a.byte_len = (grh.len() + data.len()) as u32;
            a.network = Some(network as u8);
            let _ = deliver(qp, &a);
        }
        return Response::Lost;
    }
    if !accepts(qp, req) {
        return Response::Lost;
    }
    let response = match req.op {
        Op::Send {
            data,
            imm,
            invalidate,
        } => {
            let mut a = Arrival::new(Payload::Memory(data), imm, req, WcOpcode::Recv);
            a.invalidate = invalidate;
            deliver(qp, &a)
        }
        Op::Write { data, to, imm } => write(qp, req, data, to, imm),
        Op::Read { from, sink } => read(qp, req.service, from, sink),
        Op::Atomic { at, op } => atomic(qp, req.service, at, op),
        Op::AtomicWrite { at, value } => atomic_write(qp, req.service, at, value),
        Op::Datagram { .. } => Response::Lost,
    };
    if !matches!(response, Response::Nak(Nak::Rnr(_)) | Response::Lost) {
        // The next request in sequence; a refusal for want of a receive WQE is retried under
        // the same PSN.
        qp.epsn
            .store(req.psn.wrapping_add(1) & PSN_MASK, Ordering::Relaxed);
    }
    if let Response::Nak(nak) = response {
        if req.service == QpType::Rc && !matches!(nak, Nak::Rnr(_)) {
            // The request was bad: the responder fails too (IBA 9.9.3.1.2), as on the wire, so
            // that a peer cannot go on trying keys over the connection.
            if fail(qp) {
                crate::log::nak(qp, req.psn, nak);
            }
        }
    }
    response
}

/// Moves responder `qp` to the error state after a request it NAKed, flushing its receive
/// WQEs; a QP destroyed since (which takes the RQ's lock as it goes) stays as destroy left it,
/// and one already in the error state as it is. Returns whether it moved the QP.
pub(crate) fn fail(qp: &Arc<QpShared>) -> bool {
    let mut ci = qp.rq_ci.lock();
    if !qp.is_alive() || qp.state() == QpState::Err {
        return false;
    }
    qp.enter_error();
    if qp.srq.is_none() {
        flush(qp, false, &mut ci);
    }
    true
}

/// Whether connected QP `qp` takes `req` as a peer on the wire would: the same transport
/// service, connected to the requester (its destination QP number is the requester's and its
/// address vector names the GID the request came from) and, for RC, the PSN it expects next.
fn accepts(qp: &QpShared, req: &Request<'_>) -> bool {
    if qp.qp_type != req.service || !matches!(req.service, QpType::Rc | QpType::Uc) {
        return false;
    }
    let attr = qp.attr.lock();
    attr.dest_qp_num == req.src_qpn
        && attr.ah_attr.dgid == req.sgid
        && (req.service != QpType::Rc || qp.epsn.load(Ordering::Relaxed) == req.psn)
}

/// What a request asks of a responder's memory.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asked {
    /// An RDMA WRITE.
    Write,
    /// An RDMA READ.
    Read,
    /// A compare and swap or fetch and add.
    Atomic,
    /// An RDMA ATOMIC WRITE.
    AtomicWrite,
}

impl Asked {
    /// The access right the QP and the key must grant.
    pub(crate) fn access(self) -> Access {
        match self {
            Asked::Write | Asked::AtomicWrite => Access::REMOTE_WRITE,
            Asked::Read => Access::REMOTE_READ,
            Asked::Atomic => Access::REMOTE_ATOMIC,
        }
    }

    /// Whether the responder keeps a resource for it (`max_dest_rd_atomic`): it is answered
    /// with READ responses or an atomic acknowledgment, which a duplicate may ask for again.
    fn takes_resource(self) -> bool {
        self != Asked::Write
    }
}

/// Takes the responder lock of `qp` for an RDMA WRITE, READ or atomic and checks that the QP
/// takes it: in RTR or RTS (a QP in another state drops requests), with the access right it
/// needs among its flags whatever the length (a zero-length request names no memory, but the
/// QP's rights hold), and for a READ or atomic with responder resources (a QP whose
/// `max_dest_rd_atomic` is 0 takes none: an invalid request, as rxe answers it).
/// The copy happens under the lock, which is the QP's RQ lock: moving a QP to the error state
/// takes it before the QP's work completes as flushed, so once a kernel caller sees its
/// registrations' invalidations flushed, no copy into its memory is running.
pub(crate) fn lock(qp: &QpShared, asked: Asked) -> core::result::Result<CiGuard<'_>, Response> {
    let guard = qp.rq_ci.lock();
    if !qp.is_alive() || !matches!(qp.state(), QpState::Rtr | QpState::Rts) {
        return Err(Response::Lost);
    }
    let attr = qp.attr.lock();
    if !attr.qp_access_flags.contains(asked.access()) {
        return Err(Response::Nak(Nak::RemoteAccess));
    }
    if asked.takes_resource() && attr.max_dest_rd_atomic == 0 {
        return Err(Response::Nak(Nak::InvalidRequest));
    }
    drop(attr);
    Ok(guard)
}

/// The span of memory behind `rkey` (of an MR or a window) at `qp` that covers `len` bytes at
/// `va` with rights `need`.
pub(crate) fn resolve_remote(
    qp: &Arc<QpShared>,
    at: Remote,
    need: Access,
    len: usize,
) -> Option<Span> {
    if mw::is_window_key(at.rkey) {
        mw::resolve(qp, at.rkey, need, at.va, len as u64)
    } else {
        resolve(&qp.keys, at.rkey, &qp.pd, need, at.va, len as u64, None)
    }
}

/// One span as [`Segments`].
pub(crate) fn one_span(span: Span) -> Result<Segments> {
    Ok(Segments::Spans(span.into()))
}

/// What a copy that failed means for the requester: its own memory, or the responder's.
fn copy_failed(f: Failed, requester_side: Failed) -> Response {
    match f {
        Failed::NoMemory => Response::Nak(Nak::RemoteOperational),
        f if f == requester_side => Response::LocalFault,
        _ => Response::Nak(Nak::RemoteAccess),
    }
}

fn write(
    qp: &Arc<QpShared>,
    req: &Request<'_>,
    data: &Segments,
    to: Remote,
    imm: Option<u32>,
) -> Response {
    let len = data.len();
    {
        let _responder = match lock(qp, Asked::Write) {
            Ok(guard) => guard,
            Err(response) => return response,
        };
        let Some(span) = resolve_remote(qp, to, Access::REMOTE_WRITE, len) else {
            return Response::Nak(Nak::RemoteAccess);
        };
        let Ok(target) = one_span(span) else {
            return Response::Nak(Nak::RemoteOperational);
        };
        if let Err(f) = payload::copy(data, &target, len) {
            return copy_failed(f, Failed::Source);
        }
    }
    if imm.is_none() {
        return Response::Ack;
    }
    let mut a = Arrival::new(Payload::Packet(&[]), imm, req, WcOpcode::RecvRdmaWithImm);
    // The receive completion reports what the write carried (as rxe does).
    a.byte_len = len as u32;
    deliver(qp, &a)
}

fn read(qp: &Arc<QpShared>, service: QpType, from: Remote, sink: &Segments) -> Response {
    if service != QpType::Rc {
        return Response::Nak(Nak::InvalidRequest);
    }
    let len = sink.len();
    let _responder = match lock(qp, Asked::Read) {
        Ok(guard) => guard,
        Err(response) => return response,
    };
    let Some(span) = resolve_remote(qp, from, Access::REMOTE_READ, len) else {
        return Response::Nak(Nak::RemoteAccess);
    };
    let Ok(source) = one_span(span) else {
        return Response::Nak(Nak::RemoteOperational);
    };
    match payload::copy(&source, sink, len) {
        Ok(()) => Response::Ack,
        Err(f) => copy_failed(f, Failed::Destination),
    }
}

pub(crate) fn atomic(qp: &Arc<QpShared>, service: QpType, at: Remote, op: Atomic) -> Response {
    if service != QpType::Rc || at.va % 8 != 0 {
        return Response::Nak(Nak::InvalidRequest);
    }
    let _responder = match lock(qp, Asked::Atomic) {
        Ok(guard) => guard,
        Err(response) => return response,
    };
    let Some(span) = resolve_remote(qp, at, Access::REMOTE_ATOMIC, 8) else {
        return Response::Nak(Nak::RemoteAccess);
    };
    // Atomic with respect to the other atomics of the device.
    let _guard = qp.keys.atomics.lock();
    let mut old = [0u8; 8];
    if span.read(0, &mut old).is_err() {
        return Response::Nak(Nak::RemoteAccess);
    }
    let value = u64::from_ne_bytes(old);
    let new = match op {
        Atomic::CmpSwap { compare, swap } if value == compare => swap,
        Atomic::CmpSwap { .. } => value,
        Atomic::FetchAdd { add } => value.wrapping_add(add),
    };
    if span.write(0, &new.to_ne_bytes()).is_err() {
        return Response::Nak(Nak::RemoteAccess);
    }
    Response::AtomicAck(value)
}

/// An RDMA ATOMIC WRITE: with the right to write, as rxe asks, the 8 aligned bytes at `at`
/// take `value` in one store after everything the QP wrote before (IBA annex A19).
pub(crate) fn atomic_write(
    qp: &Arc<QpShared>,
    service: QpType,
    at: Remote,
    value: u64,
) -> Response {
    if service != QpType::Rc || at.va % 8 != 0 {
        return Response::Nak(Nak::InvalidRequest);
    }
    let _responder = match lock(qp, Asked::AtomicWrite) {
        Ok(guard) => guard,
        Err(response) => return response,
    };
    let Some(span) = resolve_remote(qp, at, Access::REMOTE_WRITE, 8) else {
        return Response::Nak(Nak::RemoteAccess);
    };
    // Not torn by the device's own atomics either.
    let _guard = qp.keys.atomics.lock();
    match span.store_u64_release(0, value) {
        Ok(()) => Response::Ack,
        // The 8 bytes are not aligned in their page (an MR whose address and iova differ in
        // their low bits).
        Err(e) if e == EINVAL => Response::Nak(Nak::InvalidRequest),
        Err(_) => Response::Nak(Nak::RemoteAccess),
    }
}

/// A message arriving at a receive queue.
struct Arrival<'a> {
    /// For UD: the GRH area, which goes before the payload.
    grh: Option<&'a [u8; GRH_SIZE]>,
    data: Payload<'a>,
    imm: Option<u32>,
    /// The sender asked for a solicited event.
    solicited: bool,
    src_qpn: u32,
    wc_opcode: WcOpcode,
    /// For UD: the network header type the GRH area holds.
    network: Option<u8>,
    /// The byte count of the receive completion.
    byte_len: u32,
    /// The rkey a SEND_WITH_INV asks the receiver to invalidate.
    invalidate: Option<u32>,
}

impl<'a> Arrival<'a> {
    fn new(data: Payload<'a>, imm: Option<u32>, req: &Request<'_>, wc_opcode: WcOpcode) -> Self {
        Self {
            grh: None,
            data,
            imm,
            solicited: req.solicited,
            src_qpn: req.src_qpn,
            wc_opcode,
            network: None,
            byte_len: data.len() as u32,
            invalidate: None,
        }
    }
}

/// Takes the next receive WQE of `d` and scatters the message into it.
fn deliver(d: &Arc<QpShared>, msg: &Arrival<'_>) -> Response {
    // Receive WQEs come from the QP's own RQ or from its SRQ.
    let (rq, db, ci_lock, max_sge) = match (&d.srq, &d.rq) {
        (Some(srq), _) => (&srq.ring, &srq.db, &srq.ci, srq.max_sge),
        (None, Some(rq)) => (rq, &d.db, &d.rq_ci, d.cap.max_recv_sge),
        (None, None) => return Response::Lost,
    };
    let mut ci = ci_lock.lock();
    if !d.is_alive() || !matches!(d.state(), QpState::Rtr | QpState::Rts) {
        return Response::Lost;
    }
    let Ok(pi) = db.load(DB_RQ_PI) else {
        return Response::Lost;
    };
    let pending = pi.wrapping_sub(*ci);
    if pending == 0 {
        d.counters.recv.no_receive(d.qp_type == QpType::Rc);
        return Response::Nak(Nak::Rnr(d.attr.lock().min_rnr_timer));
    }
    if pending > rq.wqe_cnt {
        bad_producer_index(d, false, pi, *ci, rq.wqe_cnt);
        return Response::Lost;
    }
    let len = msg.grh.map_or(0, |g| g.len()) + msg.data.len();
    let wqe = RecvWqe::read(rq, *ci);
    if matches!(d.qp_type, QpType::Ud | QpType::Gsi)
        && wqe.as_ref().is_ok_and(|w| w.too_short(rq, max_sge, len))
    {
        // A datagram longer than the receive WQE is dropped and the WQE stays for the next, as
        // rxe does: a stranger's packet does not fail a QP anyone may send to (QP1 among them).
        return Response::Lost;
    }
    let (wr_id, mut response) = match wqe {
        Ok(wqe) => {
            let copied = wqe
                .sink(d, rq, max_sge, Some(len))
                .map_err(|BadRecv| Response::Nak(Nak::InvalidRequest))
                .and_then(|sink| {
                    place(msg, &sink).map_err(|f| match f {
                        Failed::Source => Response::LocalFault,
                        _ => Response::Nak(Nak::InvalidRequest),
                    })
                });
            (wqe.wr_id, copied.err().unwrap_or(Response::Ack))
        }
        Err(BadRecv) => (0, Response::Nak(Nak::InvalidRequest)),
    };
    // The WQE is given back to the process only now that the kernel is done reading it.
    *ci = ci.wrapping_add(1);
    let _ = db.store(DB_RQ_CI, *ci);
    if let Some(srq) = &d.srq {
        srq.consumed(pending - 1);
    }
    let done = ReceiveDone {
        wr_id,
        wc_opcode: msg.wc_opcode,
        byte_len: msg.byte_len,
        imm: msg.imm,
        invalidate: msg.invalidate,
        src_qpn: msg.src_qpn,
        network: msg.network,
        solicited: msg.solicited,
    };
    // The completion is written before the lock goes: a modify_qp to the error state or to
    // reset, which takes it too, comes before the delivery or after its completion, never
    // between (a success after the flushed WQEs' completions, an old wr_id after a reset).
    let own_rq = d.srq.is_none().then_some(&mut *ci);
    if response == Response::Ack {
        response = finish_receive(d, &done, WcStatus::Success, own_rq);
    } else {
        let status = match response {
            // The sender's memory failed under the copy.
            Response::LocalFault => WcStatus::RemOpErr,
            _ => WcStatus::LocLenErr,
        };
        finish_receive(d, &done, status, own_rq);
    }
    response
}

/// Copies a message into the memory of its receive WQE, GRH area first: once, from where
/// the transport has it.
fn place(msg: &Arrival<'_>, sink: &Segments) -> core::result::Result<(), Failed> {
    let at = match msg.grh {
        Some(grh) => {
            sink.write(0, grh).map_err(|_| Failed::Destination)?;
            grh.len()
        }
        None => 0,
    };
    match msg.data {
        Payload::Memory(m) => payload::copy_to(m, sink, at, m.len()),
        Payload::Packet([]) => Ok(()),
        Payload::Packet(p) => sink.write(at, p).map_err(|_| Failed::Destination),
    }
}

/// The receive completion of a message, once it has been placed.
pub(crate) struct ReceiveDone {
    pub(crate) wr_id: u64,
    pub(crate) wc_opcode: WcOpcode,
    pub(crate) byte_len: u32,
    pub(crate) imm: Option<u32>,
    /// The rkey a SEND_WITH_INV asks the receiver to invalidate.
    pub(crate) invalidate: Option<u32>,
    pub(crate) src_qpn: u32,
    /// For UD: the network header type the GRH area holds.
    pub(crate) network: Option<u8>,
    pub(crate) solicited: bool,
}

/// Writes the receive completion `done` of `d` with `status` (after the invalidation a
/// successful SEND_WITH_INV asks for); any error moves `d` to the error state. `rq_ci` is the
/// consumer index of the QP's RQ when the caller holds the RQ's lock. Returns the answer for
/// the sender: an ACK, or the NAK of a failed invalidation.
pub(crate) fn finish_receive(
    d: &Arc<QpShared>,
    done: &ReceiveDone,
    status: WcStatus,
    rq_ci: Option<&mut u32>,
) -> Response {
    let mut wc = cqe(done.wr_id, status, done.wc_opcode, d.qpn);
    wc.src_qp = done.src_qpn;
    wc.byte_len = done.byte_len;
    if let Some(imm) = done.imm {
        wc.imm_data = imm;
        wc.wc_flags |= flags::WITH_IMM;
    }
    if let Some(net) = done.network {
        wc.wc_flags |= flags::GRH;
        wc.network_hdr_type = net;
    }
    let mut response = Response::Ack;
    if status == WcStatus::Success {
        if let Some(rkey) = done.invalidate {
            // The window is invalid by the time the process sees the receive completion.
            if crate::mr::invalidate(d, rkey, true).is_ok() {
                wc.wc_flags |= flags::WITH_INV;
                wc.imm_data = rkey;
            } else {
                wc.status = WcStatus::RemInvReqErr as u32;
                response = Response::Nak(Nak::InvalidRequest);
            }
        }
    }
    complete(d, false, &wc, done.solicited);
    if wc.status != WcStatus::Success as u32 {
        // A receive error moves the receiver to the error state too; an SRQ's other WQEs
        // stay for the other QPs.
        d.enter_error();
        // Every status written above is a `WcStatus`.
        let status = WcStatus::from_raw(wc.status).unwrap_or(WcStatus::GeneralErr);
        crate::log::error_completion(d, false, status);
        match rq_ci {
            Some(ci) => flush(d, false, ci),
            None if d.srq.is_none() => flush(d, false, &mut d.rq_ci.lock()),
            None => {}
        }
    }
    response
}

/// A receive WQE that a message arriving in pieces has taken ([`take_receive`]).
pub(crate) struct Taken {
    pub(crate) wr_id: u64,
    /// The memory its SGEs name (all of it: the message's length is not known yet); `None`
    /// for a WQE that names memory it may not, whose message completes in error.
    pub(crate) sink: Option<Segments>,
    /// Its index in the QP's RQ, where it stays while its message is under way, until
    /// [`release_receive`]: a message that never ends leaves it to be flushed with the WQEs
    /// after it, or (UC) to take the next message. `None` for a WQE off the ring already (an
    /// SRQ's, or one whose message ends with the packet that took it).
    pub(crate) held: Option<u32>,
}

/// Takes the next receive WQE of `d` for a message that arrives in pieces; `hold` leaves a
/// WQE of the QP's own RQ at the head of the ring until its message ends. Its completion comes
/// with [`finish_receive`]. Fails with the answer for the sender when the QP takes nothing or
/// has no receive WQE (RNR).
pub(crate) fn take_receive(d: &Arc<QpShared>, hold: bool) -> core::result::Result<Taken, Response> {
    let (rq, db, ci_lock, max_sge) = match (&d.srq, &d.rq) {
        (Some(srq), _) => (&srq.ring, &srq.db, &srq.ci, srq.max_sge),
        (None, Some(rq)) => (rq, &d.db, &d.rq_ci, d.cap.max_recv_sge),
        (None, None) => return Err(Response::Lost),
    };
    let mut ci = ci_lock.lock();
    if !d.is_alive() || !matches!(d.state(), QpState::Rtr | QpState::Rts) {
        return Err(Response::Lost);
    }
    let pi = db.load(DB_RQ_PI).map_err(|_| Response::Lost)?;
    let pending = pi.wrapping_sub(*ci);
    if pending == 0 {
        d.counters.recv.no_receive(d.qp_type == QpType::Rc);
        return Err(Response::Nak(Nak::Rnr(d.attr.lock().min_rnr_timer)));
    }
    if pending > rq.wqe_cnt {
        bad_producer_index(d, false, pi, *ci, rq.wqe_cnt);
        return Err(Response::Lost);
    }
    let (wr_id, sink) = match RecvWqe::read(rq, *ci) {
        Ok(wqe) => (wqe.wr_id, wqe.sink(d, rq, max_sge, None).ok()),
        Err(BadRecv) => (0, None),
    };
    // An SRQ's WQE is taken at once: the SRQ's other QPs take the next.
    if hold && d.srq.is_none() {
        return Ok(Taken {
            wr_id,
            sink,
            held: Some(*ci),
        });
    }
    *ci = ci.wrapping_add(1);
    let _ = db.store(DB_RQ_CI, *ci);
    if let Some(srq) = &d.srq {
        srq.consumed(pending - 1);
    }
    Ok(Taken {
        wr_id,
        sink,
        held: None,
    })
}

/// Takes the receive WQE that [`take_receive`] held at index `held` of the RQ of `d` off the
/// ring as its message ends; `false` when it is no longer there (the QP left RTR and RTS,
/// flushing or dropping its WQEs), and the message is not delivered.
pub(crate) fn release_receive(d: &QpShared, held: u32) -> bool {
    let mut ci = d.rq_ci.lock();
    if !d.is_alive() || !matches!(d.state(), QpState::Rtr | QpState::Rts) || *ci != held {
        return false;
    }
    *ci = ci.wrapping_add(1);
    let _ = d.db.store(DB_RQ_CI, *ci);
    true
}

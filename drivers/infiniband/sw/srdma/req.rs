// SPDX-License-Identifier: GPL-2.0-only

//! The requester: takes the WQEs of a send queue after a doorbell kick, turns each into a
//! request for the QP's transport (or carries out the local ones: binds, invalidations,
//! registrations) and hands what comes back to the completer.
//!
//! Everything read from a ring is copied into private memory once and validated there
//! ([`crate::wqe`]); indices are bounded by the ring sizes; failures become error completions
//! and move the QP to the error state, as verbs defines.

use crate::{
    clock::Now,
    comp::{self, flush, wait_for_responders, Judged},
    counters::Counter,
    device::{SrdmaDevice, PORT},
    fastreg, grh,
    message::{Atomic, NetworkHdr, Op, Path, Payload, Remote, Request, Response, PSN_MASK},
    mw,
    qp::{QpShared, SqRun, DB_SQ_PI},
    trace,
    transport::{
        self,
        roce::requester::{self, Outgoing, WireReq},
        Peer, Route,
    },
    wc::{WcStatus, WrOpcode},
    wqe::{bad_producer_index, SendWqe},
};
use core::sync::atomic::{fence, Ordering};
use kernel::{
    prelude::*,
    rdma::{
        attr::Mtu,
        mr::Access,
        qp::{Qp, QpAttr, QpState, QpType},
        Device,
    },
    sync::Arc,
};

/// The most WQEs one run of a send queue carries out (a kick, a worker or poller pass).
const SQ_BUDGET: u32 = 128;

/// The bytes after which a run of a send queue takes no further WQE: a few milliseconds of
/// copying. A single WQE may move more (up to `max_msg_sz`); its copy gives the CPU up
/// between pieces.
const SQ_BYTE_BUDGET: usize = 8 << 20;

/// Set in the Q_Key of a UD work request: use the QP's own Q_Key instead (IBA 10.2.4).
const QKEY_FROM_QP: u32 = 0x8000_0000;

/// Processes the SQ of a user QP up to the producer index its doorbell record shows (the
/// doorbell kick), in the process's own syscall. A kick that finds another context running the
/// SQ (the wire's receive thread sending the next packets once an acknowledgment made room,
/// the worker, a modify) leaves a note instead, and that context runs the queue again as it
/// lets go of it ([`run_kicked`]): the process does not wait for that run, which may send a
/// window of packets on the wire, and no other thread is woken for its WQEs.
pub(crate) fn kick(qp: &Qp<SrdmaDevice>) -> Result {
    let (dev, q) = (qp.device(), &qp.shared);
    q.counters.send.inc(Counter::Kicks);
    if let Some(mut sq) = q.sq_run.try_lock() {
        let result = process_sq(dev, q, &mut sq, Runner::Kick);
        drop(sq);
        // The kicks of other threads that found the queue held by this one.
        let _ = run_kicked(dev, q, Runner::Kick);
        return result;
    }
    // Release: the run that takes the note sees the producer index the process stored.
    q.kicked.store(true, Ordering::Release);
    run_kicked(dev, q, Runner::Kick)
}

/// The runs of a SQ that one context makes for the kicks it finds noted before it hands the
/// queue to the worker: a process that keeps posting does not keep a receive thread from its
/// packets.
const KICKED_RUNS: u32 = 2;

/// Runs the SQ of `q` for a kick noted and not taken yet, unless another context holds the
/// queue: that one calls this as it lets go of it. Every context that runs a SQ does so, after
/// it let go of the lock, so that no kick is left behind.
pub(crate) fn run_kicked(dev: &Device<SrdmaDevice>, q: &Arc<QpShared>, runner: Runner) -> Result {
    let mut result = Ok(());
    let mut runs = 0;
    loop {
        // Between a kick's note and its look at the lock, and between a holder's letting go
        // of the lock and its look at the note: either the kick takes the lock or the context
        // that held it sees the note.
        fence(Ordering::SeqCst);
        if !q.kicked.load(Ordering::Acquire) {
            return result;
        }
        // Without memory to queue the QP on the worker, this context goes on.
        if runs == KICKED_RUNS && dev.worker().schedule(dev.queue(), q.clone()).is_ok() {
            return result;
        }
        let Some(mut sq) = q.sq_run.try_lock() else {
            return result;
        };
        let run = process_sq(dev, q, &mut sq, runner);
        if result.is_ok() {
            result = run;
        }
        runs = (runs + 1).min(KICKED_RUNS);
    }
}

/// Who runs a send queue.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runner {
    /// A process's doorbell, in its syscall: it starts the WQEs behind what is in flight (and
    /// sends again what a timeout holds), and leaves the rest of a message that the window held
    /// back to the engine, which an acknowledgment or the timer wakes: a process posting a
    /// queue of long messages would otherwise send earlier ones, post after post.
    Kick,
    /// The device's engine: the completer, the worker, the poller.
    Engine,
}

/// What the requester works with for the WQEs of one run of a send queue.
struct Ctx<'a> {
    dev: &'a Device<SrdmaDevice>,
    q: &'a Arc<QpShared>,
    /// The QP's attributes as the run began.
    attr: &'a QpAttr,
    /// The destination on this host, once found (kept between runs).
    peer: &'a mut Option<Peer>,
    now: &'a Now,
    /// The bytes the WQEs of this run have moved so far.
    moved: &'a mut usize,
}

/// Processes the SQ of `q` from `sq.ci` (its locked consumer index) up to the producer index,
/// as `runner`.
pub(crate) fn process_sq(
    dev: &Device<SrdmaDevice>,
    q: &Arc<QpShared>,
    sq: &mut SqRun,
    runner: Runner,
) -> Result {
    let SqRun { ci, peer } = sq;
    // Every run takes the kicks noted so far ([`kick`]), and sees their producer index
    // (acquire); a kick noted after this is seen by the run or runs the queue again.
    if q.kicked.load(Ordering::Relaxed) {
        q.kicked.swap(false, Ordering::Acquire);
    }
    if !q.is_alive() {
        // Destroyed: queued work and RNR retries of the QP end here ([`QpShared::retire`]).
        return Ok(());
    }
    let attr = *q.attr.lock();
    match attr.qp_state {
        QpState::Rts => {}
        // Work posted to a QP in the error state completes as flushed, receives included
        // (ib_drain_rq posts one and waits for its flush).
        QpState::Err => {
            wait_for_responders(q);
            q.wire_req.lock().clear(*ci);
            flush(q, true, ci);
            q.wire.lock().abandon(q);
            let mut rq_ci = q.rq_ci.lock();
            flush(q, false, &mut rq_ci);
            return Ok(());
        }
        _ => return Err(EINVAL),
    }
    let now = Now::new();
    if q.rnr.waiting(&now) {
        // The worker tries the head WQE again when its RNR timer runs out.
        return Ok(());
    }
    let mut wr = requester::lock(q);
    let mut failed = requester::on_timer(dev, q, &attr, ci, &mut wr, &now);
    if !failed && runner == Runner::Engine {
        // The rest of a long message goes before the WQEs behind it.
        requester::push(dev, q, &attr, &mut wr);
    }
    let pi = q.db.load(DB_SQ_PI)?;
    if pi.wrapping_sub(*ci) > q.sq.wqe_cnt {
        bad_producer_index(q, true, pi, *ci, q.sq.wqe_cnt);
        return Err(EINVAL);
    }
    // WQEs in flight on the wire are behind the consumer index; the queue goes on after them.
    let start = wr.next(*ci);
    let pending = if failed { 0 } else { pi.wrapping_sub(start) };
    trace::srdma_doorbell(q.qpn, *ci, pi);
    q.counters.send.doorbell(pending);
    let mut moved = 0;
    for n in 0..pending {
        if (n == SQ_BUDGET || moved >= SQ_BYTE_BUDGET) && !failed {
            // The rest runs on the device's worker, after the workqueue had its chance to
            // reschedule: no kick or pass works without bound, and the worker takes the QPs
            // that have work in turn.
            drop(wr);
            dev.worker().schedule(dev.queue(), q.clone())?;
            return Ok(());
        }
        let idx = start.wrapping_add(n);
        if wr.busy() && !failed && !wr.has_room(q, &attr) {
            // The completer goes on when acknowledgments make room.
            break;
        }
        let wqe = SendWqe::read(q, idx)?;
        if wr.busy() && !failed && wqe.opcode.is_some_and(WrOpcode::is_local) {
            // Local operations wait for the WQEs before them to complete.
            break;
        }
        let status = if failed {
            WcStatus::WrFlushErr
        } else {
            let mut cx = Ctx {
                dev,
                q,
                attr: &attr,
                peer,
                now: &now,
                moved: &mut moved,
            };
            match carry_out(&mut cx, &mut wr, &wqe) {
                Judged::Done(status) if wr.busy() => {
                    requester::done_in_turn(&mut wr, &wqe, status)?;
                    requester::advance(&mut wr, idx);
                    continue;
                }
                Judged::Done(status) => status,
                Judged::Sent => {
                    requester::advance(&mut wr, idx);
                    continue;
                }
                Judged::RetryAt(at) => {
                    // The WQE stays at the head of the queue until then.
                    drop(wr);
                    dev.worker().retry_at(dev.queue(), q, at)?;
                    return Ok(());
                }
            }
        };
        failed |= comp::retire(q, ci, &wqe, status, failed)?;
        requester::advance(&mut wr, idx);
    }
    let deadline = requester::deadline(&wr);
    drop(wr);
    if let Some(at) = deadline {
        dev.worker().retry_at(dev.queue(), q, at)?;
    }
    if failed {
        // The QP entered the error state: its posted receives are flushed too.
        q.wire.lock().abandon(q);
        let mut rq_ci = q.rq_ci.lock();
        flush(q, false, &mut rq_ci);
    }
    Ok(())
}

/// Carries out WQE `wqe` of `q`: a local operation here, anything else as a request through
/// the transport, whose response the completer judges.
fn carry_out(cx: &mut Ctx<'_>, wr: &mut WireReq, wqe: &SendWqe) -> Judged {
    let q = cx.q;
    wqe.trace(q);
    let Some(opcode) = wqe.opcode else {
        q.counters.send.inc(Counter::RingErrors);
        return Judged::Done(WcStatus::LocQpOpErr);
    };
    let result = match (q.qp_type, opcode) {
        (QpType::Ud | QpType::Gsi, WrOpcode::Send | WrOpcode::SendWithImm) => {
            datagram(cx, wqe, opcode)
        }
        (QpType::Rc | QpType::Uc, WrOpcode::BindMw | WrOpcode::LocalInv | WrOpcode::RegMr) => {
            return Judged::Done(memory_op(q, wqe, opcode));
        }
        // Reads and atomics need responses: RC only.
        (
            QpType::Rc,
            WrOpcode::RdmaRead | WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd,
        ) => read_or_atomic(cx, wr, wqe, opcode),
        (QpType::Rc, WrOpcode::AtomicWrite) => atomic_write(cx, wr, wqe),
        (
            QpType::Rc | QpType::Uc,
            WrOpcode::Send
            | WrOpcode::SendWithImm
            | WrOpcode::SendWithInv
            | WrOpcode::RdmaWrite
            | WrOpcode::RdmaWriteWithImm,
        ) => send_or_write(cx, wr, wqe, opcode),
        _ => Err(WcStatus::LocQpOpErr),
    };
    match result {
        Ok(judged) => judged,
        Err(status) => Judged::Done(status),
    }
}

/// The parts of a request from `q` (attributes `attr`) with source GID `sgid` to its
/// connected peer, and the PSN it takes.
fn connected_request<'a>(
    q: &QpShared,
    attr: &QpAttr,
    sgid: [u8; 16],
    solicited: bool,
    op: Op<'a>,
) -> Request<'a> {
    let psn = q.sq_psn.load(Ordering::Relaxed);
    q.sq_psn
        .store(psn.wrapping_add(1) & PSN_MASK, Ordering::Relaxed);
    Request {
        service: q.qp_type,
        src_qpn: q.qpn,
        sgid,
        dest_qpn: attr.dest_qp_num,
        psn,
        solicited,
        path: Path {
            traffic_class: attr.ah_attr.traffic_class,
            hop_limit: attr.ah_attr.hop_limit,
            flow_label: attr.ah_attr.flow_label,
        },
        op,
    }
}

/// Sends `out` from connected QP `q`: to an srdma device of this host by reference, whose
/// response is judged at once, or on the wire, where the WQE waits in flight.
fn send_connected(cx: &mut Ctx<'_>, wr: &mut WireReq, wqe: &SendWqe, out: Outgoing) -> Judged {
    let (dev, q, attr, now) = (cx.dev, cx.q, cx.attr, cx.now);
    // The destination as found by an earlier request, or looked up now.
    let cached = cx
        .peer
        .as_ref()
        .and_then(|peer| Some((peer.qp()?, peer.sgid)));
    let (to, sgid) = match cached {
        Some((qp, sgid)) => (Some(qp), sgid),
        None => {
            let to = match transport::route(dev, &attr.ah_attr.dgid, attr.dest_qp_num) {
                Route::Local(to) => to,
                Route::Wire => {
                    // The destination found earlier is gone and the GID is not on this host
                    // now: later requests go on the wire too, not to a QP of that number that
                    // may appear at the old destination.
                    *cx.peer = None;
                    return requester::start(dev, q, attr, wr, wqe, out, now.get());
                }
            };
            // An address vector naming a GID the port does not have cannot be sent from.
            let Ok(sgid) = dev.query_gid(PORT, u32::from(attr.ah_attr.sgid_index)) else {
                return comp::respond(q, attr, 0, Response::Lost, None, now);
            };
            // A device without a QP of that number answers nothing; a later request looks again.
            *cx.peer = Peer::new(&to, attr.dest_qp_num, sgid);
            (to.qp, sgid)
        }
    };
    let (op, sink) = match &out {
        Outgoing::Send {
            data,
            imm,
            invalidate,
        } => (
            Op::Send {
                data,
                imm: *imm,
                invalidate: *invalidate,
            },
            None,
        ),
        Outgoing::Write { data, to, imm } => (
            Op::Write {
                data,
                to: *to,
                imm: *imm,
            },
            None,
        ),
        Outgoing::Read { from, sink } => (Op::Read { from: *from, sink }, Some(sink)),
        Outgoing::Atomic { at, op, sink } => (Op::Atomic { at: *at, op: *op }, Some(sink)),
        Outgoing::AtomicWrite { at, value } => (
            Op::AtomicWrite {
                at: *at,
                value: *value,
            },
            None,
        ),
    };
    let req = connected_request(q, attr, sgid, wqe.solicited, op);
    let response = transport::send_local(q, to.as_ref(), &req);
    comp::respond(q, attr, req.psn, response, sink, now)
}

fn send_or_write(
    cx: &mut Ctx<'_>,
    wr: &mut WireReq,
    wqe: &SendWqe,
    opcode: WrOpcode,
) -> core::result::Result<Judged, WcStatus> {
    let q = cx.q;
    let data = wqe.gather(q)?;
    q.counters.send.gathered(wqe.inline, data.len());
    *cx.moved += data.len();
    let imm = opcode.has_imm().then_some(wqe.imm_data);
    let out = if opcode.is_send() {
        Outgoing::Send {
            data,
            imm,
            invalidate: (opcode == WrOpcode::SendWithInv).then_some(wqe.imm_data),
        }
    } else {
        let remote = wqe.remote(q).map_err(|_| WcStatus::LocQpOpErr)?;
        Outgoing::Write {
            data,
            to: Remote {
                va: remote.remote_addr,
                rkey: remote.rkey,
            },
            imm,
        }
    };
    Ok(send_connected(cx, wr, wqe, out))
}

/// An RDMA READ or an atomic: the response goes into the requester's SGEs.
fn read_or_atomic(
    cx: &mut Ctx<'_>,
    wr: &mut WireReq,
    wqe: &SendWqe,
    opcode: WrOpcode,
) -> core::result::Result<Judged, WcStatus> {
    let q = cx.q;
    if wqe.inline {
        q.counters.send.inc(Counter::RingErrors);
        return Err(WcStatus::LocLenErr);
    }
    // Where the response goes: the requester's SGEs, with the right to write them.
    let sink = wqe.sges(q, Access::LOCAL_WRITE)?;
    *cx.moved += sink.len();
    let remote = wqe.remote(q).map_err(|_| WcStatus::LocQpOpErr)?;
    let at = Remote {
        va: remote.remote_addr,
        rkey: remote.rkey,
    };
    let out = match opcode {
        WrOpcode::RdmaRead => Outgoing::Read { from: at, sink },
        _ if sink.len() != 8 || at.va % 8 != 0 => return Err(WcStatus::LocLenErr),
        WrOpcode::AtomicCmpAndSwp => Outgoing::Atomic {
            at,
            op: Atomic::CmpSwap {
                compare: remote.compare_add,
                swap: remote.swap,
            },
            sink,
        },
        _ => Outgoing::Atomic {
            at,
            op: Atomic::FetchAdd {
                add: remote.compare_add,
            },
            sink,
        },
    };
    Ok(send_connected(cx, wr, wqe, out))
}

/// An RDMA ATOMIC WRITE: its 8 bytes travel in the WQE's remote segment (`compare_add`), the
/// responder judges the address.
fn atomic_write(
    cx: &mut Ctx<'_>,
    wr: &mut WireReq,
    wqe: &SendWqe,
) -> core::result::Result<Judged, WcStatus> {
    let remote = wqe.remote(cx.q).map_err(|_| WcStatus::LocQpOpErr)?;
    let out = Outgoing::AtomicWrite {
        at: Remote {
            va: remote.remote_addr,
            rkey: remote.rkey,
        },
        value: remote.compare_add,
    };
    Ok(send_connected(cx, wr, wqe, out))
}

/// A UD send: a datagram of at most one path MTU to the QP and Q_Key its WQE names. What the
/// destination cannot take is lost without an error, as for any datagram.
fn datagram(
    cx: &Ctx<'_>,
    wqe: &SendWqe,
    opcode: WrOpcode,
) -> core::result::Result<Judged, WcStatus> {
    let (dev, q, attr) = (cx.dev, cx.q, cx.attr);
    let ud = wqe.ud(q).map_err(|_| WcStatus::LocQpOpErr)?;
    let payload = wqe.gather(q)?;
    q.counters.send.gathered(wqe.inline, payload.len());
    let mtu = dev
        .netdev(PORT)
        .and_then(|ndev| Mtu::for_roce(ndev.mtu()))
        .unwrap_or(Mtu::Mtu256);
    if payload.len() > mtu.bytes() as usize {
        return Err(WcStatus::LocLenErr);
    }
    // An address vector naming a GID the port does not have cannot be sent from.
    let sgid = dev
        .query_gid(PORT, u32::from(ud.sgid_index))
        .map_err(|_| WcStatus::LocQpOpErr)?;
    let route = grh::Route {
        sgid: &sgid,
        dgid: &ud.dgid,
        traffic_class: ud.traffic_class,
        hop_limit: ud.hop_limit,
        flow_label: ud.flow_label,
    };
    let grh = grh::build(&route, payload.len());
    let qkey = if ud.remote_qkey & QKEY_FROM_QP != 0 {
        attr.qkey
    } else {
        ud.remote_qkey
    };
    let network = if grh::is_v4_mapped(&sgid) && grh::is_v4_mapped(&ud.dgid) {
        NetworkHdr::Ipv4
    } else {
        NetworkHdr::Ipv6
    };
    let psn = q.sq_psn.load(Ordering::Relaxed);
    q.sq_psn
        .store(psn.wrapping_add(1) & PSN_MASK, Ordering::Relaxed);
    let req = Request {
        service: q.qp_type,
        src_qpn: q.qpn,
        sgid,
        dest_qpn: ud.remote_qpn,
        psn,
        solicited: wqe.solicited,
        path: Path {
            traffic_class: ud.traffic_class,
            hop_limit: ud.hop_limit,
            flow_label: ud.flow_label,
        },
        op: Op::Datagram {
            grh: &grh,
            data: Payload::Memory(&payload),
            qkey,
            imm: (opcode == WrOpcode::SendWithImm).then_some(wqe.imm_data),
            network,
        },
    };
    // Whatever becomes of it, a datagram completes as sent.
    let _ = transport::send(dev, q, &ud.dgid, &req);
    Ok(Judged::Done(WcStatus::Success))
}

/// Carries out a bind of a memory window, a fast registration or a local invalidation.
fn memory_op(q: &Arc<QpShared>, wqe: &SendWqe, opcode: WrOpcode) -> WcStatus {
    if opcode == WrOpcode::LocalInv {
        return match crate::mr::invalidate(q, wqe.imm_data, false) {
            Ok(()) => WcStatus::Success,
            Err(_) => WcStatus::LocQpOpErr,
        };
    }
    // Binds and registrations name their memory in the bind segment.
    let Ok(b) = wqe.bind(q) else {
        return WcStatus::LocQpOpErr;
    };
    if opcode == WrOpcode::RegMr {
        return match fastreg::register(&q.keys, &q.pd, &b) {
            Ok(()) => WcStatus::Success,
            Err(_) => WcStatus::LocQpOpErr,
        };
    }
    match mw::bind(q, &b) {
        Ok(()) => WcStatus::Success,
        Err(_) => WcStatus::MwBindErr,
    }
}

// SPDX-License-Identifier: GPL-2.0-only

//! The engine: takes WQEs from a send queue after a doorbell kick and carries them out against
//! the destination QP, which the loopback backend finds on this host by its GID and number.
//!
//! Everything read from a ring is copied into private memory once and validated there; indices
//! are bounded by the ring sizes; failures become error completions and move the QP to the
//! error state, as verbs defines.

use crate::{
    counters::Counter,
    device::{SrdmaDevice, PORT},
    fastreg, grh,
    mr::{resolve, Span},
    mw,
    params::MAX_MSG_SZ,
    payload::{self, Failed, Segments},
    qp::{CiGuard, QpShared, DB_RQ_CI, DB_RQ_PI, DB_SQ_CI, DB_SQ_PI},
    rnr::Verdict,
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    net,
    prelude::*,
    rdma::{
        attr::Mtu,
        mr::access,
        qp::{Qp, QpAttr, QpState, QpType},
        uapi::{
            srdma_cqe, srdma_rq_wqe_hdr, srdma_sge, srdma_wqe_bind, srdma_wqe_ctrl,
            srdma_wqe_remote, srdma_wqe_ud, SRDMA_RQ_WQE_HDR_SIZE, SRDMA_SGE_SIZE,
            SRDMA_SQ_WQE_HDR_SIZE, SRDMA_WQE_INLINE, SRDMA_WQE_SIGNALED, SRDMA_WQE_SOLICITED,
        },
        Device, DeviceRef,
    },
    sync::Arc,
    time::Ktime,
};

/// Where the remote, datagram or bind segment of an SQ WQE starts.
pub(crate) const SEG: usize = core::mem::size_of::<srdma_wqe_ctrl>();

// `enum ib_uverbs_wr_opcode`.
const WR_RDMA_WRITE: u8 = 0;
const WR_RDMA_WRITE_WITH_IMM: u8 = 1;
const WR_SEND: u8 = 2;
const WR_SEND_WITH_IMM: u8 = 3;
const WR_RDMA_READ: u8 = 4;
const WR_ATOMIC_CMP_AND_SWP: u8 = 5;
const WR_ATOMIC_FETCH_AND_ADD: u8 = 6;
const WR_LOCAL_INV: u8 = 7;
const WR_BIND_MW: u8 = 8;
const WR_SEND_WITH_INV: u8 = 9;
/// `IB_WR_REG_MR`: kernel callers only, written by kverbs (never accepted from user rings).
pub(crate) const KWR_REG_MR: u8 = 0x20;

// `enum ibv_wc_status`.
const WC_SUCCESS: u32 = 0;
const WC_LOC_LEN_ERR: u32 = 1;
const WC_LOC_QP_OP_ERR: u32 = 2;
const WC_LOC_PROT_ERR: u32 = 4;
const WC_WR_FLUSH_ERR: u32 = 5;
const WC_MW_BIND_ERR: u32 = 6;
const WC_REM_INV_REQ_ERR: u32 = 9;
const WC_REM_ACCESS_ERR: u32 = 10;
const WC_REM_ABORT_ERR: u32 = 11;
const WC_RETRY_EXC_ERR: u32 = 12;
const WC_RNR_RETRY_EXC_ERR: u32 = 13;

// `enum ibv_wc_opcode` and `enum ibv_wc_flags`.
const WC_SEND: u32 = 0;
const WC_RDMA_WRITE: u32 = 1;
const WC_RDMA_READ: u32 = 2;
const WC_COMP_SWAP: u32 = 3;
const WC_FETCH_ADD: u32 = 4;
const WC_BIND_MW: u32 = 5;
const WC_LOCAL_INV: u32 = 6;
/// `IB_WC_REG_MR` (kernel CQs only).
const KWC_REG_MR: u32 = 10;
const WC_RECV: u32 = 128;
const WC_RECV_RDMA_WITH_IMM: u32 = 129;
const WC_GRH: u32 = 1;
const WC_WITH_IMM: u32 = 2;
const WC_WITH_INV: u32 = 8;

// `enum rdma_network_type`, for the GRH area of UD receives.
const NETWORK_IPV4: u8 = 2;
const NETWORK_IPV6: u8 = 3;

/// Set in the Q_Key of a UD work request: use the QP's own Q_Key instead (IBA 10.2.4).
const QKEY_FROM_QP: u32 = 0x8000_0000;

/// Warnings about what processes do wrong stop after a few, so that a process cannot flood the
/// kernel log.
fn warn_allowed() -> bool {
    const LIMIT: u32 = 20;
    static WARNINGS: AtomicU32 = AtomicU32::new(0);
    let n = WARNINGS.fetch_add(1, Ordering::Relaxed);
    if n == LIMIT {
        pr_warn!("further warnings about rings and CQ overruns are suppressed\n");
    }
    n < LIMIT
}

/// Why a delivery to the destination failed.
enum Refused {
    /// No receive WQE was posted; the responder's `min_rnr_timer` code.
    Rnr(u8),
    /// The message did not fit the receive WQE, or the receive WQE was bad.
    Length,
    /// The destination QP is not there or not ready.
    Unreachable,
    /// The rkey a SEND_WITH_INV names could not be invalidated.
    Invalidate,
    /// The sender's memory could not be read during the copy.
    Source,
}

/// The destination of a connected QP: its device (kept registered) and its state.
struct Dest {
    dev: DeviceRef<SrdmaDevice>,
    qp: Arc<QpShared>,
}

fn find_dest(dgid: &[u8; 16], qpn: u32) -> Option<Dest> {
    let ndev = net::device::Device::find_by_ip(dgid)?;
    let dev = Device::<SrdmaDevice>::get_by_netdev(&ndev)?;
    let qp = dev.qps().lock().get(qpn)?;
    Some(Dest { dev, qp })
}

/// The most WQEs one run of a send queue carries out (a kick, a worker or poller pass).
const SQ_BUDGET: u32 = 128;

/// Mask of a 24-bit packet sequence number.
const PSN_MASK: u32 = 0xff_ffff;

/// Whether the destination QP takes requests from `q` (of device `dev`, with attributes
/// `attr`) as a peer on the wire would: the same transport, connected to `q` (its destination
/// QP number is `q`'s and its address vector names the GID `q` sends from) and, for RC,
/// expecting the PSN `q` sends next. Anything else is dropped unseen: an RC requester times
/// out, a UC requester never learns, and the destination's process sees nothing.
fn accepts(dev: &Device<SrdmaDevice>, dest: &Dest, q: &QpShared, attr: &QpAttr) -> bool {
    if dest.qp.qp_type != q.qp_type {
        return false;
    }
    let Ok(sgid) = dev.query_gid(PORT, u32::from(attr.ah_attr.sgid_index)) else {
        return false;
    };
    let peer = dest.qp.attr.lock();
    peer.dest_qp_num == q.qpn
        && peer.ah_attr.dgid == sgid
        && (q.qp_type != QpType::Rc
            || dest.qp.epsn.load(Ordering::Relaxed) == q.sq_psn.load(Ordering::Relaxed))
}

/// Moves the PSNs of requester `q` and of its destination past a message the destination
/// accepted.
fn advance_psn(q: &QpShared, dest: &Dest) {
    let next = q.sq_psn.load(Ordering::Relaxed).wrapping_add(1) & PSN_MASK;
    q.sq_psn.store(next, Ordering::Relaxed);
    dest.qp.epsn.store(next, Ordering::Relaxed);
}

/// Finds the destination of an RC or UC request of `q` and checks that it accepts it
/// ([`accepts`]); counts the request as sent either way.
fn connected_dest(dev: &Device<SrdmaDevice>, q: &QpShared, attr: &QpAttr) -> Option<Dest> {
    let dest =
        find_dest(&attr.ah_attr.dgid, attr.dest_qp_num).filter(|dest| accepts(dev, dest, q, attr));
    q.counters.send.sent(dest.as_ref().map(|d| &d.qp.counters));
    dest
}

/// Waits for the RDMA WRITEs, READs and atomics that are copying into the memory of `q`, which
/// is in the error state: those that come later see the state and are refused ([`responder`]).
fn wait_for_responders(q: &QpShared) {
    drop(q.rq_ci.lock());
}

/// The status a requester of type `requester` completes with when the responder fails the
/// request with `status`: UC has no acknowledgements, so a UC requester never learns.
fn seen_by(requester: QpType, status: u32) -> u32 {
    if requester == QpType::Rc {
        status
    } else {
        WC_SUCCESS
    }
}

/// Takes the responder lock of the destination QP for an RDMA WRITE, READ or atomic and checks
/// that the QP accepts it: in RTR or RTS (a QP in another state drops requests, so an RC
/// requester times out) and with `need` among its access flags (else an RC requester gets a
/// remote access error). A UC requester never learns of a refusal.
/// The copy happens under the lock, which is the QP's RQ lock: moving a QP to the error state
/// takes it before the QP's work completes as flushed, so once a kernel caller sees its
/// registrations' invalidations flushed, no copy into its memory is running.
fn responder(dest: &Dest, requester: QpType, need: u32) -> core::result::Result<CiGuard<'_>, u32> {
    let guard = dest.qp.rq_ci.lock();
    if !dest.qp.is_alive() || !matches!(dest.qp.state(), QpState::Rtr | QpState::Rts) {
        return Err(seen_by(requester, WC_RETRY_EXC_ERR));
    }
    if dest.qp.attr.lock().qp_access_flags & need != need {
        return Err(seen_by(requester, WC_REM_ACCESS_ERR));
    }
    Ok(guard)
}

/// Returns the span of memory behind `rkey` (of an MR or a window) at the destination that
/// covers `len` bytes at `addr` with rights `need`.
fn resolve_remote(dest: &Dest, rkey: u32, need: u32, addr: u64, len: u64) -> Option<Span> {
    if mw::is_window_key(rkey) {
        mw::resolve(&dest.dev, &dest.qp, rkey, need, addr, len)
    } else {
        resolve(&dest.dev, rkey, &dest.qp.pd, need, addr, len, None)
    }
}

/// A producer index beyond the ring (the SQ's if `send`, else the RQ's) is garbage the
/// process wrote: the QP enters the error state.
fn bad_producer_index(q: &QpShared, send: bool) {
    let (counters, queue) = if send {
        (&q.counters.send, "SQ")
    } else {
        (&q.counters.recv, "RQ")
    };
    counters.inc(Counter::RingErrors);
    if warn_allowed() {
        pr_warn!(
            "QP {}: {} producer index out of range; QP in error\n",
            q.qpn,
            queue
        );
    }
    q.enter_error();
}

fn cqe(wr_id: u64, status: u32, opcode: u32, qp_num: u32) -> srdma_cqe {
    srdma_cqe {
        wr_id,
        status,
        opcode,
        qp_num,
        ..Default::default()
    }
}

/// Writes `cqe` of QP `q` to its send CQ (`send`) or its receive CQ, and counts it.
fn complete(q: &QpShared, send: bool, cqe: &srdma_cqe, solicited: bool) {
    let (counters, cq) = if send {
        (&q.counters.send, &q.send_cq)
    } else {
        (&q.counters.recv, &q.recv_cq)
    };
    let pushed = cq.push(cqe, solicited, q.handle);
    counters.completion(cqe, pushed.is_ok());
    if pushed.is_err() {
        if warn_allowed() {
            pr_warn!("CQ overrun: a completion of QP {} is lost\n", cqe.qp_num);
        }
    }
}

/// Completes every WQE between `*ci` and the producer index at `pi_field` of the doorbell
/// record with `WR_FLUSH_ERR`, as a QP in the error state does, and advances `*ci`.
pub(crate) fn flush(q: &QpShared, send: bool, ci: &mut u32) {
    let db = &q.db;
    let (ring, pi_field, ci_field, opcode) = match (send, &q.rq) {
        (true, _) => (&q.sq, DB_SQ_PI, DB_SQ_CI, WC_SEND),
        (false, Some(rq)) => (rq, DB_RQ_PI, DB_RQ_CI, WC_RECV),
        (false, None) => return,
    };
    let Ok(pi) = db.load(pi_field) else {
        return;
    };
    // A producer index beyond the ring flushes what the ring can hold.
    let pending = pi.wrapping_sub(*ci).min(ring.wqe_cnt);
    for _ in 0..pending {
        let off = (*ci & (ring.wqe_cnt - 1)) as usize * ring.wqe_size as usize;
        // The wr_id is the first field of both SQ and RQ WQEs.
        let wr_id = ring.mem.read_obj::<u64>(off).unwrap_or(0);
        complete(q, send, &cqe(wr_id, WC_WR_FLUSH_ERR, opcode, q.qpn), false);
        *ci = ci.wrapping_add(1);
    }
    *ci = pi;
    let _ = db.store(ci_field, *ci);
}

/// Processes the SQ of a user QP up to the producer index its doorbell record shows (the
/// doorbell kick), in the process's own syscall.
pub(crate) fn kick(qp: &Qp<SrdmaDevice>) -> Result {
    let mut ci = qp.shared.sq_ci.lock();
    qp.shared.counters.send.inc(Counter::Kicks);
    process_sq(qp.device(), &qp.shared, &mut ci)
}

/// Processes the SQ of `q` from `*ci` (its locked consumer index) up to the producer index.
pub(crate) fn process_sq(dev: &Device<SrdmaDevice>, q: &Arc<QpShared>, ci: &mut u32) -> Result {
    if !q.is_alive() {
        // Destroyed: queued work and RNR retries of the QP end here ([`QpShared::retire`]).
        return Ok(());
    }
    let db = &q.db;
    let attr = *q.attr.lock();
    match attr.qp_state {
        QpState::Rts => {}
        // Work posted to a QP in the error state completes as flushed, receives included
        // (ib_drain_rq posts one and waits for its flush).
        QpState::Err => {
            wait_for_responders(q);
            flush(q, true, ci);
            let mut rq_ci = q.rq_ci.lock();
            flush(q, false, &mut rq_ci);
            return Ok(());
        }
        _ => return Err(EINVAL),
    }
    let now = Ktime::ktime_get().to_ns();
    if q.rnr.waiting(now) {
        // The worker tries the head WQE again when its RNR timer runs out.
        return Ok(());
    }
    let pi = db.load(DB_SQ_PI)?;
    let pending = pi.wrapping_sub(*ci);
    if pending > q.sq.wqe_cnt {
        bad_producer_index(q, true);
        return Err(EINVAL);
    }
    q.counters.send.doorbell(pending);
    let mut failed = false;
    for n in 0..pending {
        if n == SQ_BUDGET && !failed {
            // The rest runs on the device's worker, after the workqueue had its chance to
            // reschedule: no kick or pass works without bound.
            dev.worker().schedule(dev.queue(), q.clone())?;
            return Ok(());
        }
        let off = (*ci & (q.sq.wqe_cnt - 1)) as usize * q.sq.wqe_size as usize;
        let ctrl: srdma_wqe_ctrl = q.sq.mem.read_obj(off)?;
        let mut rnr_timer = None;
        let (status, opcode) = if failed {
            (WC_WR_FLUSH_ERR, WC_SEND)
        } else {
            execute(dev, q, &attr, off, &ctrl, &mut rnr_timer)
        };
        if let Some(timer) = rnr_timer {
            if let Verdict::RetryAt(at) = q.rnr.refused(now, attr.rnr_retry, timer) {
                // The WQE stays at the head of the queue until then.
                dev.worker().retry_at(dev.queue(), q, at)?;
                return Ok(());
            }
        } else if status == WC_SUCCESS {
            q.rnr.reset();
        }
        if !failed {
            q.counters.send.executed(ctrl.opcode, status);
        }
        *ci = ci.wrapping_add(1);
        db.store(DB_SQ_CI, *ci)?;
        if status != WC_SUCCESS && !failed {
            // In the error state before the error completion is seen.
            q.enter_error();
            wait_for_responders(q);
            failed = true;
        }
        let signaled = q.sq_sig_all || ctrl.flags & SRDMA_WQE_SIGNALED as u8 != 0;
        if status != WC_SUCCESS || signaled {
            complete(q, true, &cqe(ctrl.wr_id, status, opcode, q.qpn), false);
        }
    }
    if failed {
        // The QP entered the error state: its posted receives are flushed too.
        let mut rq_ci = q.rq_ci.lock();
        flush(q, false, &mut rq_ci);
    }
    Ok(())
}

/// Carries out one WQE; returns the completion status and opcode. A refusal for want of a
/// receive WQE also leaves the responder's RNR timer code in `rnr_timer`.
fn execute(
    dev: &Device<SrdmaDevice>,
    q: &Arc<QpShared>,
    attr: &QpAttr,
    off: usize,
    ctrl: &srdma_wqe_ctrl,
    rnr_timer: &mut Option<u8>,
) -> (u32, u32) {
    let wc_op = match ctrl.opcode {
        WR_SEND | WR_SEND_WITH_IMM | WR_SEND_WITH_INV => WC_SEND,
        WR_RDMA_WRITE | WR_RDMA_WRITE_WITH_IMM => WC_RDMA_WRITE,
        WR_RDMA_READ => WC_RDMA_READ,
        WR_ATOMIC_CMP_AND_SWP => WC_COMP_SWAP,
        WR_ATOMIC_FETCH_AND_ADD => WC_FETCH_ADD,
        WR_BIND_MW => WC_BIND_MW,
        WR_LOCAL_INV => WC_LOCAL_INV,
        KWR_REG_MR if q.handle.is_some() => KWC_REG_MR,
        _ => {
            q.counters.send.inc(Counter::RingErrors);
            return (WC_LOC_QP_OP_ERR, WC_SEND);
        }
    };
    match q.qp_type {
        QpType::Rc | QpType::Uc => {}
        QpType::Ud | QpType::Gsi => return (send_ud(dev, q, attr, off, ctrl), wc_op),
        _ => return (WC_LOC_QP_OP_ERR, wc_op),
    }
    if matches!(ctrl.opcode, WR_BIND_MW | WR_LOCAL_INV | KWR_REG_MR) {
        return (memory_op(dev, q, off, ctrl), wc_op);
    }
    if matches!(
        ctrl.opcode,
        WR_RDMA_READ | WR_ATOMIC_CMP_AND_SWP | WR_ATOMIC_FETCH_AND_ADD
    ) {
        // Reads and atomics need responses: RC only.
        if q.qp_type != QpType::Rc {
            return (WC_LOC_QP_OP_ERR, wc_op);
        }
        return (read_or_atomic(dev, q, attr, off, ctrl), wc_op);
    }
    let data = match gather(dev, q, off, ctrl) {
        Ok(data) => data,
        Err(status) => return (status, wc_op),
    };
    let len = data.len();
    q.counters
        .send
        .gathered(ctrl.flags & SRDMA_WQE_INLINE as u8 != 0, len);
    let Some(dest) = connected_dest(dev, q, attr) else {
        // RC retries until it gives up; UC does not know.
        return (seen_by(q.qp_type, WC_RETRY_EXC_ERR), wc_op);
    };
    let imm =
        matches!(ctrl.opcode, WR_SEND_WITH_IMM | WR_RDMA_WRITE_WITH_IMM).then_some(ctrl.imm_data);
    let solicited = ctrl.flags & SRDMA_WQE_SOLICITED as u8 != 0;
    let result = match ctrl.opcode {
        WR_SEND | WR_SEND_WITH_IMM | WR_SEND_WITH_INV => {
            let mut m = Message::new(&data, imm, solicited, q.qpn, WC_RECV);
            m.invalidate = (ctrl.opcode == WR_SEND_WITH_INV).then_some(ctrl.imm_data);
            deliver(&dest, &m)
        }
        _ => {
            let remote: srdma_wqe_remote = match q.sq.mem.read_obj(off + SEG) {
                Ok(r) => r,
                Err(_) => return (WC_LOC_QP_OP_ERR, wc_op),
            };
            let refused = seen_by(q.qp_type, WC_REM_ACCESS_ERR);
            {
                let _responder = match responder(&dest, q.qp_type, access::REMOTE_WRITE) {
                    Ok(guard) => guard,
                    Err(status) => return (status, wc_op),
                };
                let Some(span) = resolve_remote(
                    &dest,
                    remote.rkey,
                    access::REMOTE_WRITE,
                    remote.remote_addr,
                    len as u64,
                ) else {
                    return (refused, wc_op);
                };
                let target = match one_span(span) {
                    Ok(target) => target,
                    Err(_) => return (WC_LOC_QP_OP_ERR, wc_op),
                };
                match payload::copy(&data, &target, len) {
                    Ok(()) => {}
                    Err(Failed::Source) => return (WC_LOC_PROT_ERR, wc_op),
                    Err(Failed::NoMemory) => return (WC_LOC_QP_OP_ERR, wc_op),
                    Err(Failed::Destination) => return (refused, wc_op),
                }
            }
            match imm {
                Some(_) => {
                    let none = Segments::empty();
                    let mut m = Message::new(&none, imm, solicited, q.qpn, WC_RECV_RDMA_WITH_IMM);
                    // The receive completion reports what the write carried (as rxe does).
                    m.byte_len = len as u32;
                    deliver(&dest, &m)
                }
                None => Ok(()),
            }
        }
    };
    if !matches!(result, Err(Refused::Rnr(_))) {
        // A refusal for want of a receive WQE is retried under the same PSN.
        advance_psn(q, &dest);
    }
    let status = match result {
        Ok(()) => WC_SUCCESS,
        Err(Refused::Rnr(timer)) if q.qp_type == QpType::Rc => {
            q.counters.send.inc(Counter::RcvdRnrErr);
            // The caller decides whether this is final or a retry.
            *rnr_timer = Some(timer);
            WC_RNR_RETRY_EXC_ERR
        }
        Err(Refused::Length | Refused::Invalidate) if q.qp_type == QpType::Rc => WC_REM_INV_REQ_ERR,
        // The sender's own memory failed under the copy (a window or registration of its own
        // went away): its error, whatever the transport.
        Err(Refused::Source) => WC_LOC_PROT_ERR,
        Err(Refused::Unreachable) if q.qp_type == QpType::Rc => WC_RETRY_EXC_ERR,
        // UC drops what cannot be delivered.
        Err(_) => WC_SUCCESS,
    };
    (status, wc_op)
}

/// Carries out a bind of a memory window, a fast registration or a local invalidation, on an
/// RC or UC QP.
fn memory_op(
    dev: &Device<SrdmaDevice>,
    q: &Arc<QpShared>,
    off: usize,
    ctrl: &srdma_wqe_ctrl,
) -> u32 {
    if ctrl.opcode == WR_LOCAL_INV {
        return match invalidate(dev, q, ctrl.imm_data, false) {
            Ok(()) => WC_SUCCESS,
            Err(_) => WC_LOC_QP_OP_ERR,
        };
    }
    // Binds and registrations name their memory in the bind segment.
    let Ok(b) = q.sq.mem.read_obj::<srdma_wqe_bind>(off + SEG) else {
        return WC_LOC_QP_OP_ERR;
    };
    if ctrl.opcode == KWR_REG_MR {
        return match fastreg::register(dev, &q.pd, &b) {
            Ok(()) => WC_SUCCESS,
            Err(_) => WC_LOC_QP_OP_ERR,
        };
    }
    match mw::bind(dev, q, &b) {
        Ok(()) => WC_SUCCESS,
        Err(_) => WC_MW_BIND_ERR,
    }
}

/// Invalidates `rkey`, a memory window's or a fast-register MR's, for QP `q` of device `dev`;
/// `remote` says a SEND_WITH_INV that arrived at `q` asks for it.
fn invalidate(
    dev: &Device<SrdmaDevice>,
    q: &Arc<QpShared>,
    rkey: u32,
    remote: bool,
) -> core::result::Result<(), crate::mr::Denied> {
    if mw::is_window_key(rkey) {
        mw::invalidate(dev, q, rkey, remote)
    } else {
        fastreg::invalidate(dev, &q.pd, rkey)
    }
}

/// Carries out a UD send: a datagram of at most one path MTU to the QP and Q_Key its WQE names.
/// What the destination cannot take is lost without an error, as for any datagram.
fn send_ud(
    dev: &Device<SrdmaDevice>,
    q: &QpShared,
    attr: &QpAttr,
    off: usize,
    ctrl: &srdma_wqe_ctrl,
) -> u32 {
    if !matches!(ctrl.opcode, WR_SEND | WR_SEND_WITH_IMM) {
        return WC_LOC_QP_OP_ERR;
    }
    let Ok(ud) = q.sq.mem.read_obj::<srdma_wqe_ud>(off + SEG) else {
        return WC_LOC_QP_OP_ERR;
    };
    let payload = match gather(dev, q, off, ctrl) {
        Ok(payload) => payload,
        Err(status) => return status,
    };
    q.counters
        .send
        .gathered(ctrl.flags & SRDMA_WQE_INLINE as u8 != 0, payload.len());
    let mtu = dev
        .netdev(PORT)
        .and_then(|ndev| Mtu::for_roce(ndev.mtu()))
        .unwrap_or(Mtu::Mtu256);
    if payload.len() > mtu.bytes() as usize {
        return WC_LOC_LEN_ERR;
    }
    // A datagram is at most one MTU: it is read whole, with the GRH area in front.
    let mut data = KVec::new();
    if data.extend_with(payload.len(), 0, GFP_KERNEL).is_err() {
        return WC_LOC_QP_OP_ERR;
    }
    if payload.read(0, &mut data).is_err() {
        return WC_LOC_PROT_ERR;
    }
    // An address vector naming a GID the port does not have cannot be sent from.
    let Ok(sgid) = dev.query_gid(PORT, u32::from(ud.sgid_index)) else {
        return WC_LOC_QP_OP_ERR;
    };
    let qkey = if ud.remote_qkey & QKEY_FROM_QP != 0 {
        attr.qkey
    } else {
        ud.remote_qkey
    };
    let dest = find_dest(&ud.dgid, ud.remote_qpn);
    q.counters.send.sent(dest.as_ref().map(|d| &d.qp.counters));
    let Some(dest) = dest else {
        return WC_SUCCESS;
    };
    if !matches!(dest.qp.qp_type, QpType::Ud | QpType::Gsi) || dest.qp.attr.lock().qkey != qkey {
        return WC_SUCCESS;
    }
    let route = grh::Route {
        sgid: &sgid,
        dgid: &ud.dgid,
        traffic_class: ud.traffic_class,
        hop_limit: ud.hop_limit,
        flow_label: ud.flow_label,
    };
    let mut msg = KVec::new();
    if msg
        .extend_from_slice(&grh::build(&route, data.len()), GFP_KERNEL)
        .and_then(|()| msg.extend_from_slice(&data, GFP_KERNEL))
        .is_err()
    {
        return WC_LOC_QP_OP_ERR;
    }
    let imm = (ctrl.opcode == WR_SEND_WITH_IMM).then_some(ctrl.imm_data);
    let solicited = ctrl.flags & SRDMA_WQE_SOLICITED as u8 != 0;
    let msg = Segments::Bytes(msg);
    let mut m = Message::new(&msg, imm, solicited, q.qpn, WC_RECV);
    m.network_hdr_type = Some(if grh::is_v4_mapped(&sgid) && grh::is_v4_mapped(&ud.dgid) {
        NETWORK_IPV4
    } else {
        NETWORK_IPV6
    });
    // A datagram that finds no receive WQE, or one too small, is lost to the sender.
    let _ = deliver(&dest, &m);
    WC_SUCCESS
}

/// Carries out an RDMA READ or an atomic: the responder's memory is read (and for atomics
/// updated) and the response is scattered into the requester's SGEs, under the responder's
/// lock, a chunk at a time.
fn read_or_atomic(
    dev: &Device<SrdmaDevice>,
    q: &QpShared,
    attr: &QpAttr,
    off: usize,
    ctrl: &srdma_wqe_ctrl,
) -> u32 {
    if ctrl.flags & SRDMA_WQE_INLINE as u8 != 0 {
        q.counters.send.inc(Counter::RingErrors);
        return WC_LOC_LEN_ERR;
    }
    // Where the response goes: the requester's SGEs, with the right to write them.
    let local = match sges(dev, q, off, ctrl, access::LOCAL_WRITE) {
        Ok(local) => local,
        Err(status) => return status,
    };
    let total = local.len();
    let Ok(remote) = q.sq.mem.read_obj::<srdma_wqe_remote>(off + SEG) else {
        return WC_LOC_QP_OP_ERR;
    };
    let Some(dest) = connected_dest(dev, q, attr) else {
        return WC_RETRY_EXC_ERR;
    };
    advance_psn(q, &dest);
    let atomic = ctrl.opcode != WR_RDMA_READ;
    if atomic && (total != 8 || remote.remote_addr % 8 != 0) {
        return WC_LOC_LEN_ERR;
    }
    let need = if atomic {
        access::REMOTE_ATOMIC
    } else {
        access::REMOTE_READ
    };
    let _responder = match responder(&dest, q.qp_type, need) {
        Ok(guard) => guard,
        Err(status) => return status,
    };
    let Some(span) = resolve_remote(&dest, remote.rkey, need, remote.remote_addr, total as u64)
    else {
        return WC_REM_ACCESS_ERR;
    };
    if !atomic {
        let Ok(source) = one_span(span) else {
            return WC_LOC_QP_OP_ERR;
        };
        return match payload::copy(&source, &local, total) {
            Ok(()) => WC_SUCCESS,
            Err(Failed::Source) => WC_REM_ACCESS_ERR,
            Err(Failed::Destination) => WC_LOC_PROT_ERR,
            Err(Failed::NoMemory) => WC_LOC_QP_OP_ERR,
        };
    }
    let old = {
        // Atomic with respect to the other atomics of the responder's device.
        let _guard = dest.dev.atomics().lock();
        let mut old = [0u8; 8];
        if span.read(0, &mut old).is_err() {
            return WC_REM_ACCESS_ERR;
        }
        let value = u64::from_ne_bytes(old);
        let new = if ctrl.opcode == WR_ATOMIC_CMP_AND_SWP {
            if value == remote.compare_add {
                remote.swap
            } else {
                value
            }
        } else {
            value.wrapping_add(remote.compare_add)
        };
        if span.write(0, &new.to_ne_bytes()).is_err() {
            return WC_REM_ACCESS_ERR;
        }
        old
    };
    match local.write(0, &old) {
        Ok(()) => WC_SUCCESS,
        Err(_) => WC_LOC_PROT_ERR,
    }
}

/// One span as [`Segments`].
fn one_span(span: Span) -> Result<Segments> {
    let mut spans = KVec::new();
    spans.push(span, GFP_KERNEL)?;
    Ok(Segments::Spans(spans))
}

/// The memory the SGEs of the SQ WQE at `off` name, with rights `need`; fails with the
/// completion status if the WQE or a key is bad. Each SGE is checked before a byte moves.
fn sges(
    dev: &Device<SrdmaDevice>,
    q: &QpShared,
    off: usize,
    ctrl: &srdma_wqe_ctrl,
    need: u32,
) -> core::result::Result<Segments, u32> {
    let area = q.sq.wqe_size as usize - SRDMA_SQ_WQE_HDR_SIZE as usize;
    let body = off + SRDMA_SQ_WQE_HDR_SIZE as usize;
    let n = ctrl.num_sge as usize;
    if n > q.cap.max_send_sge as usize || n * SRDMA_SGE_SIZE as usize > area {
        q.counters.send.inc(Counter::RingErrors);
        return Err(WC_LOC_LEN_ERR);
    }
    let mut spans = KVec::with_capacity(n, GFP_KERNEL).map_err(|_| WC_LOC_QP_OP_ERR)?;
    let mut total = 0u64;
    for i in 0..n {
        let sge: srdma_sge =
            q.sq.mem
                .read_obj(body + i * SRDMA_SGE_SIZE as usize)
                .map_err(|_| WC_LOC_QP_OP_ERR)?;
        total += u64::from(sge.length);
        if total > u64::from(MAX_MSG_SZ) {
            return Err(WC_LOC_LEN_ERR);
        }
        if sge.length == 0 {
            continue;
        }
        let local = q.sq.kernel_buf(off, i);
        let span = resolve(
            dev,
            sge.lkey,
            &q.pd,
            need,
            sge.addr,
            u64::from(sge.length),
            local.as_ref(),
        )
        .ok_or(WC_LOC_PROT_ERR)?;
        spans.push(span, GFP_KERNEL).map_err(|_| WC_LOC_QP_OP_ERR)?;
    }
    Ok(Segments::Spans(spans))
}

/// The payload of a WQE: its inline data, copied out of the ring, or the memory its SGEs name.
fn gather(
    dev: &Device<SrdmaDevice>,
    q: &QpShared,
    off: usize,
    ctrl: &srdma_wqe_ctrl,
) -> core::result::Result<Segments, u32> {
    if ctrl.flags & SRDMA_WQE_INLINE as u8 == 0 {
        return sges(dev, q, off, ctrl, 0);
    }
    let area = q.sq.wqe_size as usize - SRDMA_SQ_WQE_HDR_SIZE as usize;
    let len = ctrl.inline_len as usize;
    if len > area || ctrl.inline_len > q.cap.max_inline_data {
        q.counters.send.inc(Counter::RingErrors);
        return Err(WC_LOC_LEN_ERR);
    }
    let mut data = KVec::new();
    data.extend_with(len, 0, GFP_KERNEL)
        .map_err(|_| WC_LOC_QP_OP_ERR)?;
    q.sq.mem
        .read(off + SRDMA_SQ_WQE_HDR_SIZE as usize, &mut data)
        .map_err(|_| WC_LOC_QP_OP_ERR)?;
    Ok(Segments::Bytes(data))
}

/// A message arriving at a receive queue.
struct Message<'a> {
    /// The payload; for UD it starts with the GRH area.
    data: &'a Segments,
    imm: Option<u32>,
    /// The sender asked for a solicited event.
    solicited: bool,
    src_qpn: u32,
    wc_opcode: u32,
    /// For UD: the network header type the GRH area holds.
    network_hdr_type: Option<u8>,
    /// The byte count of the receive completion.
    byte_len: u32,
    /// The rkey a SEND_WITH_INV asks the receiver to invalidate.
    invalidate: Option<u32>,
}

impl<'a> Message<'a> {
    fn new(
        data: &'a Segments,
        imm: Option<u32>,
        solicited: bool,
        src_qpn: u32,
        wc_opcode: u32,
    ) -> Self {
        Self {
            data,
            imm,
            solicited,
            src_qpn,
            wc_opcode,
            network_hdr_type: None,
            byte_len: data.len() as u32,
            invalidate: None,
        }
    }
}

/// Takes the next receive WQE of the destination and scatters the message into it.
fn deliver(dest: &Dest, msg: &Message<'_>) -> core::result::Result<(), Refused> {
    let d = &dest.qp;
    // Receive WQEs come from the QP's own RQ or from its SRQ.
    let (rq, db, ci_lock, max_sge) = match (&d.srq, &d.rq) {
        (Some(srq), _) => (&srq.ring, &srq.db, &srq.ci, srq.max_sge),
        (None, Some(rq)) => (rq, &d.db, &d.rq_ci, d.cap.max_recv_sge),
        (None, None) => return Err(Refused::Unreachable),
    };
    let mut ci = ci_lock.lock();
    if !d.is_alive() || !matches!(d.state(), QpState::Rtr | QpState::Rts) {
        return Err(Refused::Unreachable);
    }
    let pi = db.load(DB_RQ_PI).map_err(|_| Refused::Unreachable)?;
    let pending = pi.wrapping_sub(*ci);
    if pending == 0 {
        d.counters.recv.no_receive(d.qp_type == QpType::Rc);
        return Err(Refused::Rnr(d.attr.lock().min_rnr_timer));
    }
    if pending > rq.wqe_cnt {
        bad_producer_index(d, false);
        return Err(Refused::Unreachable);
    }
    let off = (*ci & (rq.wqe_cnt - 1)) as usize * rq.wqe_size as usize;
    let hdr: srdma_rq_wqe_hdr = rq.mem.read_obj(off).map_err(|_| Refused::Length)?;
    let mut wc = cqe(hdr.wr_id, WC_SUCCESS, msg.wc_opcode, d.qpn);
    wc.src_qp = msg.src_qpn;
    wc.byte_len = msg.byte_len;
    if let Some(imm) = msg.imm {
        wc.imm_data = imm;
        wc.wc_flags |= WC_WITH_IMM;
    }
    if let Some(net) = msg.network_hdr_type {
        wc.wc_flags |= WC_GRH;
        wc.network_hdr_type = net;
    }
    let mut result = scatter(dest, rq, max_sge, off, &hdr, msg.data);
    // The WQE is given back to the process only now that the kernel is done reading it.
    *ci = ci.wrapping_add(1);
    let _ = db.store(DB_RQ_CI, *ci);
    if let Some(srq) = &d.srq {
        srq.consumed(pending - 1);
    }
    match result {
        Ok(()) => {}
        Err(Refused::Source) => wc.status = WC_REM_ABORT_ERR,
        Err(_) => wc.status = WC_LOC_LEN_ERR,
    }
    if result.is_ok() {
        if let Some(rkey) = msg.invalidate {
            // The window is invalid by the time the process sees the receive completion.
            if invalidate(&dest.dev, &dest.qp, rkey, true).is_ok() {
                wc.wc_flags |= WC_WITH_INV;
                wc.imm_data = rkey;
            } else {
                wc.status = WC_REM_INV_REQ_ERR;
                result = Err(Refused::Invalidate);
            }
        }
    }
    complete(d, false, &wc, msg.solicited);
    if result.is_err() {
        // A receive error moves the receiver to the error state too; an SRQ's other WQEs
        // stay for the other QPs.
        d.enter_error();
        if d.srq.is_none() {
            flush(d, false, &mut ci);
        }
    }
    result
}

/// Copies `data` into the memory the receive WQE at `off` names; each SGE is checked (as far
/// as the message reaches into it) before a byte moves.
fn scatter(
    dest: &Dest,
    rq: &crate::qp::Ring,
    max_sge: u32,
    off: usize,
    hdr: &srdma_rq_wqe_hdr,
    data: &Segments,
) -> core::result::Result<(), Refused> {
    let d = &dest.qp;
    let n = hdr.num_sge as usize;
    if n > max_sge as usize
        || SRDMA_RQ_WQE_HDR_SIZE as usize + n * SRDMA_SGE_SIZE as usize > rq.wqe_size as usize
    {
        d.counters.recv.inc(Counter::RingErrors);
        return Err(Refused::Length);
    }
    let body = off + SRDMA_RQ_WQE_HDR_SIZE as usize;
    let total = data.len();
    let mut left = total;
    let mut spans = KVec::with_capacity(n, GFP_KERNEL).map_err(|_| Refused::Length)?;
    for i in 0..n {
        if left == 0 {
            break;
        }
        let sge: srdma_sge = rq
            .mem
            .read_obj(body + i * SRDMA_SGE_SIZE as usize)
            .map_err(|_| Refused::Length)?;
        let len = (sge.length as usize).min(left);
        if len == 0 {
            continue;
        }
        let local = rq.kernel_buf(off, i);
        let span = resolve(
            &dest.dev,
            sge.lkey,
            &d.pd,
            access::LOCAL_WRITE,
            sge.addr,
            len as u64,
            local.as_ref(),
        )
        .ok_or(Refused::Length)?;
        spans.push(span, GFP_KERNEL).map_err(|_| Refused::Length)?;
        left -= len;
    }
    if left != 0 {
        return Err(Refused::Length);
    }
    match payload::copy(data, &Segments::Spans(spans), total) {
        Ok(()) => Ok(()),
        Err(Failed::Source) => Err(Refused::Source),
        Err(Failed::Destination | Failed::NoMemory) => Err(Refused::Length),
    }
}

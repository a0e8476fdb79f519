// SPDX-License-Identifier: GPL-2.0-only

//! The completer: turns the response to each request of a send queue (or its absence) into
//! the requester's completion, in order, and writes the CQEs of both sides.
//!
//! The completer decides what a response means for the WQE it answers: an acknowledgment
//! completes it, an RNR NAK holds it at the head of the queue until the RNR timer runs out
//! (or the retries are spent), any other NAK or a lost request fails it and the QP. A
//! transport hands each response over when it arrives: loopback while the request is being
//! sent, the wire from its receive path.

use crate::{
    clock::Now,
    counters::Counter,
    message::{Nak, Response},
    payload::Segments,
    qp::{QpShared, DB_RQ_CI, DB_RQ_PI, DB_SQ_CI, DB_SQ_PI},
    rnr::Verdict,
    wc::{cqe, WcOpcode, WcStatus},
    wqe::{slot_offset, SendWqe},
};
use core::sync::atomic::Ordering;
use kernel::{
    prelude::*,
    rdma::{
        qp::{QpAttr, QpType},
        uapi::srdma_cqe,
    },
};

/// Writes `cqe` of QP `q` to its send CQ (`send`) or its receive CQ, and counts it.
pub(crate) fn complete(q: &QpShared, send: bool, cqe: &srdma_cqe, solicited: bool) {
    let (counters, cq) = if send {
        (&q.counters.send, &q.send_cq)
    } else {
        (&q.counters.recv, &q.recv_cq)
    };
    // A QP destroyed meanwhile (a delivery that had taken its receive WQE before) gets no CQE:
    // none may name it once its destruction returned.
    match cq.push(cqe, solicited, q) {
        Ok(()) => counters.completion(cqe, true),
        Err(e) if e == ESRCH => {}
        Err(_) => {
            counters.completion(cqe, false);
            crate::log::cq_overflow(q, send);
        }
    }
}

/// Completes every WQE between `*ci` and the producer index of the doorbell record with
/// `WR_FLUSH_ERR`, as a QP in the error state does, and advances `*ci`: the SQ's if `send`,
/// else the RQ's.
pub(crate) fn flush(q: &QpShared, send: bool, ci: &mut u32) {
    let db = &q.db;
    let (ring, pi_field, ci_field, opcode) = match (send, &q.rq) {
        (true, _) => (&q.sq, DB_SQ_PI, DB_SQ_CI, WcOpcode::Send),
        (false, Some(rq)) => (rq, DB_RQ_PI, DB_RQ_CI, WcOpcode::Recv),
        (false, None) => return,
    };
    let Ok(pi) = db.load(pi_field) else {
        return;
    };
    // A producer index beyond the ring flushes what the ring can hold.
    let pending = pi.wrapping_sub(*ci).min(ring.wqe_cnt);
    for _ in 0..pending {
        // The wr_id is the first field of both SQ and RQ WQEs.
        let wr_id = ring
            .mem
            .read_obj::<u64>(slot_offset(ring, *ci))
            .unwrap_or(0);
        complete(
            q,
            send,
            &cqe(wr_id, WcStatus::WrFlushErr, opcode, q.qpn),
            false,
        );
        *ci = ci.wrapping_add(1);
    }
    *ci = pi;
    let _ = db.store(ci_field, *ci);
}

/// Waits for the RDMA WRITEs, READs and atomics that are copying into the memory of `q`, which
/// is in the error state: those that come later see the state and are refused.
pub(crate) fn wait_for_responders(q: &QpShared) {
    drop(q.rq_ci.lock());
}

/// What a response means for the WQE it answers.
pub(crate) enum Judged {
    /// It completes with this status.
    Done(WcStatus),
    /// It stays at the head of the send queue and is sent again at this `ktime` (ns).
    RetryAt(i64),
    /// It went on the wire and waits in flight for its acknowledgment.
    Sent,
}

/// Judges `response` to the request that WQE `wqe` of QP `q` (attributes `attr`) sent with
/// PSN `psn` at `now`; `sink` is where an atomic's original value goes.
pub(crate) fn respond(
    q: &QpShared,
    attr: &QpAttr,
    psn: u32,
    response: Response,
    sink: Option<&Segments>,
    now: &Now,
) -> Judged {
    let status = match (q.qp_type, response) {
        (_, Response::LocalFault) => WcStatus::LocProtErr,
        (QpType::Rc, Response::Ack) => WcStatus::Success,
        (QpType::Rc, Response::AtomicAck(old)) => {
            match sink.map(|s| s.write(0, &old.to_ne_bytes())) {
                Some(Ok(())) => WcStatus::Success,
                _ => WcStatus::LocProtErr,
            }
        }
        (QpType::Rc, Response::Nak(Nak::Rnr(timer))) => {
            q.counters.send.inc(Counter::RcvdRnrErr);
            match q.rnr.refused(q.qpn, now.get(), attr.rnr_retry, timer) {
                Verdict::RetryAt(at) => {
                    // Go back to the refused request: it is sent again under its own PSN.
                    q.sq_psn.store(psn, Ordering::Relaxed);
                    return Judged::RetryAt(at);
                }
                Verdict::GiveUp => WcStatus::RnrRetryExcErr,
            }
        }
        (QpType::Rc, Response::Nak(Nak::InvalidRequest)) => WcStatus::RemInvReqErr,
        (QpType::Rc, Response::Nak(Nak::RemoteAccess)) => WcStatus::RemAccessErr,
        (QpType::Rc, Response::Nak(Nak::RemoteOperational)) => WcStatus::RemOpErr,
        (QpType::Rc, Response::Lost) => WcStatus::RetryExcErr,
        // UC has no acknowledgments and UD is unreliable: the requester never learns what
        // became of a request.
        _ => WcStatus::Success,
    };
    Judged::Done(status)
}

/// Retires the WQE `wqe` at the head of the SQ of `q` (`*ci`, the locked consumer index) with
/// `status`: gives its slot back to the process, writes its CQE if it failed or asked for one,
/// and on a failure moves the QP to the error state first. `flushing` says an earlier WQE
/// failed already. Returns whether this WQE failed.
pub(crate) fn retire(
    q: &QpShared,
    ci: &mut u32,
    wqe: &SendWqe,
    status: WcStatus,
    flushing: bool,
) -> Result<bool> {
    let opcode = match (flushing, wqe.opcode) {
        (false, Some(op)) => op.completion(),
        _ => WcOpcode::Send,
    };
    if !flushing {
        q.counters.send.executed(wqe.opcode, status);
        if status == WcStatus::Success {
            q.rnr.reset();
        }
    }
    *ci = ci.wrapping_add(1);
    q.db.store(DB_SQ_CI, *ci)?;
    let failed = status != WcStatus::Success && !flushing;
    if failed {
        // In the error state before the error completion is seen.
        q.enter_error();
        wait_for_responders(q);
        crate::log::error_completion(q, true, status);
    }
    if status != WcStatus::Success || wqe.signaled {
        complete(q, true, &cqe(wqe.wr_id, status, opcode, q.qpn), false);
    }
    Ok(failed)
}

// SPDX-License-Identifier: GPL-2.0-only

//! Work requests and completions of kernel callers (ib_post_send, ib_post_recv, ib_poll_cq,
//! ib_req_notify_cq): they become the same WQEs that processes write into their rings, so one
//! engine serves both.
//!
//! Posting may happen in atomic context: it only writes the rings (under a spinlock) and hands
//! send queues to the device's worker.

use crate::{
    device::SrdmaDevice,
    params::MAX_INLINE_DATA,
    qp::{QpShared, Ring, DB_RQ_CI, DB_RQ_PI, DB_SQ_CI, DB_SQ_PI},
    wqe::SEG,
};
use kernel::{
    prelude::*,
    rdma::{
        qp::{Qp, QpState},
        srq::Srq,
        uapi::{
            srdma_rq_wqe_hdr, srdma_sge, srdma_wqe_bind, srdma_wqe_ctrl, srdma_wqe_remote,
            srdma_wqe_ud, SRDMA_RQ_WQE_HDR_SIZE, SRDMA_SGE_SIZE, SRDMA_SQ_WQE_HDR_SIZE,
            SRDMA_WQE_FENCE, SRDMA_WQE_INLINE, SRDMA_WQE_SIGNALED, SRDMA_WQE_SOLICITED,
        },
    },
    sync::SpinLockIrqSave,
};

const HDR: usize = SRDMA_SQ_WQE_HDR_SIZE as usize;
const SGE: usize = SRDMA_SGE_SIZE as usize;
const RQ_HDR: usize = SRDMA_RQ_WQE_HDR_SIZE as usize;

type SendWr<'a> = kernel::rdma::wr::SendWr<'a, SrdmaDevice>;

fn sge_of(s: &kernel::rdma::wr::Sge) -> srdma_sge {
    srdma_sge {
        addr: s.addr(),
        length: s.length(),
        lkey: s.lkey(),
    }
}

/// Lends the engine the buffers of the first `n` SGEs of `sge` for the WQE at byte `off` of
/// `ring`, and none for the rest.
fn lend(
    ring: &Ring,
    off: usize,
    n: usize,
    sge: impl Fn(usize) -> Option<kernel::rdma::wr::Sge>,
) -> Result {
    match &ring.bufs {
        Some(bufs) => bufs.fill(ring.slot(off).ok_or(EINVAL)?, |i| {
            (i < n).then(|| sge(i)).flatten().and_then(|s| s.buf())
        }),
        None => Err(EINVAL),
    }
}

/// Writes the WQE for `wr` into the SQ slot at byte `off`.
fn write_send_wqe(q: &QpShared, wr: &SendWr<'_>, off: usize) -> Result {
    use kernel::rdma::wr::{Opcode as Op, SendFlags};
    // The ring's opcode numbers are the kernel's for the operations srdma implements.
    let opcode = match wr.opcode().ok_or(EINVAL)? {
        op @ (Op::Send
        | Op::SendWithImm
        | Op::SendWithInv
        | Op::RdmaWrite
        | Op::RdmaWriteWithImm
        | Op::RdmaRead
        | Op::AtomicCmpAndSwp
        | Op::AtomicFetchAndAdd
        | Op::LocalInv
        | Op::RegMr) => op as u8,
        _ => return Err(EINVAL),
    };
    let f = wr.send_flags();
    let mut flags = 0u8;
    for (bit, ours) in [
        (SendFlags::SIGNALED, SRDMA_WQE_SIGNALED),
        (SendFlags::SOLICITED, SRDMA_WQE_SOLICITED),
        (SendFlags::FENCE, SRDMA_WQE_FENCE),
    ] {
        if f.contains(bit) {
            flags |= ours as u8;
        }
    }
    let mut ctrl = srdma_wqe_ctrl {
        wr_id: wr.wr_id(),
        opcode,
        flags,
        imm_data: wr.ex(),
        ..Default::default()
    };
    let mem = &q.sq.mem;
    let area = q.sq.wqe_size as usize - HDR;
    if f.contains(SendFlags::INLINE) {
        let cap = (q.cap.max_inline_data as usize)
            .min(MAX_INLINE_DATA as usize)
            .min(area);
        let len = wr.inline_len();
        if len > cap {
            return Err(EINVAL);
        }
        // Straight into the WQE's data area, which has room for `cap` bytes.
        let mut at = off + HDR;
        wr.inline_pieces(|piece| {
            mem.write(at, piece)?;
            at += piece.len();
            Ok(())
        })?;
        lend(&q.sq, off, 0, |i| wr.sge(i))?;
        ctrl.flags |= SRDMA_WQE_INLINE as u8;
        ctrl.inline_len = len as u32;
    } else {
        let n = wr.num_sge();
        if n > q.cap.max_send_sge as usize || n * SGE > area {
            return Err(EINVAL);
        }
        for i in 0..n {
            let s = wr.sge(i).ok_or(EINVAL)?;
            mem.write_obj(off + HDR + i * SGE, &sge_of(&s))?;
        }
        lend(&q.sq, off, n, |i| wr.sge(i))?;
        ctrl.num_sge = n as u16;
    }
    if let Some(t) = wr.rdma() {
        let seg = srdma_wqe_remote {
            remote_addr: t.remote_addr,
            rkey: t.rkey,
            ..Default::default()
        };
        mem.write_obj(off + SEG, &seg)?;
    } else if let Some(reg) = wr.reg() {
        let mr = reg.mr;
        // The engine registers the pages the MR has mapped when it reaches this WQE, at the
        // address its owner gives the MR now.
        let seg = srdma_wqe_bind {
            addr: mr.iova(),
            length: mr.length(),
            mr_lkey: mr.lkey(),
            new_rkey: reg.key,
            access: reg.access.bits(),
            ..Default::default()
        };
        mem.write_obj(off + SEG, &seg)?;
    } else if let Some(a) = wr.atomic() {
        let seg = srdma_wqe_remote {
            remote_addr: a.remote_addr,
            rkey: a.rkey,
            compare_add: a.compare_add,
            swap: a.swap,
            ..Default::default()
        };
        mem.write_obj(off + SEG, &seg)?;
    }
    if matches!(
        q.qp_type,
        kernel::rdma::qp::QpType::Ud | kernel::rdma::qp::QpType::Gsi
    ) {
        let ud = wr.ud().ok_or(EINVAL)?;
        let av = &ud.ah.attr;
        let seg = srdma_wqe_ud {
            remote_qpn: ud.remote_qpn,
            remote_qkey: ud.remote_qkey,
            dgid: av.dgid,
            sgid_index: av.sgid_index,
            hop_limit: av.hop_limit,
            traffic_class: av.traffic_class,
            sl: av.sl,
            flow_label: av.flow_label,
        };
        mem.write_obj(off + SEG, &seg)?;
    }
    // The control segment last, as a process writes it.
    mem.write_obj(off, &ctrl)
}

/// `post_send` of kernel callers.
pub(crate) fn post_send(
    qp: &Qp<SrdmaDevice>,
    wrs: &mut kernel::rdma::wr::SendWrs<'_, SrdmaDevice>,
) -> Result {
    let q = &qp.shared;
    if matches!(q.state(), QpState::Reset | QpState::Init | QpState::Rtr) {
        return Err(EINVAL);
    }
    let mut result = Ok(());
    let mut posted = 0;
    {
        let _guard = q.kpost.lock();
        let ci = q.db.load(DB_SQ_CI)?;
        let mut pi = q.db.load(DB_SQ_PI)?;
        for wr in wrs.by_ref() {
            if pi.wrapping_sub(ci) >= q.sq.wqe_cnt {
                result = Err(ENOMEM);
                break;
            }
            let off = (pi & (q.sq.wqe_cnt - 1)) as usize * q.sq.wqe_size as usize;
            if let Err(e) = write_send_wqe(q, &wr, off) {
                result = Err(e);
                break;
            }
            pi = pi.wrapping_add(1);
            posted += 1;
        }
        q.db.store(DB_SQ_PI, pi)?;
    }
    if posted > 0 {
        let dev = qp.device();
        dev.worker().schedule(dev.queue(), qp.shared.clone())?;
    }
    result
}

/// Writes receive WQEs into `ring`, whose producer and consumer indices are at `DB_RQ_PI` and
/// `DB_RQ_CI` of `db`.
fn post_recv_ring(
    ring: &Ring,
    db: &crate::doorbell::DbRecord,
    lock: &SpinLockIrqSave<()>,
    max_sge: u32,
    wrs: &mut kernel::rdma::wr::RecvWrs<'_>,
) -> Result {
    let _guard = lock.lock();
    let ci = db.load(DB_RQ_CI)?;
    let mut pi = db.load(DB_RQ_PI)?;
    let mut result = Ok(());
    for wr in wrs.by_ref() {
        let n = wr.num_sge();
        if n > max_sge as usize || RQ_HDR + n * SGE > ring.wqe_size as usize {
            result = Err(EINVAL);
            break;
        }
        if pi.wrapping_sub(ci) >= ring.wqe_cnt {
            result = Err(ENOMEM);
            break;
        }
        let off = (pi & (ring.wqe_cnt - 1)) as usize * ring.wqe_size as usize;
        for i in 0..n {
            let s = wr.sge(i).ok_or(EINVAL)?;
            ring.mem.write_obj(off + RQ_HDR + i * SGE, &sge_of(&s))?;
        }
        lend(ring, off, n, |i| wr.sge(i))?;
        let hdr = srdma_rq_wqe_hdr {
            wr_id: wr.wr_id(),
            num_sge: n as u32,
            reserved: 0,
        };
        ring.mem.write_obj(off, &hdr)?;
        pi = pi.wrapping_add(1);
    }
    db.store(DB_RQ_PI, pi)?;
    result
}

/// `post_recv` of kernel callers. Receives posted to a QP in the error state complete as
/// flushed, from the device's worker (this may run in atomic context).
pub(crate) fn post_recv(qp: &Qp<SrdmaDevice>, wrs: &mut kernel::rdma::wr::RecvWrs<'_>) -> Result {
    let q = &qp.shared;
    let rq = q.rq.as_ref().ok_or(EINVAL)?;
    if q.state() == QpState::Reset {
        return Err(EINVAL);
    }
    let result = post_recv_ring(rq, &q.db, &q.kpost, q.cap.max_recv_sge, wrs);
    if q.state() == QpState::Err {
        let dev = qp.device();
        dev.worker().schedule(dev.queue(), q.clone())?;
    }
    result
}

/// `post_srq_recv` of kernel callers.
pub(crate) fn post_srq_recv(
    srq: &Srq<SrdmaDevice>,
    wrs: &mut kernel::rdma::wr::RecvWrs<'_>,
) -> Result {
    let s = &srq.shared;
    post_recv_ring(&s.ring, &s.db, &s.kpost, s.max_sge, wrs)
}

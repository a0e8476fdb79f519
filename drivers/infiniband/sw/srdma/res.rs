// SPDX-License-Identifier: GPL-2.0-only

//! srdma's details of its objects in `rdma resource show qp|cq|mr -dd`: what an operator looks
//! at when a QP stalls (its ring indices, doorbell mode, PSNs, RNR wait), when completions stop
//! coming (the CQ's indices, arming, overrun) or when a key is refused (the MR's kind, key byte,
//! access and pages). Indices are free-running, as the rings use them: the number of entries
//! waiting is the producer's minus the consumer's.

use crate::{
    cq::SrdmaCq,
    mr::{MrMem, SrdmaMr},
    qp::{SrdmaQp, DB_RQ_CI, DB_RQ_PI, DB_SQ_CI, DB_SQ_PI},
};
use core::sync::atomic::Ordering;
use kernel::{
    c_str,
    prelude::*,
    rdma::{
        restrack::DriverAttrs,
        uapi::{SRDMA_CQ_ARM_NEXT, SRDMA_CQ_ARM_SOLICITED},
    },
    time::Ktime,
};

/// A QP: its queues' producer and consumer indices as the doorbell record holds them, who rings
/// the doorbell (`kick`: the process's post enters the kernel; `poll`: the device's poller
/// watches), the next PSN it sends and the one it expects, and an RNR wait of its head WQE.
pub(crate) fn qp(qp: &SrdmaQp, a: &mut DriverAttrs<'_>) -> Result {
    let s = &qp.shared;
    a.u32(c_str!("sq_pi"), s.db.load(DB_SQ_PI)?)?;
    a.u32(c_str!("sq_ci"), s.db.load(DB_SQ_CI)?)?;
    if s.srq.is_none() {
        a.u32(c_str!("rq_pi"), s.db.load(DB_RQ_PI)?)?;
        a.u32(c_str!("rq_ci"), s.db.load(DB_RQ_CI)?)?;
    }
    let doorbell = if s.ctx_db.is_some() {
        c_str!("poll")
    } else {
        c_str!("kick")
    };
    a.string(c_str!("doorbell"), doorbell)?;
    a.u32(c_str!("next_psn"), s.sq_psn.load(Ordering::Relaxed))?;
    a.u32(c_str!("expected_psn"), s.epsn.load(Ordering::Relaxed))?;
    let (left, wait_ns) = s.rnr.show(Ktime::ktime_get().to_ns());
    if let Some(left) = left {
        a.u32(c_str!("rnr_retries_left"), left.into())?;
        a.u64(c_str!("rnr_wait_us"), (wait_ns / 1000) as u64)?;
    }
    Ok(())
}

/// A CQ: its depth, the producer (the next CQE the device writes) and consumer indices, what
/// it is armed for, and whether it overran.
pub(crate) fn cq(cq: &SrdmaCq, a: &mut DriverAttrs<'_>) -> Result {
    let shown = cq.shared.show()?;
    a.u32(c_str!("depth"), shown.depth)?;
    a.u32(c_str!("pi"), shown.producer)?;
    a.u32(c_str!("ci"), shown.consumer)?;
    let armed = match shown.arm {
        SRDMA_CQ_ARM_NEXT => c_str!("next"),
        SRDMA_CQ_ARM_SOLICITED => c_str!("solicited"),
        _ => c_str!("no"),
    };
    a.string(c_str!("armed"), armed)?;
    a.u32(c_str!("overrun"), shown.overran.into())?;
    Ok(())
}

/// An MR: what memory it is, the random key byte of its keys, its access flags, and for user
/// memory the pages it pinned.
pub(crate) fn mr(mr: &SrdmaMr, a: &mut DriverAttrs<'_>) -> Result {
    let m = mr.shared();
    let kind = match &m.mem {
        MrMem::User(_) => c_str!("user"),
        MrMem::Kernel => c_str!("dma"),
        MrMem::Fast(_) => c_str!("fast_reg"),
    };
    a.string(c_str!("memory"), kind)?;
    a.u32_hex(c_str!("key_byte"), m.key & 0xff)?;
    a.u32_hex(c_str!("access"), m.access.bits())?;
    if let MrMem::User(umem) = &m.mem {
        a.u64(c_str!("pages"), umem.page_count() as u64)?;
    }
    Ok(())
}

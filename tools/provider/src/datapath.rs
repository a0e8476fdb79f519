//! The data path in userspace: WQEs are written straight into the mapped rings, the producer
//! index into the doorbell record; sends then ring the kernel with a system call (the doorbell
//! kick, see `doorbell`). Completions are read from the mapped CQ ring without a syscall.
#![allow(
    non_upper_case_globals,
    reason = "the verbs constants keep their C names"
)]

use crate::cq::SrdmaCq;
use crate::ffi::*;
use crate::qp::SrdmaQp;
use crate::wqe::{self, SqWqe};
use core::sync::atomic::{fence, AtomicU32, Ordering};
use libc::c_int;

// Byte offsets in the doorbell records (`struct srdma_qp_db`, `struct srdma_cq_db`,
// `struct srdma_ctx_db`).
pub(crate) const DB_SQ_PI: usize = core::mem::offset_of!(srdma_qp_db, sq_pi);
const DB_RQ_PI: usize = core::mem::offset_of!(srdma_qp_db, rq_pi);
pub(crate) const DB_SQ_CI: usize = core::mem::offset_of!(srdma_qp_db, sq_ci);
const DB_RQ_CI: usize = core::mem::offset_of!(srdma_qp_db, rq_ci);
pub(crate) const DB_CQ_CI: usize = core::mem::offset_of!(srdma_cq_db, ci);
const DB_CQ_ARM: usize = core::mem::offset_of!(srdma_cq_db, arm);
const DB_CTX_FLAGS: usize = core::mem::offset_of!(srdma_ctx_db, flags);

const SGE: usize = SRDMA_SGE_SIZE as usize;
const RQ_HDR: usize = SRDMA_RQ_WQE_HDR_SIZE as usize;

/// # Safety
///
/// `db` must point to a mapped doorbell record with a 4-byte aligned word at `offset`.
pub(crate) unsafe fn db_word<'a>(db: *mut u8, offset: usize) -> &'a AtomicU32 {
    // SAFETY: Guaranteed by the caller; the kernel accesses the word atomically too.
    unsafe { AtomicU32::from_ptr(db.add(offset).cast()) }
}

/// The `imm_data` word of the WQE of `wr`: the immediate data as the verbs user gave it
/// (network order) or the rkey to invalidate (host order). Both are copied bit for bit; other
/// opcodes carry nothing there.
fn imm_word(wr: &ibv_send_wr) -> u32 {
    match wr.opcode {
        ibv_wr_opcode_IBV_WR_SEND_WITH_IMM | ibv_wr_opcode_IBV_WR_RDMA_WRITE_WITH_IMM => {
            // SAFETY: These opcodes use the `imm_data` member, a plain `u32`.
            unsafe { wr.__bindgen_anon_1.imm_data }
        }
        ibv_wr_opcode_IBV_WR_LOCAL_INV | ibv_wr_opcode_IBV_WR_SEND_WITH_INV => {
            // SAFETY: These opcodes use the `invalidate_rkey` member, a plain `u32`.
            unsafe { wr.__bindgen_anon_1.invalidate_rkey }
        }
        _ => 0,
    }
}

/// Puts the SGEs of `wr`, or with `IBV_SEND_INLINE` the data they name, into `w`.
///
/// # Safety
///
/// `wr` must be a valid work request whose SGEs point to readable memory when it is inline.
unsafe fn set_data(q: &SrdmaQp, wr: &ibv_send_wr, w: &mut SqWqe) -> Result<(), c_int> {
    let n = usize::try_from(wr.num_sge).map_err(|_| libc::EINVAL)?;
    // SAFETY: `sg_list` holds `num_sge` entries (verbs contract).
    let sges = if n == 0 {
        &[][..]
    } else {
        unsafe { core::slice::from_raw_parts(wr.sg_list, n) }
    };
    if wr.send_flags & ibv_send_flags_IBV_SEND_INLINE != 0 {
        let bufs = sges
            .iter()
            .map(|s| (s.addr as usize as *const u8, s.length as usize));
        // SAFETY: Inline SGEs name readable memory of the caller (verbs contract).
        unsafe { w.inline(bufs, q.geometry.max_inline_data as usize) }
    } else {
        w.sges(sges)
    }
}

/// Builds the WQE for `wr` at `wqe` (a slot of `size` bytes).
///
/// # Safety
///
/// `wqe` must be a mapped SQ slot of `size` bytes that the caller holds exclusively; `wr` a
/// valid work request whose SGEs point to readable memory when it is inline, and whose window
/// and region are live objects when it binds.
pub(crate) unsafe fn build_send_wqe(
    q: &SrdmaQp,
    wr: &ibv_send_wr,
    wqe: *mut u8,
    size: usize,
) -> Result<(), c_int> {
    let opcode = wqe::opcode(wr.opcode).ok_or(libc::EOPNOTSUPP)?;
    // `struct ibv_send_wr` has no field for the 8 bytes: ibv_wr_atomic_write only.
    if wr.opcode == ibv_wr_opcode_IBV_WR_ATOMIC_WRITE {
        return Err(libc::EOPNOTSUPP);
    }
    let qp = &q.vqp.qp_ex.qp_base;
    if !wqe::valid_on(wr.opcode, qp.qp_type) {
        return Err(libc::EINVAL);
    }
    let flags = wqe::wqe_flags(wr.send_flags);
    // SAFETY: The slot is ours (caller guarantee).
    let mut w = unsafe { SqWqe::new(wqe, size, wr.wr_id, opcode, flags, imm_word(wr)) };
    if wqe::has_data(wr.opcode) {
        // SAFETY: A valid work request (caller guarantee).
        unsafe { set_data(q, wr, &mut w)? };
    }
    match wr.opcode {
        ibv_wr_opcode_IBV_WR_RDMA_WRITE
        | ibv_wr_opcode_IBV_WR_RDMA_WRITE_WITH_IMM
        | ibv_wr_opcode_IBV_WR_RDMA_READ => {
            // SAFETY: RDMA work requests use the `rdma` member.
            let rdma = unsafe { wr.wr.rdma };
            w.remote(rdma.remote_addr, rdma.rkey, 0, 0);
        }
        ibv_wr_opcode_IBV_WR_ATOMIC_CMP_AND_SWP | ibv_wr_opcode_IBV_WR_ATOMIC_FETCH_AND_ADD => {
            // SAFETY: Atomic work requests use the `atomic` member.
            let a = unsafe { wr.wr.atomic };
            w.remote(a.remote_addr, a.rkey, a.compare_add, a.swap);
        }
        ibv_wr_opcode_IBV_WR_BIND_MW => {
            // SAFETY: Bind work requests use the `bind_mw` member.
            let b = unsafe { wr.__bindgen_anon_2.bind_mw };
            // SAFETY: Its window and region are live (caller guarantee).
            w.bind(unsafe { wqe::bind_segment(qp.context, b.mw, b.rkey, &b.bind_info)? });
        }
        _ => {}
    }
    if qp.qp_type == ibv_qp_type_IBV_QPT_UD {
        // SAFETY: UD work requests use the `ud` member.
        let ud = unsafe { wr.wr.ud };
        if ud.ah.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: A non-null AH of a UD work request is one of ours (verbs contract).
        w.ud(unsafe { crate::wqe::ud_segment(ud.ah, ud.remote_qpn, ud.remote_qkey) });
    }
    w.finish();
    Ok(())
}

/// Whether a QP in `state` (as libibverbs last set it) takes sends: from RTS on, the error
/// state included (its work completes flushed). Earlier states refuse them with EINVAL, as
/// rxe and mlx5 do.
pub(crate) fn may_send(state: ibv_qp_state) -> bool {
    !matches!(
        state,
        ibv_qp_state_IBV_QPS_RESET | ibv_qp_state_IBV_QPS_INIT | ibv_qp_state_IBV_QPS_RTR
    )
}

/// Whether a QP in `state` takes receives: from INIT on.
fn may_receive(state: ibv_qp_state) -> bool {
    state != ibv_qp_state_IBV_QPS_RESET
}

pub(crate) unsafe extern "C" fn post_send(
    ibqp: *mut ibv_qp,
    mut wr: *mut ibv_send_wr,
    bad_wr: *mut *mut ibv_send_wr,
) -> c_int {
    // SAFETY: `ibqp` is a QP of ours, `state` maintained by libibverbs' ibv_modify_qp.
    if !may_send(unsafe { (*ibqp).state }) {
        // SAFETY: `bad_wr` is valid for writes.
        unsafe { *bad_wr = wr };
        return libc::EINVAL;
    }
    // SAFETY: `ibqp` is a QP of ours.
    let q = unsafe { &*ibqp.cast::<SrdmaQp>() };
    let g = q.geometry;
    let mut pi = q.sq_pi.lock();
    // SAFETY: The doorbell record is mapped while the QP exists.
    let (db_pi, db_ci) = unsafe { (db_word(q.db, DB_SQ_PI), db_word(q.db, DB_SQ_CI)) };
    let mut ret = 0;
    let mut posted = 0;
    while !wr.is_null() {
        if pi.wrapping_sub(db_ci.load(Ordering::Acquire)) >= g.sq_wqe_cnt {
            ret = libc::ENOMEM;
            break;
        }
        let size = g.sq_wqe_size as usize;
        let slot = (*pi & (g.sq_wqe_cnt - 1)) as usize * size;
        // SAFETY: `wr` is a valid work request; the slot lies within the mapped SQ.
        if let Err(e) = unsafe { build_send_wqe(q, &*wr, q.sq.add(slot), size) } {
            ret = e;
            break;
        }
        *pi = pi.wrapping_add(1);
        posted += 1;
        // SAFETY: `wr` is valid; `next` is the rest of the list.
        wr = unsafe { (*wr).next };
    }
    if posted > 0 {
        // SAFETY: `ibqp` is a QP of ours; its doorbell record is mapped.
        let kick = unsafe { ring_doorbell(ibqp, db_pi, *pi) };
        if ret == 0 {
            ret = kick;
        }
    }
    if ret != 0 {
        // SAFETY: `bad_wr` is valid for writes.
        unsafe { *bad_wr = wr };
    }
    ret
}

/// Publishes the SQ producer index `pi` and tells the kernel: in doorbell mode "kick" always
/// (the doorbell method), in mode "poll" only when the poller sleeps.
///
/// # Safety
///
/// `ibqp` must be a QP of ours and `db_pi` the SQ producer index word of its doorbell record.
pub(crate) unsafe fn ring_doorbell(ibqp: *mut ibv_qp, db_pi: &AtomicU32, pi: u32) -> c_int {
    // The WQEs are written before the kernel can see the new producer index.
    db_pi.store(pi, Ordering::Release);
    // SAFETY: The QP's context is one of ours.
    let ctx = unsafe { crate::context::SrdmaContext::from_ibv((*ibqp).context) };
    if ctx.state.ctx_db != 0 {
        // Pairs with the poller's barrier between setting the flag and its last look.
        fence(Ordering::SeqCst);
        // SAFETY: The context record is mapped while the context exists.
        let flags = unsafe { db_word(ctx.state.ctx_db as *mut u8, DB_CTX_FLAGS) };
        if flags.load(Ordering::Relaxed) & SRDMA_CTX_NEED_WAKEUP == 0 {
            return 0;
        }
    }
    // SAFETY: `ibqp` is a QP of ours, of this context.
    unsafe { ctx.state.doorbell.kick(ibqp) }
}

/// Writes receive WQEs into a receive ring (of a QP or an SRQ) and publishes the producer
/// index; no syscall.
///
/// # Safety
///
/// `ring` must be a mapped receive ring of `cnt` WQEs of `size` bytes and `db` its doorbell
/// record; `wr` a valid work request list.
unsafe fn post_recv_ring(
    ring: *mut u8,
    cnt: u32,
    size: usize,
    db: *mut u8,
    pi_lock: &std::sync::Mutex<u32>,
    mut wr: *mut ibv_recv_wr,
    bad_wr: *mut *mut ibv_recv_wr,
) -> c_int {
    let Ok(mut pi) = pi_lock.lock() else {
        return libc::EIO;
    };
    // SAFETY: The doorbell record is mapped while the queue exists.
    let (db_pi, db_ci) = unsafe { (db_word(db, DB_RQ_PI), db_word(db, DB_RQ_CI)) };
    let mut ret = 0;
    while !wr.is_null() {
        // SAFETY: `wr` is a valid work request.
        let w = unsafe { &*wr };
        let n = usize::try_from(w.num_sge).unwrap_or(usize::MAX);
        if n > (size - RQ_HDR) / SGE {
            ret = libc::EINVAL;
            break;
        }
        if pi.wrapping_sub(db_ci.load(Ordering::Acquire)) >= cnt {
            ret = libc::ENOMEM;
            break;
        }
        // SAFETY: The slot lies within the mapped ring; `sg_list` holds `n` entries.
        unsafe {
            let slot = ring.add((*pi & (cnt - 1)) as usize * size);
            let hdr = srdma_rq_wqe_hdr {
                wr_id: w.wr_id,
                num_sge: n as u32,
                reserved: 0,
            };
            slot.cast::<srdma_rq_wqe_hdr>().write_unaligned(hdr);
            for i in 0..n {
                let s = &*w.sg_list.add(i);
                let sge = srdma_sge {
                    addr: s.addr,
                    length: s.length,
                    lkey: s.lkey,
                };
                slot.add(RQ_HDR + i * SGE)
                    .cast::<srdma_sge>()
                    .write_unaligned(sge);
            }
        }
        *pi = pi.wrapping_add(1);
        wr = w.next;
    }
    db_pi.store(*pi, Ordering::Release);
    if ret != 0 {
        // SAFETY: `bad_wr` is valid for writes.
        unsafe { *bad_wr = wr };
    }
    ret
}

pub(crate) unsafe extern "C" fn post_recv(
    ibqp: *mut ibv_qp,
    wr: *mut ibv_recv_wr,
    bad_wr: *mut *mut ibv_recv_wr,
) -> c_int {
    // SAFETY: `ibqp` is a QP of ours.
    let q = unsafe { &*ibqp.cast::<SrdmaQp>() };
    let g = q.geometry;
    // SAFETY: As for `post_send`.
    if q.rq.is_null() || !may_receive(unsafe { (*ibqp).state }) {
        // SAFETY: `bad_wr` is valid for writes.
        unsafe { *bad_wr = wr };
        return libc::EINVAL;
    }
    // SAFETY: The QP's RQ ring and doorbell record are mapped while it exists.
    unsafe {
        post_recv_ring(
            q.rq,
            g.rq_wqe_cnt,
            g.rq_wqe_size as usize,
            q.db,
            &q.rq_pi,
            wr,
            bad_wr,
        )
    }
}

pub(crate) unsafe extern "C" fn post_srq_recv(
    ibsrq: *mut ibv_srq,
    wr: *mut ibv_recv_wr,
    bad_wr: *mut *mut ibv_recv_wr,
) -> c_int {
    // SAFETY: `ibsrq` is an SRQ of ours.
    let s = unsafe { &*ibsrq.cast::<crate::srq::SrdmaSrq>() };
    let g = s.geometry;
    // SAFETY: The SRQ's ring and doorbell record are mapped while it exists.
    unsafe {
        post_recv_ring(
            s.rq,
            g.rq_wqe_cnt,
            g.rq_wqe_size as usize,
            s.db,
            &s.pi,
            wr,
            bad_wr,
        )
    }
}

/// Arms the CQ through its doorbell record, without a syscall: the kernel raises the event
/// (through the completion channel) for the next CQE that matches and disarms it.
pub(crate) unsafe extern "C" fn req_notify_cq(ibcq: *mut ibv_cq, solicited_only: c_int) -> c_int {
    // SAFETY: `ibcq` is a CQ of ours.
    let cq = unsafe { &*ibcq.cast::<SrdmaCq>() };
    let arm = if solicited_only != 0 {
        SRDMA_CQ_ARM_SOLICITED
    } else {
        SRDMA_CQ_ARM_NEXT
    };
    // SAFETY: The doorbell record is mapped while the CQ exists.
    unsafe { db_word(cq.db, DB_CQ_ARM) }.store(arm, Ordering::SeqCst);
    // Pairs with the kernel's barrier between writing a CQE and reading the arm word: a CQE
    // it wrote before seeing the arm is visible to the caller's next poll.
    core::sync::atomic::fence(Ordering::SeqCst);
    0
}

pub(crate) unsafe extern "C" fn poll_cq(ibcq: *mut ibv_cq, ne: c_int, wc: *mut ibv_wc) -> c_int {
    // SAFETY: `ibcq` is a CQ of ours.
    let cq = unsafe { &*ibcq.cast::<SrdmaCq>() };
    let mut poll = cq.poll.lock();
    let mut n = 0;
    while n < ne.max(0) {
        let Some(c) = poll.take() else {
            break;
        };
        let out = ibv_wc {
            wr_id: c.wr_id,
            status: c.status,
            opcode: c.opcode,
            vendor_err: c.vendor_err,
            byte_len: c.byte_len,
            // Immediate data (network order) or, with IBV_WC_WITH_INV, the invalidated rkey
            // (host order): both members of the union are this word as the kernel wrote it.
            __bindgen_anon_1: ibv_wc__bindgen_ty_1 {
                imm_data: c.imm_data,
            },
            qp_num: c.qp_num,
            src_qp: c.src_qp,
            wc_flags: c.wc_flags,
            pkey_index: c.pkey_index,
            slid: c.slid,
            sl: c.sl,
            dlid_path_bits: c.dlid_path_bits,
        };
        // SAFETY: `wc` has room for `ne` entries (verbs contract).
        unsafe { wc.add(n as usize).write(out) };
        n += 1;
    }
    if n > 0 {
        cq.publish(poll.ci);
    }
    n
}

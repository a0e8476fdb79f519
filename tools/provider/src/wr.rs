//! The work-request API (`ibv_qp_ex`, `ibv_wr_*`, see `man ibv_wr_post`): `ibv_wr_start` takes
//! the SQ lock, each builder starts a WQE in the next free slot and the setters fill it in
//! place, `ibv_wr_complete` publishes the producer index and kicks the kernel as
//! `ibv_post_send` does, `ibv_wr_abort` drops what was built. The builders cannot fail: the
//! first error is kept and returned by `ibv_wr_complete`, which then posts nothing.
#![allow(
    non_upper_case_globals,
    reason = "the verbs constants keep their C names"
)]

use crate::datapath::{db_word, DB_SQ_CI, DB_SQ_PI};
use crate::ffi::*;
use crate::qp::SrdmaQp;
use crate::wqe::{self, SqWqe};
use core::sync::atomic::Ordering;
use libc::{c_int, c_void};

/// The memory-window operations, on connected QPs.
const MW_OPS: u64 = (ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_BIND_MW
    | ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_LOCAL_INV
    | ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND_WITH_INV) as u64;
/// The `send_ops_flags` srdma executes on an RC QP.
const RC_OPS: u64 = (ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND
    | ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND_WITH_IMM
    | ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_WRITE
    | ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM
    | ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_READ
    | ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP
    | ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD
    | ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_ATOMIC_WRITE) as u64
    | MW_OPS;
/// On a UC QP: no reads, no atomics.
const UC_OPS: u64 = (ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND
    | ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND_WITH_IMM
    | ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_WRITE
    | ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM) as u64
    | MW_OPS;
/// On a UD QP: sends only.
const UD_OPS: u64 = (ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND
    | ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND_WITH_IMM) as u64;

/// Checks the attributes of `ibv_create_qp_ex` against what srdma supports.
pub(crate) fn check_init_attr(attr: &ibv_qp_init_attr_ex) -> Result<(), c_int> {
    let pd = ibv_qp_init_attr_mask_IBV_QP_INIT_ATTR_PD;
    let ops = ibv_qp_init_attr_mask_IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    // Creation flags are taken when none is set, as rxe takes them: srdma has none.
    let flags = ibv_qp_init_attr_mask_IBV_QP_INIT_ATTR_CREATE_FLAGS;
    if attr.comp_mask & !(pd | ops | flags) != 0
        || (attr.comp_mask & flags != 0 && attr.create_flags != 0)
    {
        return Err(libc::EOPNOTSUPP);
    }
    if !matches!(
        attr.qp_type,
        ibv_qp_type_IBV_QPT_RC | ibv_qp_type_IBV_QPT_UC | ibv_qp_type_IBV_QPT_UD
    ) {
        return Err(libc::EOPNOTSUPP);
    }
    if attr.comp_mask & pd == 0 || attr.pd.is_null() {
        return Err(libc::EINVAL);
    }
    if attr.comp_mask & ops != 0 {
        let supported = match attr.qp_type {
            ibv_qp_type_IBV_QPT_RC => RC_OPS,
            ibv_qp_type_IBV_QPT_UC => UC_OPS,
            ibv_qp_type_IBV_QPT_UD => UD_OPS,
            _ => 0,
        };
        if supported == 0 || attr.send_ops_flags & !supported != 0 {
            return Err(libc::EOPNOTSUPP);
        }
    }
    Ok(())
}

/// Fills the work-request functions of `qpx`: the builders of `send_ops_flags` (checked by
/// [`check_init_attr`]), the setters, and `wr_set_ud_addr` for UD QPs.
pub(crate) fn install(qpx: &mut ibv_qp_ex, qp_type: ibv_qp_type, send_ops_flags: u64) {
    let has = |flag: ibv_qp_create_send_ops_flags| send_ops_flags & flag as u64 != 0;
    if has(ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND) {
        qpx.wr_send = Some(wr_send);
    }
    if has(ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND_WITH_IMM) {
        qpx.wr_send_imm = Some(wr_send_imm);
    }
    if has(ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_WRITE) {
        qpx.wr_rdma_write = Some(wr_rdma_write);
    }
    if has(ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM) {
        qpx.wr_rdma_write_imm = Some(wr_rdma_write_imm);
    }
    if has(ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_READ) {
        qpx.wr_rdma_read = Some(wr_rdma_read);
    }
    if has(ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP) {
        qpx.wr_atomic_cmp_swp = Some(wr_atomic_cmp_swp);
    }
    if has(ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD) {
        qpx.wr_atomic_fetch_add = Some(wr_atomic_fetch_add);
    }
    if has(ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_ATOMIC_WRITE) {
        qpx.wr_atomic_write = Some(wr_atomic_write);
    }
    if has(ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_BIND_MW) {
        qpx.wr_bind_mw = Some(wr_bind_mw);
    }
    if has(ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_LOCAL_INV) {
        qpx.wr_local_inv = Some(wr_local_inv);
    }
    if has(ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND_WITH_INV) {
        qpx.wr_send_inv = Some(wr_send_inv);
    }
    if qp_type == ibv_qp_type_IBV_QPT_UD {
        qpx.wr_set_ud_addr = Some(wr_set_ud_addr);
    }
    qpx.wr_set_sge = Some(wr_set_sge);
    qpx.wr_set_sge_list = Some(wr_set_sge_list);
    qpx.wr_set_inline_data = Some(wr_set_inline_data);
    qpx.wr_set_inline_data_list = Some(wr_set_inline_data_list);
    qpx.wr_start = Some(wr_start);
    qpx.wr_complete = Some(wr_complete);
    qpx.wr_abort = Some(wr_abort);
}

/// The WQE a builder started, which the setters complete.
struct Current {
    wqe: SqWqe,
    opcode: ibv_wr_opcode,
    /// Whether `wr_set_ud_addr` gave the destination (UD QPs need one).
    has_ud: bool,
}

/// What is built between `ibv_wr_start` and `ibv_wr_complete`/`ibv_wr_abort`.
#[derive(Default)]
pub(crate) struct Batch {
    /// The producer index after the WQEs built so far.
    pi: u32,
    /// The first error; when set, nothing more is built and nothing is posted.
    err: c_int,
    cur: Option<Current>,
}

impl Batch {
    /// Completes the current WQE, if any; a UD one needs its destination.
    fn finish_current(&mut self, ud: bool) {
        if let Some(cur) = self.cur.take() {
            if ud && !cur.has_ud {
                self.fail(libc::EINVAL);
            }
            cur.wqe.finish();
        }
    }

    fn fail(&mut self, err: c_int) {
        if self.err == 0 {
            self.err = err;
        }
    }

    /// The WQE the setters work on; `None` after an error or before any builder.
    fn current(&mut self) -> Option<&mut Current> {
        if self.err != 0 {
            return None;
        }
        if self.cur.is_none() {
            self.fail(libc::EINVAL);
        }
        self.cur.as_mut()
    }
}

/// # Safety
///
/// `qpx` must be the `ibv_qp_ex` of one of our QPs.
unsafe fn qp_of<'a>(qpx: *mut ibv_qp_ex) -> &'a SrdmaQp {
    // SAFETY: `ibv_qp_ex` starts `verbs_qp`, which starts `SrdmaQp` (caller guarantee).
    unsafe { &*qpx.cast::<SrdmaQp>() }
}

/// The batch of a QP inside `ibv_wr_start` .. `ibv_wr_complete`.
///
/// # Safety
///
/// The calling thread must hold the SQ lock of `q` (taken by `wr_start`), and use the reference
/// only while it does.
#[expect(clippy::mut_from_ref, reason = "exclusive through the SQ lock")]
unsafe fn batch(q: &SrdmaQp) -> &mut Batch {
    // SAFETY: The batch is only touched with the SQ lock held (caller guarantee).
    unsafe { &mut *q.wr.get() }
}

unsafe extern "C" fn wr_start(qpx: *mut ibv_qp_ex) {
    // SAFETY: libibverbs passes one of our QPs.
    let q = unsafe { qp_of(qpx) };
    // Held until wr_complete or wr_abort: the critical region of `man ibv_wr_post`.
    q.sq_pi.acquire();
    // SAFETY: We hold the lock just taken.
    unsafe {
        let pi = *q.sq_pi.get();
        *batch(q) = Batch {
            pi,
            ..Default::default()
        };
    }
}

unsafe extern "C" fn wr_complete(qpx: *mut ibv_qp_ex) -> c_int {
    // SAFETY: libibverbs passes one of our QPs, inside wr_start .. wr_complete.
    let (q, b) = unsafe {
        let q = qp_of(qpx);
        (q, batch(q))
    };
    b.finish_current(q.vqp.qp_ex.qp_base.qp_type == ibv_qp_type_IBV_QPT_UD);
    // SAFETY: We hold the lock since wr_start.
    let pi = unsafe { q.sq_pi.get() };
    let mut ret = b.err;
    // SAFETY: `qpx` is one of ours; libibverbs maintains `state`.
    if ret == 0 && !crate::datapath::may_send(unsafe { (*qpx).qp_base.state }) {
        ret = libc::EINVAL;
    }
    if ret == 0 && b.pi != *pi {
        *pi = b.pi;
        // SAFETY: The doorbell record is mapped while the QP exists.
        let db_pi = unsafe { db_word(q.db, DB_SQ_PI) };
        // SAFETY: A QP of ours with its doorbell record.
        ret = unsafe { crate::datapath::ring_doorbell(qpx.cast(), db_pi, *pi) };
    }
    b.cur = None;
    // SAFETY: Taken in wr_start; `pi` and `b` are not used any more.
    unsafe { q.sq_pi.release() };
    ret
}

unsafe extern "C" fn wr_abort(qpx: *mut ibv_qp_ex) {
    // SAFETY: libibverbs passes one of our QPs, inside wr_start .. wr_abort.
    let q = unsafe { qp_of(qpx) };
    // The WQEs built lie beyond the producer index the kernel knows: dropping them is enough.
    // SAFETY: We hold the lock since wr_start.
    unsafe { batch(q).cur = None };
    // SAFETY: Taken in wr_start; nothing of the batch is used any more.
    unsafe { q.sq_pi.release() };
}

/// Starts a WQE of `op` in the next free SQ slot, with the `wr_id` and `wr_flags` of `qpx`.
///
/// # Safety
///
/// `qpx` must be one of our QPs inside wr_start .. wr_complete.
unsafe fn begin<'a>(qpx: *mut ibv_qp_ex, op: ibv_wr_opcode, imm: u32) -> Option<&'a mut SqWqe> {
    // SAFETY: Caller guarantee.
    let (q, b) = unsafe {
        let q = qp_of(qpx);
        (q, batch(q))
    };
    let qpx = &q.vqp.qp_ex;
    b.finish_current(qpx.qp_base.qp_type == ibv_qp_type_IBV_QPT_UD);
    if b.err != 0 {
        return None;
    }
    let g = q.geometry;
    // SAFETY: The doorbell record is mapped while the QP exists.
    let ci = unsafe { db_word(q.db, DB_SQ_CI) }.load(Ordering::Acquire);
    if b.pi.wrapping_sub(ci) >= g.sq_wqe_cnt {
        b.fail(libc::ENOMEM);
        return None;
    }
    let Some(opcode) = wqe::opcode(op) else {
        b.fail(libc::EOPNOTSUPP);
        return None;
    };
    let size = g.sq_wqe_size as usize;
    let slot = (b.pi & (g.sq_wqe_cnt - 1)) as usize * size;
    // SAFETY: The slot lies within the mapped SQ, beyond the producer index the kernel knows
    // and below its consumer index plus the ring size; we hold the SQ lock.
    let w = unsafe {
        SqWqe::new(
            q.sq.add(slot),
            size,
            qpx.wr_id,
            opcode,
            wqe::wqe_flags(qpx.wr_flags),
            imm,
        )
    };
    b.pi = b.pi.wrapping_add(1);
    let cur = b.cur.insert(Current {
        wqe: w,
        opcode: op,
        has_ud: false,
    });
    Some(&mut cur.wqe)
}

/// The current WQE of a QP inside wr_start .. wr_complete, if the batch has no error.
///
/// # Safety
///
/// As for [`begin`].
unsafe fn current<'a>(qpx: *mut ibv_qp_ex) -> Option<(&'a SrdmaQp, &'a mut Current)> {
    // SAFETY: Caller guarantee.
    let (q, b) = unsafe {
        let q = qp_of(qpx);
        (q, batch(q))
    };
    b.current().map(|cur| (q, cur))
}

/// Records `err` as the batch's error.
///
/// # Safety
///
/// As for [`begin`].
unsafe fn fail(qpx: *mut ibv_qp_ex, err: c_int) {
    // SAFETY: Caller guarantee.
    unsafe { batch(qp_of(qpx)).fail(err) };
}

unsafe extern "C" fn wr_send(qpx: *mut ibv_qp_ex) {
    // SAFETY: libibverbs calls builders inside wr_start .. wr_complete.
    unsafe { begin(qpx, ibv_wr_opcode_IBV_WR_SEND, 0) };
}

unsafe extern "C" fn wr_send_imm(qpx: *mut ibv_qp_ex, imm_data: u32) {
    // SAFETY: libibverbs calls builders inside wr_start .. wr_complete.
    unsafe { begin(qpx, ibv_wr_opcode_IBV_WR_SEND_WITH_IMM, imm_data) };
}

unsafe extern "C" fn wr_send_inv(qpx: *mut ibv_qp_ex, invalidate_rkey: u32) {
    // SAFETY: libibverbs calls builders inside wr_start .. wr_complete.
    unsafe { begin(qpx, ibv_wr_opcode_IBV_WR_SEND_WITH_INV, invalidate_rkey) };
}

unsafe extern "C" fn wr_local_inv(qpx: *mut ibv_qp_ex, invalidate_rkey: u32) {
    // SAFETY: libibverbs calls builders inside wr_start .. wr_complete.
    unsafe { begin(qpx, ibv_wr_opcode_IBV_WR_LOCAL_INV, invalidate_rkey) };
}

unsafe extern "C" fn wr_bind_mw(
    qpx: *mut ibv_qp_ex,
    mw: *mut ibv_mw,
    rkey: u32,
    bind_info: *const ibv_mw_bind_info,
) {
    if bind_info.is_null() {
        // SAFETY: libibverbs calls builders inside wr_start .. wr_complete.
        return unsafe { fail(qpx, libc::EINVAL) };
    }
    // SAFETY: A QP of ours; the window, the bind description and its region are live (verbs
    // contract).
    let seg = unsafe { wqe::bind_segment((*qpx).qp_base.context, mw, rkey, &*bind_info) };
    let seg = match seg {
        Ok(seg) => seg,
        // SAFETY: libibverbs calls builders inside wr_start .. wr_complete.
        Err(e) => return unsafe { fail(qpx, e) },
    };
    // SAFETY: As above.
    if let Some(w) = unsafe { begin(qpx, ibv_wr_opcode_IBV_WR_BIND_MW, 0) } {
        w.bind(seg);
    }
}

unsafe extern "C" fn wr_rdma_write(qpx: *mut ibv_qp_ex, rkey: u32, remote_addr: u64) {
    // SAFETY: libibverbs calls builders inside wr_start .. wr_complete.
    if let Some(w) = unsafe { begin(qpx, ibv_wr_opcode_IBV_WR_RDMA_WRITE, 0) } {
        w.remote(remote_addr, rkey, 0, 0);
    }
}

unsafe extern "C" fn wr_rdma_write_imm(
    qpx: *mut ibv_qp_ex,
    rkey: u32,
    remote_addr: u64,
    imm_data: u32,
) {
    // SAFETY: libibverbs calls builders inside wr_start .. wr_complete.
    if let Some(w) = unsafe { begin(qpx, ibv_wr_opcode_IBV_WR_RDMA_WRITE_WITH_IMM, imm_data) } {
        w.remote(remote_addr, rkey, 0, 0);
    }
}

unsafe extern "C" fn wr_rdma_read(qpx: *mut ibv_qp_ex, rkey: u32, remote_addr: u64) {
    // SAFETY: libibverbs calls builders inside wr_start .. wr_complete.
    if let Some(w) = unsafe { begin(qpx, ibv_wr_opcode_IBV_WR_RDMA_READ, 0) } {
        w.remote(remote_addr, rkey, 0, 0);
    }
}

unsafe extern "C" fn wr_atomic_cmp_swp(
    qpx: *mut ibv_qp_ex,
    rkey: u32,
    remote_addr: u64,
    compare: u64,
    swap: u64,
) {
    // SAFETY: libibverbs calls builders inside wr_start .. wr_complete.
    if let Some(w) = unsafe { begin(qpx, ibv_wr_opcode_IBV_WR_ATOMIC_CMP_AND_SWP, 0) } {
        w.remote(remote_addr, rkey, compare, swap);
    }
}

unsafe extern "C" fn wr_atomic_fetch_add(
    qpx: *mut ibv_qp_ex,
    rkey: u32,
    remote_addr: u64,
    add: u64,
) {
    // SAFETY: libibverbs calls builders inside wr_start .. wr_complete.
    if let Some(w) = unsafe { begin(qpx, ibv_wr_opcode_IBV_WR_ATOMIC_FETCH_AND_ADD, 0) } {
        w.remote(remote_addr, rkey, add, 0);
    }
}

/// `ibv_wr_atomic_write`: the 8 bytes at `atomic_wr` travel in the WQE's remote segment, as
/// they lie in memory.
unsafe extern "C" fn wr_atomic_write(
    qpx: *mut ibv_qp_ex,
    rkey: u32,
    remote_addr: u64,
    atomic_wr: *const c_void,
) {
    if atomic_wr.is_null() {
        // SAFETY: libibverbs calls builders inside wr_start .. wr_complete.
        return unsafe { fail(qpx, libc::EINVAL) };
    }
    // SAFETY: The verbs user passes 8 readable bytes (`man ibv_wr_post`), of any alignment.
    let value = u64::from_ne_bytes(unsafe { atomic_wr.cast::<[u8; 8]>().read_unaligned() });
    // SAFETY: libibverbs calls builders inside wr_start .. wr_complete.
    if let Some(w) = unsafe { begin(qpx, ibv_wr_opcode_IBV_WR_ATOMIC_WRITE, 0) } {
        w.remote(remote_addr, rkey, value, 0);
    }
}

unsafe extern "C" fn wr_set_ud_addr(
    qpx: *mut ibv_qp_ex,
    ah: *mut ibv_ah,
    remote_qpn: u32,
    remote_qkey: u32,
) {
    if ah.is_null() {
        // SAFETY: libibverbs calls setters inside wr_start .. wr_complete.
        return unsafe { fail(qpx, libc::EINVAL) };
    }
    // SAFETY: libibverbs calls setters inside wr_start .. wr_complete.
    if let Some((_, cur)) = unsafe { current(qpx) } {
        // SAFETY: The verbs user passes an AH of this context.
        cur.wqe
            .ud(unsafe { wqe::ud_segment(ah, remote_qpn, remote_qkey) });
        cur.has_ud = true;
    }
}

/// Makes `sges` the data of the current WQE.
///
/// # Safety
///
/// As for [`begin`].
unsafe fn set_sges(qpx: *mut ibv_qp_ex, sges: &[ibv_sge]) {
    // SAFETY: Caller guarantee.
    if let Some((_, cur)) = unsafe { current(qpx) } {
        let res = if wqe::has_data(cur.opcode) {
            cur.wqe.sges(sges)
        } else {
            Err(libc::EINVAL)
        };
        if let Err(e) = res {
            // SAFETY: Caller guarantee.
            unsafe { fail(qpx, e) };
        }
    }
}

unsafe extern "C" fn wr_set_sge(qpx: *mut ibv_qp_ex, lkey: u32, addr: u64, length: u32) {
    let sge = ibv_sge { addr, length, lkey };
    // SAFETY: libibverbs calls setters inside wr_start .. wr_complete.
    unsafe { set_sges(qpx, &[sge]) };
}

unsafe extern "C" fn wr_set_sge_list(qpx: *mut ibv_qp_ex, num_sge: usize, sg_list: *const ibv_sge) {
    let sges = if num_sge == 0 {
        &[][..]
    } else {
        // SAFETY: `sg_list` holds `num_sge` entries (verbs contract).
        unsafe { core::slice::from_raw_parts(sg_list, num_sge) }
    };
    // SAFETY: libibverbs calls setters inside wr_start .. wr_complete.
    unsafe { set_sges(qpx, sges) };
}

/// Copies the buffers `bufs` into the current WQE as its inline payload.
///
/// # Safety
///
/// As for [`begin`]; each buffer must be readable for its length.
unsafe fn set_inline<I>(qpx: *mut ibv_qp_ex, bufs: I)
where
    I: Iterator<Item = (*const u8, usize)> + Clone,
{
    // SAFETY: Caller guarantee.
    let Some((q, cur)) = (unsafe { current(qpx) }) else {
        return;
    };
    let res = if wqe::may_inline(cur.opcode) {
        // SAFETY: The buffers are readable (caller guarantee).
        unsafe { cur.wqe.inline(bufs, q.geometry.max_inline_data as usize) }
    } else {
        Err(libc::EINVAL)
    };
    if let Err(e) = res {
        // SAFETY: Caller guarantee.
        unsafe { fail(qpx, e) };
    }
}

unsafe extern "C" fn wr_set_inline_data(qpx: *mut ibv_qp_ex, addr: *mut c_void, length: usize) {
    let bufs = core::iter::once((addr as *const u8, length));
    // SAFETY: Inside wr_start .. wr_complete; the buffer is readable (verbs contract).
    unsafe { set_inline(qpx, bufs) };
}

unsafe extern "C" fn wr_set_inline_data_list(
    qpx: *mut ibv_qp_ex,
    num_buf: usize,
    buf_list: *const ibv_data_buf,
) {
    let list = if num_buf == 0 {
        &[][..]
    } else {
        // SAFETY: `buf_list` holds `num_buf` entries (verbs contract).
        unsafe { core::slice::from_raw_parts(buf_list, num_buf) }
    };
    let bufs = list.iter().map(|b| (b.addr as *const u8, b.length));
    // SAFETY: Inside wr_start .. wr_complete; the buffers are readable (verbs contract).
    unsafe { set_inline(qpx, bufs) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(qp_type: ibv_qp_type, mask: u32, ops: u64) -> ibv_qp_init_attr_ex {
        ibv_qp_init_attr_ex {
            qp_type,
            comp_mask: mask,
            send_ops_flags: ops,
            pd: core::ptr::NonNull::<ibv_pd>::dangling().as_ptr(),
            ..Default::default()
        }
    }

    #[test]
    fn init_attr_checks() {
        let pd = ibv_qp_init_attr_mask_IBV_QP_INIT_ATTR_PD;
        let ops = pd | ibv_qp_init_attr_mask_IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        let rc = ibv_qp_type_IBV_QPT_RC;
        assert_eq!(check_init_attr(&attr(rc, ops, RC_OPS)), Ok(()));
        assert_eq!(
            check_init_attr(&attr(rc, pd, u64::MAX)),
            Ok(()),
            "flags unused"
        );
        let tso = ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_TSO as u64;
        assert_eq!(check_init_attr(&attr(rc, ops, tso)), Err(libc::EOPNOTSUPP));
        let inv = ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_SEND_WITH_INV as u64;
        assert_eq!(check_init_attr(&attr(rc, ops, inv)), Ok(()));
        let read = ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_RDMA_READ as u64;
        let uc = ibv_qp_type_IBV_QPT_UC;
        assert_eq!(check_init_attr(&attr(uc, ops, read)), Err(libc::EOPNOTSUPP));
        assert_eq!(check_init_attr(&attr(uc, ops, UC_OPS)), Ok(()));
        let ud = ibv_qp_type_IBV_QPT_UD;
        let bind = ibv_qp_create_send_ops_flags_IBV_QP_EX_WITH_BIND_MW as u64;
        assert_eq!(check_init_attr(&attr(ud, ops, bind)), Err(libc::EOPNOTSUPP));
        assert_eq!(
            check_init_attr(&attr(ud, ops, UC_OPS)),
            Err(libc::EOPNOTSUPP)
        );
        assert_eq!(check_init_attr(&attr(ud, ops, UD_OPS)), Ok(()));
        let xrc = ibv_qp_type_IBV_QPT_XRC_SEND;
        assert_eq!(check_init_attr(&attr(xrc, ops, 0)), Err(libc::EOPNOTSUPP));
        let flags = ibv_qp_init_attr_mask_IBV_QP_INIT_ATTR_CREATE_FLAGS;
        assert_eq!(
            check_init_attr(&attr(rc, pd | flags, 0)),
            Ok(()),
            "no flag set"
        );
        let mut a = attr(rc, pd | flags, 0);
        a.create_flags = ibv_qp_create_flags_IBV_QP_CREATE_SCATTER_FCS;
        assert_eq!(check_init_attr(&a), Err(libc::EOPNOTSUPP));
        let tso_hdr = ibv_qp_init_attr_mask_IBV_QP_INIT_ATTR_MAX_TSO_HEADER;
        assert_eq!(
            check_init_attr(&attr(rc, pd | tso_hdr, 0)),
            Err(libc::EOPNOTSUPP)
        );
        assert_eq!(check_init_attr(&attr(rc, 0, 0)), Err(libc::EINVAL));
        let raw = ibv_qp_type_IBV_QPT_RAW_PACKET;
        assert_eq!(check_init_attr(&attr(raw, pd, 0)), Err(libc::EOPNOTSUPP));
    }

    #[test]
    fn install_only_what_was_asked() {
        // SAFETY: All-zero is a valid `ibv_qp_ex` (null pointers, no functions).
        let mut qpx: ibv_qp_ex = unsafe { core::mem::zeroed() };
        install(&mut qpx, ibv_qp_type_IBV_QPT_UD, UD_OPS);
        assert!(qpx.wr_send.is_some() && qpx.wr_send_imm.is_some());
        assert!(qpx.wr_rdma_write.is_none() && qpx.wr_atomic_cmp_swp.is_none());
        assert!(qpx.wr_set_ud_addr.is_some() && qpx.wr_complete.is_some());
        // SAFETY: As above.
        let mut qpx: ibv_qp_ex = unsafe { core::mem::zeroed() };
        install(&mut qpx, ibv_qp_type_IBV_QPT_RC, RC_OPS);
        assert!(qpx.wr_rdma_read.is_some() && qpx.wr_atomic_fetch_add.is_some());
        assert!(qpx.wr_set_ud_addr.is_none() && qpx.wr_send_tso.is_none());
        assert!(qpx.wr_bind_mw.is_some() && qpx.wr_local_inv.is_some());
        assert!(qpx.wr_send_inv.is_some() && qpx.wr_atomic_write.is_some());
        // SAFETY: As above.
        let mut qpx: ibv_qp_ex = unsafe { core::mem::zeroed() };
        install(&mut qpx, ibv_qp_type_IBV_QPT_UC, UC_OPS);
        assert!(qpx.wr_rdma_write.is_some() && qpx.wr_atomic_write.is_none());
    }

    /// A context address for the test objects; never dereferenced.
    fn fake_ctx() -> *mut ibv_context {
        core::ptr::null_mut::<u8>().wrapping_add(0x1000).cast()
    }

    const SLOT: usize = 128;

    // `ibv_post_send` and `ibv_wr_*` must put the same bytes into the SQ.
    #[test]
    fn wr_api_and_post_send_build_the_same_wqes() {
        let ctx = fake_ctx();
        let mut mw = ibv_mw {
            context: ctx,
            rkey: 0x0080_0203,
            type_: ibv_mw_type_IBV_MW_TYPE_2,
            ..Default::default()
        };
        let mut mr = ibv_mr {
            context: ctx,
            lkey: 0x0000_0111,
            ..Default::default()
        };
        let info = ibv_mw_bind_info {
            mr: &mut mr,
            addr: 0x1000,
            length: 0x100,
            mw_access_flags: ibv_access_flags_IBV_ACCESS_REMOTE_WRITE,
        };
        let new = wqe::inc_rkey(mw.rkey);
        let mut data = [7u8; 8];
        let mut sge = ibv_sge {
            addr: 0x5000,
            length: 40,
            lkey: 0x111,
        };
        let signaled = ibv_send_flags_IBV_SEND_SIGNALED;

        let (mut sq_a, mut db_a) = (vec![0u8; 8 * SLOT], [0u32; 4]);
        let mut qa = crate::qp::test_qp(ctx, ibv_qp_type_IBV_QPT_RC, &mut sq_a, &mut db_a);
        let qpx = core::ptr::addr_of_mut!(qa.vqp.qp_ex);
        // SAFETY: A QP with its SQ; the builders run between wr_start and wr_abort, with live
        // objects and buffers.
        unsafe {
            wr_start(qpx);
            ((*qpx).wr_id, (*qpx).wr_flags) = (1, signaled);
            wr_bind_mw(qpx, &mut mw, new, &info);
            ((*qpx).wr_id, (*qpx).wr_flags) = (2, 0);
            wr_local_inv(qpx, 0x0080_0204);
            ((*qpx).wr_id, (*qpx).wr_flags) = (3, signaled);
            wr_send_inv(qpx, 0x0080_0204);
            wr_set_sge(qpx, sge.lkey, sge.addr, sge.length);
            ((*qpx).wr_id, (*qpx).wr_flags) = (4, 0);
            wr_send_inv(qpx, 0x1234_5678);
            wr_set_inline_data(qpx, data.as_mut_ptr().cast(), data.len());
            // Completes the one before; wr_abort drops this one.
            wr_send(qpx);
            assert_eq!(batch(&*qpx.cast::<SrdmaQp>()).err, 0);
            wr_abort(qpx);
        }

        let mut wrs = [
            ibv_send_wr::default(),
            ibv_send_wr::default(),
            ibv_send_wr::default(),
            ibv_send_wr::default(),
        ];
        wrs[0].opcode = ibv_wr_opcode_IBV_WR_BIND_MW;
        wrs[0].send_flags = signaled;
        wrs[0].__bindgen_anon_2.bind_mw = ibv_send_wr__bindgen_ty_4__bindgen_ty_1 {
            mw: &mut mw,
            rkey: new,
            bind_info: info,
        };
        wrs[1].opcode = ibv_wr_opcode_IBV_WR_LOCAL_INV;
        wrs[1].__bindgen_anon_1.invalidate_rkey = 0x0080_0204;
        wrs[2].opcode = ibv_wr_opcode_IBV_WR_SEND_WITH_INV;
        wrs[2].send_flags = signaled;
        wrs[2].__bindgen_anon_1.invalidate_rkey = 0x0080_0204;
        (wrs[2].sg_list, wrs[2].num_sge) = (&mut sge, 1);
        let mut inline = ibv_sge {
            addr: data.as_ptr() as u64,
            length: data.len() as u32,
            lkey: 0,
        };
        wrs[3].opcode = ibv_wr_opcode_IBV_WR_SEND_WITH_INV;
        wrs[3].send_flags = ibv_send_flags_IBV_SEND_INLINE;
        wrs[3].__bindgen_anon_1.invalidate_rkey = 0x1234_5678;
        (wrs[3].sg_list, wrs[3].num_sge) = (&mut inline, 1);
        let (mut sq_b, mut db_b) = (vec![0u8; 8 * SLOT], [0u32; 4]);
        let qb = crate::qp::test_qp(ctx, ibv_qp_type_IBV_QPT_RC, &mut sq_b, &mut db_b);
        for (i, wr) in wrs.iter_mut().enumerate() {
            wr.wr_id = i as u64 + 1;
            // SAFETY: A slot of the QP's SQ; valid work requests with live objects.
            let r = unsafe { crate::datapath::build_send_wqe(&qb, wr, qb.sq.add(i * SLOT), SLOT) };
            assert_eq!(r, Ok(()));
        }

        assert!(sq_a[..4 * SLOT] == sq_b[..4 * SLOT]);
        let ctrl = |i: usize| {
            // SAFETY: A control segment lies at the start of each slot.
            unsafe {
                sq_a.as_ptr()
                    .add(i * SLOT)
                    .cast::<srdma_wqe_ctrl>()
                    .read_unaligned()
            }
        };
        assert_eq!(
            (ctrl(0).opcode, ctrl(0).num_sge, ctrl(0).imm_data),
            (8, 0, 0)
        );
        assert_eq!(
            (ctrl(1).opcode, ctrl(1).num_sge, ctrl(1).imm_data),
            (7, 0, 0x0080_0204)
        );
        assert_eq!((ctrl(2).opcode, ctrl(2).num_sge), (9, 1));
        // The rkey to invalidate is in host order, unlike immediate data.
        assert_eq!(
            &sq_a[3 * SLOT + 16..3 * SLOT + 20],
            &0x1234_5678u32.to_ne_bytes()
        );
        assert_eq!(ctrl(3).inline_len, 8);
    }

    #[test]
    fn mw_work_requests_refused() {
        let ctx = fake_ctx();
        let (mut sq, mut db) = (vec![0u8; 8 * SLOT], [0u32; 4]);
        let mut q = crate::qp::test_qp(ctx, ibv_qp_type_IBV_QPT_RC, &mut sq, &mut db);
        let qpx = core::ptr::addr_of_mut!(q.vqp.qp_ex);
        // SAFETY: As above.
        unsafe {
            wr_start(qpx);
            wr_local_inv(qpx, 0x0080_0204);
            wr_set_sge(qpx, 1, 0x5000, 8);
            assert_eq!(
                batch(&*qpx.cast::<SrdmaQp>()).err,
                libc::EINVAL,
                "SGEs of LOCAL_INV"
            );
            wr_abort(qpx);
            wr_start(qpx);
            wr_bind_mw(qpx, core::ptr::null_mut(), 0, &ibv_mw_bind_info::default());
            assert_eq!(wr_complete(qpx), libc::EINVAL, "no window");
        }
        let mut wr = ibv_send_wr {
            opcode: ibv_wr_opcode_IBV_WR_LOCAL_INV,
            ..Default::default()
        };
        let ud = crate::qp::test_qp(ctx, ibv_qp_type_IBV_QPT_UD, &mut sq, &mut db);
        // SAFETY: A slot of the QP's SQ; a valid work request.
        let r = unsafe { crate::datapath::build_send_wqe(&ud, &wr, ud.sq, SLOT) };
        assert_eq!(r, Err(libc::EINVAL));
        wr.opcode = ibv_wr_opcode_IBV_WR_TSO;
        // SAFETY: As above.
        let r = unsafe { crate::datapath::build_send_wqe(&ud, &wr, ud.sq, SLOT) };
        assert_eq!(r, Err(libc::EOPNOTSUPP));
    }
}

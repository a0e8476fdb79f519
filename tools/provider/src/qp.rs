//! Queue pairs: the SQ and RQ rings and the doorbell record are mapped from the kernel.

use crate::context::{map, SrdmaContext};
use crate::driver::*;
use crate::ffi::*;
use crate::lock::CallLock;
use crate::{create_with, set_errno};
use core::cell::UnsafeCell;
use core::mem::size_of;
use core::ptr::null_mut;
use libc::{c_int, c_void};

/// The provider's QP; `vqp` comes first so that `ibv_qp *` and `SrdmaQp *` are the same address.
#[repr(C)]
pub struct SrdmaQp {
    pub vqp: VerbsQp,
    pub sq: *mut u8,
    pub sq_len: usize,
    pub rq: *mut u8,
    pub rq_len: usize,
    pub db: *mut u8,
    pub geometry: srdma_create_qp_resp,
    /// The SQ producer index; the lock serialises posting (one `ibv_post_send`, or
    /// `ibv_wr_start` to `ibv_wr_complete`).
    pub sq_pi: CallLock<u32>,
    /// The work requests `ibv_wr_*` are building; only touched with `sq_pi` held.
    pub(crate) wr: UnsafeCell<crate::wr::Batch>,
    /// The RQ producer index; the lock serialises posting.
    pub rq_pi: std::sync::Mutex<u32>,
}

#[repr(C)]
#[derive(Default)]
struct CreateQpResp {
    core: ib_uverbs_create_qp_resp,
    drv: srdma_create_qp_resp,
}

impl SrdmaQp {
    /// Unmaps the rings; the doorbell page belongs to the context.
    ///
    /// # Safety
    ///
    /// The rings must be mappings of this QP that nothing uses any more.
    unsafe fn unmap(&mut self) {
        for (p, len) in [(self.sq, self.sq_len), (self.rq, self.rq_len)] {
            if !p.is_null() {
                // SAFETY: A mapping made by `create_qp` of exactly `len` bytes.
                unsafe { libc::munmap(p.cast::<c_void>(), len) };
            }
        }
        self.sq = null_mut();
        self.rq = null_mut();
    }

    fn map_rings(&mut self, ctx: &SrdmaContext) -> Result<(), i32> {
        let g = self.geometry;
        self.sq = map(ctx.cmd_fd(), g.sq_mmap_key, g.sq_size as usize)?;
        self.sq_len = g.sq_size as usize;
        if g.rq_size != 0 {
            self.rq = map(ctx.cmd_fd(), g.rq_mmap_key, g.rq_size as usize)?;
            self.rq_len = g.rq_size as usize;
        }
        self.db = ctx.doorbell(&g.db)?;
        Ok(())
    }
}

/// Creates a QP with the create command `cmd` (given the QP and the response buffer) and maps
/// its rings; sets `errno` and returns null on failure.
fn create(
    ctx: &SrdmaContext,
    cmd: impl FnOnce(*mut SrdmaQp, *mut CreateQpResp) -> c_int,
) -> *mut SrdmaQp {
    let qp = SrdmaQp {
        // SAFETY: All-zero is the expected initial state of the C parts.
        vqp: unsafe { core::mem::zeroed() },
        sq: null_mut(),
        sq_len: 0,
        rq: null_mut(),
        rq_len: 0,
        db: null_mut(),
        geometry: srdma_create_qp_resp::default(),
        sq_pi: CallLock::new(0),
        wr: UnsafeCell::new(Default::default()),
        rq_pi: std::sync::Mutex::new(0),
    };
    let mut resp = CreateQpResp::default();
    let Some(qp) = create_with(qp, |qp| cmd(qp, &mut resp)) else {
        return null_mut();
    };
    // SAFETY: `qp` is ours until returned.
    let q = unsafe { &mut *qp };
    q.geometry = resp.drv;
    if let Err(e) = q.map_rings(ctx) {
        // SAFETY: Undo the creation; the QP was not handed out.
        unsafe {
            ibv_cmd_destroy_qp(qp.cast());
            q.unmap();
            drop(Box::from_raw(qp));
        }
        set_errno(e);
        return null_mut();
    }
    qp
}

pub(crate) unsafe extern "C" fn create_qp(
    pd: *mut ibv_pd,
    attr: *mut ibv_qp_init_attr,
) -> *mut ibv_qp {
    // SAFETY: `pd` is a PD of one of our contexts.
    let ctx = unsafe { SrdmaContext::from_ibv((*pd).context) };
    create(ctx, |qp, resp| {
        // `struct ibv_create_qp`, filled by the library; srdma adds no request data.
        let mut cmd = [0u64; 8];
        // SAFETY: Valid PD, attributes, object and buffers of the sizes given.
        unsafe {
            ibv_cmd_create_qp(
                pd,
                qp.cast(),
                attr,
                cmd.as_mut_ptr().cast(),
                size_of::<[u64; 8]>(),
                resp.cast(),
                size_of::<CreateQpResp>(),
            )
        }
    })
    .cast()
}

/// `ibv_create_qp_ex`: a QP that may have the work-request API (`ibv_qp_to_qp_ex`).
pub(crate) unsafe extern "C" fn create_qp_ex(
    context: *mut ibv_context,
    attr: *mut ibv_qp_init_attr_ex,
) -> *mut ibv_qp {
    // SAFETY: `attr` is valid for the call.
    let a = unsafe { &*attr };
    if let Err(e) = crate::wr::check_init_attr(a) {
        set_errno(e);
        return null_mut();
    }
    let want_ops = a.comp_mask & ibv_qp_init_attr_mask_IBV_QP_INIT_ATTR_SEND_OPS_FLAGS != 0;
    let (qp_type, ops) = (a.qp_type, a.send_ops_flags);
    // No creation flag is set (`check_init_attr`): the command goes without the field, which
    // `ibv_cmd_create_qp_ex` does not carry; what the kernel grants comes back in `cap`.
    let mut cmd_attr = *a;
    cmd_attr.comp_mask &= !ibv_qp_init_attr_mask_IBV_QP_INIT_ATTR_CREATE_FLAGS;
    let attr_cmd: *mut ibv_qp_init_attr_ex = &mut cmd_attr;
    // SAFETY: `context` is one of our contexts.
    let ctx = unsafe { SrdmaContext::from_ibv(context) };
    let qp = create(ctx, |qp, resp| {
        // `struct ibv_create_qp`, filled by the library; srdma adds no request data.
        let mut cmd = [0u64; 8];
        // SAFETY: Valid context, attributes, object and buffers of the sizes given.
        unsafe {
            ibv_cmd_create_qp_ex(
                context,
                qp.cast(),
                attr_cmd,
                cmd.as_mut_ptr().cast(),
                size_of::<[u64; 8]>(),
                resp.cast(),
                size_of::<CreateQpResp>(),
            )
        }
    });
    // SAFETY: `attr` is the caller's, valid for the call.
    unsafe { (*attr).cap = cmd_attr.cap };
    if !qp.is_null() && want_ops {
        // SAFETY: The QP is ours until returned.
        let vqp = unsafe { &mut (*qp).vqp };
        crate::wr::install(&mut vqp.qp_ex, qp_type, ops);
        vqp.comp_mask |= VERBS_QP_EX;
    }
    qp.cast()
}

pub(crate) unsafe extern "C" fn destroy_qp(ibqp: *mut ibv_qp) -> c_int {
    // SAFETY: `ibqp` is a QP of ours.
    let ret = unsafe { ibv_cmd_destroy_qp(ibqp) };
    if ret != 0 {
        return ret;
    }
    let qp = ibqp.cast::<SrdmaQp>();
    // SAFETY: The kernel QP is gone; unmap and free what `create_qp` made.
    unsafe {
        (*qp).unmap();
        drop(Box::from_raw(qp));
    }
    0
}

pub(crate) unsafe extern "C" fn modify_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    mask: c_int,
) -> c_int {
    // `struct ibv_modify_qp`, filled by the library.
    let mut cmd = [0u64; 15];
    // SAFETY: Arguments as libibverbs passed them; `cmd` has the size given.
    let ret = unsafe {
        ibv_cmd_modify_qp(
            qp,
            attr,
            mask,
            cmd.as_mut_ptr().cast(),
            size_of::<[u64; 15]>(),
        )
    };
    // SAFETY: `attr` is the caller's, valid for this call.
    let reset = (mask as u32 & ibv_qp_attr_mask_IBV_QP_STATE) != 0
        && unsafe { (*attr).qp_state } == ibv_qp_state_IBV_QPS_RESET;
    if ret == 0 && reset {
        // Back to a new QP's rings, as the kernel is: both producer indices from 0.
        // SAFETY: `qp` is one of ours (`vqp` first); the kernel zeroed the doorbell record.
        let q = unsafe { &*qp.cast::<SrdmaQp>() };
        *q.sq_pi.lock() = 0;
        *q.rq_pi.lock().unwrap_or_else(|e| e.into_inner()) = 0;
    }
    ret
}

pub(crate) unsafe extern "C" fn query_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    mask: c_int,
    init_attr: *mut ibv_qp_init_attr,
) -> c_int {
    // `struct ibv_query_qp`, filled by the library.
    let mut cmd = [0u64; 3];
    // SAFETY: Arguments as libibverbs passed them; `cmd` has the size given.
    unsafe {
        ibv_cmd_query_qp(
            qp,
            attr,
            mask,
            init_attr,
            cmd.as_mut_ptr().cast(),
            size_of::<[u64; 3]>(),
        )
    }
}

/// A QP of the context `ctx` (never dereferenced) whose SQ is `sq`, with slots of 128 bytes,
/// and whose doorbell record is `db`: enough to build WQEs without a device.
#[cfg(test)]
pub(crate) fn test_qp(
    ctx: *mut ibv_context,
    qp_type: ibv_qp_type,
    sq: &mut [u8],
    db: &mut [u32; 4],
) -> SrdmaQp {
    // SAFETY: All-zero is the expected initial state of the C parts.
    let mut vqp: VerbsQp = unsafe { core::mem::zeroed() };
    vqp.qp_ex.qp_base.context = ctx;
    vqp.qp_ex.qp_base.qp_type = qp_type;
    SrdmaQp {
        vqp,
        sq: sq.as_mut_ptr(),
        sq_len: sq.len(),
        rq: null_mut(),
        rq_len: 0,
        db: db.as_mut_ptr().cast(),
        geometry: srdma_create_qp_resp {
            sq_wqe_cnt: (sq.len() / 128) as u32,
            sq_wqe_size: 128,
            max_inline_data: 64,
            ..Default::default()
        },
        sq_pi: CallLock::new(0),
        wr: UnsafeCell::new(Default::default()),
        rq_pi: std::sync::Mutex::new(0),
    }
}

//! Completion queues: the CQE ring and the doorbell record are mapped from the kernel, and
//! CQEs are taken from the ring without a syscall.

use crate::context::{map, SrdmaContext};
use crate::datapath::{db_word, DB_CQ_CI};
use crate::driver::{
    ibv_cmd_create_cq, ibv_cmd_create_cq_ex, ibv_cmd_destroy_cq, ibv_cmd_modify_cq,
    ibv_cmd_resize_cq,
};
use crate::ffi::*;
use crate::lock::CallLock;
use crate::{create_with, set_errno};
use core::mem::size_of;
use core::ptr::{null_mut, read_volatile};
use core::sync::atomic::{AtomicU32, Ordering};
use libc::{c_int, c_void};

const CQE: usize = SRDMA_CQE_SIZE as usize;

/// The provider's CQ; `vcq` comes first so that `ibv_cq *`, `ibv_cq_ex *` and `SrdmaCq *` are
/// the same address.
#[repr(C)]
pub struct SrdmaCq {
    pub vcq: ibv_cq_ex,
    pub db: *mut u8,
    /// The ring and what polling keeps. The lock serialises polling, and a resize, which
    /// replaces the ring, waits for a poll to end (an extended poll holds it from
    /// `ibv_start_poll` to `ibv_end_poll`).
    pub poll: CallLock<PollState>,
}

/// The consumer's state of a CQ.
///
/// # Invariants
///
/// `ring` is null or a mapping of `ring_len` bytes holding `cqe_cnt` CQEs, a power of two.
pub struct PollState {
    ring: *mut u8,
    ring_len: usize,
    cqe_cnt: u32,
    /// The free-running index of the next CQE to take.
    pub ci: u32,
    /// The CQE the `ibv_wc_read_*` functions read, between `ibv_start_poll` and
    /// `ibv_end_poll`.
    pub cur: srdma_cqe,
}

impl PollState {
    /// Takes the CQE at the consumer index if the kernel has finished writing it, and moves
    /// the index past it. The slot stays the consumer's until [`SrdmaCq::publish`] gives it
    /// back.
    pub(crate) fn take(&mut self) -> Option<srdma_cqe> {
        let cnt = self.cqe_cnt;
        if self.ring.is_null() {
            return None;
        }
        let slot = (self.ci & (cnt - 1)) as usize * CQE;
        // SAFETY: The slot lies within the mapped ring (type invariant); the kernel writes the
        // owner word atomically.
        let owner = unsafe { AtomicU32::from_ptr(self.ring.add(slot + CQE - 4).cast()) };
        let phase = ((self.ci / cnt) & 1) ^ 1;
        if owner.load(Ordering::Acquire) & SRDMA_CQE_OWNER_PHASE != phase {
            return None;
        }
        // SAFETY: The owner word says the kernel finished writing this CQE, and it does not
        // write the slot again before the consumer index passes it.
        let cqe = unsafe { read_volatile(self.ring.add(slot).cast::<srdma_cqe>()) };
        self.ci = self.ci.wrapping_add(1);
        Some(cqe)
    }

    /// Makes `ring` (of `len` bytes, `cqe_cnt` CQEs) the ring, its first CQE the next to take;
    /// returns the ring it replaces, to be unmapped.
    fn replace(&mut self, ring: *mut u8, len: usize, cqe_cnt: u32) -> (*mut u8, usize) {
        let old = (self.ring, self.ring_len);
        // INVARIANT: The caller mapped `len` bytes holding `cqe_cnt` CQEs at `ring`.
        (self.ring, self.ring_len, self.cqe_cnt, self.ci) = (ring, len, cqe_cnt, 0);
        old
    }
}

/// Unmaps a ring that [`PollState::replace`] gave back.
fn unmap((ring, len): (*mut u8, usize)) {
    if !ring.is_null() {
        // SAFETY: A mapping of `len` bytes that nothing refers to any more.
        unsafe { libc::munmap(ring.cast::<c_void>(), len) };
    }
}

impl SrdmaCq {
    fn new() -> Self {
        Self {
            vcq: ibv_cq_ex::default(),
            db: null_mut(),
            poll: CallLock::new(PollState {
                ring: null_mut(),
                ring_len: 0,
                cqe_cnt: 0,
                ci: 0,
                cur: srdma_cqe::default(),
            }),
        }
    }

    /// Tells the kernel that the CQEs before `ci` are consumed.
    pub(crate) fn publish(&self, ci: u32) {
        // SAFETY: The doorbell record is mapped while the CQ exists.
        unsafe { db_word(self.db, DB_CQ_CI) }.store(ci, Ordering::Release);
    }

    /// Maps the ring and doorbell record the kernel described in `d`.
    fn map(&mut self, ctx: &SrdmaContext, d: &srdma_create_cq_resp) -> Result<(), c_int> {
        let ring = map(ctx.cmd_fd(), d.ring_mmap_key, d.ring_size as usize)?;
        self.poll
            .lock()
            .replace(ring, d.ring_size as usize, d.cqe_cnt);
        self.db = ctx.doorbell(&d.db)?;
        Ok(())
    }

    /// Maps the ring and doorbell record of `cq`, which the kernel just made as `d` describes;
    /// if that fails, undoes the creation, sets `errno` and returns null.
    ///
    /// # Safety
    ///
    /// `cq` must come from [`create_with`] and not be handed out yet; after a failure it must
    /// not be used.
    unsafe fn mapped(
        cq: *mut SrdmaCq,
        ctx: &SrdmaContext,
        d: &srdma_create_cq_resp,
    ) -> *mut SrdmaCq {
        // SAFETY: Ours (caller guarantee).
        match unsafe { (*cq).map(ctx, d) } {
            Ok(()) => cq,
            Err(e) => {
                // SAFETY: Not handed out (caller guarantee).
                unsafe { SrdmaCq::abandon(cq, e) };
                null_mut()
            }
        }
    }

    /// Undoes a creation that failed after the kernel made the CQ: the CQ was not handed out.
    ///
    /// # Safety
    ///
    /// `cq` must come from [`create_with`] and must not be used afterwards.
    unsafe fn abandon(cq: *mut SrdmaCq, err: c_int) {
        // SAFETY: Guaranteed by the caller.
        unsafe {
            ibv_cmd_destroy_cq(cq.cast());
            unmap((*cq).poll.lock().replace(null_mut(), 0, 0));
            drop(Box::from_raw(cq));
        }
        set_errno(err);
    }
}

#[repr(C)]
#[derive(Default)]
struct CreateCqResp {
    core: ib_uverbs_create_cq_resp,
    drv: srdma_create_cq_resp,
}

pub(crate) unsafe extern "C" fn create_cq(
    ctx: *mut ibv_context,
    cqe: c_int,
    channel: *mut ibv_comp_channel,
    comp_vector: c_int,
) -> *mut ibv_cq {
    // SAFETY: `ctx` is one of our contexts.
    let sctx = unsafe { SrdmaContext::from_ibv(ctx) };
    let mut resp = CreateCqResp::default();
    let Some(cq) = create_with(SrdmaCq::new(), |cq| {
        // SAFETY: Valid context, object and response buffer (core, then srdma's part).
        unsafe {
            ibv_cmd_create_cq(
                ctx,
                cqe,
                channel,
                comp_vector,
                cq.cast(),
                null_mut(),
                0,
                (&mut resp as *mut CreateCqResp).cast(),
                size_of::<CreateCqResp>(),
            )
        }
    }) else {
        return null_mut();
    };
    // SAFETY: Made above, not handed out.
    unsafe { SrdmaCq::mapped(cq, sctx, &resp.drv) }.cast()
}

#[repr(C)]
#[derive(Default)]
struct CreateCqExResp {
    core: ib_uverbs_ex_create_cq_resp,
    drv: srdma_create_cq_resp,
}

/// `ibv_create_cq_ex`: the same CQ as `ibv_create_cq`, read through the extended polling
/// functions of [`crate::cq_ex`]; with a completion timestamp among `wc_flags` the kernel
/// stamps every CQE.
pub(crate) unsafe extern "C" fn create_cq_ex(
    ctx: *mut ibv_context,
    attr: *mut ibv_cq_init_attr_ex,
) -> *mut ibv_cq_ex {
    // SAFETY: libibverbs passes a valid attribute structure.
    let attr = unsafe { &*attr };
    if let Err(e) = crate::cq_ex::check_init_attr(attr) {
        set_errno(e);
        return null_mut();
    }
    // SAFETY: `ctx` is one of our contexts.
    let sctx = unsafe { SrdmaContext::from_ibv(ctx) };
    let mut resp = CreateCqExResp::default();
    let Some(cq) = create_with(SrdmaCq::new(), |cq| {
        // SAFETY: Valid context, attributes, object (a `verbs_cq` comes first) and response
        // buffer (core, then srdma's part).
        unsafe {
            ibv_cmd_create_cq_ex(
                ctx,
                attr,
                cq.cast(),
                null_mut(),
                0,
                (&mut resp as *mut CreateCqExResp).cast(),
                size_of::<CreateCqExResp>(),
                0,
            )
        }
    }) else {
        return null_mut();
    };
    // SAFETY: Made above, not handed out.
    let cq = unsafe { SrdmaCq::mapped(cq, sctx, &resp.drv) };
    if !cq.is_null() {
        // SAFETY: Ours until returned.
        crate::cq_ex::install(unsafe { &mut (*cq).vcq }, attr.wc_flags);
    }
    cq.cast()
}

pub(crate) unsafe extern "C" fn destroy_cq(ibcq: *mut ibv_cq) -> c_int {
    // SAFETY: `ibcq` is a CQ of ours.
    let ret = unsafe { ibv_cmd_destroy_cq(ibcq) };
    if ret != 0 {
        return ret;
    }
    let cq = ibcq.cast::<SrdmaCq>();
    // SAFETY: The kernel CQ is gone; unmap the ring and free what `create_cq` allocated.
    unsafe {
        unmap((*cq).poll.lock().replace(null_mut(), 0, 0));
        drop(Box::from_raw(cq));
    }
    0
}

#[repr(C)]
#[derive(Default)]
struct ResizeCqResp {
    core: ib_uverbs_resize_cq_resp,
    drv: srdma_create_cq_resp,
}

pub(crate) unsafe extern "C" fn resize_cq(ibcq: *mut ibv_cq, cqe: c_int) -> c_int {
    let cq = ibcq.cast::<SrdmaCq>();
    // SAFETY: `ibcq` is a CQ of one of our contexts.
    let ctx = unsafe { SrdmaContext::from_ibv((*ibcq).context) };
    // Held for the whole resize: the kernel moves the CQEs after the consumer index it reads,
    // which a poll in progress has not yet published, and no poll may read the old ring while
    // it goes.
    // SAFETY: `ibcq` is a CQ of ours.
    let mut poll = unsafe { (*cq).poll.lock() };
    // `struct ibv_resize_cq`, filled by the library.
    let mut cmd = [0u64; 3];
    let mut resp = ResizeCqResp::default();
    // SAFETY: Valid CQ and buffers of the sizes given.
    let ret = unsafe {
        ibv_cmd_resize_cq(
            ibcq,
            cqe,
            cmd.as_mut_ptr().cast(),
            size_of::<[u64; 3]>(),
            (&mut resp as *mut ResizeCqResp).cast(),
            size_of::<ResizeCqResp>(),
        )
    };
    if ret != 0 {
        return ret;
    }
    let d = &resp.drv;
    match map(ctx.cmd_fd(), d.ring_mmap_key, d.ring_size as usize) {
        Ok(ring) => {
            // The kernel moved the pending CQEs to the start of the new ring.
            unmap(poll.replace(ring, d.ring_size as usize, d.cqe_cnt));
            0
        }
        Err(e) => e,
    }
}

/// `struct ibv_modify_cq` of rdma-core's kern-abi.h: the extended command's headers and the
/// kernel's command, all filled in by the library.
#[repr(C)]
#[derive(Default)]
struct ModifyCqCmd {
    hdr: ib_uverbs_cmd_hdr,
    ex_hdr: ib_uverbs_ex_cmd_hdr,
    core: ib_uverbs_ex_modify_cq,
}

/// `ibv_modify_cq`: CQ moderation, which the kernel keeps (the CQ's completion events are
/// raised there).
pub(crate) unsafe extern "C" fn modify_cq(
    ibcq: *mut ibv_cq,
    attr: *mut ibv_modify_cq_attr,
) -> c_int {
    let mut cmd = ModifyCqCmd::default();
    // SAFETY: `ibcq` is a CQ of ours, `attr` the caller's, and `cmd` a command buffer of the
    // size given.
    unsafe {
        ibv_cmd_modify_cq(
            ibcq,
            attr,
            (&mut cmd as *mut ModifyCqCmd).cast(),
            size_of::<ModifyCqCmd>(),
        )
    }
}

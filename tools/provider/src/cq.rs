//! Completion queues: the CQE ring and the doorbell record are mapped from the kernel.

use crate::context::{map, SrdmaContext};
use crate::driver::{ibv_cmd_create_cq, ibv_cmd_destroy_cq, ibv_cmd_resize_cq};
use crate::ffi::*;
use crate::{create_with, set_errno};
use core::mem::size_of;
use core::ptr::null_mut;
use libc::{c_int, c_void};

/// The provider's CQ; `vcq` comes first so that `ibv_cq *` and `SrdmaCq *` are the same address.
#[repr(C)]
pub struct SrdmaCq {
    pub vcq: ibv_cq_ex,
    pub ring: *mut u8,
    pub ring_len: usize,
    pub cqe_cnt: u32,
    pub db: *mut u8,
    /// The consumer index; the lock serialises polling.
    pub ci: std::sync::Mutex<u32>,
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
    let cq = SrdmaCq {
        vcq: ibv_cq_ex::default(),
        ring: null_mut(),
        ring_len: 0,
        cqe_cnt: 0,
        db: null_mut(),
        ci: std::sync::Mutex::new(0),
    };
    let mut resp = CreateCqResp::default();
    let Some(cq) = create_with(cq, |cq| {
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
    let d = &resp.drv;
    let mapped = map(sctx.cmd_fd(), d.ring_mmap_key, d.ring_size as usize)
        .and_then(|ring| sctx.doorbell(&d.db).map(|db| (ring, db)));
    match mapped {
        Ok((ring, db)) => {
            // SAFETY: `cq` is ours until returned.
            unsafe {
                (*cq).ring = ring;
                (*cq).ring_len = d.ring_size as usize;
                (*cq).cqe_cnt = d.cqe_cnt;
                (*cq).db = db;
            }
            cq.cast()
        }
        Err(e) => {
            // SAFETY: Undo the creation; the CQ was not handed out.
            unsafe {
                ibv_cmd_destroy_cq(cq.cast());
                if !(*cq).ring.is_null() {
                    libc::munmap((*cq).ring.cast(), d.ring_size as usize);
                }
                drop(Box::from_raw(cq));
            }
            set_errno(e);
            null_mut()
        }
    }
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
        libc::munmap((*cq).ring.cast::<c_void>(), (*cq).ring_len);
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
            // SAFETY: The old ring is no longer the CQ's; the kernel moved the CQEs over.
            unsafe {
                libc::munmap((*cq).ring.cast::<c_void>(), (*cq).ring_len);
                (*cq).ring = ring;
                (*cq).ring_len = d.ring_size as usize;
                (*cq).cqe_cnt = d.cqe_cnt;
                // The kernel moved the pending CQEs to the start of the new ring.
                if let Ok(mut ci) = (*cq).ci.lock() {
                    *ci = 0;
                }
            }
            0
        }
        Err(e) => e,
    }
}

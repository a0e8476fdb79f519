//! Shared receive queues: the receive ring and the doorbell record are mapped from the kernel.

use crate::context::{map, SrdmaContext};
use crate::driver::*;
use crate::ffi::*;
use crate::{create_with, set_errno};
use core::mem::size_of;
use core::ptr::null_mut;
use libc::c_int;

/// The provider's SRQ; `vsrq` comes first so that `ibv_srq *` and `SrdmaSrq *` are the same
/// address.
#[repr(C)]
pub struct SrdmaSrq {
    pub vsrq: VerbsSrq,
    pub rq: *mut u8,
    pub db: *mut u8,
    pub geometry: srdma_create_srq_resp,
    /// The producer index; the lock serialises posting.
    pub pi: std::sync::Mutex<u32>,
}

#[repr(C)]
#[derive(Default)]
struct CreateSrqResp {
    core: ib_uverbs_create_srq_resp,
    drv: srdma_create_srq_resp,
}

pub(crate) unsafe extern "C" fn create_srq(
    pd: *mut ibv_pd,
    attr: *mut ibv_srq_init_attr,
) -> *mut ibv_srq {
    // SAFETY: `pd` is a PD of one of our contexts.
    let ctx = unsafe { SrdmaContext::from_ibv((*pd).context) };
    let srq = SrdmaSrq {
        // SAFETY: All-zero is the expected initial state of the C parts.
        vsrq: unsafe { core::mem::zeroed() },
        rq: null_mut(),
        db: null_mut(),
        geometry: srdma_create_srq_resp::default(),
        pi: std::sync::Mutex::new(0),
    };
    let mut resp = CreateSrqResp::default();
    let Some(srq) = create_with(srq, |srq| {
        // `struct ibv_create_srq`, filled by the library.
        let mut cmd = [0u64; 5];
        // SAFETY: Valid PD, attributes, object and buffers of the sizes given.
        unsafe {
            ibv_cmd_create_srq(
                pd,
                srq.cast(),
                attr,
                cmd.as_mut_ptr().cast(),
                size_of::<[u64; 5]>(),
                (&mut resp as *mut CreateSrqResp).cast(),
                size_of::<CreateSrqResp>(),
            )
        }
    }) else {
        return null_mut();
    };
    // SAFETY: `srq` is ours until returned.
    let s = unsafe { &mut *srq };
    s.geometry = resp.drv;
    s.vsrq.srq_num = resp.drv.srq_num;
    let mapped = map(
        ctx.cmd_fd(),
        resp.drv.rq_mmap_key,
        resp.drv.rq_size as usize,
    )
    .and_then(|rq| ctx.doorbell(&resp.drv.db).map(|db| (rq, db)));
    match mapped {
        Ok((rq, db)) => {
            s.rq = rq;
            s.db = db;
            srq.cast()
        }
        Err(e) => {
            // SAFETY: Undo the creation; the SRQ was not handed out.
            unsafe {
                ibv_cmd_destroy_srq(srq.cast());
                if !s.rq.is_null() {
                    libc::munmap(s.rq.cast(), resp.drv.rq_size as usize);
                }
                drop(Box::from_raw(srq));
            }
            set_errno(e);
            null_mut()
        }
    }
}

pub(crate) unsafe extern "C" fn modify_srq(
    srq: *mut ibv_srq,
    attr: *mut ibv_srq_attr,
    mask: c_int,
) -> c_int {
    // `struct ibv_modify_srq`, filled by the library.
    let mut cmd = [0u64; 3];
    // SAFETY: Arguments as libibverbs passed them; `cmd` has the size given.
    unsafe {
        ibv_cmd_modify_srq(
            srq,
            attr,
            mask,
            cmd.as_mut_ptr().cast(),
            size_of::<[u64; 3]>(),
        )
    }
}

pub(crate) unsafe extern "C" fn query_srq(srq: *mut ibv_srq, attr: *mut ibv_srq_attr) -> c_int {
    // `struct ibv_query_srq`, filled by the library.
    let mut cmd = [0u64; 3];
    // SAFETY: Arguments as libibverbs passed them; `cmd` has the size given.
    unsafe { ibv_cmd_query_srq(srq, attr, cmd.as_mut_ptr().cast(), size_of::<[u64; 3]>()) }
}

pub(crate) unsafe extern "C" fn destroy_srq(ibsrq: *mut ibv_srq) -> c_int {
    // SAFETY: `ibsrq` is an SRQ of ours.
    let ret = unsafe { ibv_cmd_destroy_srq(ibsrq) };
    if ret != 0 {
        return ret;
    }
    let srq = ibsrq.cast::<SrdmaSrq>();
    // SAFETY: The kernel SRQ is gone; unmap and free what `create_srq` made.
    unsafe {
        libc::munmap((*srq).rq.cast(), (*srq).geometry.rq_size as usize);
        drop(Box::from_raw(srq));
    }
    0
}

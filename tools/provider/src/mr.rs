//! Memory regions: the kernel pins the pages; the provider only keeps the keys. The null MR
//! (`ibv_alloc_null_mr`) is the device's null lkey, which the kernel gave at `ibv_open_device`:
//! allocating and freeing one make no syscall.

use crate::context::SrdmaContext;
use crate::driver::{ibv_cmd_dereg_mr, ibv_cmd_reg_mr, VerbsMr, IBV_MR_TYPE_NULL_MR};
use crate::ffi::{ib_uverbs_reg_mr_resp, ibv_mr, ibv_pd};
use crate::{create_with, destroy_with, set_errno};
use core::mem::size_of;
use core::ptr::null_mut;
use libc::{c_int, c_void};

pub(crate) unsafe extern "C" fn reg_mr(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    length: usize,
    hca_va: u64,
    access: c_int,
) -> *mut ibv_mr {
    // SAFETY: All-zero is the expected initial state of `verbs_mr`.
    let mr = unsafe { core::mem::zeroed::<VerbsMr>() };
    create_with(mr, |mr| {
        // `struct ibv_reg_mr`, filled by the library; srdma adds no request data.
        let mut cmd = [0u64; 6];
        let mut resp = ib_uverbs_reg_mr_resp::default();
        // SAFETY: Valid PD, object and buffers of the sizes given.
        unsafe {
            ibv_cmd_reg_mr(
                pd,
                addr,
                length,
                hca_va,
                access,
                mr,
                cmd.as_mut_ptr().cast(),
                size_of::<[u64; 6]>(),
                (&mut resp as *mut ib_uverbs_reg_mr_resp).cast(),
                size_of::<ib_uverbs_reg_mr_resp>(),
            )
        }
    })
    .map_or(null_mut(), |mr| mr.cast())
}

/// `ibv_alloc_null_mr`: an MR whose lkey reads zeros and discards writes; it covers every
/// address (`SIZE_MAX` bytes from none), as mlx5's does. libibverbs calls this directly (an
/// inline function of verbs.h), so the MR is filled in whole here.
pub(crate) unsafe extern "C" fn alloc_null_mr(pd: *mut ibv_pd) -> *mut ibv_mr {
    // SAFETY: `pd` is a PD of one of our contexts.
    let key = unsafe { SrdmaContext::from_ibv((*pd).context) }
        .state
        .abi
        .null_mr_lkey;
    if key == 0 {
        // A kernel without one.
        set_errno(libc::EOPNOTSUPP);
        return null_mut();
    }
    // SAFETY: All-zero is the expected initial state of `verbs_mr`.
    let mut mr = unsafe { core::mem::zeroed::<VerbsMr>() };
    // SAFETY: `pd` is valid (as above).
    mr.ibv_mr.context = unsafe { (*pd).context };
    mr.ibv_mr.pd = pd;
    mr.ibv_mr.length = usize::MAX;
    mr.ibv_mr.lkey = key;
    mr.mr_type = IBV_MR_TYPE_NULL_MR;
    Box::into_raw(Box::new(mr)).cast()
}

pub(crate) unsafe extern "C" fn dereg_mr(vmr: *mut VerbsMr) -> c_int {
    // SAFETY: `vmr` is an MR of ours, made by `reg_mr` or `alloc_null_mr`.
    if unsafe { (*vmr).mr_type } == IBV_MR_TYPE_NULL_MR {
        // SAFETY: Made by `alloc_null_mr`; the kernel has nothing of it.
        drop(unsafe { Box::from_raw(vmr) });
        return 0;
    }
    // SAFETY: `vmr` is an MR of ours, made by `reg_mr`.
    unsafe { destroy_with(vmr, || ibv_cmd_dereg_mr(vmr)) }
}

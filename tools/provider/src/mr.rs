//! Memory regions: the kernel pins the pages; the provider only keeps the keys.

use crate::driver::{ibv_cmd_dereg_mr, ibv_cmd_reg_mr, VerbsMr};
use crate::ffi::{ib_uverbs_reg_mr_resp, ibv_mr, ibv_pd};
use crate::{create_with, destroy_with};
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

pub(crate) unsafe extern "C" fn dereg_mr(vmr: *mut VerbsMr) -> c_int {
    // SAFETY: `vmr` is an MR of ours, made by `reg_mr`.
    unsafe { destroy_with(vmr, || ibv_cmd_dereg_mr(vmr)) }
}

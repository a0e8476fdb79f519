//! Protection domains: all state lives in the kernel.

use crate::driver::{ibv_cmd_alloc_pd, ibv_cmd_dealloc_pd};
use crate::ffi::{ib_uverbs_alloc_pd_resp, ibv_context, ibv_pd};
use crate::{create_with, destroy_with};
use core::mem::size_of;
use core::ptr::null_mut;
use libc::c_int;

pub(crate) unsafe extern "C" fn alloc_pd(ctx: *mut ibv_context) -> *mut ibv_pd {
    create_with(ibv_pd::default(), |pd| {
        // `struct ibv_alloc_pd`: header and response pointer, filled by the library.
        let mut cmd = [0u64; 2];
        let mut resp = ib_uverbs_alloc_pd_resp::default();
        // SAFETY: Valid context, object and buffers of the sizes given.
        unsafe {
            ibv_cmd_alloc_pd(
                ctx,
                pd,
                cmd.as_mut_ptr().cast(),
                size_of::<[u64; 2]>(),
                (&mut resp as *mut ib_uverbs_alloc_pd_resp).cast(),
                size_of::<ib_uverbs_alloc_pd_resp>(),
            )
        }
    })
    .unwrap_or(null_mut())
}

pub(crate) unsafe extern "C" fn dealloc_pd(pd: *mut ibv_pd) -> c_int {
    // SAFETY: `pd` is a PD of ours, made by `alloc_pd`.
    unsafe { destroy_with(pd, || ibv_cmd_dealloc_pd(pd)) }
}

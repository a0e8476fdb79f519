//! Address handles: the provider keeps the address vector for UD work requests it builds.

use crate::driver::{ibv_cmd_create_ah, ibv_cmd_destroy_ah};
use crate::ffi::{ib_uverbs_create_ah_resp, ibv_ah, ibv_ah_attr, ibv_pd};
use crate::{create_with, destroy_with};
use core::mem::size_of;
use core::ptr::null_mut;
use libc::c_int;

/// The provider's AH; `ah` comes first so that `ibv_ah *` and `SrdmaAh *` are the same address.
#[repr(C)]
pub struct SrdmaAh {
    pub ah: ibv_ah,
    pub attr: ibv_ah_attr,
}

pub(crate) unsafe extern "C" fn create_ah(pd: *mut ibv_pd, attr: *mut ibv_ah_attr) -> *mut ibv_ah {
    let ah = SrdmaAh {
        ah: ibv_ah::default(),
        // SAFETY: `attr` is valid for the call.
        attr: unsafe { *attr },
    };
    create_with(ah, |ah| {
        let mut resp = ib_uverbs_create_ah_resp::default();
        // SAFETY: Valid PD, attributes, object and response buffer.
        unsafe {
            ibv_cmd_create_ah(
                pd,
                ah.cast(),
                attr,
                (&mut resp as *mut ib_uverbs_create_ah_resp).cast(),
                size_of::<ib_uverbs_create_ah_resp>(),
            )
        }
    })
    .map_or(null_mut(), |ah| ah.cast())
}

pub(crate) unsafe extern "C" fn destroy_ah(ah: *mut ibv_ah) -> c_int {
    // SAFETY: `ah` is an AH of ours, made by `create_ah`.
    unsafe { destroy_with(ah.cast::<SrdmaAh>(), || ibv_cmd_destroy_ah(ah)) }
}

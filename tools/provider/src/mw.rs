//! Memory windows: the kernel keeps the window; the provider keeps the `ibv_mw` and, for type
//! 1 windows, posts the bind as a WQE on the caller's QP.
#![allow(
    non_upper_case_globals,
    reason = "the verbs constants keep their C names"
)]

use crate::driver::{ibv_cmd_alloc_mw, ibv_cmd_dealloc_mw};
use crate::ffi::*;
use crate::{create_with, destroy_with};
use core::mem::size_of;
use core::ptr::null_mut;
use libc::c_int;

/// `struct ibv_alloc_mw`: the command header and `struct ib_uverbs_alloc_mw`, which the
/// library fills; srdma adds no request data.
type AllocMwCmd = [u64; 3];

pub(crate) unsafe extern "C" fn alloc_mw(pd: *mut ibv_pd, mw_type: ibv_mw_type) -> *mut ibv_mw {
    create_with(ibv_mw::default(), |mw| {
        let mut cmd = AllocMwCmd::default();
        let mut resp = ib_uverbs_alloc_mw_resp::default();
        // SAFETY: Valid PD, object and buffers of the sizes given. The kernel checks the type.
        unsafe {
            ibv_cmd_alloc_mw(
                pd,
                mw_type,
                mw,
                cmd.as_mut_ptr().cast(),
                size_of::<AllocMwCmd>(),
                &mut resp,
                size_of::<ib_uverbs_alloc_mw_resp>(),
            )
        }
    })
    .unwrap_or(null_mut())
}

pub(crate) unsafe extern "C" fn dealloc_mw(mw: *mut ibv_mw) -> c_int {
    // SAFETY: `mw` is a window of ours, made by `alloc_mw`.
    unsafe { destroy_with(mw, || ibv_cmd_dealloc_mw(mw)) }
}

/// `ibv_bind_mw`: binds (or with length 0 unbinds) a type 1 window. The bind is a BIND_MW
/// work request on `qp`, so it is ordered with the QP's other work and completes like it; the
/// window's rkey gets the next key byte once the request is posted, as rdma-core's providers
/// do. If the bind then fails, the error completion tells the consumer, who owns undoing it.
pub(crate) unsafe extern "C" fn bind_mw(
    qp: *mut ibv_qp,
    mw: *mut ibv_mw,
    mw_bind: *mut ibv_mw_bind,
) -> c_int {
    // SAFETY: libibverbs passes a live QP, window and bind description. The window is read
    // through the raw pointer: the WQE builder reads it too.
    let (qp_ctx, mw_ctx, mw_type, old_rkey, bind) = unsafe {
        (
            (*qp).context,
            (*mw).context,
            (*mw).type_,
            (*mw).rkey,
            &*mw_bind,
        )
    };
    // libibverbs chose this provider by the window: the QP must be of the same context (and
    // so one of ours) before it may be used as such.
    if qp_ctx != mw_ctx {
        return libc::EINVAL;
    }
    // Type 2 windows are bound by work requests. A zero-based type 1 window is refused: its
    // remote addresses would be offsets that only the binder knows.
    if mw_type != ibv_mw_type_IBV_MW_TYPE_1
        || bind.bind_info.mw_access_flags & ibv_access_flags_IBV_ACCESS_ZERO_BASED != 0
    {
        return libc::EINVAL;
    }
    let rkey = crate::wqe::inc_rkey(old_rkey);
    let mut wr = ibv_send_wr {
        wr_id: bind.wr_id,
        opcode: ibv_wr_opcode_IBV_WR_BIND_MW,
        send_flags: bind.send_flags,
        __bindgen_anon_2: ibv_send_wr__bindgen_ty_4 {
            bind_mw: ibv_send_wr__bindgen_ty_4__bindgen_ty_1 {
                mw,
                rkey,
                bind_info: bind.bind_info,
            },
        },
        ..Default::default()
    };
    let mut bad = null_mut();
    // SAFETY: `qp` is a QP of ours (checked above); `wr` is a single valid work request.
    let ret = unsafe { crate::datapath::post_send(qp, &mut wr, &mut bad) };
    if ret == 0 {
        // SAFETY: A live window; nothing else of ours refers to it any more.
        unsafe { (*mw).rkey = rkey };
    }
    ret
}

#[cfg(test)]
mod tests {
    use super::*;

    // `struct ibv_alloc_mw` of rdma-core's kern-abi.h is the command header and the uverbs
    // request; libibverbs derives the command's length from the size we pass.
    #[test]
    fn alloc_mw_command() {
        assert_eq!(
            size_of::<AllocMwCmd>(),
            size_of::<ib_uverbs_cmd_hdr>() + size_of::<ib_uverbs_alloc_mw>()
        );
        assert_eq!(size_of::<ib_uverbs_alloc_mw_resp>(), 8);
    }

    // What `ibv_bind_mw` refuses before it posts anything; the rkey stays as it was.
    #[test]
    fn bind_refusals() {
        let ctx = core::ptr::null_mut::<u8>().wrapping_add(0x1000).cast();
        let (mut sq, mut db) = (vec![0u8; 4 * 128], [0u32; 4]);
        let mut q = crate::qp::test_qp(ctx, ibv_qp_type_IBV_QPT_RC, &mut sq, &mut db);
        let qp = core::ptr::addr_of_mut!(q.vqp.qp_ex.qp_base);
        let mut bind = ibv_mw_bind::default();
        let mut mw = ibv_mw {
            context: ctx,
            rkey: 0x0080_0001,
            type_: ibv_mw_type_IBV_MW_TYPE_2,
            ..Default::default()
        };
        // SAFETY: A QP, window and bind description that live across the calls; none of the
        // calls gets as far as posting.
        unsafe {
            assert_eq!(bind_mw(qp, &mut mw, &mut bind), libc::EINVAL, "type 2");
            mw.type_ = ibv_mw_type_IBV_MW_TYPE_1;
            bind.bind_info.mw_access_flags = ibv_access_flags_IBV_ACCESS_ZERO_BASED;
            assert_eq!(bind_mw(qp, &mut mw, &mut bind), libc::EINVAL, "zero-based");
            bind.bind_info.mw_access_flags = 0;
            mw.context = core::ptr::null_mut::<u8>().wrapping_add(0x2000).cast();
            assert_eq!(
                bind_mw(qp, &mut mw, &mut bind),
                libc::EINVAL,
                "other context"
            );
        }
        assert_eq!(mw.rkey, 0x0080_0001);
        assert_eq!(sq, vec![0u8; 4 * 128], "nothing posted");
    }
}

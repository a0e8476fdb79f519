// SPDX-License-Identifier: GPL-2.0

//! The user ABI structures of RDMA drivers, as plain data that crosses the user boundary.
//!
//! A driver reads and writes these through [`FromBytes`] and [`AsBytes`], which only the
//! kernel crate can implement for the `uapi` crate's types (the orphan rule), and implementing
//! them is the unsafe promise that a structure has no padding and no invalid bit patterns. So
//! the promise is made here, once per structure, against the header's own layout rules, and the
//! drivers stay safe code; each Rust RDMA driver with a user ABI adds its structures here, as
//! every driver's header is in `include/uapi/rdma/`.
//!
//! C header: [`include/uapi/rdma/srdma-abi.h`](srctree/include/uapi/rdma/srdma-abi.h).

use crate::types::{AsBytes, FromBytes};

pub use crate::uapi::{
    srdma_alloc_ucontext_resp, srdma_cq_db, srdma_cqe, srdma_create_cq_resp, srdma_create_qp_resp,
    srdma_create_srq_resp, srdma_ctx_db, srdma_db_loc, srdma_qp_db, srdma_rq_wqe_hdr, srdma_sge,
    srdma_sq_wqe_hdr, srdma_wqe_bind, srdma_wqe_ctrl, srdma_wqe_remote, srdma_wqe_ud,
    SRDMA_ABI_VERSION, SRDMA_CQE_GRH, SRDMA_CQE_OWNER_PHASE, SRDMA_CQE_SIZE, SRDMA_CQE_WITH_IMM,
    SRDMA_CQE_WITH_INV, SRDMA_CQ_ARM_NEXT, SRDMA_CQ_ARM_NONE, SRDMA_CQ_ARM_SOLICITED,
    SRDMA_CTX_NEED_WAKEUP, SRDMA_DB_MODE_KICK, SRDMA_DB_MODE_POLL, SRDMA_DB_PAGE_SIZE,
    SRDMA_DB_RECORD_SIZE, SRDMA_KERNEL_WR_REG_MR, SRDMA_RQ_WQE_HDR_SIZE, SRDMA_SGE_SIZE,
    SRDMA_SQ_WQE_HDR_SIZE, SRDMA_WQE_BB_SIZE, SRDMA_WQE_FENCE, SRDMA_WQE_INLINE,
    SRDMA_WQE_SIGNALED, SRDMA_WQE_SOLICITED,
};

macro_rules! plain_data {
    ($($t:ty),* $(,)?) => {
        $(
            // SAFETY: The uapi header declares this struct with only integer fields and explicit
            // reserved fields, naturally aligned and without implicit padding (the header's
            // rule), so every bit pattern is valid and every byte is initialised.
            unsafe impl FromBytes for $t {}
            // SAFETY: See `FromBytes`.
            unsafe impl AsBytes for $t {}
            const _: () = assert!(core::mem::size_of::<$t>() % 8 == 0);
        )*
    };
}

plain_data!(
    srdma_alloc_ucontext_resp,
    srdma_cq_db,
    srdma_ctx_db,
    srdma_cqe,
    srdma_rq_wqe_hdr,
    srdma_sge,
    srdma_wqe_bind,
    srdma_wqe_ctrl,
    srdma_wqe_remote,
    srdma_wqe_ud,
    srdma_create_cq_resp,
    srdma_create_qp_resp,
    srdma_create_srq_resp,
    srdma_db_loc,
    srdma_qp_db,
);

// The sizes the header promises; the union in `srdma_sq_wqe_hdr` makes it not plain data (it is
// read field by field from the copied bytes instead).
const _: () = {
    use core::mem::size_of;
    assert!(size_of::<srdma_sq_wqe_hdr>() == SRDMA_SQ_WQE_HDR_SIZE as usize);
    assert!(size_of::<srdma_rq_wqe_hdr>() == SRDMA_RQ_WQE_HDR_SIZE as usize);
    assert!(size_of::<srdma_sge>() == SRDMA_SGE_SIZE as usize);
    // Each segment fits between the control segment and the end of the header.
    assert!(size_of::<srdma_wqe_bind>() == 32 && size_of::<srdma_wqe_remote>() == 32);
    assert!(size_of::<srdma_cqe>() == SRDMA_CQE_SIZE as usize);
    assert!(core::mem::offset_of!(srdma_cqe, owner) == SRDMA_CQE_SIZE as usize - 4);
};

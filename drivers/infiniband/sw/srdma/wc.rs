// SPDX-License-Identifier: GPL-2.0-only

//! The vocabulary of work requests and completions in srdma's rings: the kernel crate's
//! opcodes and statuses, whose numbers are also the user ABI's (`enum ib_uverbs_wr_opcode`,
//! `enum ibv_wc_status`, `enum ibv_wc_opcode`), and the CQE.

use kernel::rdma::uapi::{srdma_cqe, SRDMA_KERNEL_WR_REG_MR};
pub(crate) use kernel::rdma::{
    cq::{WcOpcode, WcStatus},
    wr::Opcode as WrOpcode,
};

// The header names the one opcode of kernel callers' rings that has no user ABI number.
const _: () = assert!(SRDMA_KERNEL_WR_REG_MR == WrOpcode::RegMr as u32);

/// The opcode of a WQE that srdma carries out, in the ring of a user QP (`kernel` false) or of
/// a kernel caller's QP.
pub(crate) fn wqe_opcode(raw: u8, kernel: bool) -> Option<WrOpcode> {
    use WrOpcode::*;
    match WrOpcode::from_raw(raw.into())? {
        op @ (RdmaWrite | RdmaWriteWithImm | Send | SendWithImm | RdmaRead | AtomicCmpAndSwp
        | AtomicFetchAndAdd | LocalInv | BindMw | SendWithInv) => Some(op),
        // Kernel callers' work requests have no field for an ATOMIC WRITE's value, and user
        // QPs register through the MR verbs, not their rings.
        RegMr if kernel => Some(RegMr),
        AtomicWrite if !kernel => Some(AtomicWrite),
        _ => None,
    }
}

/// Receive completion opcodes have this bit.
pub(crate) const WC_RECV_BIT: u32 = WcOpcode::Recv as u32;

/// The flags a CQE may carry.
pub(crate) mod flags {
    pub(crate) use kernel::rdma::uapi::{
        SRDMA_CQE_GRH as GRH, SRDMA_CQE_WITH_IMM as WITH_IMM, SRDMA_CQE_WITH_INV as WITH_INV,
    };
}

/// A CQE of QP `qp_num` with no more than status and opcode.
pub(crate) fn cqe(wr_id: u64, status: WcStatus, opcode: WcOpcode, qp_num: u32) -> srdma_cqe {
    srdma_cqe {
        wr_id,
        status: status as u32,
        opcode: opcode as u32,
        qp_num,
        ..Default::default()
    }
}

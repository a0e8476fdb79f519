// SPDX-License-Identifier: GPL-2.0-only

//! The vocabulary of work requests and completions: the opcodes a send queue WQE carries and
//! the statuses and opcodes a CQE reports, numbered as the user ABI numbers them
//! (`enum ib_uverbs_wr_opcode`, `enum ibv_wc_status`, `enum ibv_wc_opcode`; kernel callers'
//! `ib_wc` uses the same numbers).

use kernel::rdma::{uapi::srdma_cqe, wr::opcode};

/// The opcode of a send queue WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum WrOpcode {
    RdmaWrite = opcode::RDMA_WRITE as u8,
    RdmaWriteImm = opcode::RDMA_WRITE_WITH_IMM as u8,
    Send = opcode::SEND as u8,
    SendImm = opcode::SEND_WITH_IMM as u8,
    RdmaRead = opcode::RDMA_READ as u8,
    CmpSwap = opcode::ATOMIC_CMP_AND_SWP as u8,
    FetchAdd = opcode::ATOMIC_FETCH_AND_ADD as u8,
    LocalInv = opcode::LOCAL_INV as u8,
    /// Which only user QPs post.
    BindMw = opcode::BIND_MW as u8,
    SendInv = opcode::SEND_WITH_INV as u8,
    /// `IB_WR_REG_MR` has no user ABI number: kverbs writes it into kernel callers' rings, and
    /// the engine takes it from those only.
    RegMr = opcode::REG_MR as u8,
    /// RDMA ATOMIC WRITE, from user QPs (a kernel caller's work request has no field for its
    /// value).
    AtomicWrite = opcode::ATOMIC_WRITE as u8,
}

impl WrOpcode {
    /// The opcode in a WQE of a user QP (`kernel` false) or of a kernel caller's QP.
    pub(crate) fn from_wqe(raw: u8, kernel: bool) -> Option<Self> {
        use WrOpcode::*;
        Some(match raw {
            x if x == RdmaWrite as u8 => RdmaWrite,
            x if x == RdmaWriteImm as u8 => RdmaWriteImm,
            x if x == Send as u8 => Send,
            x if x == SendImm as u8 => SendImm,
            x if x == RdmaRead as u8 => RdmaRead,
            x if x == CmpSwap as u8 => CmpSwap,
            x if x == FetchAdd as u8 => FetchAdd,
            x if x == LocalInv as u8 => LocalInv,
            x if x == BindMw as u8 => BindMw,
            x if x == SendInv as u8 => SendInv,
            x if x == RegMr as u8 && kernel => RegMr,
            x if x == AtomicWrite as u8 && !kernel => AtomicWrite,
            _ => return None,
        })
    }

    /// The opcode its completion reports.
    pub(crate) fn wc_opcode(self) -> WcOpcode {
        use WrOpcode::*;
        match self {
            Send | SendImm | SendInv => WcOpcode::Send,
            RdmaWrite | RdmaWriteImm => WcOpcode::RdmaWrite,
            RdmaRead => WcOpcode::RdmaRead,
            CmpSwap => WcOpcode::CompSwap,
            FetchAdd => WcOpcode::FetchAdd,
            BindMw => WcOpcode::BindMw,
            LocalInv => WcOpcode::LocalInv,
            RegMr => WcOpcode::RegMr,
            AtomicWrite => WcOpcode::AtomicWrite,
        }
    }

    /// Whether it is a SEND of any kind.
    /// Whether the WQE is carried out by the requester alone (a bind, an invalidation, a
    /// registration).
    pub(crate) fn is_local(self) -> bool {
        matches!(
            self,
            WrOpcode::BindMw | WrOpcode::LocalInv | WrOpcode::RegMr
        )
    }

    pub(crate) fn is_send(self) -> bool {
        matches!(self, WrOpcode::Send | WrOpcode::SendImm | WrOpcode::SendInv)
    }

    /// Whether it carries immediate data.
    pub(crate) fn has_imm(self) -> bool {
        matches!(self, WrOpcode::SendImm | WrOpcode::RdmaWriteImm)
    }
}

/// The status of a completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum WcStatus {
    Success = 0,
    LocLenErr = 1,
    LocQpOpErr = 2,
    LocProtErr = 4,
    WrFlushErr = 5,
    MwBindErr = 6,
    RemInvReqErr = 9,
    RemAccessErr = 10,
    RemOpErr = 11,
    RetryExcErr = 12,
    RnrRetryExcErr = 13,
}

/// The opcode of a completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum WcOpcode {
    Send = 0,
    RdmaWrite = 1,
    RdmaRead = 2,
    CompSwap = 3,
    FetchAdd = 4,
    BindMw = 5,
    LocalInv = 6,
    AtomicWrite = 9,
    /// `IB_WC_REG_MR` (kernel CQs only).
    RegMr = 10,
    Recv = 128,
    RecvRdmaWithImm = 129,
}

/// Receive completion opcodes have this bit.
pub(crate) const WC_RECV_BIT: u32 = WcOpcode::Recv as u32;

/// `enum ibv_wc_flags` bits a CQE may carry.
pub(crate) mod flags {
    pub(crate) const GRH: u32 = 1;
    pub(crate) const WITH_IMM: u32 = 2;
    pub(crate) const WITH_INV: u32 = 8;
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

// SPDX-License-Identifier: GPL-2.0-only

//! The limits srdma reports to users and enforces, and its module parameter.

use kernel::rdma::uapi::{SRDMA_DB_MODE_KICK, SRDMA_DB_MODE_POLL};

/// Queue pairs per device.
pub(crate) const MAX_QP: u32 = 16384;
/// Work requests per send or receive queue.
pub(crate) const MAX_QP_WR: u32 = 16384;
/// Scatter/gather entries per work request.
pub(crate) const MAX_SGE: u32 = 32;
/// Completion queues per device.
pub(crate) const MAX_CQ: u32 = 16384;
/// Entries per completion queue.
pub(crate) const MAX_CQE: u32 = 65536;
/// Memory regions per device.
pub(crate) const MAX_MR: u32 = 65536;
/// Pages one fast-register MR can map (`max_fast_reg_page_list_len`).
pub(crate) const MAX_FAST_REG_PAGES: u32 = 512;
/// Memory windows per device (advertised; the key space holds 8M).
pub(crate) const MAX_MW: u32 = 65536;
/// Protection domains per device.
pub(crate) const MAX_PD: u32 = 16384;
/// Address handles per device.
pub(crate) const MAX_AH: u32 = 16384;
/// Shared receive queues per device.
pub(crate) const MAX_SRQ: u32 = 4096;
/// Work requests per shared receive queue.
pub(crate) const MAX_SRQ_WR: u32 = 16384;
/// Outstanding RDMA reads and atomics per QP, in each direction.
pub(crate) const MAX_RD_ATOM: u32 = 128;
/// Largest memory region: 1 TiB (pinning is bounded by `RLIMIT_MEMLOCK` anyway).
pub(crate) const MAX_MR_SIZE: u64 = 1 << 40;
/// Largest message: 2 GiB, the largest length a work request can carry.
pub(crate) const MAX_MSG_SZ: u32 = 1 << 31;
/// Entries in the RoCE GID table.
pub(crate) const GID_TBL_LEN: u32 = 128;
/// The vendor ID: none assigned (as for rxe).
pub(crate) const VENDOR_ID: u32 = 0xffffff;
/// The vendor part ID: "SR".
pub(crate) const VENDOR_PART_ID: u32 = 0x5352;
/// The default P_Key, the only entry of the P_Key table (RoCE has no partitions).
pub(crate) const DEFAULT_PKEY: u16 = 0xffff;
/// Supported page sizes: 4 KiB to 2 GiB.
pub(crate) const PAGE_SIZE_CAP: u64 = 0xffff_f000;

kernel::module_param_uint!(
    DOORBELL_MODE,
    "srdma",
    "doorbell_mode",
    SRDMA_DB_MODE_KICK,
    "Doorbell mode of new devices: 0 kick (a syscall per post; default), 1 poll (kernel poller)"
);

/// The doorbell mode (`SRDMA_DB_MODE_*`) new devices start with: the module parameter
/// `doorbell_mode`; each device's sysfs attribute changes it for that device.
pub(crate) fn default_doorbell_mode() -> u32 {
    match DOORBELL_MODE.get() {
        mode @ (SRDMA_DB_MODE_KICK | SRDMA_DB_MODE_POLL) => mode,
        other => {
            kernel::pr_warn!(
                "doorbell_mode={} is neither 0 nor 1; using 0 (kick)\n",
                other
            );
            SRDMA_DB_MODE_KICK
        }
    }
}

/// Bytes of payload an inline send carries in its WQE, at most: as much as the larger hardware
/// offers. The SQ's stride follows what a QP asks for, so a QP that asks for less pays less.
pub(crate) const MAX_INLINE_DATA: u32 = 1024;

//! The parts of rdma-core's provider interface (`libibverbs/driver.h`, rdma-core 44, private ABI
//! `IBVERBS_PRIVATE_34`) that srdma uses. rdma-core does not install that header, so these are
//! declared here from its documented layout; the tests at the bottom pin the sizes and offsets.

use crate::ffi::{ibv_ah, ibv_ah_attr, ibv_mr, ibv_srq, ibv_srq_attr, ibv_srq_init_attr};
use crate::ffi::{ibv_comp_channel, ibv_context, ibv_cq, ibv_device, ibv_device_attr_ex, ibv_pd};
use crate::ffi::{ibv_port_attr, ibv_qp, ibv_qp_attr, ibv_qp_ex, ibv_qp_init_attr};
use crate::ffi::{ibv_query_device_ex_input, verbs_context};
use libc::{c_char, c_int, c_void};

/// `enum rdma_driver_id` value of srdma (the kernel's `RDMA_DRIVER_SRDMA`).
pub const RDMA_DRIVER_SRDMA: u32 = 21;

/// `VERBS_MATCH_MODALIAS`: match by fnmatch pattern.
pub const VERBS_MATCH_MODALIAS: u8 = 2;
/// `VERBS_MATCH_DRIVER_ID`: match by the kernel driver ID.
pub const VERBS_MATCH_DRIVER_ID: u8 = 3;

/// `struct verbs_match_ent`.
#[repr(C)]
pub struct VerbsMatchEnt {
    pub driver_data: *const c_void,
    /// Union of `const char *modalias` and `uint64_t driver_id` (both 8 bytes here).
    pub u: *const c_void,
    pub vendor: u16,
    pub device: u16,
    pub kind: u8,
}

// SAFETY: The match table is immutable static data.
unsafe impl Sync for VerbsMatchEnt {}

/// `struct verbs_device_ops`.
#[repr(C)]
pub struct VerbsDeviceOps {
    pub name: *const c_char,
    pub match_min_abi_version: u32,
    pub match_max_abi_version: u32,
    pub match_table: *const VerbsMatchEnt,
    pub static_providers: *const *const VerbsDeviceOps,
    pub match_device: Option<unsafe extern "C" fn(*mut c_void) -> bool>,
    pub alloc_context:
        Option<unsafe extern "C" fn(*mut ibv_device, c_int, *mut c_void) -> *mut verbs_context>,
    pub import_context: Option<unsafe extern "C" fn(*mut ibv_device, c_int) -> *mut verbs_context>,
    pub alloc_device: Option<unsafe extern "C" fn(*mut c_void) -> *mut VerbsDevice>,
    pub uninit_device: Option<unsafe extern "C" fn(*mut VerbsDevice)>,
}

// SAFETY: The ops table is immutable static data.
unsafe impl Sync for VerbsDeviceOps {}

/// `struct verbs_device`: libibverbs fills everything but what the provider allocates.
#[repr(C)]
pub struct VerbsDevice {
    pub device: ibv_device,
    pub ops: *const VerbsDeviceOps,
    pub refcount: c_int,
    pub entry: [*mut c_void; 2],
    pub sysfs: *mut c_void,
    pub core_support: u64,
}

/// `struct verbs_qp`: libibverbs reads `comp_mask` of every QP, so each QP is one of these.
#[repr(C)]
pub struct VerbsQp {
    pub qp_ex: ibv_qp_ex,
    pub comp_mask: u32,
    pub xrcd: *mut c_void,
}

/// `struct verbs_mr`: `ibv_dereg_mr` reads `mr_type`, so each MR is one of these.
#[repr(C)]
pub struct VerbsMr {
    pub ibv_mr: ibv_mr,
    pub mr_type: u32,
    pub access: c_int,
}

/// `struct verbs_srq`.
#[repr(C)]
pub struct VerbsSrq {
    pub srq: ibv_srq,
    pub srq_type: u32,
    pub xrcd: *mut c_void,
    pub cq: *mut ibv_cq,
    pub srq_num: u32,
}

/// `struct verbs_context_ops`: 76 function pointers in alphabetical order. Slots are written by
/// index (the `op` constants below) so that unused ones stay null.
#[repr(C)]
pub struct VerbsContextOps {
    pub slots: [*const c_void; 76],
}

// SAFETY: The ops table is immutable static data.
unsafe impl Sync for VerbsContextOps {}

/// Slot numbers in [`VerbsContextOps`].
pub mod op {
    pub const POST_SRQ_RECV: usize = 57;
    pub const POLL_CQ: usize = 53;
    pub const POST_RECV: usize = 54;
    pub const POST_SEND: usize = 55;
    pub const RESIZE_CQ: usize = 71;
    pub const REG_MR: usize = 68;
    pub const QUERY_SRQ: usize = 64;
    pub const MODIFY_SRQ: usize = 49;
    pub const DESTROY_SRQ: usize = 36;
    pub const DESTROY_AH: usize = 29;
    pub const DEREG_MR: usize = 28;
    pub const CREATE_SRQ: usize = 22;
    pub const CREATE_AH: usize = 13;
    pub const ALLOC_PD: usize = 5;
    pub const CREATE_CQ: usize = 15;
    pub const CREATE_QP: usize = 19;
    pub const DEALLOC_PD: usize = 26;
    pub const DESTROY_CQ: usize = 31;
    pub const DESTROY_QP: usize = 34;
    pub const FREE_CONTEXT: usize = 39;
    pub const MODIFY_QP: usize = 47;
    pub const QUERY_DEVICE_EX: usize = 58;
    pub const QUERY_PORT: usize = 60;
    pub const QUERY_QP: usize = 61;
    pub const REQ_NOTIFY_CQ: usize = 69;
}

extern "C" {
    pub fn verbs_register_driver_34(ops: *const VerbsDeviceOps);
    pub fn _verbs_init_and_alloc_context(
        device: *mut ibv_device,
        cmd_fd: c_int,
        alloc_size: usize,
        context_offset: *mut verbs_context,
        driver_id: u32,
    ) -> *mut c_void;
    pub fn verbs_uninit_context(ctx: *mut verbs_context);
    pub fn verbs_set_ops(ctx: *mut verbs_context, ops: *const VerbsContextOps);
    pub fn ibv_cmd_get_context(
        ctx: *mut verbs_context,
        cmd: *mut c_void,
        cmd_size: usize,
        resp: *mut c_void,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_query_device_any(
        ctx: *mut ibv_context,
        input: *const ibv_query_device_ex_input,
        attr: *mut ibv_device_attr_ex,
        attr_size: usize,
        resp: *mut c_void,
        resp_size: *mut usize,
    ) -> c_int;
    pub fn ibv_cmd_query_port(
        ctx: *mut ibv_context,
        port_num: u8,
        attr: *mut ibv_port_attr,
        cmd: *mut c_void,
        cmd_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_alloc_pd(
        ctx: *mut ibv_context,
        pd: *mut ibv_pd,
        cmd: *mut c_void,
        cmd_size: usize,
        resp: *mut c_void,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_dealloc_pd(pd: *mut ibv_pd) -> c_int;
    pub fn ibv_cmd_create_cq(
        ctx: *mut ibv_context,
        cqe: c_int,
        channel: *mut ibv_comp_channel,
        comp_vector: c_int,
        cq: *mut ibv_cq,
        cmd: *mut c_void,
        cmd_size: usize,
        resp: *mut c_void,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_destroy_cq(cq: *mut ibv_cq) -> c_int;
    pub fn ibv_cmd_resize_cq(
        cq: *mut ibv_cq,
        cqe: c_int,
        cmd: *mut c_void,
        cmd_size: usize,
        resp: *mut c_void,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_req_notify_cq(cq: *mut ibv_cq, solicited_only: c_int) -> c_int;
    pub fn ibv_cmd_create_qp(
        pd: *mut ibv_pd,
        qp: *mut ibv_qp,
        attr: *mut ibv_qp_init_attr,
        cmd: *mut c_void,
        cmd_size: usize,
        resp: *mut c_void,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_modify_qp(
        qp: *mut ibv_qp,
        attr: *mut ibv_qp_attr,
        attr_mask: c_int,
        cmd: *mut c_void,
        cmd_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_query_qp(
        qp: *mut ibv_qp,
        attr: *mut ibv_qp_attr,
        attr_mask: c_int,
        init_attr: *mut ibv_qp_init_attr,
        cmd: *mut c_void,
        cmd_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_destroy_qp(qp: *mut ibv_qp) -> c_int;
    pub fn ibv_cmd_post_send(
        qp: *mut ibv_qp,
        wr: *mut crate::ffi::ibv_send_wr,
        bad_wr: *mut *mut crate::ffi::ibv_send_wr,
    ) -> c_int;
    pub fn ibv_cmd_reg_mr(
        pd: *mut ibv_pd,
        addr: *mut c_void,
        length: usize,
        hca_va: u64,
        access: c_int,
        vmr: *mut VerbsMr,
        cmd: *mut c_void,
        cmd_size: usize,
        resp: *mut c_void,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_dereg_mr(vmr: *mut VerbsMr) -> c_int;
    pub fn ibv_cmd_create_srq(
        pd: *mut ibv_pd,
        srq: *mut ibv_srq,
        attr: *mut ibv_srq_init_attr,
        cmd: *mut c_void,
        cmd_size: usize,
        resp: *mut c_void,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_modify_srq(
        srq: *mut ibv_srq,
        attr: *mut ibv_srq_attr,
        mask: c_int,
        cmd: *mut c_void,
        cmd_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_query_srq(
        srq: *mut ibv_srq,
        attr: *mut ibv_srq_attr,
        cmd: *mut c_void,
        cmd_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_destroy_srq(srq: *mut ibv_srq) -> c_int;
    pub fn ibv_cmd_create_ah(
        pd: *mut ibv_pd,
        ah: *mut ibv_ah,
        attr: *mut ibv_ah_attr,
        resp: *mut c_void,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_destroy_ah(ah: *mut ibv_ah) -> c_int;
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    // Sizes and offsets measured on rdma-core 44.0 (x86_64).
    #[test]
    fn layouts_match_rdma_core_44() {
        assert_eq!(size_of::<VerbsMatchEnt>(), 24);
        assert_eq!(offset_of!(VerbsMatchEnt, kind), 20);
        assert_eq!(size_of::<VerbsDeviceOps>(), 72);
        assert_eq!(offset_of!(VerbsDeviceOps, alloc_context), 40);
        assert_eq!(offset_of!(VerbsDeviceOps, uninit_device), 64);
        assert_eq!(size_of::<ibv_device>(), 664);
        assert_eq!(size_of::<VerbsDevice>(), 712);
        assert_eq!(offset_of!(VerbsDevice, sysfs), 696);
        assert_eq!(size_of::<VerbsContextOps>(), 608);
        assert_eq!(size_of::<verbs_context>(), 648);
        assert_eq!(offset_of!(verbs_context, context), 320);
        assert_eq!(size_of::<ibv_context>(), 328);
        assert_eq!(size_of::<crate::ffi::ibv_device_attr>(), 232);
        assert_eq!(size_of::<ibv_device_attr_ex>(), 400);
        assert_eq!(size_of::<crate::ffi::ibv_cq_ex>(), 288);
        assert_eq!(size_of::<VerbsQp>(), 368);
        assert_eq!(size_of::<VerbsMr>(), 56);
        assert_eq!(size_of::<VerbsSrq>(), 160);
        assert_eq!(size_of::<ibv_ah>(), 24);
    }

    // srdma's ring formats, as the ABI header promises them.
    #[test]
    fn ring_formats() {
        use crate::ffi::*;
        assert_eq!(
            size_of::<srdma_sq_wqe_hdr>(),
            SRDMA_SQ_WQE_HDR_SIZE as usize
        );
        assert_eq!(size_of::<srdma_wqe_ctrl>(), 32);
        assert_eq!(
            size_of::<srdma_rq_wqe_hdr>(),
            SRDMA_RQ_WQE_HDR_SIZE as usize
        );
        assert_eq!(size_of::<srdma_sge>(), SRDMA_SGE_SIZE as usize);
        assert_eq!(size_of::<srdma_cqe>(), SRDMA_CQE_SIZE as usize);
        assert_eq!(offset_of!(srdma_cqe, owner), SRDMA_CQE_SIZE as usize - 4);
        assert_eq!(size_of::<srdma_qp_db>(), SRDMA_DB_RECORD_SIZE as usize);
        assert_eq!(size_of::<srdma_cq_db>(), SRDMA_DB_RECORD_SIZE as usize);
        assert_eq!(offset_of!(VerbsQp, comp_mask), 352);
    }
}

//! The parts of rdma-core's provider interface (`libibverbs/driver.h`, rdma-core 44, private ABI
//! `IBVERBS_PRIVATE_34`) that srdma uses. rdma-core does not install that header, so these are
//! declared here from its documented layout; the tests at the bottom pin the sizes and offsets.

use crate::ffi::ibv_cq_init_attr_ex;
use crate::ffi::{ib_uverbs_alloc_mw_resp, ibv_mw, ibv_mw_type};
use crate::ffi::{ib_uverbs_create_qp_resp, ibv_qp_init_attr_ex};
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

/// `VERBS_QP_EX` in `verbs_qp.comp_mask`: the QP has a `struct ibv_qp_ex` (`ibv_qp_to_qp_ex`).
pub const VERBS_QP_EX: u32 = 1 << 1;

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

/// `IBV_MR_TYPE_NULL_MR` of `enum ibv_mr_type`: libibverbs leaves the fork protection of such
/// an MR's (absent) range alone.
pub const IBV_MR_TYPE_NULL_MR: u32 = 1;

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
    pub const MODIFY_CQ: usize = 45;
    pub const REG_MR: usize = 68;
    pub const QUERY_SRQ: usize = 64;
    pub const MODIFY_SRQ: usize = 49;
    pub const DESTROY_SRQ: usize = 36;
    pub const DESTROY_AH: usize = 29;
    pub const DEREG_MR: usize = 28;
    pub const CREATE_SRQ: usize = 22;
    pub const CREATE_AH: usize = 13;
    pub const ALLOC_PD: usize = 5;
    pub const ALLOC_MW: usize = 2;
    pub const BIND_MW: usize = 10;
    pub const DEALLOC_MW: usize = 25;
    pub const CREATE_CQ: usize = 15;
    pub const CREATE_CQ_EX: usize = 16;
    pub const ALLOC_NULL_MR: usize = 3;
    pub const QUERY_RT_VALUES: usize = 63;
    pub const CREATE_QP: usize = 19;
    pub const CREATE_QP_EX: usize = 20;
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
    pub fn ibv_cmd_create_cq_ex(
        ctx: *mut ibv_context,
        cq_attr: *const ibv_cq_init_attr_ex,
        cq: *mut c_void,
        cmd: *mut c_void,
        cmd_size: usize,
        resp: *mut c_void,
        resp_size: usize,
        cmd_flags: u32,
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
    pub fn ibv_cmd_modify_cq(
        cq: *mut ibv_cq,
        attr: *mut crate::ffi::ibv_modify_cq_attr,
        cmd: *mut c_void,
        cmd_size: usize,
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
    pub fn ibv_cmd_create_qp_ex(
        ctx: *mut ibv_context,
        qp: *mut VerbsQp,
        attr_ex: *mut ibv_qp_init_attr_ex,
        cmd: *mut c_void,
        cmd_size: usize,
        resp: *mut ib_uverbs_create_qp_resp,
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
    pub fn ibv_cmd_alloc_mw(
        pd: *mut ibv_pd,
        mw_type: ibv_mw_type,
        mw: *mut ibv_mw,
        cmd: *mut c_void,
        cmd_size: usize,
        resp: *mut ib_uverbs_alloc_mw_resp,
        resp_size: usize,
    ) -> c_int;
    pub fn ibv_cmd_dealloc_mw(mw: *mut ibv_mw) -> c_int;
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

    // The members of `struct verbs_context_ops` in rdma-core 44.0, in order.
    const CONTEXT_OPS_44: &str = "\
        advise_mr alloc_dm alloc_mw alloc_null_mr alloc_parent_domain alloc_pd alloc_td \
        async_event attach_counters_point_flow attach_mcast bind_mw close_xrcd cq_event \
        create_ah create_counters create_cq create_cq_ex create_flow create_flow_action_esp \
        create_qp create_qp_ex create_rwq_ind_table create_srq create_srq_ex create_wq \
        dealloc_mw dealloc_pd dealloc_td dereg_mr destroy_ah destroy_counters destroy_cq \
        destroy_flow destroy_flow_action destroy_qp destroy_rwq_ind_table destroy_srq \
        destroy_wq detach_mcast free_context free_dm get_srq_num import_dm import_mr import_pd \
        modify_cq modify_flow_action_esp modify_qp modify_qp_rate_limit modify_srq modify_wq \
        open_qp open_xrcd poll_cq post_recv post_send post_srq_ops post_srq_recv \
        query_device_ex query_ece query_port query_qp query_qp_data_in_order query_rt_values \
        query_srq read_counters reg_dm_mr reg_dmabuf_mr reg_mr req_notify_cq rereg_mr \
        resize_cq set_ece unimport_dm unimport_mr unimport_pd";

    #[test]
    fn context_op_slots() {
        let names: Vec<&str> = CONTEXT_OPS_44.split_whitespace().collect();
        assert_eq!(
            names.len(),
            size_of::<VerbsContextOps>() / size_of::<usize>()
        );
        let slot = |name: &str| names.iter().position(|n| *n == name).unwrap();
        let ours = [
            (op::ALLOC_MW, "alloc_mw"),
            (op::ALLOC_PD, "alloc_pd"),
            (op::BIND_MW, "bind_mw"),
            (op::CREATE_AH, "create_ah"),
            (op::CREATE_CQ, "create_cq"),
            (op::CREATE_CQ_EX, "create_cq_ex"),
            (op::ALLOC_NULL_MR, "alloc_null_mr"),
            (op::QUERY_RT_VALUES, "query_rt_values"),
            (op::CREATE_QP, "create_qp"),
            (op::CREATE_QP_EX, "create_qp_ex"),
            (op::CREATE_SRQ, "create_srq"),
            (op::DEALLOC_MW, "dealloc_mw"),
            (op::DEALLOC_PD, "dealloc_pd"),
            (op::DEREG_MR, "dereg_mr"),
            (op::DESTROY_AH, "destroy_ah"),
            (op::DESTROY_CQ, "destroy_cq"),
            (op::DESTROY_QP, "destroy_qp"),
            (op::DESTROY_SRQ, "destroy_srq"),
            (op::FREE_CONTEXT, "free_context"),
            (op::MODIFY_QP, "modify_qp"),
            (op::MODIFY_SRQ, "modify_srq"),
            (op::POLL_CQ, "poll_cq"),
            (op::POST_RECV, "post_recv"),
            (op::POST_SEND, "post_send"),
            (op::POST_SRQ_RECV, "post_srq_recv"),
            (op::QUERY_DEVICE_EX, "query_device_ex"),
            (op::QUERY_PORT, "query_port"),
            (op::QUERY_QP, "query_qp"),
            (op::QUERY_SRQ, "query_srq"),
            (op::REG_MR, "reg_mr"),
            (op::REQ_NOTIFY_CQ, "req_notify_cq"),
            (op::RESIZE_CQ, "resize_cq"),
            (op::MODIFY_CQ, "modify_cq"),
        ];
        for (index, name) in ours {
            assert_eq!(index, slot(name), "{name}");
        }
    }

    // What the work-request API relies on in `struct ibv_qp_ex` and `struct ibv_qp_init_attr_ex`
    // (measured with rdma-core 44.0's verbs.h, x86_64).
    #[test]
    fn qp_ex_layouts() {
        use crate::ffi::{ibv_data_buf, ibv_qp_ex};
        assert_eq!(size_of::<ibv_qp_ex>(), 352);
        assert_eq!(offset_of!(ibv_qp_ex, wr_id), 168);
        assert_eq!(offset_of!(ibv_qp_ex, wr_flags), 176);
        assert_eq!(offset_of!(ibv_qp_ex, wr_atomic_cmp_swp), 184);
        assert_eq!(offset_of!(ibv_qp_ex, wr_set_ud_addr), 272);
        assert_eq!(offset_of!(ibv_qp_ex, wr_set_inline_data), 288);
        assert_eq!(offset_of!(ibv_qp_ex, wr_set_sge_list), 312);
        assert_eq!(offset_of!(ibv_qp_ex, wr_start), 320);
        assert_eq!(offset_of!(ibv_qp_ex, wr_abort), 336);
        assert_eq!(offset_of!(ibv_qp_ex, wr_atomic_write), 344);
        assert_eq!(offset_of!(VerbsQp, qp_ex), 0);
        assert_eq!(size_of::<ibv_qp_init_attr_ex>(), 136);
        assert_eq!(offset_of!(ibv_qp_init_attr_ex, comp_mask), 60);
        assert_eq!(offset_of!(ibv_qp_init_attr_ex, send_ops_flags), 128);
        assert_eq!(size_of::<ibv_data_buf>(), 16);
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
        assert_eq!(offset_of!(srdma_cqe, timestamp), 48);
        assert_eq!(size_of::<srdma_qp_db>(), SRDMA_DB_RECORD_SIZE as usize);
        assert_eq!(size_of::<srdma_cq_db>(), SRDMA_DB_RECORD_SIZE as usize);
        assert_eq!(offset_of!(VerbsQp, comp_mask), 352);
        assert_eq!(size_of::<srdma_wqe_bind>(), 32);
        assert_eq!(offset_of!(srdma_sq_wqe_hdr, __bindgen_anon_1), 32);
        // CQE flags are handed to the application as they are.
        assert_eq!(SRDMA_CQE_GRH, ibv_wc_flags_IBV_WC_GRH);
        assert_eq!(SRDMA_CQE_WITH_IMM, ibv_wc_flags_IBV_WC_WITH_IMM);
        assert_eq!(SRDMA_CQE_WITH_INV, ibv_wc_flags_IBV_WC_WITH_INV);
    }
}

// SPDX-License-Identifier: GPL-2.0

//! Device and port attributes reported to ib_core.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use crate::bindings;

super::typed::c_enum! {
    /// The state of a port (`enum ib_port_state`).
    pub enum PortState: u32 {
        /// The port is down: no link.
        Down = bindings::ib_port_state_IB_PORT_DOWN,
        /// The link is up but not yet configured.
        Init = bindings::ib_port_state_IB_PORT_INIT,
        /// The link is configured but not yet active.
        Armed = bindings::ib_port_state_IB_PORT_ARMED,
        /// The port can send and receive.
        Active = bindings::ib_port_state_IB_PORT_ACTIVE,
    }
}

super::typed::c_enum! {
    /// The physical state of a port (`enum ib_port_phys_state`).
    pub enum PhysState: u8 {
        /// The physical port sleeps.
        Sleep = bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_SLEEP as u8,
        /// The port looks for a link partner.
        Polling = bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_POLLING as u8,
        /// The port is administratively disabled.
        Disabled = bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED as u8,
        /// The physical link is up.
        LinkUp = bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP as u8,
    }
}

super::typed::c_enum! {
    /// The link layer of a port (`enum rdma_link_layer`).
    pub enum LinkLayer: u32 {
        /// InfiniBand.
        InfiniBand = bindings::rdma_link_layer_IB_LINK_LAYER_INFINIBAND,
        /// Ethernet (RoCE and iWARP).
        Ethernet = bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET,
    }
}

super::typed::c_enum! {
    /// An InfiniBand path MTU (`enum ib_mtu`).
    #[derive(PartialOrd, Ord)]
    pub enum Mtu: u32 {
        /// 256 bytes.
        Mtu256 = bindings::ib_mtu_IB_MTU_256,
        /// 512 bytes.
        Mtu512 = bindings::ib_mtu_IB_MTU_512,
        /// 1024 bytes.
        Mtu1024 = bindings::ib_mtu_IB_MTU_1024,
        /// 2048 bytes.
        Mtu2048 = bindings::ib_mtu_IB_MTU_2048,
        /// 4096 bytes.
        Mtu4096 = bindings::ib_mtu_IB_MTU_4096,
    }
}

impl Mtu {
    /// Headers that RoCEv2 adds around an IB payload inside an Ethernet frame: GRH (as IPv6),
    /// UDP, BTH, the largest extended transport header and the ICRC.
    const ROCE_OVERHEAD: u32 = 40 + 8 + 12 + 4 + 28 + 4;

    /// Returns the largest path MTU whose RoCEv2 packets fit in a netdev MTU of `netdev_mtu`
    /// bytes, or `None` if not even 256 bytes fit.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::rdma::attr::Mtu;
    ///
    /// assert_eq!(Mtu::for_roce(1500), Some(Mtu::Mtu1024));
    /// assert_eq!(Mtu::for_roce(9000), Some(Mtu::Mtu4096));
    /// assert_eq!(Mtu::for_roce(4096), Some(Mtu::Mtu2048));
    /// assert_eq!(Mtu::for_roce(200), None);
    /// ```
    pub fn for_roce(netdev_mtu: u32) -> Option<Mtu> {
        let payload = netdev_mtu.checked_sub(Self::ROCE_OVERHEAD)?;
        [
            Mtu::Mtu4096,
            Mtu::Mtu2048,
            Mtu::Mtu1024,
            Mtu::Mtu512,
            Mtu::Mtu256,
        ]
        .into_iter()
        .find(|m| m.bytes() <= payload)
    }

    /// Returns the MTU in bytes.
    pub const fn bytes(self) -> u32 {
        128 << (self as u32)
    }
}

super::typed::c_enum! {
    /// Atomic operation guarantees (`enum ib_atomic_cap`).
    #[derive(Default)]
    pub enum AtomicCap: u32 {
        /// No atomic operations.
        #[default]
        None = bindings::ib_atomic_cap_IB_ATOMIC_NONE,
        /// Atomic among operations through this device.
        Hca = bindings::ib_atomic_cap_IB_ATOMIC_HCA,
        /// Atomic against all accesses, including the CPU's.
        Global = bindings::ib_atomic_cap_IB_ATOMIC_GLOB,
    }
}

/// Device capability flags (`enum ib_device_cap_flags`), reported to users.
pub mod device_caps {
    /// The device generates a port active event when a port becomes active.
    pub const PORT_ACTIVE_EVENT: u64 =
        crate::bindings::ib_device_cap_flags_IB_DEVICE_PORT_ACTIVE_EVENT as u64;
    /// The system image GUID is valid.
    pub const SYS_IMAGE_GUID: u64 =
        crate::bindings::ib_device_cap_flags_IB_DEVICE_SYS_IMAGE_GUID as u64;
    /// RC QPs generate RNR NAKs.
    pub const RC_RNR_NAK_GEN: u64 =
        crate::bindings::ib_device_cap_flags_IB_DEVICE_RC_RNR_NAK_GEN as u64;
    /// SRQs can be resized.
    pub const SRQ_RESIZE: u64 = crate::bindings::ib_device_cap_flags_IB_DEVICE_SRQ_RESIZE as u64;
    /// Modify QP accepts the current QP state.
    pub const CURR_QP_STATE_MOD: u64 =
        crate::bindings::ib_device_cap_flags_IB_DEVICE_CURR_QP_STATE_MOD as u64;
    /// The device can shut down a port.
    pub const SHUTDOWN_PORT: u64 =
        crate::bindings::ib_device_cap_flags_IB_DEVICE_SHUTDOWN_PORT as u64;
    /// Memory management extensions: fast registration, local invalidate.
    pub const MEM_MGT_EXTENSIONS: u64 =
        crate::bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64;
    /// Memory windows (type 1).
    pub const MEM_WINDOW: u64 = crate::bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW as u64;
    /// Type 2B memory windows: bound by a work request, to one QP.
    pub const MEM_WINDOW_TYPE_2B: u64 =
        crate::bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW_TYPE_2B as u64;
    /// RDMA ATOMIC WRITE (IBA annex A19).
    pub const ATOMIC_WRITE: u64 =
        crate::bindings::ib_device_cap_flags_IB_DEVICE_ATOMIC_WRITE as u64;
}

/// Kernel-only capability flags (`enum ib_kernel_cap_flags`).
pub mod kernel_caps {
    /// Users may delete the device through `rdma link delete`.
    pub const ALLOW_USER_UNREG: u64 =
        crate::bindings::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG as u64;
    /// The device supports the local DMA lkey.
    pub const LOCAL_DMA_LKEY: u64 = crate::bindings::ib_kernel_cap_flags_IBK_LOCAL_DMA_LKEY as u64;
}

/// Port capability flags (the `CapabilityMask` of PortInfo).
pub mod port_caps {
    /// The port supports connection management.
    pub const CM_SUP: u32 = crate::bindings::ib_port_capability_mask_bits_IB_PORT_CM_SUP;
    /// The port supports the device management class.
    pub const DEVICE_MGMT_SUP: u32 =
        crate::bindings::ib_port_capability_mask_bits_IB_PORT_DEVICE_MGMT_SUP;
    /// The port supports vendor classes.
    pub const VENDOR_CLASS_SUP: u32 =
        crate::bindings::ib_port_capability_mask_bits_IB_PORT_VENDOR_CLASS_SUP;
}

/// Core capability sets of a port (`RDMA_CORE_PORT_*`), which fix its protocol and link layer.
pub mod core_caps {
    /// RoCEv2: IB transport over UDP/IP over Ethernet, with MADs and the CM.
    pub const ROCE_UDP_ENCAP: u32 = crate::bindings::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
}

/// The size of a management datagram (`IB_MGMT_MAD_SIZE`), the value of
/// [`PortImmutable::max_mad_size`] for ports that support MADs.
pub const MGMT_MAD_SIZE: u32 = bindings::IB_MGMT_MAD_SIZE;

/// Device attributes (`struct ib_device_attr`); fields left at their default are reported as 0.
#[derive(Clone, Debug, Default)]
pub struct DeviceAttr {
    /// Firmware version.
    pub fw_ver: u64,
    /// System image GUID, in network byte order.
    pub sys_image_guid: u64,
    /// Largest memory region in bytes.
    pub max_mr_size: u64,
    /// Supported page sizes, one bit per size.
    pub page_size_cap: u64,
    /// IEEE vendor ID.
    pub vendor_id: u32,
    /// Vendor part ID.
    pub vendor_part_id: u32,
    /// Hardware version.
    pub hw_ver: u32,
    /// Maximum number of QPs.
    pub max_qp: u32,
    /// Maximum work requests per queue.
    pub max_qp_wr: u32,
    /// Capability flags from [`device_caps`].
    pub device_cap_flags: u64,
    /// Kernel capability flags from [`kernel_caps`].
    pub kernel_cap_flags: u64,
    /// Maximum scatter/gather entries per send work request.
    pub max_send_sge: u32,
    /// Maximum scatter/gather entries per receive work request.
    pub max_recv_sge: u32,
    /// Maximum scatter/gather entries per RDMA read.
    pub max_sge_rd: u32,
    /// Maximum number of CQs.
    pub max_cq: u32,
    /// Maximum entries per CQ.
    pub max_cqe: u32,
    /// Maximum number of MRs.
    pub max_mr: u32,
    /// Maximum number of memory windows.
    pub max_mw: u32,
    /// Maximum number of PDs.
    pub max_pd: u32,
    /// Maximum outstanding RDMA reads and atomics a QP responds to.
    pub max_qp_rd_atom: u32,
    /// Maximum outstanding RDMA reads and atomics a QP initiates.
    pub max_qp_init_rd_atom: u32,
    /// Maximum outstanding responder resources of the device.
    pub max_res_rd_atom: u32,
    /// Atomic operation guarantees.
    pub atomic_cap: AtomicCap,
    /// Maximum number of address handles.
    pub max_ah: u32,
    /// Maximum number of SRQs.
    pub max_srq: u32,
    /// Maximum work requests per SRQ.
    pub max_srq_wr: u32,
    /// Maximum scatter/gather entries per SRQ work request.
    pub max_srq_sge: u32,
    /// Maximum number of multicast groups.
    pub max_mcast_grp: u32,
    /// Maximum QPs per multicast group.
    pub max_mcast_qp_attach: u32,
    /// Maximum QPs attached to multicast groups in total.
    pub max_total_mcast_qp_attach: u32,
    /// Maximum pages in a fast registration request.
    pub max_fast_reg_page_list_len: u32,
    /// Number of partition keys.
    pub max_pkeys: u16,
    /// Local CA ACK delay (exponent of 4.096 µs).
    pub local_ca_ack_delay: u8,
    /// The bits of a completion timestamp that count (0: the device stamps no completions).
    pub timestamp_mask: u64,
    /// The frequency of the clock completion timestamps count, in kHz.
    pub hca_core_clock: u64,
    /// The largest completion count a CQ's moderation takes (0: no CQ moderation).
    pub max_cq_moderation_count: u16,
    /// The largest period, in microseconds, a CQ's moderation takes.
    pub max_cq_moderation_period: u16,
}

fn to_int(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

impl DeviceAttr {
    pub(crate) fn to_raw(&self) -> bindings::ib_device_attr {
        // SAFETY: `ib_device_attr` holds only integers and enums for which zero is valid.
        let zeroed: bindings::ib_device_attr = unsafe { core::mem::zeroed() };
        bindings::ib_device_attr {
            fw_ver: self.fw_ver,
            sys_image_guid: self.sys_image_guid,
            max_mr_size: self.max_mr_size,
            page_size_cap: self.page_size_cap,
            vendor_id: self.vendor_id,
            vendor_part_id: self.vendor_part_id,
            hw_ver: self.hw_ver,
            max_qp: to_int(self.max_qp),
            max_qp_wr: to_int(self.max_qp_wr),
            device_cap_flags: self.device_cap_flags,
            kernel_cap_flags: self.kernel_cap_flags,
            max_send_sge: to_int(self.max_send_sge),
            max_recv_sge: to_int(self.max_recv_sge),
            max_sge_rd: to_int(self.max_sge_rd),
            max_cq: to_int(self.max_cq),
            max_cqe: to_int(self.max_cqe),
            max_mr: to_int(self.max_mr),
            max_mw: to_int(self.max_mw),
            max_pd: to_int(self.max_pd),
            max_qp_rd_atom: to_int(self.max_qp_rd_atom),
            max_qp_init_rd_atom: to_int(self.max_qp_init_rd_atom),
            max_res_rd_atom: to_int(self.max_res_rd_atom),
            atomic_cap: self.atomic_cap as u32,
            max_ah: to_int(self.max_ah),
            max_srq: to_int(self.max_srq),
            max_srq_wr: to_int(self.max_srq_wr),
            max_srq_sge: to_int(self.max_srq_sge),
            max_mcast_grp: to_int(self.max_mcast_grp),
            max_mcast_qp_attach: to_int(self.max_mcast_qp_attach),
            max_total_mcast_qp_attach: to_int(self.max_total_mcast_qp_attach),
            max_fast_reg_page_list_len: self.max_fast_reg_page_list_len,
            max_pkeys: self.max_pkeys,
            local_ca_ack_delay: self.local_ca_ack_delay,
            timestamp_mask: self.timestamp_mask,
            hca_core_clock: self.hca_core_clock,
            cq_caps: bindings::ib_cq_caps {
                max_cq_moderation_count: self.max_cq_moderation_count,
                max_cq_moderation_period: self.max_cq_moderation_period,
            },
            ..zeroed
        }
    }
}

/// Port attributes (`struct ib_port_attr`).
#[derive(Clone, Debug)]
pub struct PortAttr {
    /// Logical port state.
    pub state: PortState,
    /// Physical port state.
    pub phys_state: PhysState,
    /// Largest path MTU the port supports.
    pub max_mtu: Mtu,
    /// Path MTU in use.
    pub active_mtu: Mtu,
    /// MTU of the underlying link in bytes.
    pub phys_mtu: u32,
    /// Entries in the GID table.
    pub gid_tbl_len: u32,
    /// Whether GIDs are derived from IP addresses (RoCE).
    pub ip_gids: bool,
    /// Capability flags from [`port_caps`].
    pub port_cap_flags: u32,
    /// Largest message in bytes.
    pub max_msg_sz: u32,
    /// Entries in the P_Key table.
    pub pkey_tbl_len: u16,
    /// Link width (`IB_WIDTH_*`).
    pub active_width: u8,
    /// Link speed (`IB_SPEED_*`).
    pub active_speed: u16,
    /// Number of virtual lanes.
    pub max_vl_num: u8,
}

impl PortAttr {
    pub(crate) fn to_raw(&self) -> bindings::ib_port_attr {
        // SAFETY: `ib_port_attr` holds only integers and enums for which zero is valid.
        let zeroed: bindings::ib_port_attr = unsafe { core::mem::zeroed() };
        let mut attr = bindings::ib_port_attr {
            state: self.state as u32,
            phys_state: self.phys_state as u8,
            max_mtu: self.max_mtu as u32,
            active_mtu: self.active_mtu as u32,
            phys_mtu: self.phys_mtu,
            gid_tbl_len: to_int(self.gid_tbl_len),
            port_cap_flags: self.port_cap_flags,
            max_msg_sz: self.max_msg_sz,
            pkey_tbl_len: self.pkey_tbl_len,
            active_width: self.active_width,
            active_speed: self.active_speed,
            max_vl_num: self.max_vl_num,
            ..zeroed
        };
        attr.set_ip_gids(self.ip_gids.into());
        attr
    }
}

/// Port attributes that never change while the device is registered (`struct ib_port_immutable`).
#[derive(Clone, Copy, Debug)]
pub struct PortImmutable {
    /// Entries in the P_Key table.
    pub pkey_tbl_len: u32,
    /// Entries in the GID table.
    pub gid_tbl_len: u32,
    /// Protocol and capability set, from [`core_caps`].
    pub core_cap_flags: u32,
    /// Largest MAD, [`MGMT_MAD_SIZE`] where MADs are supported, else 0.
    pub max_mad_size: u32,
}

impl PortImmutable {
    pub(crate) fn to_raw(self) -> bindings::ib_port_immutable {
        bindings::ib_port_immutable {
            pkey_tbl_len: to_int(self.pkey_tbl_len),
            gid_tbl_len: to_int(self.gid_tbl_len),
            core_cap_flags: self.core_cap_flags,
            max_mad_size: self.max_mad_size,
        }
    }
}

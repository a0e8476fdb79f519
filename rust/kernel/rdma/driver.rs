// SPDX-License-Identifier: GPL-2.0

//! The operations an RDMA driver provides to ib_core (`struct ib_device_ops`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{
    ah::Ah,
    attr::{DeviceAttr, LinkLayer, PortAttr, PortImmutable},
    counter::Counter,
    cq::{Cq, CqEvents, CqInitAttr, CqModeration, NotifyFlags, WcWriter},
    device::{Device, NodeType},
    mr::{Access, Mr, MrCreated, SgMapper, UserRegion},
    mw::{Mw, MwType},
    pd::Pd,
    qp::{AhAttr, Qp, QpAttr, QpAttrMask, QpCreated, QpInitAttr, QpQuery},
    restrack::DriverAttrs,
    srq::{Srq, SrqAttr, SrqAttrMask, SrqEvents, SrqType},
    stats::{Desc, Scope},
    ucontext::{Ucontext, User},
    udata::UData,
    wr::{RecvWrs, SendWrs},
    DriverId,
};
use crate::{bindings, build_error, error::VTABLE_DEFAULT_ERROR, prelude::*, sync::Arc};
use core::marker::PhantomData;

/// An RDMA driver: the per-device data and the operations ib_core calls on its devices.
///
/// The implementing type is the driver's per-device data, reached from a [`Device<Self>`] by
/// dereference. Optional operations that the driver does not implement are left out of the C
/// operations table, so ib_core sees them as unsupported.
///
/// # Examples
///
/// A driver whose devices have one RoCE port and offer protection domains and nothing else;
/// `probe` allocates a device and registers it.
///
/// ```
/// use kernel::{c_str, prelude::*};
/// use kernel::rdma::{
///     attr::{core_caps, DeviceAttr, Mtu, PhysState, PortAttr, PortImmutable, PortState},
///     device::NodeType,
///     ucontext::User,
///     Device, Driver, DriverId,
/// };
///
/// struct Toy;
///
/// #[vtable]
/// impl Driver for Toy {
///     const DRIVER_ID: DriverId = DriverId::SRDMA;
///     const UVERBS_ABI_VERSION: u32 = 1;
///     const NODE_TYPE: NodeType = NodeType::IbCa;
///     type Ucontext = ();
///     type Pd = ();
///     type Cq = ();
///     type Qp = ();
///     type Mr = ();
///     type Srq = ();
///     type Ah = ();
///     type Mw = ();
///
///     fn query_device(_dev: &Device<Self>) -> Result<DeviceAttr> {
///         Ok(DeviceAttr { max_pd: 16, ..Default::default() })
///     }
///
///     fn query_port(_dev: &Device<Self>, _port: u32) -> Result<PortAttr> {
///         Ok(PortAttr {
///             state: PortState::Down,
///             phys_state: PhysState::Disabled,
///             max_mtu: Mtu::Mtu1024,
///             active_mtu: Mtu::Mtu1024,
///             phys_mtu: 1500,
///             gid_tbl_len: 1,
///             ip_gids: true,
///             port_cap_flags: 0,
///             max_msg_sz: 1 << 20,
///             pkey_tbl_len: 1,
///             active_width: 1,
///             active_speed: 1,
///             max_vl_num: 1,
///         })
///     }
///
///     fn port_immutable(_dev: &Device<Self>, _port: u32) -> Result<PortImmutable> {
///         Ok(PortImmutable {
///             pkey_tbl_len: 1,
///             gid_tbl_len: 1,
///             core_cap_flags: core_caps::ROCE_UDP_ENCAP,
///             max_mad_size: 0,
///         })
///     }
///
///     fn alloc_pd(_dev: &Device<Self>, _user: Option<User<'_, Self>>) -> Result<()> {
///         Ok(())
///     }
/// }
///
/// fn probe(module: &'static ThisModule) -> Result {
///     Device::alloc(module, Toy)?.register(c_str!("toy%d"))
/// }
/// # let _ = probe;
/// ```
#[vtable]
pub trait Driver: Sized + Send + Sync + 'static {
    /// The driver ID reported to userspace; rdma-core matches providers by it.
    const DRIVER_ID: DriverId;

    /// The version of the driver's user ABI (its uapi header), checked by its provider.
    const UVERBS_ABI_VERSION: u32;

    /// The kind of node the driver's devices are.
    const NODE_TYPE: NodeType;

    /// The driver's data of a user context.
    type Ucontext: Send + Sync;
    /// The driver's data of a protection domain.
    type Pd: Send + Sync;
    /// The driver's data of a completion queue.
    type Cq: Send + Sync;
    /// The driver's data of a queue pair.
    type Qp: Send + Sync;
    /// The driver's data of a memory region.
    type Mr: Send + Sync;
    /// The driver's data of a shared receive queue.
    type Srq: Send + Sync;
    /// The driver's data of an address handle.
    type Ah: Send + Sync;
    /// The driver's data of a memory window.
    type Mw: Send + Sync;

    /// Reports the device's attributes and limits (`query_device`).
    fn query_device(dev: &Device<Self>) -> Result<DeviceAttr>;

    /// Reports the attributes of port `port` (`query_port`); ports are numbered from 1.
    fn query_port(dev: &Device<Self>, port: u32) -> Result<PortAttr>;

    /// Reports the fixed attributes of port `port` (`get_port_immutable`); ib_core asks
    /// once, while registering the device.
    fn port_immutable(dev: &Device<Self>, port: u32) -> Result<PortImmutable>;

    /// Returns the link layer of port `port` (`get_link_layer`). Without it, ib_core derives
    /// the link layer from the node type, which says InfiniBand for a channel adapter.
    fn link_layer(_dev: &Device<Self>, _port: u32) -> LinkLayer {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver's part of a user context for a process opening the device
    /// (`alloc_ucontext`); the context is destroyed by dropping it, after all of the process's
    /// objects.
    fn alloc_ucontext(
        _dev: &Device<Self>,
        _ucontext: UcontextInit<'_, Self>,
        _udata: &mut UData<'_>,
    ) -> Result<Self::Ucontext> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver's part of a protection domain (`alloc_pd`); dropped on `dealloc_pd`.
    fn alloc_pd(_dev: &Device<Self>, _user: Option<User<'_, Self>>) -> Result<Self::Pd> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Names of the driver's own sysfs attributes of each device
    /// (`/sys/class/infiniband/<dev>/<name>`), at most [`super::device::MAX_SYSFS_ATTRS`]; they
    /// exist when [`Driver::sysfs_show`] is implemented, writable by root when
    /// [`Driver::sysfs_store`] is too.
    const SYSFS_ATTRS: &'static [&'static CStr] = &[];

    /// Writes the value of attribute `index` of [`Driver::SYSFS_ATTRS`] into `out` (one page)
    /// and returns its length.
    fn sysfs_show(_dev: &Device<Self>, _index: usize, _out: &mut [u8]) -> Result<usize> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Sets attribute `index` of [`Driver::SYSFS_ATTRS`] from what was written to it.
    fn sysfs_store(_dev: &Device<Self>, _index: usize, _input: &[u8]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver's part of a completion queue (`create_cq`) and returns it with the
    /// number of entries the CQ really has (at least `attr.cqe`); dropped on `destroy_cq`.
    ///
    /// `events` raises the CQ's completion and error events; the driver may keep it beyond the
    /// CQ's life (it turns inert when the CQ is destroyed).
    fn create_cq(
        _dev: &Device<Self>,
        _attr: &CqInitAttr,
        _events: Arc<CqEvents>,
        _user: Option<User<'_, Self>>,
    ) -> Result<(Self::Cq, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Arms a CQ for a completion event at its next completion, or its next solicited or error
    /// completion (`req_notify_cq`). Returns whether completions are waiting already, when
    /// `flags` asks for it ([`NotifyFlags::report_missed`]); `false` otherwise.
    fn req_notify_cq(_cq: &Cq<Self>, _flags: NotifyFlags) -> Result<bool> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Moves completions of a kernel caller's CQ into `wc` (`poll_cq`), as many as are there
    /// and fit.
    fn poll_cq(_cq: &Cq<Self>, _wc: &mut WcWriter<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Posts the send work requests of a kernel caller (`post_send`). On failure, the request
    /// last taken from `wrs` is the one reported as failed, and those before it were posted.
    fn post_send(_qp: &Qp<Self>, _wrs: &mut SendWrs<'_, Self>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Posts the receive work requests of a kernel caller (`post_recv`), reporting failures as
    /// [`Driver::post_send`] does.
    fn post_recv(_qp: &Qp<Self>, _wrs: &mut RecvWrs<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Posts receive work requests of a kernel caller to an SRQ (`post_srq_recv`).
    fn post_srq_recv(_srq: &Srq<Self>, _wrs: &mut RecvWrs<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Changes the number of entries of a CQ (`resize_cq`) and returns the number it really
    /// has now.
    fn resize_cq(_cq: &Cq<Self>, _cqe: u32, _user: Option<User<'_, Self>>) -> Result<u32> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Sets how a CQ moderates its completion events (`modify_cq`): an event waits for
    /// `moderation.count` completions or `moderation.period_us` microseconds after the first
    /// of them, whichever comes first.
    fn modify_cq(_cq: &Cq<Self>, _moderation: CqModeration) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Processes the work a process queued in the send queue of a user QP, after it rang the
    /// doorbell (the software "doorbell kick"): the driver method of the QP object whose method
    /// and only attribute (the QP's handle) both have the first ID of the driver name space
    /// (`UVERBS_ID_DRIVER_NS`), or the write command `POST_SEND` with no work request. A driver
    /// that implements this has both.
    fn post_send_user(_qp: &Qp<Self>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver's part of a queue pair (`create_qp`) in `pd`; dropped on
    /// `destroy_qp`.
    fn create_qp(
        _pd: &Pd<Self>,
        _attr: &QpInitAttr<'_, Self>,
        _user: Option<User<'_, Self>>,
    ) -> Result<QpCreated<Self::Qp>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Changes the attributes in `mask` of a QP (`modify_qp`), its state among them.
    fn modify_qp(
        _qp: &Qp<Self>,
        _attr: &QpAttr,
        _mask: QpAttrMask,
        _udata: Option<UData<'_>>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Returns the attributes of a QP (`query_qp`) with the capacities and signalling it was
    /// created with.
    fn query_qp(_qp: &Qp<Self>, _mask: QpAttrMask) -> Result<QpQuery> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Adds the driver's details of a QP to `rdma resource show qp -dd` (`fill_res_qp_entry`).
    fn fill_res_qp(_qp: &Qp<Self>, _attrs: &mut DriverAttrs<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Adds the driver's details of a CQ to `rdma resource show cq -dd` (`fill_res_cq_entry`).
    fn fill_res_cq(_cq: &Cq<Self>, _attrs: &mut DriverAttrs<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Adds the driver's details of an MR to `rdma resource show mr -dd` (`fill_res_mr_entry`).
    fn fill_res_mr(_mr: &Mr<Self>, _attrs: &mut DriverAttrs<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Registers user memory as a memory region of `pd` (`reg_user_mr`); dropped on
    /// `dereg_mr`.
    fn reg_user_mr(
        _pd: &Pd<Self>,
        _region: &UserRegion,
        _user: Option<User<'_, Self>>,
    ) -> Result<MrCreated<Self::Mr>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates a fast-register MR (`alloc_mr` of type `IB_MR_TYPE_MEM_REG`) for up to
    /// `max_num_sg` pages: kernel callers map pages into it with `ib_map_mr_sg`
    /// ([`Driver::map_mr_sg`]) and make it usable with an `IB_WR_REG_MR` work request.
    ///
    /// Only called for devices with virtual DMA; the pages arrive as
    /// [`KernelBuf`](super::mr::KernelBuf)s.
    fn alloc_fast_mr(_pd: &Pd<Self>, _max_num_sg: u32) -> Result<MrCreated<Self::Mr>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Maps the pages of a kernel caller's scatter/gather list into a fast-register MR
    /// (`map_mr_sg`), typically by [`SgMapper::map`]; returns the number of SG entries mapped.
    fn map_mr_sg(_mr: &Mr<Self>, _sg: SgMapper<'_, Self>) -> Result<u32> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Says whether an MR may be deregistered now (`dereg_mr`); an error keeps the MR and is
    /// what the deregistration returns. Without it every deregistration goes ahead.
    fn may_dereg_mr(_mr: &Mr<Self>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver's part of a memory window of type `mw_type` (`alloc_mw`) and
    /// returns it with the window's first rkey; dropped on `dealloc_mw`.
    fn alloc_mw(
        _pd: &Pd<Self>,
        _mw_type: MwType,
        _user: Option<User<'_, Self>>,
    ) -> Result<(Self::Mw, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the memory region of all kernel memory for kernel callers (`get_dma_mr`).
    ///
    /// Only called for devices with virtual DMA: the memory its SGEs name arrives with the
    /// work requests, as [`KernelBuf`](super::mr::KernelBuf)s.
    fn get_dma_mr(_pd: &Pd<Self>, _access: Access) -> Result<MrCreated<Self::Mr>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver's part of a shared receive queue (`create_srq`) and returns it with
    /// the attributes it really has; dropped on `destroy_srq`. `events` raises the SRQ's limit
    /// event; it turns inert when the SRQ is destroyed.
    fn create_srq(
        _pd: &Pd<Self>,
        _srq_type: SrqType,
        _attr: &SrqAttr,
        _events: Arc<SrqEvents>,
        _user: Option<User<'_, Self>>,
    ) -> Result<(Self::Srq, SrqAttr)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Changes the attributes in `mask` of an SRQ (`modify_srq`).
    fn modify_srq(
        _srq: &Srq<Self>,
        _attr: &SrqAttr,
        _mask: SrqAttrMask,
        _udata: Option<UData<'_>>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Returns the attributes of an SRQ (`query_srq`).
    fn query_srq(_srq: &Srq<Self>) -> Result<SrqAttr> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver's part of an address handle (`create_ah`, `create_user_ah`);
    /// dropped on `destroy_ah`.
    fn create_ah(
        _pd: &Pd<Self>,
        _attr: &AhAttr,
        _user: Option<User<'_, Self>>,
    ) -> Result<Self::Ah> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Returns entry `index` of the P_Key table of port `port` (`query_pkey`).
    fn query_pkey(_dev: &Device<Self>, _port: u32, _index: u16) -> Result<u16> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Names the counters of port `port` (`alloc_hw_port_stats`); ib_core asks while it
    /// registers the device, once for sysfs and once for its counter history, and frees what it
    /// allocated itself. [`Driver::get_hw_stats`] fills in the values.
    fn port_stats(_dev: &Device<Self>, _port: u32) -> &'static [Desc] {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Names the device-wide counters (`alloc_hw_device_stats`), for counters that belong to
    /// no single port.
    fn device_stats(_dev: &Device<Self>) -> &'static [Desc] {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Fills in `values`, one entry for each counter that [`Driver::port_stats`] (for
    /// [`Scope::Port`]) or [`Driver::device_stats`] (for [`Scope::Device`]) named, in the same
    /// order (`get_hw_stats`).
    fn get_hw_stats(_dev: &Device<Self>, _scope: Scope, _values: &mut [u64]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Binds `qp` to `counter` (`counter_bind_qp`): from now on what the QP counts shows in
    /// the counter instead of its port's own figures. A counter without an id is new, and the
    /// driver numbers it ([`Counter::set_id`]). Per-QP counters need all four counter
    /// operations and [`Driver::port_stats`], whose layout the counters' values share.
    fn counter_bind_qp(_counter: &mut Counter<'_, Self>, _qp: &Qp<Self>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Unbinds `qp` from `counter` (`counter_unbind_qp`): what it counted while bound stays
    /// in the counter, and from now on it counts in its port's own figures again.
    fn counter_unbind_qp(_counter: &Counter<'_, Self>, _qp: &Qp<Self>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Fills in the values of `counter` (`counter_update_stats`), in the order of
    /// [`Driver::port_stats`]: what its QPs counted while they were bound to it.
    fn counter_update_stats(_counter: &Counter<'_, Self>, _values: &mut [u64]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Lets go of `counter` (`counter_dealloc`): no QP is bound to it any more, and ib_core
    /// has added its last values to the port's history.
    fn counter_dealloc(_counter: &Counter<'_, Self>) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// A user context under construction, as passed to [`Driver::alloc_ucontext`]: it can already
/// publish memory for `mmap`.
pub struct UcontextInit<'a, T: Driver> {
    pub(crate) raw: *mut bindings::ib_ucontext,
    pub(crate) _p: core::marker::PhantomData<&'a T>,
}

impl<T: Driver> UcontextInit<'_, T> {
    /// Publishes `pages` to the process; see [`Ucontext::insert_mmap`].
    pub fn insert_mmap(
        &self,
        pages: crate::sync::Arc<super::mmap::SharedPages>,
    ) -> Result<super::mmap::MmapEntry> {
        // SAFETY: `raw` is the context being created, valid for `'a`; `Adapter<T>` maps and
        // frees entries as `MmapEntry::insert` requires.
        unsafe { super::mmap::MmapEntry::insert(self.raw, pages) }
    }
}

/// An entry of the operations table: the trampoline if the driver implements the operation,
/// else none, which ib_core takes as "not supported".
macro_rules! op {
    ($has:expr, $trampoline:expr) => {
        if $has {
            Some($trampoline)
        } else {
            None
        }
    };
}

/// Builds the C operations table of driver `T`. The trampolines, which turn ib_core's calls
/// into calls of the driver's [`Driver`] methods, are beside the objects they serve
/// (`cq.rs` for the CQ operations, and so on), each in an `impl Adapter<T>` block.
pub(crate) struct Adapter<T: Driver>(PhantomData<T>);

impl<T: Driver> Adapter<T> {
    /// Whether `T` keeps per-QP counters: all four operations, and the port counters whose
    /// layout theirs share.
    const HAS_COUNTERS: bool = T::HAS_COUNTER_BIND_QP
        && T::HAS_COUNTER_UNBIND_QP
        && T::HAS_COUNTER_UPDATE_STATS
        && T::HAS_COUNTER_DEALLOC
        && T::HAS_PORT_STATS
        && T::HAS_GET_HW_STATS;

    /// The operations table; [`Device::alloc`] copies it into each device and sets its owner.
    pub(crate) const OPS: bindings::ib_device_ops = bindings::ib_device_ops {
        driver_id: T::DRIVER_ID.as_raw(),
        uverbs_abi_ver: T::UVERBS_ABI_VERSION,
        size_ib_ucontext: core::mem::size_of::<Ucontext<T>>(),
        size_ib_pd: core::mem::size_of::<Pd<T>>(),
        size_ib_cq: core::mem::size_of::<Cq<T>>(),
        size_ib_qp: core::mem::size_of::<Qp<T>>(),
        size_ib_srq: core::mem::size_of::<Srq<T>>(),
        size_ib_ah: core::mem::size_of::<Ah<T>>(),
        size_ib_mw: core::mem::size_of::<Mw<T>>(),
        alloc_mw: op!(T::HAS_ALLOC_MW, Self::alloc_mw),
        dealloc_mw: op!(T::HAS_ALLOC_MW, Self::dealloc_mw),
        reg_user_mr: op!(T::HAS_REG_USER_MR, Self::reg_user_mr),
        get_dma_mr: op!(T::HAS_GET_DMA_MR, Self::get_dma_mr),
        alloc_mr: op!(T::HAS_ALLOC_FAST_MR, Self::alloc_mr),
        map_mr_sg: op!(T::HAS_MAP_MR_SG, Self::map_mr_sg),
        dereg_mr: op!(
            T::HAS_REG_USER_MR || T::HAS_GET_DMA_MR || T::HAS_ALLOC_FAST_MR,
            Self::dereg_mr
        ),
        create_srq: op!(T::HAS_CREATE_SRQ, Self::create_srq),
        destroy_srq: op!(T::HAS_CREATE_SRQ, Self::destroy_srq),
        modify_srq: op!(T::HAS_MODIFY_SRQ, Self::modify_srq),
        query_srq: op!(T::HAS_QUERY_SRQ, Self::query_srq),
        create_ah: op!(T::HAS_CREATE_AH, Self::create_ah),
        create_user_ah: op!(T::HAS_CREATE_AH, Self::create_ah),
        destroy_ah: op!(T::HAS_CREATE_AH, Self::destroy_ah),
        resize_cq: op!(T::HAS_RESIZE_CQ, Self::resize_cq),
        modify_cq: op!(T::HAS_MODIFY_CQ, Self::modify_cq),
        post_send: op!(T::HAS_POST_SEND_USER || T::HAS_POST_SEND, Self::post_send),
        post_recv: op!(T::HAS_POST_SEND_USER || T::HAS_POST_RECV, Self::post_recv),
        post_srq_recv: op!(T::HAS_POST_SRQ_RECV, Self::post_srq_recv),
        poll_cq: op!(T::HAS_POLL_CQ, Self::poll_cq),
        req_notify_cq: op!(T::HAS_REQ_NOTIFY_CQ, Self::req_notify_cq),
        create_qp: op!(T::HAS_CREATE_QP, Self::create_qp),
        destroy_qp: op!(T::HAS_CREATE_QP, Self::destroy_qp),
        modify_qp: op!(T::HAS_MODIFY_QP, Self::modify_qp),
        query_qp: op!(T::HAS_QUERY_QP, Self::query_qp),
        fill_res_qp_entry: op!(T::HAS_FILL_RES_QP, Self::fill_res_qp_entry),
        fill_res_cq_entry: op!(T::HAS_FILL_RES_CQ, Self::fill_res_cq_entry),
        fill_res_mr_entry: op!(T::HAS_FILL_RES_MR, Self::fill_res_mr_entry),
        alloc_ucontext: op!(T::HAS_ALLOC_UCONTEXT, Self::alloc_ucontext),
        dealloc_ucontext: op!(T::HAS_ALLOC_UCONTEXT, Self::dealloc_ucontext),
        mmap: op!(T::HAS_ALLOC_UCONTEXT, Self::mmap),
        mmap_free: op!(T::HAS_ALLOC_UCONTEXT, Self::mmap_free),
        alloc_pd: op!(T::HAS_ALLOC_PD, Self::alloc_pd),
        dealloc_pd: op!(T::HAS_ALLOC_PD, Self::dealloc_pd),
        create_cq: op!(T::HAS_CREATE_CQ, Self::create_cq),
        destroy_cq: op!(T::HAS_CREATE_CQ, Self::destroy_cq),
        dealloc_driver: Some(Self::dealloc_driver),
        query_device: Some(Self::query_device),
        query_port: Some(Self::query_port),
        get_port_immutable: Some(Self::get_port_immutable),
        get_link_layer: op!(T::HAS_LINK_LAYER, Self::get_link_layer),
        query_pkey: op!(T::HAS_QUERY_PKEY, Self::query_pkey),
        alloc_hw_port_stats: op!(
            T::HAS_PORT_STATS && T::HAS_GET_HW_STATS,
            Self::alloc_hw_port_stats
        ),
        alloc_hw_device_stats: op!(
            T::HAS_DEVICE_STATS && T::HAS_GET_HW_STATS,
            Self::alloc_hw_device_stats
        ),
        get_hw_stats: op!(T::HAS_GET_HW_STATS, Self::get_hw_stats),
        counter_bind_qp: op!(Self::HAS_COUNTERS, Self::counter_bind_qp),
        counter_unbind_qp: op!(Self::HAS_COUNTERS, Self::counter_unbind_qp),
        counter_dealloc: op!(Self::HAS_COUNTERS, Self::counter_dealloc),
        counter_alloc_stats: op!(Self::HAS_COUNTERS, Self::counter_alloc_stats),
        counter_update_stats: op!(Self::HAS_COUNTERS, Self::counter_update_stats),
        // SAFETY: The table holds only pointers and integers; zero means "not provided".
        ..unsafe { core::mem::MaybeUninit::<bindings::ib_device_ops>::zeroed().assume_init() }
    };

    /// # Safety
    ///
    /// ib_core calls this once per device of `T`, after which it makes no other call.
    unsafe extern "C" fn dealloc_driver(ibdev: *mut bindings::ib_device) {
        let dev = ibdev.cast::<Device<T>>();
        // SAFETY: The ops of `T` are only installed on devices allocated by `Device::<T>::alloc`
        // with initialised data, and ib_core calls `dealloc_driver` exactly once per device.
        unsafe { Device::drop_data(dev) };
    }
}

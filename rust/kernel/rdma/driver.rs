// SPDX-License-Identifier: GPL-2.0

//! The operations an RDMA driver provides to ib_core (`struct ib_device_ops`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{
    ah::Ah,
    attr::{DeviceAttr, LinkLayer, PortAttr, PortImmutable},
    counter::Counter,
    cq::{Cq, CqEvents, CqFlags, CqInitAttr, CqModeration, NotifyFlags, WcWriter},
    device::Device,
    mmap::EntryInner,
    mr::{self, Mr, MrCreated, SgMapper, UserRegion},
    mw::{Mw, MwType},
    pd::Pd,
    qp::{self, AhAttr, Qp, QpAttr, QpAttrMask, QpCreated, QpInitAttr, QpQuery},
    restrack::DriverAttrs,
    srq::{Srq, SrqAttr, SrqAttrMask, SrqEvents, SrqType},
    stats::{self, Desc, Scope},
    ucontext::{Ucontext, User},
    udata::UData,
    wr::{RecvWrs, SendWrs},
    DriverId,
};
use crate::{
    bindings, build_error,
    error::{from_result, VTABLE_DEFAULT_ERROR},
    prelude::*,
    sync::Arc,
};
use core::{marker::PhantomData, ptr::NonNull};

/// An RDMA driver: the per-device data and the operations ib_core calls on its devices.
///
/// The implementing type is the driver's per-device data, reached from a [`Device<Self>`] by
/// dereference. Optional operations that the driver does not implement are left out of the C
/// operations table, so ib_core sees them as unsupported.
#[vtable]
pub trait Driver: Sized + Send + Sync + 'static {
    /// The driver ID reported to userspace; rdma-core matches providers by it.
    const DRIVER_ID: DriverId;

    /// The version of the driver's user ABI (its uapi header), checked by its provider.
    const UVERBS_ABI_VERSION: u32;

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
    /// doorbell (`post_send` with no work requests, the software "doorbell kick").
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
    /// [`KernelBuf`](mr::KernelBuf)s.
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
    /// work requests, as [`KernelBuf`](mr::KernelBuf)s.
    fn get_dma_mr(_pd: &Pd<Self>, _access: u32) -> Result<MrCreated<Self::Mr>> {
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
    raw: *mut bindings::ib_ucontext,
    _p: core::marker::PhantomData<&'a T>,
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

/// Builds the C operations table of driver `T` and holds its trampolines.
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
        alloc_mw: if T::HAS_ALLOC_MW {
            Some(Self::alloc_mw)
        } else {
            None
        },
        dealloc_mw: if T::HAS_ALLOC_MW {
            Some(Self::dealloc_mw)
        } else {
            None
        },
        reg_user_mr: if T::HAS_REG_USER_MR {
            Some(Self::reg_user_mr)
        } else {
            None
        },
        get_dma_mr: if T::HAS_GET_DMA_MR {
            Some(Self::get_dma_mr)
        } else {
            None
        },
        alloc_mr: if T::HAS_ALLOC_FAST_MR {
            Some(Self::alloc_mr)
        } else {
            None
        },
        map_mr_sg: if T::HAS_MAP_MR_SG {
            Some(Self::map_mr_sg)
        } else {
            None
        },
        dereg_mr: if T::HAS_REG_USER_MR || T::HAS_GET_DMA_MR || T::HAS_ALLOC_FAST_MR {
            Some(Self::dereg_mr)
        } else {
            None
        },
        create_srq: if T::HAS_CREATE_SRQ {
            Some(Self::create_srq)
        } else {
            None
        },
        destroy_srq: if T::HAS_CREATE_SRQ {
            Some(Self::destroy_srq)
        } else {
            None
        },
        modify_srq: if T::HAS_MODIFY_SRQ {
            Some(Self::modify_srq)
        } else {
            None
        },
        query_srq: if T::HAS_QUERY_SRQ {
            Some(Self::query_srq)
        } else {
            None
        },
        create_ah: if T::HAS_CREATE_AH {
            Some(Self::create_ah)
        } else {
            None
        },
        create_user_ah: if T::HAS_CREATE_AH {
            Some(Self::create_ah)
        } else {
            None
        },
        destroy_ah: if T::HAS_CREATE_AH {
            Some(Self::destroy_ah)
        } else {
            None
        },
        resize_cq: if T::HAS_RESIZE_CQ {
            Some(Self::resize_cq)
        } else {
            None
        },
        modify_cq: if T::HAS_MODIFY_CQ {
            Some(Self::modify_cq)
        } else {
            None
        },
        post_send: if T::HAS_POST_SEND_USER || T::HAS_POST_SEND {
            Some(Self::post_send)
        } else {
            None
        },
        post_recv: if T::HAS_POST_SEND_USER || T::HAS_POST_RECV {
            Some(Self::post_recv)
        } else {
            None
        },
        post_srq_recv: if T::HAS_POST_SRQ_RECV {
            Some(Self::post_srq_recv)
        } else {
            None
        },
        poll_cq: if T::HAS_POLL_CQ {
            Some(Self::poll_cq)
        } else {
            None
        },
        req_notify_cq: if T::HAS_REQ_NOTIFY_CQ {
            Some(Self::req_notify_cq)
        } else {
            None
        },
        create_qp: if T::HAS_CREATE_QP {
            Some(Self::create_qp)
        } else {
            None
        },
        destroy_qp: if T::HAS_CREATE_QP {
            Some(Self::destroy_qp)
        } else {
            None
        },
        modify_qp: if T::HAS_MODIFY_QP {
            Some(Self::modify_qp)
        } else {
            None
        },
        query_qp: if T::HAS_QUERY_QP {
            Some(Self::query_qp)
        } else {
            None
        },
        fill_res_qp_entry: if T::HAS_FILL_RES_QP {
            Some(Self::fill_res_qp_entry)
        } else {
            None
        },
        fill_res_cq_entry: if T::HAS_FILL_RES_CQ {
            Some(Self::fill_res_cq_entry)
        } else {
            None
        },
        fill_res_mr_entry: if T::HAS_FILL_RES_MR {
            Some(Self::fill_res_mr_entry)
        } else {
            None
        },
        alloc_ucontext: if T::HAS_ALLOC_UCONTEXT {
            Some(Self::alloc_ucontext)
        } else {
            None
        },
        dealloc_ucontext: if T::HAS_ALLOC_UCONTEXT {
            Some(Self::dealloc_ucontext)
        } else {
            None
        },
        mmap: if T::HAS_ALLOC_UCONTEXT {
            Some(Self::mmap)
        } else {
            None
        },
        mmap_free: if T::HAS_ALLOC_UCONTEXT {
            Some(Self::mmap_free)
        } else {
            None
        },
        alloc_pd: if T::HAS_ALLOC_PD {
            Some(Self::alloc_pd)
        } else {
            None
        },
        dealloc_pd: if T::HAS_ALLOC_PD {
            Some(Self::dealloc_pd)
        } else {
            None
        },
        create_cq: if T::HAS_CREATE_CQ {
            Some(Self::create_cq)
        } else {
            None
        },
        destroy_cq: if T::HAS_CREATE_CQ {
            Some(Self::destroy_cq)
        } else {
            None
        },
        dealloc_driver: Some(Self::dealloc_driver),
        query_device: Some(Self::query_device),
        query_port: Some(Self::query_port),
        get_port_immutable: Some(Self::get_port_immutable),
        get_link_layer: if T::HAS_LINK_LAYER {
            Some(Self::get_link_layer)
        } else {
            None
        },
        query_pkey: if T::HAS_QUERY_PKEY {
            Some(Self::query_pkey)
        } else {
            None
        },
        alloc_hw_port_stats: if T::HAS_PORT_STATS && T::HAS_GET_HW_STATS {
            Some(Self::alloc_hw_port_stats)
        } else {
            None
        },
        alloc_hw_device_stats: if T::HAS_DEVICE_STATS && T::HAS_GET_HW_STATS {
            Some(Self::alloc_hw_device_stats)
        } else {
            None
        },
        get_hw_stats: if T::HAS_GET_HW_STATS {
            Some(Self::get_hw_stats)
        } else {
            None
        },
        counter_bind_qp: if Self::HAS_COUNTERS {
            Some(Self::counter_bind_qp)
        } else {
            None
        },
        counter_unbind_qp: if Self::HAS_COUNTERS {
            Some(Self::counter_unbind_qp)
        } else {
            None
        },
        counter_dealloc: if Self::HAS_COUNTERS {
            Some(Self::counter_dealloc)
        } else {
            None
        },
        counter_alloc_stats: if Self::HAS_COUNTERS {
            Some(Self::counter_alloc_stats)
        } else {
            None
        },
        counter_update_stats: if Self::HAS_COUNTERS {
            Some(Self::counter_update_stats)
        } else {
            None
        },
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

    /// # Safety
    ///
    /// `ibdev` is a live device of `T`, as ib_core guarantees.
    unsafe extern "C" fn alloc_hw_port_stats(
        ibdev: *mut bindings::ib_device,
        port: u32,
    ) -> *mut bindings::rdma_hw_stats {
        // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
        let dev = unsafe { Device::<T>::from_raw(ibdev) };
        stats::alloc(T::port_stats(dev, port))
    }

    /// # Safety
    ///
    /// `ibdev` is a live device of `T`, as ib_core guarantees.
    unsafe extern "C" fn alloc_hw_device_stats(
        ibdev: *mut bindings::ib_device,
    ) -> *mut bindings::rdma_hw_stats {
        // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
        let dev = unsafe { Device::<T>::from_raw(ibdev) };
        stats::alloc(T::device_stats(dev))
    }

    /// # Safety
    ///
    /// `ibdev` is a live device of `T` and `stats` one of the counter sets that
    /// `alloc_hw_port_stats` (for `port` > 0) or `alloc_hw_device_stats` (for `port` 0) made for
    /// it, whose values no one else accesses during the call (ib_core holds `stats->lock`, or
    /// is still setting the counters up).
    unsafe extern "C" fn get_hw_stats(
        ibdev: *mut bindings::ib_device,
        stats: *mut bindings::rdma_hw_stats,
        port: u32,
        _index: crate::ffi::c_int,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
            let dev = unsafe { Device::<T>::from_raw(ibdev) };
            if stats.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: `stats` came from `stats::alloc` through our allocation operations and
            // its values are ours for the call.
            let values = unsafe { stats::values(stats) };
            T::get_hw_stats(dev, Scope::from_port(port), values)?;
            // All counters are filled in, whatever `index` asked for: ib_core then keeps them
            // for the lifespan.
            Ok(values.len() as crate::ffi::c_int)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a live QP of `T` and a live counter of its device, and holds the
    /// counter's lock.
    unsafe extern "C" fn counter_bind_qp(
        counter: *mut bindings::rdma_counter,
        ibqp: *mut bindings::ib_qp,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live counter of a `T` device; ib_core's lock keeps others off its id.
            let mut c = unsafe { Counter::<T>::from_raw(counter) };
            // SAFETY: A live QP of `T`.
            let q = unsafe { Qp::<T>::from_raw(ibqp) };
            T::counter_bind_qp(&mut c, q)?;
            // SAFETY: The driver records the binding in the QP, where ib_core looks for it
            // (the contract of `counter_bind_qp`), under the counter's lock.
            unsafe { (*ibqp).counter = counter };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a live QP of `T` bound to a counter, and holds that counter's lock.
    unsafe extern "C" fn counter_unbind_qp(ibqp: *mut bindings::ib_qp) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live QP of `T`.
            let q = unsafe { Qp::<T>::from_raw(ibqp) };
            // SAFETY: As above; `counter` is what `counter_bind_qp` recorded.
            let counter = unsafe { (*ibqp).counter };
            if counter.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: The QP's counter is live while the QP is bound to it, and its lock held.
            let c = unsafe { Counter::<T>::from_raw(counter) };
            T::counter_unbind_qp(&c, q)?;
            // SAFETY: As in `counter_bind_qp`: the binding recorded where ib_core looks.
            unsafe { (*ibqp).counter = core::ptr::null_mut() };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a counter of a device of `T` that no QP is bound to, as it frees it.
    unsafe extern "C" fn counter_dealloc(
        counter: *mut bindings::rdma_counter,
    ) -> crate::ffi::c_int {
        // SAFETY: A live counter of a `T` device that no one else uses any more.
        let c = unsafe { Counter::<T>::from_raw(counter) };
        T::counter_dealloc(&c);
        0
    }

    /// # Safety
    ///
    /// ib_core passes a new counter of a device of `T`.
    unsafe extern "C" fn counter_alloc_stats(
        counter: *mut bindings::rdma_counter,
    ) -> *mut bindings::rdma_hw_stats {
        // SAFETY: A live counter of a `T` device.
        let c = unsafe { Counter::<T>::from_raw(counter) };
        // ib_core adds a counter's values to its port's by index: the layouts are one.
        stats::alloc(T::port_stats(c.device(), c.port()))
    }

    /// # Safety
    ///
    /// ib_core passes a counter of a device of `T` whose values `counter_alloc_stats` made,
    /// and holds the counter's lock, under which alone the values are written.
    unsafe extern "C" fn counter_update_stats(
        counter: *mut bindings::rdma_counter,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live counter of a `T` device.
            let c = unsafe { Counter::<T>::from_raw(counter) };
            // SAFETY: As above.
            let stats = unsafe { (*c.raw()).stats };
            if stats.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: `stats` came from `stats::alloc` in `counter_alloc_stats`, and its values
            // are written only under the counter's lock, which ib_core holds.
            let values = unsafe { stats::values(stats) };
            T::counter_update_stats(&c, values)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ibdev` is a live device of `T` and `attr` and `udata` are valid, as ib_core guarantees.
    unsafe extern "C" fn query_device(
        ibdev: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: `udata`, if not null, is a valid `ib_udata` for the duration of the call.
            if let Some(udata) = unsafe { udata.as_ref() } {
                // No driver-specific query data is defined.
                if udata.inlen != 0 || udata.outlen != 0 {
                    return Err(EINVAL);
                }
            }
            // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
            let dev = unsafe { Device::<T>::from_raw(ibdev) };
            let value = T::query_device(dev)?.to_raw();
            // SAFETY: `attr` is valid for writes.
            unsafe { attr.write(value) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ibdev` is a live device of `T` and `attr` is valid, as ib_core guarantees.
    unsafe extern "C" fn query_port(
        ibdev: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
            let dev = unsafe { Device::<T>::from_raw(ibdev) };
            let value = T::query_port(dev, port)?.to_raw();
            // SAFETY: `attr` is valid for writes.
            unsafe { attr.write(value) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ibdev` is a live device of `T` and `imm` is valid, as ib_core guarantees.
    unsafe extern "C" fn get_port_immutable(
        ibdev: *mut bindings::ib_device,
        port: u32,
        imm: *mut bindings::ib_port_immutable,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
            let dev = unsafe { Device::<T>::from_raw(ibdev) };
            let value = T::port_immutable(dev, port)?.to_raw();
            // SAFETY: `imm` is valid for writes.
            unsafe { imm.write(value) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ibdev` is a live device of `T`, as ib_core guarantees.
    unsafe extern "C" fn get_link_layer(
        ibdev: *mut bindings::ib_device,
        port: u32,
    ) -> bindings::rdma_link_layer {
        // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
        let dev = unsafe { Device::<T>::from_raw(ibdev) };
        T::link_layer(dev, port) as bindings::rdma_link_layer
    }

    /// # Safety
    ///
    /// `ibdev` is a live device of `T` and `pkey` is valid, as ib_core guarantees.
    unsafe extern "C" fn query_pkey(
        ibdev: *mut bindings::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
            let dev = unsafe { Device::<T>::from_raw(ibdev) };
            let value = T::query_pkey(dev, port, index)?;
            // SAFETY: `pkey` is valid for writes.
            unsafe { pkey.write(value) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a zeroed context of `size_ib_ucontext` bytes on a device of `T`, and a
    /// valid `udata`.
    unsafe extern "C" fn alloc_ucontext(
        ibuctx: *mut bindings::ib_ucontext,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core sets `device` to the device the context is opened on, a `T` one.
            let dev = unsafe { Device::<T>::from_raw((*ibuctx).device) };
            // SAFETY: `udata` is the command's valid driver data.
            let mut udata = unsafe { UData::from_raw(udata) }.ok_or(EINVAL)?;
            let init = UcontextInit {
                raw: ibuctx,
                _p: PhantomData,
            };
            let data = T::alloc_ucontext(dev, init, &mut udata)?;
            // SAFETY: ib_core just allocated the object; its destroy operation drops the data.
            unsafe { Ucontext::<T>::init_data(ibuctx, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core calls this once for a context that `alloc_ucontext` initialised.
    unsafe extern "C" fn dealloc_ucontext(ibuctx: *mut bindings::ib_ucontext) {
        // SAFETY: ib_core destroys an object whose create operation initialised the data.
        unsafe { Ucontext::<T>::drop_data(ibuctx) };
    }

    /// # Safety
    ///
    /// ib_core passes a live context of `T` and the VMA being mapped.
    unsafe extern "C" fn mmap(
        ibuctx: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> crate::ffi::c_int {
        // SAFETY: Looks the offset up in the context's table; it also checks that the VMA's
        // length equals the entry's.
        let rdma = unsafe { bindings::rdma_user_mmap_entry_get(ibuctx, vma) };
        if rdma.is_null() {
            return EINVAL.to_errno();
        }
        // SAFETY: `Ucontext::insert_mmap` is the only way entries get into a `T` context.
        let entry = unsafe { EntryInner::from_raw(rdma) };
        // SAFETY: The pages are a `vmalloc_user` allocation of exactly the VMA's length.
        let ret = unsafe { bindings::remap_vmalloc_range(vma, entry.pages.as_ptr().cast(), 0) };
        // SAFETY: Drops the reference taken by `rdma_user_mmap_entry_get`; the VMA keeps its own.
        unsafe { bindings::rdma_user_mmap_entry_put(rdma) };
        ret
    }

    /// # Safety
    ///
    /// ib_core calls this once, when the last reference to an entry is gone.
    unsafe extern "C" fn mmap_free(rdma: *mut bindings::rdma_user_mmap_entry) {
        // SAFETY: Entries of `T` contexts are `EntryInner`s and this is the last reference.
        unsafe { EntryInner::free(rdma) };
    }

    /// # Safety
    ///
    /// ib_core passes a zeroed PD of `size_ib_pd` bytes on a device of `T`, and `udata` null
    /// (kernel caller) or valid.
    unsafe extern "C" fn alloc_pd(
        ibpd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core sets `device` before calling the driver.
            let dev = unsafe { Device::<T>::from_raw((*ibpd).device) };
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            let data = T::alloc_pd(dev, user)?;
            // SAFETY: ib_core just allocated the object; its destroy operation drops the data.
            unsafe { Pd::<T>::init_data(ibpd, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core calls this once for a PD that `alloc_pd` initialised.
    unsafe extern "C" fn dealloc_pd(
        ibpd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: ib_core destroys an object whose create operation initialised the data.
        unsafe { Pd::<T>::drop_data(ibpd) };
        0
    }

    /// # Safety
    ///
    /// ib_core passes a zeroed CQ of `size_ib_cq` bytes on a device of `T`, valid attributes,
    /// and `attrs` null (kernel caller) or a valid command bundle.
    unsafe extern "C" fn create_cq(
        ibcq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core sets `device` before calling the driver.
            let dev = unsafe { Device::<T>::from_raw((*ibcq).device) };
            // SAFETY: `attr` is valid for the call.
            let attr = unsafe {
                CqInitAttr {
                    cqe: (*attr).cqe,
                    comp_vector: (*attr).comp_vector,
                    flags: CqFlags::from_raw((*attr).flags),
                }
            };
            let udata = if attrs.is_null() {
                core::ptr::null_mut()
            } else {
                // SAFETY: `attrs` is a valid bundle; its driver data is inside it.
                unsafe { bindings::uverbs_attr_bundle_udata(attrs) }
            };
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            // SAFETY: ib_core passes a valid CQ.
            let events = Arc::pin_init(
                CqEvents::new(unsafe { NonNull::new_unchecked(ibcq) }),
                GFP_KERNEL,
            )?;
            let (data, cqe) = match T::create_cq(dev, &attr, events.clone(), user) {
                Ok(created) => created,
                Err(e) => {
                    // ib_core frees the CQ without `destroy_cq`: copies the driver kept must
                    // not reach it.
                    events.revoke();
                    return Err(e);
                }
            };
            // SAFETY: ib_core just allocated the CQ (`destroy_cq` drops the data and the
            // events); `cqe` is ours to set during creation.
            unsafe {
                Cq::<T>::extra_slot(ibcq).write(Some(events));
                Cq::<T>::init_data(ibcq, data);
                (*ibcq).cqe = i32::try_from(cqe).unwrap_or(i32::MAX);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core calls this once for a CQ that `create_cq` initialised.
    unsafe extern "C" fn destroy_cq(
        ibcq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: `create_cq` set the events of the CQ; nothing else touches the slot.
        if let Some(events) = unsafe { (*Cq::<T>::extra_slot(ibcq)).take() } {
            // No handler runs for the CQ once this returns, wherever the driver keeps copies.
            events.revoke();
        }
        // SAFETY: ib_core destroys an object whose create operation initialised the data.
        unsafe { Cq::<T>::drop_data(ibcq) };
        0
    }

    /// # Safety
    ///
    /// ib_core passes a live CQ of `T`.
    unsafe extern "C" fn req_notify_cq(
        ibcq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> crate::ffi::c_int {
        // SAFETY: A live CQ of `T`.
        let cq = unsafe { Cq::<T>::from_raw(ibcq) };
        from_result(|| T::req_notify_cq(cq, NotifyFlags(flags)).map(i32::from))
    }

    /// # Safety
    ///
    /// ib_core passes a live CQ of `T` and room for `num_entries` completions at `wc`.
    unsafe extern "C" fn poll_cq(
        ibcq: *mut bindings::ib_cq,
        num_entries: crate::ffi::c_int,
        wc: *mut bindings::ib_wc,
    ) -> crate::ffi::c_int {
        let Ok(n) = usize::try_from(num_entries) else {
            return 0;
        };
        if n == 0 || wc.is_null() {
            return 0;
        }
        // SAFETY: A live CQ of `T`.
        let cq = unsafe { Cq::<T>::from_raw(ibcq) };
        // SAFETY: The caller provides `num_entries` entries at `wc`, ours for the call.
        let mut out = WcWriter::new(unsafe { core::slice::from_raw_parts_mut(wc, n) });
        from_result(|| {
            T::poll_cq(cq, &mut out)?;
            Ok(out.written() as i32)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a zeroed QP of `size_ib_qp` bytes whose `device`, `pd` and CQs are set,
    /// valid attributes, and `udata` null (kernel caller) or valid.
    unsafe extern "C" fn create_qp(
        ibqp: *mut bindings::ib_qp,
        init: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core sets `pd` before calling the driver; it is a PD of this device.
            let pd = unsafe { Pd::<T>::from_raw((*ibqp).pd) };
            // SAFETY: ib_core passes a valid QP.
            let qp_ptr = unsafe { NonNull::new_unchecked(ibqp) };
            // SAFETY: `init` is what ib_core passes for this QP of a `T` device, valid for the
            // call; `attr` is used only during it.
            let attr = unsafe { qp::init_attr_from_raw::<T>(qp_ptr, &*init) };
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            let created = T::create_qp(pd, &attr, user)?;
            // SAFETY: ib_core just allocated the QP (`destroy_qp` drops the data); the QP
            // number and the real capacities are the driver's to report during creation.
            unsafe {
                Qp::<T>::init_data(ibqp, created.data);
                (*ibqp).qp_num = created.qp_num;
                qp::write_init_attr(&created.cap, attr.sq_sig_all, &mut *init);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core calls this once for a QP that `create_qp` initialised.
    unsafe extern "C" fn destroy_qp(
        ibqp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: ib_core destroys an object whose create operation initialised the data.
        unsafe { Qp::<T>::drop_data(ibqp) };
        0
    }

    /// # Safety
    ///
    /// ib_core passes a live QP of `T` and valid attributes.
    unsafe extern "C" fn modify_qp(
        ibqp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: crate::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live QP of `T`.
            let q = unsafe { Qp::<T>::from_raw(ibqp) };
            let mask = QpAttrMask(mask as u32);
            // SAFETY: `attr` is valid for the call.
            let attr = QpAttr::from_raw(unsafe { &*attr }, mask).ok_or(EINVAL)?;
            // SAFETY: `udata` is null or valid for the call.
            let udata = unsafe { UData::from_raw(udata) };
            T::modify_qp(q, &attr, mask, udata)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a live QP of `T` and valid output structures.
    unsafe extern "C" fn query_qp(
        ibqp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: crate::ffi::c_int,
        init: *mut bindings::ib_qp_init_attr,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live QP of `T`.
            let q = unsafe { Qp::<T>::from_raw(ibqp) };
            let found = T::query_qp(q, QpAttrMask(mask as u32))?;
            // SAFETY: Both outputs are valid for writes.
            unsafe {
                found.attr.write_raw(&mut *attr);
                qp::write_init_attr(&found.cap, found.sq_sig_all, &mut *init);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a live PD of `T` and `udata` null or valid.
    unsafe extern "C" fn reg_user_mr(
        ibpd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        iova: u64,
        access: crate::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        let reg = || -> Result<*mut bindings::ib_mr> {
            // SAFETY: A live PD of `T`.
            let pd = unsafe { Pd::<T>::from_raw(ibpd) };
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            let region = UserRegion {
                start,
                length,
                iova,
                access: access as u32,
            };
            Mr::<T>::into_raw(T::reg_user_mr(pd, &region, user)?)
        };
        match reg() {
            Ok(mr) => mr,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// ib_core passes a live kernel PD of `T`.
    unsafe extern "C" fn get_dma_mr(
        ibpd: *mut bindings::ib_pd,
        access: crate::ffi::c_int,
    ) -> *mut bindings::ib_mr {
        // SAFETY: A live PD of `T`.
        let pd = unsafe { Pd::<T>::from_raw(ibpd) };
        let created = if mr::uses_virt_dma(pd.device()) {
            T::get_dma_mr(pd, access as u32)
        } else {
            Err(EOPNOTSUPP)
        };
        match created.and_then(Mr::<T>::into_raw) {
            Ok(mr) => mr,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// ib_core passes a live PD of `T`.
    unsafe extern "C" fn alloc_mr(
        ibpd: *mut bindings::ib_pd,
        mr_type: bindings::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut bindings::ib_mr {
        let alloc = || -> Result<*mut bindings::ib_mr> {
            if mr_type != bindings::ib_mr_type_IB_MR_TYPE_MEM_REG {
                return Err(EOPNOTSUPP);
            }
            // SAFETY: A live PD of `T`.
            let pd = unsafe { Pd::<T>::from_raw(ibpd) };
            if !mr::uses_virt_dma(pd.device()) {
                return Err(EOPNOTSUPP);
            }
            Mr::<T>::into_raw(T::alloc_fast_mr(pd, max_num_sg)?)
        };
        match alloc() {
            Ok(mr) => mr,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// ib_core passes an MR that `alloc_mr` made (only those are mapped), a DMA-mapped list
    /// of `sg_nents` entries and `sg_offset` null or valid.
    unsafe extern "C" fn map_mr_sg(
        ibmr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        sg_nents: crate::ffi::c_int,
        sg_offset: *mut crate::ffi::c_uint,
    ) -> crate::ffi::c_int {
        // SAFETY: The MR came from `Mr::<T>::into_raw` and is alive.
        let mr = unsafe { &*ibmr.cast::<Mr<T>>() };
        // SAFETY: ib_core's arguments, for a fast-register MR of `T`.
        let mapper = unsafe { SgMapper::new(mr, sg, sg_nents, sg_offset) };
        match T::map_mr_sg(mr, mapper) {
            Ok(n) => i32::try_from(n).unwrap_or(i32::MAX),
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// ib_core calls this once for an MR made by `reg_user_mr`, `get_dma_mr` or `alloc_mr`.
    unsafe extern "C" fn dereg_mr(
        ibmr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        if T::HAS_MAY_DEREG_MR {
            // SAFETY: The MR came from `Mr::<T>::into_raw` and is alive until freed below.
            let mr = unsafe { &*ibmr.cast::<Mr<T>>() };
            if let Err(e) = T::may_dereg_mr(mr) {
                return e.to_errno();
            }
        }
        // SAFETY: The MR came from `Mr::<T>::into_raw` and ib_core is done with it.
        unsafe { Mr::<T>::free(ibmr) };
        0
    }

    /// # Safety
    ///
    /// ib_core passes a zeroed window of `size_ib_mw` bytes whose `device`, `pd` and `type` are
    /// set, and `udata` null or valid.
    unsafe extern "C" fn alloc_mw(
        ibmw: *mut bindings::ib_mw,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core sets `pd` and `type` before calling the driver.
            let (pd, mw_type) = unsafe { (Pd::<T>::from_raw((*ibmw).pd), (*ibmw).type_) };
            let mw_type = MwType::from_raw(mw_type).ok_or(EINVAL)?;
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            let (data, rkey) = T::alloc_mw(pd, mw_type, user)?;
            // SAFETY: ib_core just allocated the object; `dealloc_mw` drops the data. The rkey
            // is the driver's to set before ib_core reports it.
            unsafe {
                Mw::<T>::init_data(ibmw, data);
                (*ibmw).rkey = rkey;
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core calls this once for a window that `alloc_mw` initialised.
    unsafe extern "C" fn dealloc_mw(ibmw: *mut bindings::ib_mw) -> crate::ffi::c_int {
        // SAFETY: ib_core destroys an object whose create operation initialised the data.
        unsafe { Mw::<T>::drop_data(ibmw) };
        0
    }

    /// # Safety
    ///
    /// ib_core passes a zeroed SRQ of `size_ib_srq` bytes whose `device` and `pd` are set,
    /// valid attributes, and `udata` null or valid.
    unsafe extern "C" fn create_srq(
        ibsrq: *mut bindings::ib_srq,
        init: *mut bindings::ib_srq_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core sets `pd` before calling the driver.
            let pd = unsafe { Pd::<T>::from_raw((*ibsrq).pd) };
            // SAFETY: `init` is valid for the call.
            let (srq_type, attr) = unsafe {
                (
                    SrqType::from_raw((*init).srq_type),
                    SrqAttr::from_raw(&(*init).attr),
                )
            };
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            // SAFETY: ib_core passes a valid SRQ.
            let events = Arc::pin_init(
                SrqEvents::new(unsafe { NonNull::new_unchecked(ibsrq) }),
                GFP_KERNEL,
            )?;
            let (data, real) = match T::create_srq(pd, srq_type, &attr, events.clone(), user) {
                Ok(created) => created,
                Err(e) => {
                    // ib_core frees the SRQ without `destroy_srq`.
                    events.revoke();
                    return Err(e);
                }
            };
            // SAFETY: ib_core just allocated the SRQ (`destroy_srq` drops the data and the
            // events); the real attributes are reported back through `init`.
            unsafe {
                Srq::<T>::extra_slot(ibsrq).write(Some(events));
                Srq::<T>::init_data(ibsrq, data);
                real.write_raw(&mut (*init).attr);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core calls this once for an SRQ that `create_srq` initialised.
    unsafe extern "C" fn destroy_srq(
        ibsrq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: `create_srq` set the events of the SRQ; nothing else touches the slot.
        if let Some(events) = unsafe { (*Srq::<T>::extra_slot(ibsrq)).take() } {
            events.revoke();
        }
        // SAFETY: ib_core destroys an object whose create operation initialised the data.
        unsafe { Srq::<T>::drop_data(ibsrq) };
        0
    }

    /// # Safety
    ///
    /// ib_core passes a live SRQ of `T` and valid attributes.
    unsafe extern "C" fn modify_srq(
        ibsrq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
        mask: bindings::ib_srq_attr_mask,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live SRQ of `T`.
            let srq = unsafe { Srq::<T>::from_raw(ibsrq) };
            // SAFETY: `attr` is valid for the call.
            let attr = SrqAttr::from_raw(unsafe { &*attr });
            // SAFETY: `udata` is null or valid for the call.
            let udata = unsafe { UData::from_raw(udata) };
            T::modify_srq(srq, &attr, SrqAttrMask(mask), udata)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a live SRQ of `T` and a valid output.
    unsafe extern "C" fn query_srq(
        ibsrq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live SRQ of `T`.
            let srq = unsafe { Srq::<T>::from_raw(ibsrq) };
            let value = T::query_srq(srq)?;
            // SAFETY: `attr` is valid for writes.
            value.write_raw(unsafe { &mut *attr });
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a zeroed AH of `size_ib_ah` bytes whose `device` and `pd` are set, valid
    /// attributes, and `udata` null or valid.
    unsafe extern "C" fn create_ah(
        ibah: *mut bindings::ib_ah,
        init: *mut bindings::rdma_ah_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core sets `pd` before calling the driver.
            let pd = unsafe { Pd::<T>::from_raw((*ibah).pd) };
            // SAFETY: `init` and its `ah_attr` are valid for the call.
            let attr = AhAttr::from_raw(unsafe { &*(*init).ah_attr }).ok_or(EINVAL)?;
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            let data = T::create_ah(pd, &attr, user)?;
            // SAFETY: ib_core just allocated the object; its destroy operation drops the data.
            unsafe { Ah::<T>::init_data(ibah, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core calls this once for an AH that `create_ah` initialised.
    unsafe extern "C" fn destroy_ah(ibah: *mut bindings::ib_ah, _flags: u32) -> crate::ffi::c_int {
        // SAFETY: ib_core destroys an object whose create operation initialised the data.
        unsafe { Ah::<T>::drop_data(ibah) };
        0
    }

    /// # Safety
    ///
    /// ib_core passes a live CQ of `T` and `udata` null or valid.
    unsafe extern "C" fn resize_cq(
        ibcq: *mut bindings::ib_cq,
        cqe: crate::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live CQ of `T`.
            let cq = unsafe { Cq::<T>::from_raw(ibcq) };
            let cqe = u32::try_from(cqe).map_err(|_| EINVAL)?;
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            let real = T::resize_cq(cq, cqe, user)?;
            // SAFETY: ib_core serialises resizes of a CQ; `cqe` reports the new size.
            unsafe { (*ibcq).cqe = i32::try_from(real).unwrap_or(i32::MAX) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a live CQ of `T`.
    unsafe extern "C" fn modify_cq(
        ibcq: *mut bindings::ib_cq,
        count: u16,
        period: u16,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live CQ of `T`.
            let cq = unsafe { Cq::<T>::from_raw(ibcq) };
            T::modify_cq(
                cq,
                CqModeration {
                    count,
                    period_us: period,
                },
            )?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a live QP of `T`, a work request list (null for a doorbell kick) and a
    /// valid `bad_wr`.
    unsafe extern "C" fn post_send(
        ibqp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> crate::ffi::c_int {
        // SAFETY: A live QP of `T`.
        let q = unsafe { Qp::<T>::from_raw(ibqp) };
        let (ret, bad) = if q.is_user() {
            // User QPs are driven by their rings: a list of work requests is not for them.
            let ret = if !wr.is_null() || !T::HAS_POST_SEND_USER {
                EINVAL.to_errno()
            } else {
                from_result(|| T::post_send_user(q).map(|()| 0))
            };
            (ret, wr)
        } else if T::HAS_POST_SEND {
            let ud = matches!(q.qp_type(), qp::QpType::Ud | qp::QpType::Gsi);
            let virt = mr::uses_virt_dma(q.device());
            // SAFETY: A kernel caller's valid list; `ud` says whether it holds `ib_ud_wr`s,
            // `virt` whether the device uses virtual DMA.
            let mut wrs = unsafe { SendWrs::<T>::new(wr, ud, virt) };
            let ret = from_result(|| T::post_send(q, &mut wrs).map(|()| 0));
            (ret, wrs.current)
        } else {
            (EOPNOTSUPP.to_errno(), wr)
        };
        if ret != 0 {
            // SAFETY: `bad_wr` is valid for writes.
            unsafe { *bad_wr = bad };
        }
        ret
    }

    /// # Safety
    ///
    /// ib_core passes a live QP of `T`, a work request list and a valid `bad_wr`.
    unsafe extern "C" fn post_recv(
        ibqp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> crate::ffi::c_int {
        // SAFETY: A live QP of `T`.
        let q = unsafe { Qp::<T>::from_raw(ibqp) };
        // User QPs post receives into their rings, without the kernel.
        let (ret, bad) = if !q.is_user() && T::HAS_POST_RECV {
            let virt = mr::uses_virt_dma(q.device());
            // SAFETY: A kernel caller's valid list; `virt` says whether the device uses
            // virtual DMA.
            let mut wrs = unsafe { RecvWrs::new(wr, virt) };
            let ret = from_result(|| T::post_recv(q, &mut wrs).map(|()| 0));
            (ret, wrs.current)
        } else {
            (EINVAL.to_errno(), wr)
        };
        if ret != 0 {
            // SAFETY: `bad_wr` is valid for writes.
            unsafe { *bad_wr = bad };
        }
        ret
    }

    /// # Safety
    ///
    /// ib_core passes a live SRQ of `T`, a work request list and a valid `bad_wr`.
    unsafe extern "C" fn post_srq_recv(
        ibsrq: *mut bindings::ib_srq,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> crate::ffi::c_int {
        // SAFETY: A live SRQ of `T`.
        let srq = unsafe { Srq::<T>::from_raw(ibsrq) };
        // User SRQs take receives in their rings, without the kernel.
        let (ret, bad) = if srq.is_user() {
            (EINVAL.to_errno(), wr)
        } else {
            let virt = mr::uses_virt_dma(srq.device());
            // SAFETY: A kernel caller's valid list; `virt` says whether the device uses
            // virtual DMA.
            let mut wrs = unsafe { RecvWrs::new(wr, virt) };
            let ret = from_result(|| T::post_srq_recv(srq, &mut wrs).map(|()| 0));
            (ret, wrs.current)
        };
        if ret != 0 {
            // SAFETY: `bad_wr` is valid for writes.
            unsafe { *bad_wr = bad };
        }
        ret
    }
}

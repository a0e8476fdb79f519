// SPDX-License-Identifier: GPL-2.0-only

//! An srdma device: its attributes, its port, and how the port follows the network device.

use crate::params::*;
use crate::{
    ah::SrdmaAh,
    counters::{Counter, DeviceCounters, DESCS},
    cq::SrdmaCq,
    doorbell::{new_pool, DbPool},
    keys::Keys,
    limits::{Kind, Limits},
    mr::{MrShared, SrdmaMr},
    mw::{MwShared, SrdmaMw},
    pd::{Owner, SrdmaPd},
    poller::Poller,
    qp::{QpShared, SrdmaQp, QPN_MAX, QPN_MIN},
    srq::SrdmaSrq,
    table::{new_table, Table},
    ucontext::SrdmaUcontext,
    worker::Worker,
};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::{
    c_str, fmt, kthread, net,
    net::udp_tunnel::Tunnel,
    prelude::*,
    ratelimit::Ratelimit,
    rdma::{
        self,
        attr::{
            core_caps, device_caps, kernel_caps, port_caps, AtomicCap, DeviceAttr, LinkLayer, Mtu,
            PhysState, PortAttr, PortImmutable, PortState, MGMT_MAD_SIZE,
        },
        counter::Counter as QpCounter,
        cq::{Cq, CqEvents, CqInitAttr, CqModeration, NotifyFlags, WcWriter},
        driver::UcontextInit,
        mr::{Access, Mr, MrCreated, SgMapper, UserRegion},
        mw::MwType,
        pd::Pd,
        qp::{AhAttr, Qp, QpAttr, QpAttrMask, QpCreated, QpInitAttr, QpQuery},
        restrack::DriverAttrs,
        srq::{Srq, SrqAttr, SrqAttrMask, SrqEvents, SrqType},
        stats::{Desc, Scope},
        uapi::{SRDMA_ABI_VERSION, SRDMA_DB_MODE_KICK, SRDMA_DB_MODE_POLL},
        ucontext::User,
        udata::UData,
        wr::{RecvWrs, SendWrs},
        Device, PortEvent,
    },
    str::CString,
    sync::Arc,
    types::ARef,
    workqueue::{OwnedQueue, Queue, QueueFlags},
};

/// The time slice of a device's receive thread: the shortest the scheduler allows.
const RX_SLICE_NS: u64 = 100_000;

/// The only port of an srdma device.
pub(crate) const PORT: u32 = 1;

/// The per-device state of srdma.
pub(crate) struct SrdmaDevice {
    /// Where the device's engine work items run (posted kernel work, retries). First, with
    /// the poller's queue and the receive thread, so that dropping the device drains the queues
    /// (their last runs find the device unregistered) and stops the thread before anything
    /// else goes.
    queue: OwnedQueue,
    /// Where the doorbell poller runs. Not on the engine's queue: its workers have the
    /// highest priority, and a poller that busy-polls there would starve the CPU's
    /// applications.
    poll_queue: OwnedQueue,
    /// Where the packets from the wire go to the responder and completer: the device's
    /// receive engine, a thread of its own at nice -20 with the shortest time slice. A woken
    /// worker of the default slice, even at nice -20, waits until a busy-polling application
    /// on its CPU has used its slice (a tick or more); one with a shorter slice preempts it.
    /// A real-time thread would too, but is woken on the CPU it last ran on even when another
    /// is idle, and with it small messages on the wire went slower.
    _rx_thread: kthread::Thread,
    /// The node GUID, EUI-64 from the network device's MAC address, in wire order.
    guid: [u8; 8],
    /// Whether the port was last reported active, so each transition is reported once.
    port_active: AtomicBool,
    /// The ID of the next CQ.
    next_cq_id: AtomicU32,
    /// The QPs of the device by number.
    qps: Table<QpShared>,
    /// The MRs and memory windows of the device by key, which its QPs hold too.
    keys: Arc<Keys>,
    /// The doorbell records of kernel callers' queues (never mapped).
    kernel_db: DbPool,
    /// Processes the work that kernel callers post.
    worker: Arc<Worker>,
    /// Watches the doorbells of poll-mode contexts.
    poller: Arc<Poller>,
    /// The doorbell mode (`SRDMA_DB_MODE_*`) of new contexts; the `doorbell_mode` attribute.
    doorbell_mode: AtomicU32,
    /// The live objects, within the limits the device advertises.
    limits: Arc<Limits>,
    /// The hardware counters that destroyed QPs left behind; live QPs count in their own.
    counters: Arc<DeviceCounters>,
    /// What processes do wrong is logged at most this often (the kernel's default limit), so
    /// that no process floods the log; named after the device (`log.rs`).
    log_limit: Arc<Ratelimit>,
    /// The device's use of the RoCEv2 port in the namespace of its network device (none if
    /// something else holds the port there).
    _tunnel: Option<Tunnel>,
}

impl Drop for SrdmaDevice {
    fn drop(&mut self) {
        // The device is unregistered: no retry is armed any more, and the one that may be
        // ends before the queue drains.
        self.worker.stop();
    }
}

impl SrdmaDevice {
    pub(crate) fn new(
        name: &CStr,
        guid: [u8; 8],
        port_active: bool,
        ndev: ARef<net::device::Device>,
        tunnel: Option<Tunnel>,
    ) -> Result<Self> {
        let worker = Worker::new(ndev.clone())?;
        Ok(Self {
            // The engine stands in for a NIC: at normal priority a busy-polling application
            // on the worker's CPU keeps received packets waiting for a scheduler slice or more.
            queue: OwnedQueue::new(
                c_str!("srdma"),
                QueueFlags::UNBOUND | QueueFlags::HIGHPRI,
                0,
            )?,
            poll_queue: OwnedQueue::new(c_str!("srdma_poll"), QueueFlags::UNBOUND, 0)?,
            _rx_thread: {
                let w = worker.clone();
                let rx = kthread::Thread::spawn(
                    &CString::try_from_fmt(fmt!("{name}-rx"))?,
                    move |running| w.receive(running),
                )?;
                rx.set_normal_slice(-20, RX_SLICE_NS)?;
                rx
            },
            kernel_db: new_pool()?,
            worker,
            poller: Poller::new(ndev)?,
            doorbell_mode: AtomicU32::new(default_doorbell_mode()),
            guid,
            port_active: AtomicBool::new(port_active),
            next_cq_id: AtomicU32::new(0),
            qps: new_table(QPN_MIN, QPN_MAX)?,
            keys: Keys::new()?,
            counters: DeviceCounters::new()?,
            limits: Limits::new()?,
            log_limit: Arc::pin_init(Ratelimit::default_for(name), GFP_KERNEL)?,
            _tunnel: tunnel,
        })
    }

    pub(crate) fn qps(&self) -> &Table<QpShared> {
        &self.qps
    }

    pub(crate) fn keys(&self) -> &Arc<Keys> {
        &self.keys
    }

    pub(crate) fn mrs(&self) -> &Table<MrShared> {
        &self.keys.mrs
    }

    pub(crate) fn mws(&self) -> &Table<MwShared> {
        &self.keys.mws
    }

    pub(crate) fn kernel_db(&self) -> &DbPool {
        &self.kernel_db
    }

    pub(crate) fn queue(&self) -> &Queue {
        &self.queue
    }

    pub(crate) fn poll_queue(&self) -> &Queue {
        &self.poll_queue
    }

    pub(crate) fn worker(&self) -> &Arc<Worker> {
        &self.worker
    }

    pub(crate) fn poller(&self) -> &Arc<Poller> {
        &self.poller
    }

    pub(crate) fn doorbell_mode(&self) -> u32 {
        self.doorbell_mode.load(Ordering::Relaxed)
    }

    pub(crate) fn limits(&self) -> &Arc<Limits> {
        &self.limits
    }

    pub(crate) fn log_limit(&self) -> &Arc<Ratelimit> {
        &self.log_limit
    }

    pub(crate) fn counters(&self) -> &Arc<DeviceCounters> {
        &self.counters
    }

    pub(crate) fn next_cq_id(&self) -> u32 {
        self.next_cq_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// Returns the modified EUI-64 that IPv6 (and so RoCE) derives from a MAC address.
pub(crate) fn eui64_from_mac(mac: [u8; 6]) -> [u8; 8] {
    [
        mac[0] ^ 2,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ]
}

/// Whether traffic can flow through `ndev`: administratively up with a carrier.
pub(crate) fn link_usable(ndev: &net::device::Device) -> bool {
    ndev.is_running() && ndev.carrier_ok()
}

/// Re-reads the state of the network device of `dev` and reports a port event if the port
/// became active or stopped being active.
pub(crate) fn update_port_state(dev: &Device<SrdmaDevice>) {
    let active = dev.netdev(PORT).is_some_and(|ndev| link_usable(&ndev));
    if dev.port_active.swap(active, Ordering::Relaxed) != active {
        let event = if active {
            PortEvent::Active
        } else {
            PortEvent::Err
        };
        dev.dispatch_port_event(PORT, event);
    }
}

#[vtable]
impl rdma::Driver for SrdmaDevice {
    const DRIVER_ID: rdma::DriverId = rdma::DriverId::SRDMA;
    const NODE_TYPE: rdma::device::NodeType = rdma::device::NodeType::IbCa;
    const UVERBS_ABI_VERSION: u32 = SRDMA_ABI_VERSION;

    type Ucontext = SrdmaUcontext;
    type Pd = SrdmaPd;
    type Cq = SrdmaCq;
    type Qp = SrdmaQp;
    type Mr = SrdmaMr;
    type Srq = SrdmaSrq;
    type Ah = SrdmaAh;
    type Mw = SrdmaMw;

    fn alloc_ucontext(
        dev: &Device<Self>,
        ucontext: UcontextInit<'_, Self>,
        udata: &mut UData<'_>,
    ) -> Result<SrdmaUcontext> {
        SrdmaUcontext::new(dev, ucontext, udata)
    }

    const SYSFS_ATTRS: &'static [&'static CStr] = &[kernel::c_str!("doorbell_mode")];

    fn sysfs_show(dev: &Device<Self>, _index: usize, out: &mut [u8]) -> Result<usize> {
        let text: &[u8] = if dev.doorbell_mode() == SRDMA_DB_MODE_POLL {
            b"poll\n"
        } else {
            b"kick\n"
        };
        out.get_mut(..text.len())
            .ok_or(EINVAL)?
            .copy_from_slice(text);
        Ok(text.len())
    }

    fn sysfs_store(dev: &Device<Self>, _index: usize, input: &[u8]) -> Result {
        let mode = match input.strip_suffix(b"\n").unwrap_or(input) {
            b"kick" => SRDMA_DB_MODE_KICK,
            b"poll" => SRDMA_DB_MODE_POLL,
            _ => return Err(EINVAL),
        };
        // Contexts keep the mode they were opened with; new ones get this one.
        dev.doorbell_mode.store(mode, Ordering::Relaxed);
        Ok(())
    }

    fn alloc_pd(dev: &Device<Self>, user: Option<User<'_, Self>>) -> Result<SrdmaPd> {
        let owner = if user.is_some() {
            Owner::User
        } else {
            Owner::Kernel
        };
        SrdmaPd::new(owner, dev.limits.charge(Kind::Pd)?)
    }

    fn reg_user_mr(
        pd: &Pd<Self>,
        region: &UserRegion,
        user: Option<User<'_, Self>>,
    ) -> Result<MrCreated<SrdmaMr>> {
        SrdmaMr::reg_user(pd, region, user)
    }

    fn get_dma_mr(pd: &Pd<Self>, access: Access) -> Result<MrCreated<SrdmaMr>> {
        SrdmaMr::dma(pd, access)
    }

    fn alloc_fast_mr(pd: &Pd<Self>, max_num_sg: u32) -> Result<MrCreated<SrdmaMr>> {
        SrdmaMr::fast(pd, max_num_sg)
    }

    fn map_mr_sg(mr: &Mr<Self>, sg: SgMapper<'_, Self>) -> Result<u32> {
        SrdmaMr::map_sg(mr, sg)
    }

    fn may_dereg_mr(mr: &Mr<Self>) -> Result {
        mr.may_dereg()
    }

    fn alloc_mw(
        pd: &Pd<Self>,
        mw_type: MwType,
        user: Option<User<'_, Self>>,
    ) -> Result<(SrdmaMw, u32)> {
        SrdmaMw::new(pd, mw_type, user)
    }

    fn create_srq(
        pd: &Pd<Self>,
        srq_type: SrqType,
        attr: &SrqAttr,
        events: Arc<SrqEvents>,
        user: Option<User<'_, Self>>,
    ) -> Result<(SrdmaSrq, SrqAttr)> {
        SrdmaSrq::new(pd, srq_type, attr, events, user)
    }

    fn modify_srq(
        srq: &Srq<Self>,
        attr: &SrqAttr,
        mask: SrqAttrMask,
        udata: Option<UData<'_>>,
    ) -> Result {
        SrdmaSrq::modify(srq, attr, mask, udata)
    }

    fn query_srq(srq: &Srq<Self>) -> Result<SrqAttr> {
        SrdmaSrq::query(srq)
    }

    fn create_ah(pd: &Pd<Self>, attr: &AhAttr, user: Option<User<'_, Self>>) -> Result<SrdmaAh> {
        SrdmaAh::new(pd, attr, user)
    }

    fn create_cq(
        dev: &Device<Self>,
        attr: &CqInitAttr,
        events: Arc<CqEvents>,
        user: Option<User<'_, Self>>,
    ) -> Result<(SrdmaCq, u32)> {
        SrdmaCq::new(dev, attr, events, user)
    }

    fn req_notify_cq(cq: &Cq<Self>, flags: NotifyFlags) -> Result<bool> {
        cq.shared.arm(flags)
    }

    fn poll_cq(cq: &Cq<Self>, wc: &mut WcWriter<'_>) -> Result {
        cq.shared.poll(wc)
    }

    fn post_send(qp: &Qp<Self>, wrs: &mut SendWrs<'_, Self>) -> Result {
        crate::kverbs::post_send(qp, wrs)
    }

    fn post_recv(qp: &Qp<Self>, wrs: &mut RecvWrs<'_>) -> Result {
        crate::kverbs::post_recv(qp, wrs)
    }

    fn post_srq_recv(srq: &Srq<Self>, wrs: &mut RecvWrs<'_>) -> Result {
        crate::kverbs::post_srq_recv(srq, wrs)
    }

    fn query_device(dev: &Device<Self>) -> Result<DeviceAttr> {
        Ok(DeviceAttr {
            sys_image_guid: u64::from_ne_bytes(dev.guid),
            max_mr_size: MAX_MR_SIZE,
            page_size_cap: PAGE_SIZE_CAP,
            vendor_id: VENDOR_ID,
            vendor_part_id: VENDOR_PART_ID,
            max_qp: MAX_QP,
            max_qp_wr: MAX_QP_WR,
            device_cap_flags: device_caps::PORT_ACTIVE_EVENT
                | device_caps::SYS_IMAGE_GUID
                | device_caps::RC_RNR_NAK_GEN
                | device_caps::CURR_QP_STATE_MOD
                | device_caps::MEM_WINDOW
                | device_caps::MEM_WINDOW_TYPE_2B
                | device_caps::MEM_MGT_EXTENSIONS
                | device_caps::ATOMIC_WRITE,
            kernel_cap_flags: kernel_caps::ALLOW_USER_UNREG,
            max_send_sge: MAX_SGE,
            max_recv_sge: MAX_SGE,
            max_sge_rd: MAX_SGE,
            max_cq: MAX_CQ,
            max_cqe: MAX_CQE,
            max_mr: MAX_MR,
            max_mw: MAX_MW,
            max_fast_reg_page_list_len: MAX_FAST_REG_PAGES,
            max_pd: MAX_PD,
            max_qp_rd_atom: MAX_RD_ATOM,
            max_qp_init_rd_atom: MAX_RD_ATOM,
            max_res_rd_atom: MAX_RD_ATOM.saturating_mul(MAX_QP),
            atomic_cap: AtomicCap::Hca,
            max_ah: MAX_AH,
            max_srq: MAX_SRQ,
            max_srq_wr: MAX_SRQ_WR,
            max_srq_sge: MAX_SGE,
            max_pkeys: 1,
            local_ca_ack_delay: 15,
            // Completion timestamps are CLOCK_MONOTONIC nanoseconds (cq.rs): a 1 GHz clock of
            // 64 bits.
            timestamp_mask: u64::MAX,
            hca_core_clock: 1_000_000,
            // Any count, and periods up to 65 ms: an hrtimer has no hardware field's width.
            max_cq_moderation_count: u16::MAX,
            max_cq_moderation_period: u16::MAX,
            ..DeviceAttr::default()
        })
    }

    fn resize_cq(cq: &Cq<Self>, cqe: u32, user: Option<User<'_, Self>>) -> Result<u32> {
        SrdmaCq::resize(cq, cqe, user)
    }

    fn modify_cq(cq: &Cq<Self>, moderation: CqModeration) -> Result {
        cq.shared.set_moderation(moderation);
        Ok(())
    }

    fn post_send_user(qp: &Qp<Self>) -> Result {
        let result = crate::req::kick(qp);
        let dev = qp.device();
        if qp.shared.ctx_db.is_some() && dev.poller.wake(&dev.poll_queue) {
            qp.device().counters.inc(Counter::PollerWakeups);
        }
        result
    }

    fn create_qp(
        pd: &Pd<Self>,
        attr: &QpInitAttr<'_, Self>,
        user: Option<User<'_, Self>>,
    ) -> Result<QpCreated<SrdmaQp>> {
        SrdmaQp::new(pd, attr, user)
    }

    fn modify_qp(
        qp: &Qp<Self>,
        attr: &QpAttr,
        mask: QpAttrMask,
        udata: Option<UData<'_>>,
    ) -> Result {
        let result = SrdmaQp::modify(qp, attr, mask, udata);
        // The kicks that found the SQ held by the modify.
        let _ = crate::req::run_kicked(qp.device(), &qp.shared, crate::req::Runner::Engine);
        result
    }

    fn query_qp(qp: &Qp<Self>, mask: QpAttrMask) -> Result<QpQuery> {
        SrdmaQp::query(qp, mask)
    }

    fn fill_res_qp(qp: &Qp<Self>, attrs: &mut DriverAttrs<'_>) -> Result {
        crate::res::qp(qp, attrs)
    }

    fn fill_res_cq(cq: &Cq<Self>, attrs: &mut DriverAttrs<'_>) -> Result {
        crate::res::cq(cq, attrs)
    }

    fn fill_res_mr(mr: &Mr<Self>, attrs: &mut DriverAttrs<'_>) -> Result {
        crate::res::mr(mr, attrs)
    }

    fn query_port(dev: &Device<Self>, port: u32) -> Result<PortAttr> {
        if port != PORT {
            return Err(EINVAL);
        }
        let ndev = dev.netdev(PORT);
        let (state, phys_state) = match &ndev {
            Some(ndev) if link_usable(ndev) => (PortState::Active, PhysState::LinkUp),
            Some(ndev) if ndev.is_running() => (PortState::Down, PhysState::Polling),
            _ => (PortState::Down, PhysState::Disabled),
        };
        let phys_mtu = ndev.as_ref().map_or(0, |n| n.mtu());
        let active_mtu = Mtu::for_roce(phys_mtu).unwrap_or(Mtu::Mtu256);
        // The speed comes from ethtool; a device without link settings reports the slowest.
        let (active_speed, active_width) = dev.eth_speed(PORT).unwrap_or((1, 1));
        Ok(PortAttr {
            state,
            phys_state,
            max_mtu: Mtu::Mtu4096,
            active_mtu,
            phys_mtu,
            gid_tbl_len: GID_TBL_LEN,
            ip_gids: true,
            port_cap_flags: port_caps::CM_SUP,
            max_msg_sz: MAX_MSG_SZ,
            pkey_tbl_len: 1,
            active_width,
            active_speed,
            max_vl_num: 1,
        })
    }

    fn port_immutable(_dev: &Device<Self>, port: u32) -> Result<PortImmutable> {
        if port != PORT {
            return Err(EINVAL);
        }
        Ok(PortImmutable {
            pkey_tbl_len: 1,
            gid_tbl_len: GID_TBL_LEN,
            core_cap_flags: core_caps::ROCE_UDP_ENCAP,
            max_mad_size: MGMT_MAD_SIZE,
        })
    }

    fn link_layer(_dev: &Device<Self>, _port: u32) -> LinkLayer {
        LinkLayer::Ethernet
    }

    fn query_pkey(_dev: &Device<Self>, port: u32, index: u16) -> Result<u16> {
        if port != PORT || index != 0 {
            return Err(EINVAL);
        }
        Ok(DEFAULT_PKEY)
    }

    fn port_stats(_dev: &Device<Self>, _port: u32) -> &'static [Desc] {
        &DESCS
    }

    fn get_hw_stats(dev: &Device<Self>, scope: Scope, values: &mut [u64]) -> Result {
        if scope != Scope::Port(PORT) {
            return Err(EINVAL);
        }
        dev.counters.read(&dev.qps, values);
        Ok(())
    }

    fn counter_bind_qp(counter: &mut QpCounter<'_, Self>, qp: &Qp<Self>) -> Result {
        let id = qp.device().counters.bind(&qp.shared, counter.id())?;
        counter.set_id(id);
        Ok(())
    }

    fn counter_unbind_qp(_counter: &QpCounter<'_, Self>, qp: &Qp<Self>) -> Result {
        qp.device().counters.unbind(&qp.shared)
    }

    fn counter_update_stats(counter: &QpCounter<'_, Self>, values: &mut [u64]) -> Result {
        let dev = counter.device();
        let id = counter.id().ok_or(EINVAL)?;
        dev.counters.counter_values(&dev.qps, id, values)
    }

    fn counter_dealloc(counter: &QpCounter<'_, Self>) {
        if let Some(id) = counter.id() {
            counter.device().counters.drop_counter(id);
        }
    }
}

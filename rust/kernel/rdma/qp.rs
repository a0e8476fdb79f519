// SPDX-License-Identifier: GPL-2.0

//! Queue pairs (`struct ib_qp`) and their attributes.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{
    cq::Cq,
    driver::{Adapter, Driver},
    mr::Access,
    pd::Pd,
    srq::Srq,
    ucontext::User,
    udata::UData,
};
use crate::{
    bindings,
    error::{code::EINVAL, from_result},
    new_spinlock, pin_init,
    prelude::*,
    sync::{Arc, SpinLock},
};
use core::ptr::NonNull;

super::typed::c_enum! {
    /// The state of a QP (`enum ib_qp_state`).
    #[derive(Default)]
    pub enum QpState: u32 {
        /// Newly created or reset: no work is processed.
        #[default]
        Reset = bindings::ib_qp_state_IB_QPS_RESET,
        /// Initialised: receives may be posted.
        Init = bindings::ib_qp_state_IB_QPS_INIT,
        /// Ready to receive.
        Rtr = bindings::ib_qp_state_IB_QPS_RTR,
        /// Ready to send.
        Rts = bindings::ib_qp_state_IB_QPS_RTS,
        /// Send queue drained.
        Sqd = bindings::ib_qp_state_IB_QPS_SQD,
        /// Send queue error (UC and UD).
        Sqe = bindings::ib_qp_state_IB_QPS_SQE,
        /// Error: work requests are flushed.
        Err = bindings::ib_qp_state_IB_QPS_ERR,
    }
}

/// The transport type of a QP (`enum ib_qp_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpType {
    /// The subnet management QP (QP0).
    Smi,
    /// The general services QP (QP1).
    Gsi,
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
    /// Any other type, with its raw value.
    Other(u32),
}

impl QpType {
    fn from_raw(raw: u32) -> Self {
        match raw {
            bindings::ib_qp_type_IB_QPT_SMI => Self::Smi,
            bindings::ib_qp_type_IB_QPT_GSI => Self::Gsi,
            bindings::ib_qp_type_IB_QPT_RC => Self::Rc,
            bindings::ib_qp_type_IB_QPT_UC => Self::Uc,
            bindings::ib_qp_type_IB_QPT_UD => Self::Ud,
            other => Self::Other(other),
        }
    }

    fn as_raw(self) -> u32 {
        match self {
            Self::Smi => bindings::ib_qp_type_IB_QPT_SMI,
            Self::Gsi => bindings::ib_qp_type_IB_QPT_GSI,
            Self::Rc => bindings::ib_qp_type_IB_QPT_RC,
            Self::Uc => bindings::ib_qp_type_IB_QPT_UC,
            Self::Ud => bindings::ib_qp_type_IB_QPT_UD,
            Self::Other(raw) => raw,
        }
    }
}

/// What `query_qp` reports of a QP: its attributes, and the capacities and signalling it was
/// created with.
#[derive(Clone, Copy, Debug)]
pub struct QpQuery {
    /// The current attributes (`struct ib_qp_attr`).
    pub attr: QpAttr,
    /// The capacities of its queues.
    pub cap: QpCap,
    /// Whether every send work request completes with a CQE (`IB_SIGNAL_ALL_WR`).
    pub sq_sig_all: bool,
}

/// The capacities of a QP's queues (`struct ib_qp_cap`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpCap {
    /// Work requests in the send queue.
    pub max_send_wr: u32,
    /// Work requests in the receive queue.
    pub max_recv_wr: u32,
    /// Scatter/gather entries per send work request.
    pub max_send_sge: u32,
    /// Scatter/gather entries per receive work request.
    pub max_recv_sge: u32,
    /// Bytes of inline data per send work request.
    pub max_inline_data: u32,
}

impl QpCap {
    fn from_raw(c: &bindings::ib_qp_cap) -> Self {
        Self {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        }
    }

    fn write_raw(&self, c: &mut bindings::ib_qp_cap) {
        c.max_send_wr = self.max_send_wr;
        c.max_recv_wr = self.max_recv_wr;
        c.max_send_sge = self.max_send_sge;
        c.max_recv_sge = self.max_recv_sge;
        c.max_inline_data = self.max_inline_data;
    }
}

/// What a QP is created with (`struct ib_qp_init_attr`).
pub struct QpInitAttr<'a, T: Driver> {
    /// The transport type.
    pub qp_type: QpType,
    /// The requested queue capacities.
    pub cap: QpCap,
    /// Whether every send work request completes with a CQE (`IB_SIGNAL_ALL_WR`).
    pub sq_sig_all: bool,
    /// `IB_QP_CREATE_*` flags.
    pub create_flags: u32,
    /// The port, for special QPs.
    pub port_num: u32,
    /// The CQ of the send queue.
    pub send_cq: Option<&'a Cq<T>>,
    /// The CQ of the receive queue.
    pub recv_cq: Option<&'a Cq<T>>,
    /// The shared receive queue that receives come from, if any.
    pub srq: Option<&'a Srq<T>>,
    /// The handle that the QP's work completions carry for kernel callers.
    pub handle: QpHandle,
    /// The QP's asynchronous events, for the driver to keep and raise.
    pub events: Arc<QpEvents>,
}

/// An address vector for RoCE (`struct rdma_ah_attr` of type RoCE, with its GRH).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AhAttr {
    /// Destination GID.
    pub dgid: [u8; 16],
    /// IPv6 flow label.
    pub flow_label: u32,
    /// Index of the source GID in the port's GID table.
    pub sgid_index: u8,
    /// IP hop limit (TTL).
    pub hop_limit: u8,
    /// IP traffic class (DSCP and ECN).
    pub traffic_class: u8,
    /// Service level.
    pub sl: u8,
    /// Static rate (`enum ib_rate`).
    pub static_rate: u8,
    /// Port number.
    pub port_num: u32,
    /// Destination MAC address, as ib_core resolved it.
    pub dmac: [u8; 6],
}

impl AhAttr {
    /// Reads a RoCE address vector; fails for other kinds.
    pub(crate) fn from_raw(a: &bindings::rdma_ah_attr) -> Option<Self> {
        if a.type_ != bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE {
            return None;
        }
        // SAFETY: Every `ib_gid` bit pattern is a valid byte array.
        let dgid = unsafe { a.grh.dgid.raw };
        // SAFETY: `a` is a valid RoCE address vector; the helper only computes the address of
        // its MAC, which is non-null for that type and valid for reads of 6 bytes while `a` is.
        let dmac = unsafe {
            let p = bindings::rdma_ah_retrieve_dmac(core::ptr::from_ref(a).cast_mut());
            p.cast::<[u8; 6]>().read()
        };
        Some(Self {
            dgid,
            flow_label: a.grh.flow_label,
            sgid_index: a.grh.sgid_index,
            hop_limit: a.grh.hop_limit,
            traffic_class: a.grh.traffic_class,
            sl: a.sl,
            static_rate: a.static_rate,
            port_num: a.port_num,
            dmac,
        })
    }

    /// Writes a RoCE address vector without a GID attribute reference.
    pub(crate) fn write_raw(&self, a: &mut bindings::rdma_ah_attr) {
        a.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
        a.ah_flags = bindings::ib_ah_flags_IB_AH_GRH as u8;
        a.grh.sgid_attr = core::ptr::null();
        a.grh.dgid.raw = self.dgid;
        a.grh.flow_label = self.flow_label;
        a.grh.sgid_index = self.sgid_index;
        a.grh.hop_limit = self.hop_limit;
        a.grh.traffic_class = self.traffic_class;
        a.sl = self.sl;
        a.static_rate = self.static_rate;
        a.port_num = self.port_num;
        // SAFETY: `a` is a RoCE address vector now, so the helper returns the address of its
        // 6-byte MAC, valid for writes as `a` is.
        unsafe {
            bindings::rdma_ah_retrieve_dmac(a)
                .cast::<[u8; 6]>()
                .write(self.dmac)
        };
    }
}

/// The attributes of a QP (`struct ib_qp_attr`), as modified and queried.
#[derive(Clone, Copy, Debug, Default)]
pub struct QpAttr {
    /// The state.
    pub qp_state: QpState,
    /// The state the caller believes the QP is in.
    pub cur_qp_state: QpState,
    /// Path MTU (`enum ib_mtu`, raw).
    pub path_mtu: u32,
    /// Q_Key for UD.
    pub qkey: u32,
    /// Receive PSN.
    pub rq_psn: u32,
    /// Send PSN.
    pub sq_psn: u32,
    /// Destination QP number for connected QPs.
    pub dest_qp_num: u32,
    /// The rights of incoming RDMA (`REMOTE_*` of [`Access`]).
    pub qp_access_flags: Access,
    /// Queue capacities.
    pub cap: QpCap,
    /// Primary path for connected QPs.
    pub ah_attr: AhAttr,
    /// P_Key index.
    pub pkey_index: u16,
    /// Whether to report the drained SQ.
    pub en_sqd_async_notify: u8,
    /// Whether the SQ is still draining.
    pub sq_draining: u8,
    /// Outstanding RDMA reads and atomics initiated.
    pub max_rd_atomic: u8,
    /// Outstanding RDMA reads and atomics responded to.
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer.
    pub min_rnr_timer: u8,
    /// Port number.
    pub port_num: u32,
    /// Local ACK timeout (exponent of 4.096 µs).
    pub timeout: u8,
    /// Retries on timeout.
    pub retry_cnt: u8,
    /// Retries on RNR NAK (7 means infinite).
    pub rnr_retry: u8,
}

super::typed::flag_set! {
    /// Which attributes of a [`QpAttr`] a modify or query concerns (`enum ib_qp_attr_mask`).
    pub struct QpAttrMask(u32) {
        /// `IB_QP_STATE`.
        const STATE = bindings::ib_qp_attr_mask_IB_QP_STATE;
        /// `IB_QP_CUR_STATE`.
        const CUR_STATE = bindings::ib_qp_attr_mask_IB_QP_CUR_STATE;
        /// `IB_QP_EN_SQD_ASYNC_NOTIFY`.
        const EN_SQD_ASYNC_NOTIFY = bindings::ib_qp_attr_mask_IB_QP_EN_SQD_ASYNC_NOTIFY;
        /// `IB_QP_ACCESS_FLAGS`.
        const ACCESS_FLAGS = bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS;
        /// `IB_QP_PKEY_INDEX`.
        const PKEY_INDEX = bindings::ib_qp_attr_mask_IB_QP_PKEY_INDEX;
        /// `IB_QP_PORT`.
        const PORT = bindings::ib_qp_attr_mask_IB_QP_PORT;
        /// `IB_QP_QKEY`.
        const QKEY = bindings::ib_qp_attr_mask_IB_QP_QKEY;
        /// `IB_QP_AV`.
        const AV = bindings::ib_qp_attr_mask_IB_QP_AV;
        /// `IB_QP_PATH_MTU`.
        const PATH_MTU = bindings::ib_qp_attr_mask_IB_QP_PATH_MTU;
        /// `IB_QP_TIMEOUT`.
        const TIMEOUT = bindings::ib_qp_attr_mask_IB_QP_TIMEOUT;
        /// `IB_QP_RETRY_CNT`.
        const RETRY_CNT = bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT;
        /// `IB_QP_RNR_RETRY`.
        const RNR_RETRY = bindings::ib_qp_attr_mask_IB_QP_RNR_RETRY;
        /// `IB_QP_RQ_PSN`.
        const RQ_PSN = bindings::ib_qp_attr_mask_IB_QP_RQ_PSN;
        /// `IB_QP_MAX_QP_RD_ATOMIC`.
        const MAX_QP_RD_ATOMIC = bindings::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC;
        /// `IB_QP_ALT_PATH`.
        const ALT_PATH = bindings::ib_qp_attr_mask_IB_QP_ALT_PATH;
        /// `IB_QP_MIN_RNR_TIMER`.
        const MIN_RNR_TIMER = bindings::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER;
        /// `IB_QP_SQ_PSN`.
        const SQ_PSN = bindings::ib_qp_attr_mask_IB_QP_SQ_PSN;
        /// `IB_QP_MAX_DEST_RD_ATOMIC`.
        const MAX_DEST_RD_ATOMIC = bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC;
        /// `IB_QP_PATH_MIG_STATE`.
        const PATH_MIG_STATE = bindings::ib_qp_attr_mask_IB_QP_PATH_MIG_STATE;
        /// `IB_QP_CAP`.
        const CAP = bindings::ib_qp_attr_mask_IB_QP_CAP;
        /// `IB_QP_DEST_QPN`.
        const DEST_QPN = bindings::ib_qp_attr_mask_IB_QP_DEST_QPN;
        /// `IB_QP_RATE_LIMIT`.
        const RATE_LIMIT = bindings::ib_qp_attr_mask_IB_QP_RATE_LIMIT;
    }
}

impl QpAttr {
    pub(crate) fn from_raw(a: &bindings::ib_qp_attr, mask: QpAttrMask) -> Option<Self> {
        let state = |raw| QpState::from_raw(raw).unwrap_or(QpState::Err);
        let ah_attr = if mask.contains(QpAttrMask::AV) {
            AhAttr::from_raw(&a.ah_attr)?
        } else {
            AhAttr::default()
        };
        Some(Self {
            qp_state: if mask.contains(QpAttrMask::STATE) {
                QpState::from_raw(a.qp_state)?
            } else {
                state(a.qp_state)
            },
            cur_qp_state: if mask.contains(QpAttrMask::CUR_STATE) {
                QpState::from_raw(a.cur_qp_state)?
            } else {
                state(a.cur_qp_state)
            },
            path_mtu: a.path_mtu,
            qkey: a.qkey,
            rq_psn: a.rq_psn,
            sq_psn: a.sq_psn,
            dest_qp_num: a.dest_qp_num,
            qp_access_flags: Access::from_c(a.qp_access_flags),
            cap: QpCap::from_raw(&a.cap),
            ah_attr,
            pkey_index: a.pkey_index,
            en_sqd_async_notify: a.en_sqd_async_notify,
            sq_draining: a.sq_draining,
            max_rd_atomic: a.max_rd_atomic,
            max_dest_rd_atomic: a.max_dest_rd_atomic,
            min_rnr_timer: a.min_rnr_timer,
            port_num: a.port_num,
            timeout: a.timeout,
            retry_cnt: a.retry_cnt,
            rnr_retry: a.rnr_retry,
        })
    }

    pub(crate) fn write_raw(&self, a: &mut bindings::ib_qp_attr) {
        a.qp_state = self.qp_state as u32;
        a.cur_qp_state = self.cur_qp_state as u32;
        a.path_mtu = self.path_mtu;
        a.qkey = self.qkey;
        a.rq_psn = self.rq_psn;
        a.sq_psn = self.sq_psn;
        a.dest_qp_num = self.dest_qp_num;
        a.qp_access_flags = self.qp_access_flags.bits() as i32;
        self.cap.write_raw(&mut a.cap);
        self.ah_attr.write_raw(&mut a.ah_attr);
        a.pkey_index = self.pkey_index;
        a.en_sqd_async_notify = self.en_sqd_async_notify;
        a.sq_draining = self.sq_draining;
        a.max_rd_atomic = self.max_rd_atomic;
        a.max_dest_rd_atomic = self.max_dest_rd_atomic;
        a.min_rnr_timer = self.min_rnr_timer;
        a.port_num = self.port_num;
        a.timeout = self.timeout;
        a.retry_cnt = self.retry_cnt;
        a.rnr_retry = self.rnr_retry;
    }
}

/// Returns whether the IB specification allows moving a QP of `qp_type` from `cur` to `next`
/// with exactly the attributes in `mask` (`ib_modify_qp_is_ok`).
pub fn modify_is_ok(cur: QpState, next: QpState, qp_type: QpType, mask: QpAttrMask) -> bool {
    // SAFETY: A pure function of its arguments.
    unsafe { bindings::ib_modify_qp_is_ok(cur as u32, next as u32, qp_type.as_raw(), mask.bits()) }
}

/// What [`Driver::create_qp`] returns: the driver's data, the QP number it chose and the
/// capacities the QP really has (at least the requested ones).
pub struct QpCreated<Q> {
    /// The driver's data of the QP.
    pub data: Q,
    /// The QP number.
    pub qp_num: u32,
    /// The real capacities.
    pub cap: QpCap,
}

super::object::driver_object!(
    /// A queue pair of driver `T`: ib_core's `struct ib_qp` followed by the driver's data.
    Qp,
    ib_qp,
    Qp,
    events: Option<Arc<QpEvents>>
);

/// A QP's C part, while it exists.
struct RawQp(NonNull<bindings::ib_qp>);

// SAFETY: Only used under the lock of `QpEvents`, whose revocation the destroy trampoline
// waits for; ib_core's handlers may run on any thread.
unsafe impl Send for RawQp {}

/// The asynchronous events of a QP, for the data path to raise; inert once the QP is
/// destroyed.
///
/// # Invariants
///
/// `qp` is `Some` only while the QP it points to is alive: the destroy trampoline clears it
/// (under the lock) before ib_core frees the QP.
#[pin_data]
pub struct QpEvents {
    #[pin]
    qp: SpinLock<Option<RawQp>>,
}

impl QpEvents {
    fn new(qp: NonNull<bindings::ib_qp>) -> impl PinInit<Self> {
        // INVARIANT: The QP is alive: its create trampoline makes the handle.
        pin_init!(Self {
            qp <- new_spinlock!(Some(RawQp(qp)), "QpEvents::qp"),
        })
    }

    /// Reports that the QP, attached to an SRQ and in the error state, takes no more receive
    /// WQEs from it (`IB_EVENT_QP_LAST_WQE_REACHED`): what `ib_drain_qp` waits for.
    pub fn last_wqe_reached(&self) {
        let guard = self.qp.lock();
        if let Some(RawQp(qp)) = &*guard {
            let qp = qp.as_ptr();
            // SAFETY: `ib_event` holds pointers, a union and an enum, for which zero is valid.
            let mut ev: bindings::ib_event = unsafe { core::mem::zeroed() };
            ev.event = bindings::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED;
            ev.element.qp = qp;
            // SAFETY: The QP is alive while the handle is not revoked (type invariant) and the
            // lock is held; ib_core sets the handler, its context and the device.
            unsafe {
                ev.device = (*qp).device;
                if let Some(handler) = (*qp).event_handler {
                    handler(&mut ev, (*qp).qp_context);
                }
            }
        }
    }

    /// Makes the handle inert.
    fn revoke(&self) {
        // INVARIANT: Cleared before the QP is freed.
        *self.qp.lock() = None;
    }
}

/// A QP's C part as an opaque value, for the `qp` field of the work completions of kernel
/// callers. Rust never dereferences it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpHandle(pub(crate) core::ptr::NonNull<bindings::ib_qp>);

// SAFETY: The handle is only an address that C code dereferences, never Rust.
unsafe impl Send for QpHandle {}
// SAFETY: See `Send`.
unsafe impl Sync for QpHandle {}

impl<T: Driver> Qp<T> {
    /// Returns the handle that work completions of the QP carry.
    pub fn handle(&self) -> QpHandle {
        // SAFETY: The C part of a live object is not null.
        QpHandle(unsafe { core::ptr::NonNull::new_unchecked(self.raw()) })
    }

    /// Returns the PD of the QP.
    pub fn pd(&self) -> &Pd<T> {
        // SAFETY: ib_core sets `pd` at creation; it outlives the QP and is a `Pd<T>`.
        unsafe { Pd::from_raw((*self.raw()).pd) }
    }

    /// Returns whether the QP belongs to a user process (rather than a kernel ULP).
    pub fn is_user(&self) -> bool {
        // SAFETY: `uobject` is set by ib_core at creation and never changes.
        !unsafe { (*self.raw()).uobject }.is_null()
    }

    /// Returns the QP number.
    pub fn qp_num(&self) -> u32 {
        // SAFETY: Set once at creation, before the QP is shared.
        unsafe { (*self.raw()).qp_num }
    }

    /// Returns the transport type.
    pub fn qp_type(&self) -> QpType {
        // SAFETY: Set once at creation, before the QP is shared.
        QpType::from_raw(unsafe { (*self.raw()).qp_type })
    }
}

/// The creation attributes of QP `qp`, as the driver sees them.
///
/// # Safety
///
/// `a` must be the attributes ib_core passes to `create_qp` for `qp`, a QP of a `T` device,
/// and the result must not be used after that call returns (the CQs and SRQ it names are
/// known alive only during it).
pub(crate) unsafe fn init_attr_from_raw<'a, T: Driver>(
    qp: core::ptr::NonNull<bindings::ib_qp>,
    a: &bindings::ib_qp_init_attr,
    events: Arc<QpEvents>,
) -> QpInitAttr<'a, T> {
    // SAFETY: The CQs of a QP on a `T` device are `T` CQs, alive while the QP is created.
    let cq = |p: *mut bindings::ib_cq| (!p.is_null()).then(|| unsafe { Cq::from_raw(p) });
    QpInitAttr {
        qp_type: QpType::from_raw(a.qp_type),
        cap: QpCap::from_raw(&a.cap),
        sq_sig_all: a.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
        create_flags: a.create_flags,
        port_num: a.port_num,
        send_cq: cq(a.send_cq),
        recv_cq: cq(a.recv_cq),
        // SAFETY: The SRQ of a QP on a `T` device is a `T` SRQ, alive while the QP is created.
        srq: (!a.srq.is_null()).then(|| unsafe { Srq::from_raw(a.srq) }),
        handle: QpHandle(qp),
        events,
    }
}

pub(crate) fn write_init_attr(cap: &QpCap, sq_sig_all: bool, a: &mut bindings::ib_qp_init_attr) {
    cap.write_raw(&mut a.cap);
    a.sq_sig_type = if sq_sig_all {
        bindings::ib_sig_type_IB_SIGNAL_ALL_WR
    } else {
        bindings::ib_sig_type_IB_SIGNAL_REQ_WR
    };
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// ib_core passes a zeroed QP of `size_ib_qp` bytes whose `device`, `pd` and CQs are set,
    /// valid attributes, and `udata` null (kernel caller) or valid.
    pub(crate) unsafe extern "C" fn create_qp(
        ibqp: *mut bindings::ib_qp,
        init: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core sets `pd` before calling the driver; it is a PD of this device.
            let pd = unsafe { Pd::<T>::from_raw((*ibqp).pd) };
            // SAFETY: ib_core passes a valid QP.
            let qp_ptr = unsafe { NonNull::new_unchecked(ibqp) };
            let events = Arc::pin_init(QpEvents::new(qp_ptr), GFP_KERNEL)?;
            // SAFETY: `init` is what ib_core passes for this QP of a `T` device, valid for the
            // call; `attr` is used only during it.
            let attr = unsafe { init_attr_from_raw::<T>(qp_ptr, &*init, events.clone()) };
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            let created = match T::create_qp(pd, &attr, user) {
                Ok(created) => created,
                Err(e) => {
                    // ib_core frees the QP without `destroy_qp`.
                    events.revoke();
                    return Err(e);
                }
            };
            // SAFETY: ib_core just allocated the QP (`destroy_qp` drops the data and the
            // events); the QP number and the real capacities are the driver's to report during
            // creation.
            unsafe {
                Qp::<T>::extra_slot(ibqp).write(Some(events));
                Qp::<T>::init_data(ibqp, created.data);
                (*ibqp).qp_num = created.qp_num;
                write_init_attr(&created.cap, attr.sq_sig_all, &mut *init);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core calls this once for a QP that `create_qp` initialised.
    pub(crate) unsafe extern "C" fn destroy_qp(
        ibqp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: `create_qp` set the events of the QP; nothing else touches the slot.
        if let Some(events) = unsafe { (*Qp::<T>::extra_slot(ibqp)).take() } {
            events.revoke();
        }
        // SAFETY: ib_core destroys an object whose create operation initialised the data.
        unsafe { Qp::<T>::drop_data(ibqp) };
        0
    }

    /// # Safety
    ///
    /// ib_core passes a live QP of `T` and valid attributes.
    pub(crate) unsafe extern "C" fn modify_qp(
        ibqp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: crate::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live QP of `T`.
            let q = unsafe { Qp::<T>::from_raw(ibqp) };
            let mask = QpAttrMask::from_bits_retain(mask as u32);
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
    pub(crate) unsafe extern "C" fn query_qp(
        ibqp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: crate::ffi::c_int,
        init: *mut bindings::ib_qp_init_attr,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live QP of `T`.
            let q = unsafe { Qp::<T>::from_raw(ibqp) };
            let found = T::query_qp(q, QpAttrMask::from_bits_retain(mask as u32))?;
            // SAFETY: Both outputs are valid for writes.
            unsafe {
                found.attr.write_raw(&mut *attr);
                write_init_attr(&found.cap, found.sq_sig_all, &mut *init);
            }
            Ok(0)
        })
    }
}

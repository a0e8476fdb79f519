// SPDX-License-Identifier: GPL-2.0-only

//! Queue pairs: the work-queue rings, the QP number, and the IB state machine.

use crate::{
    counters::QpCounters,
    cq::CqShared,
    device::{SrdmaDevice, PORT},
    doorbell::DbRecord,
    keys::Keys,
    limits::{Charge, Kind},
    params::*,
    pd::PdRef,
    rnr::RnrState,
    slotbufs::SlotBufs,
    table::Reservation,
    trace,
    transport::{
        roce::{
            requester::WireReq,
            responder::{Resources, WireResp},
        },
        Peer,
    },
};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::{
    new_mutex, new_spinlock, new_spinlock_irqsave,
    prelude::*,
    ratelimit::Ratelimit,
    rdma::{
        mmap::{MmapEntry, SharedPages},
        mr::{Access, KernelBuf},
        pd::Pd,
        qp::{
            modify_is_ok, Qp, QpAttr, QpAttrMask, QpCap, QpCreated, QpEvents, QpHandle, QpInitAttr,
            QpQuery, QpState, QpType,
        },
        uapi::{
            srdma_create_qp_resp, srdma_qp_db, SRDMA_RQ_WQE_HDR_SIZE, SRDMA_SGE_SIZE,
            SRDMA_SQ_WQE_HDR_SIZE, SRDMA_WQE_BB_SIZE,
        },
        ucontext::User,
        udata::UData,
        Device,
    },
    sync::{Arc, Mutex, SpinLock, SpinLockIrqSave},
};

/// Rights a QP may grant to incoming RDMA.
const QP_ACCESS_FLAGS: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_WRITE)
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_ATOMIC);

/// A work queue ring and its geometry.
pub(crate) struct Ring {
    pub(crate) mem: Arc<SharedPages>,
    pub(crate) wqe_cnt: u32,
    pub(crate) wqe_size: u32,
    /// For a kernel caller's ring: the buffers its SGEs name.
    pub(crate) bufs: Option<SlotBufs>,
}

impl Ring {
    /// A ring of `wqe_cnt` WQEs of `wqe_size` bytes; `kernel_sges` is the most SGEs of a WQE
    /// if a kernel caller owns the ring.
    pub(crate) fn new(wqe_cnt: u32, wqe_size: u32, kernel_sges: Option<u32>) -> Result<Self> {
        let bytes = (wqe_cnt as usize)
            .checked_mul(wqe_size as usize)
            .ok_or(EINVAL)?;
        Ok(Self {
            mem: SharedPages::new(bytes)?,
            wqe_cnt,
            wqe_size,
            bufs: kernel_sges.map(|n| SlotBufs::new(wqe_cnt, n)).transpose()?,
        })
    }

    /// The slot of the WQE at byte `off`.
    pub(crate) fn slot(&self, off: usize) -> Option<usize> {
        off.checked_div(self.wqe_size as usize)
    }

    /// The buffer of SGE `i` of the WQE at byte `off`, if a kernel caller lent one.
    pub(crate) fn kernel_buf(&self, off: usize, i: usize) -> Option<KernelBuf> {
        self.bufs.as_ref()?.get(self.slot(off)?, i)
    }
}

/// The state of a QP that other QPs (of this or another device) reach by QP number.
pub(crate) struct QpShared {
    pub(crate) qpn: u32,
    /// The PD of the QP; work requests may only use MRs of the same PD.
    pub(crate) pd: PdRef,
    /// The memory keys of the QP's device.
    pub(crate) keys: Arc<Keys>,
    pub(crate) qp_type: QpType,
    pub(crate) sq_sig_all: bool,
    pub(crate) cap: QpCap,
    pub(crate) sq: Ring,
    pub(crate) rq: Option<Ring>,
    /// The attributes, read on the data path for every request: a spinlock, held only to
    /// copy or set them.
    pub(crate) attr: Pin<KBox<SpinLock<QpAttr>>>,
    /// `attr.qp_state`, readable where the mutex cannot be taken (kernel callers' posts).
    state: AtomicU32,
    /// Serialises kernel callers' posts, which may come in any context (softirq, with
    /// interrupts off).
    pub(crate) kpost: Pin<KBox<SpinLockIrqSave<()>>>,
    /// The PSN of the next message the QP sends (`sq_psn`), moved by the SQ's processing.
    pub(crate) sq_psn: AtomicU32,
    /// The PSN the QP expects of the next message it receives (`rq_psn`), moved by the
    /// deliveries its peer makes.
    pub(crate) epsn: AtomicU32,
    /// Receiver-not-ready retries of the WQE at the head of the SQ.
    pub(crate) rnr: RnrState,
    /// The context record of a user QP in doorbell mode "poll".
    pub(crate) ctx_db: Option<Arc<DbRecord>>,
    /// Cleared when the QP is destroyed, for those that still hold it (the poller).
    alive: AtomicBool,
    /// The producer and consumer indices: the producer indices written by the process for
    /// user QPs, by `post_send`/`post_recv` for kernel callers' QPs.
    pub(crate) db: DbRecord,
    /// What kernel callers' completions name the QP by; `None` for user QPs.
    pub(crate) handle: Option<QpHandle>,
    /// Its asynchronous events.
    events: Arc<QpEvents>,
    /// Where the SQ's processing is; the lock serialises it.
    pub(crate) sq_run: Pin<KBox<Mutex<SqRun>>>,
    /// A doorbell kick rang that no run of the SQ has taken yet ([`crate::req::kick`]).
    pub(crate) kicked: AtomicBool,
    /// The next RQ WQE the kernel takes; the lock serialises deliveries to this QP.
    pub(crate) rq_ci: Pin<KBox<Mutex<u32>>>,
    pub(crate) send_cq: Arc<CqShared>,
    pub(crate) recv_cq: Arc<CqShared>,
    /// The SRQ that receives come from, instead of `rq`.
    pub(crate) srq: Option<Arc<crate::srq::SrqShared>>,
    /// What this QP did, as a requester and as a responder.
    pub(crate) counters: QpCounters,
    /// The device's limit on log lines about what processes do wrong.
    pub(crate) log_limit: Arc<Ratelimit>,
    /// The responder's state for requests from the wire (RC, UC). Taken before `rq_ci`.
    pub(crate) wire: Pin<KBox<Mutex<WireResp>>>,
    /// The requester's WQEs in flight on the wire (RC). Taken after `sq_ci`.
    pub(crate) wire_req: Pin<KBox<Mutex<WireReq>>>,
}

impl QpShared {
    /// Whether the QP still exists.
    pub(crate) fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// The QP's state, as last set.
    pub(crate) fn state(&self) -> QpState {
        QpState::from_raw(self.state.load(Ordering::Acquire)).unwrap_or(QpState::Err)
    }

    /// Sets the state in `attr` (the locked attributes) and its lock-free copy. Returns whether
    /// the QP, attached to an SRQ, entered the error state: then [`QpShared::srq_left`] is due
    /// once the attributes are unlocked.
    #[must_use]
    fn set_state(&self, attr: &mut QpAttr, state: QpState) -> bool {
        trace::srdma_qp_state(self.qpn, attr.qp_state as u32, state as u32);
        let left = state == QpState::Err && attr.qp_state != QpState::Err && self.srq.is_some();
        attr.qp_state = state;
        attr.cur_qp_state = state;
        self.state.store(state as u32, Ordering::Release);
        left
    }

    /// Tells the QP's user that the QP, in the error state, takes no more receive WQEs of its
    /// SRQ (a delivery looks at the state under the SRQ's lock before it takes one): the Last
    /// WQE Reached event, which `ib_drain_qp` waits for.
    fn srq_left(&self) {
        self.events.last_wqe_reached();
    }

    /// Moves the QP to the error state, as the data path does when a work request fails.
    pub(crate) fn enter_error(&self) {
        let left = self.set_state(&mut self.attr.lock(), QpState::Err);
        if left {
            self.srq_left();
        }
    }

    /// Ends the QP as it is destroyed, holding the locks that every run of its SQ and every
    /// delivery to it hold (the SQ's, the wire's, the RQ's and the SRQ's): the SQ run or
    /// delivery in progress finishes first, and every later one finds the QP dead and does
    /// nothing. The CQs' locks are taken too, once the QP is dead, for a CQE written outside
    /// those: a CQE being written is written, later ones are refused.
    /// So nothing of the QP runs and no completion of it appears once destroy returns. Its counts
    /// move to the device's totals under the same locks, so that no count is in the middle of
    /// its load and store.
    pub(crate) fn retire(&self) {
        let mut sq = self.sq_run.lock();
        // What the wire holds (WQEs in flight, a message being received) lets go of the memory
        // it names now, not when the last reference to the QP goes.
        self.wire_req.lock().clear(sq.ci);
        sq.peer = None;
        let mut wire = self.wire.lock();
        wire.reset();
        let _rq = self.rq_ci.lock();
        let _srq = self.srq.as_ref().map(|srq| srq.ci.lock());
        self.alive.store(false, Ordering::Release);
        self.counters.retire(self.qpn);
        self.send_cq.forget(self.handle);
        self.recv_cq.forget(self.handle);
        trace::srdma_qp_destroy(self.qpn);
    }
}

/// What the processing of a send queue keeps from one run to the next.
#[derive(Default)]
pub(crate) struct SqRun {
    /// The next SQ WQE the kernel takes.
    pub(crate) ci: u32,
    /// The destination on this host of a connected QP's requests, found by the first request
    /// after the QP was last modified and kept until the next modification or until the
    /// destination is gone: as a NIC resolves a connected QP's path when the QP is modified,
    /// not for each request.
    pub(crate) peer: Option<Peer>,
}

/// The guard of a receive queue's consumer index (`rq_ci`, an SRQ's `ci`).
pub(crate) type CiGuard<'a> =
    kernel::sync::lock::Guard<'a, u32, kernel::sync::lock::mutex::MutexBackend>;

/// Byte offsets in a QP's doorbell record (`struct srdma_qp_db`).
pub(crate) const DB_SQ_PI: usize = core::mem::offset_of!(srdma_qp_db, sq_pi);
pub(crate) const DB_RQ_PI: usize = core::mem::offset_of!(srdma_qp_db, rq_pi);
pub(crate) const DB_SQ_CI: usize = core::mem::offset_of!(srdma_qp_db, sq_ci);
pub(crate) const DB_RQ_CI: usize = core::mem::offset_of!(srdma_qp_db, rq_ci);

/// QP numbers 0 and 1 are the special QPs; numbers below 16 stay unused, as on other devices.
pub(crate) const QPN_MIN: u32 = 16;
/// The number of the general services QP, which ib_mad creates for kernel callers.
pub(crate) const QPN_GSI: u32 = 1;
pub(crate) const QPN_MAX: u32 = 0xff_ffff;

/// srdma's part of a queue pair.
pub(crate) struct SrdmaQp {
    // Field order is drop order: the number goes first, so lookups stop finding the QP.
    _qpn: Reservation<QpShared>,
    /// Its place within the device's limit.
    _charge: Charge,

    pub(crate) shared: Arc<QpShared>,
    _sq_entry: Option<MmapEntry>,
    _rq_entry: Option<MmapEntry>,
}

impl Drop for SrdmaQp {
    fn drop(&mut self) {
        self.shared.retire();
    }
}

fn sq_geometry(cap: &QpCap) -> (u32, u32) {
    let data = (cap.max_send_sge * SRDMA_SGE_SIZE).max(cap.max_inline_data.next_multiple_of(16));
    let size = (SRDMA_SQ_WQE_HDR_SIZE + data).next_multiple_of(SRDMA_WQE_BB_SIZE);
    (cap.max_send_wr.max(1).next_power_of_two(), size)
}

fn rq_geometry(cap: &QpCap) -> (u32, u32) {
    let size = (SRDMA_RQ_WQE_HDR_SIZE + cap.max_recv_sge * SRDMA_SGE_SIZE).next_power_of_two();
    (cap.max_recv_wr.max(1).next_power_of_two(), size)
}

impl SrdmaQp {
    pub(crate) fn new(
        pd: &Pd<SrdmaDevice>,
        attr: &QpInitAttr<'_, SrdmaDevice>,
        user: Option<User<'_, SrdmaDevice>>,
    ) -> Result<QpCreated<Self>> {
        match attr.qp_type {
            QpType::Rc | QpType::Uc | QpType::Ud => {}
            // RoCE has no subnet management QP; the GSI QP is for ib_mad.
            QpType::Gsi if user.is_none() && attr.port_num == PORT => {}
            _ => return Err(EOPNOTSUPP),
        }
        if attr.create_flags != 0 {
            return Err(EOPNOTSUPP);
        }
        let (Some(send_cq), Some(recv_cq)) = (attr.send_cq, attr.recv_cq) else {
            return Err(EINVAL);
        };
        let (send_cq, recv_cq) = (send_cq.shared.clone(), recv_cq.shared.clone());
        let charge = pd.device().limits().charge(Kind::Qp)?;
        let c = &attr.cap;
        if c.max_send_wr > MAX_QP_WR
            || c.max_recv_wr > MAX_QP_WR
            || c.max_send_sge > MAX_SGE
            || c.max_recv_sge > MAX_SGE
            || c.max_inline_data > MAX_INLINE_DATA
        {
            return Err(EINVAL);
        }
        let (sq_cnt, sq_size) = sq_geometry(c);
        let kernel = user.is_none();
        let sq = Ring::new(sq_cnt, sq_size, kernel.then_some(c.max_send_sge))?;
        let rq = if attr.srq.is_some() {
            None
        } else {
            let (rq_cnt, rq_size) = rq_geometry(c);
            Some(Ring::new(
                rq_cnt,
                rq_size,
                kernel.then_some(c.max_recv_sge),
            )?)
        };
        let data_area = sq_size - SRDMA_SQ_WQE_HDR_SIZE;
        let cap = QpCap {
            max_send_wr: sq_cnt,
            max_recv_wr: rq.as_ref().map_or(0, |r| r.wqe_cnt),
            max_send_sge: c.max_send_sge,
            max_recv_sge: if attr.srq.is_some() {
                0
            } else {
                c.max_recv_sge
            },
            max_inline_data: data_area.min(MAX_INLINE_DATA),
        };

        let dev: &Device<SrdmaDevice> = pd.device();
        let db = DbRecord::alloc_for(dev, user.as_ref())?;
        let (mut sq_entry, mut rq_entry) = (None, None);
        let mut resp = srdma_create_qp_resp {
            sq_mmap_key: 0,
            rq_mmap_key: 0,
            sq_size: sq.mem.len() as u32,
            rq_size: rq.as_ref().map_or(0, |r| r.mem.len() as u32),
            sq_wqe_cnt: sq.wqe_cnt,
            sq_wqe_size: sq.wqe_size,
            rq_wqe_cnt: rq.as_ref().map_or(0, |r| r.wqe_cnt),
            rq_wqe_size: rq.as_ref().map_or(0, |r| r.wqe_size),
            max_inline_data: cap.max_inline_data,
            reserved: 0,
            db: db.location(),
        };
        if let Some(user) = &user {
            let uctx = user.ucontext;
            let e = uctx.insert_mmap(sq.mem.clone())?;
            resp.sq_mmap_key = e.offset();
            sq_entry = Some(e);
            if let Some(rq) = &rq {
                let e = uctx.insert_mmap(rq.mem.clone())?;
                resp.rq_mmap_key = e.offset();
                rq_entry = Some(e);
            }
        }

        let reservation = if attr.qp_type == QpType::Gsi {
            Reservation::fixed(dev.qps(), QPN_GSI)?
        } else {
            Reservation::new(dev.qps())?
        };
        let qpn = reservation.id();
        let shared = Arc::new(
            QpShared {
                qpn,
                pd: pd.id(),
                keys: dev.keys().clone(),
                qp_type: attr.qp_type,
                sq_sig_all: attr.sq_sig_all,
                cap,
                sq,
                rq,
                attr: KBox::pin_init(new_spinlock!(QpAttr::default()), GFP_KERNEL)?,
                state: AtomicU32::new(QpState::Reset as u32),
                kpost: KBox::pin_init(new_spinlock_irqsave!(()), GFP_KERNEL)?,
                sq_psn: AtomicU32::new(0),
                epsn: AtomicU32::new(0),
                rnr: RnrState::new(),
                ctx_db: user.as_ref().and_then(|u| u.ucontext.ctx_db.clone()),
                alive: AtomicBool::new(true),
                handle: user.is_none().then_some(attr.handle),
                events: attr.events.clone(),
                db,
                sq_run: KBox::pin_init(new_mutex!(SqRun::default()), GFP_KERNEL)?,
                kicked: AtomicBool::new(false),
                rq_ci: KBox::pin_init(new_mutex!(0), GFP_KERNEL)?,
                send_cq,
                recv_cq,
                srq: attr.srq.map(|srq| srq.shared.clone()),
                counters: QpCounters::new(dev.counters().clone()),
                log_limit: dev.log_limit().clone(),
                wire: KBox::pin_init(new_mutex!(WireResp::new()), GFP_KERNEL)?,
                wire_req: KBox::pin_init(new_mutex!(WireReq::new()), GFP_KERNEL)?,
            },
            GFP_KERNEL,
        )?;
        reservation.publish(shared.clone());
        let qp = SrdmaQp {
            _qpn: reservation,
            _charge: charge,
            shared,
            _sq_entry: sq_entry,
            _rq_entry: rq_entry,
        };
        if let Some(mut user) = user {
            // Dropping `qp` on failure releases the QP number and the mappings.
            user.udata.write(&resp)?;
        }
        Ok(QpCreated {
            data: qp,
            qp_num: qpn,
            cap,
        })
    }

    pub(crate) fn modify(
        qp: &Qp<SrdmaDevice>,
        attr: &QpAttr,
        mask: QpAttrMask,
        _udata: Option<UData<'_>>,
    ) -> Result {
        const UNSUPPORTED: QpAttrMask = QpAttrMask::ALT_PATH
            .union(QpAttrMask::PATH_MIG_STATE)
            .union(QpAttrMask::CAP)
            .union(QpAttrMask::RATE_LIMIT);
        if mask.intersects(UNSUPPORTED) {
            return Err(EOPNOTSUPP);
        }
        let shared = &qp.shared;
        // Allocated before the locks: the responder resources for its READs and atomics.
        let resources = if mask.contains(QpAttrMask::MAX_DEST_RD_ATOMIC) {
            Some(Resources::new(attr.max_dest_rd_atomic)?)
        } else {
            None
        };
        // Lock order: SQ, the wire's requester and responder, RQ, attributes (the data path
        // takes them in this order too).
        let mut sq = shared.sq_run.lock();
        let mut wire_req = shared.wire_req.lock();
        let mut wire = shared.wire.lock();
        let mut rq_ci = shared.rq_ci.lock();
        // An SRQ's deliveries look at the state under its lock: none is under way as it moves.
        let srq_ci = shared.srq.as_ref().map(|srq| srq.ci.lock());
        let mut cur = shared.attr.lock();
        let cur_state = cur.qp_state;
        if mask.contains(QpAttrMask::CUR_STATE) && attr.cur_qp_state != cur_state {
            return Err(EINVAL);
        }
        let next = if mask.contains(QpAttrMask::STATE) {
            attr.qp_state
        } else {
            cur_state
        };
        if !modify_is_ok(cur_state, next, shared.qp_type, mask) {
            return Err(EINVAL);
        }
        validate(attr, mask)?;

        let mut new = *cur;
        if mask.contains(QpAttrMask::ACCESS_FLAGS) {
            new.qp_access_flags = attr.qp_access_flags;
        }
        if mask.contains(QpAttrMask::PKEY_INDEX) {
            new.pkey_index = attr.pkey_index;
        }
        if mask.contains(QpAttrMask::PORT) {
            new.port_num = attr.port_num;
        }
        if mask.contains(QpAttrMask::QKEY) {
            new.qkey = attr.qkey;
        }
        if mask.contains(QpAttrMask::AV) {
            new.ah_attr = attr.ah_attr;
        }
        if mask.contains(QpAttrMask::PATH_MTU) {
            new.path_mtu = attr.path_mtu;
        }
        if mask.contains(QpAttrMask::TIMEOUT) {
            new.timeout = attr.timeout;
        }
        if mask.contains(QpAttrMask::RETRY_CNT) {
            new.retry_cnt = attr.retry_cnt;
        }
        if mask.contains(QpAttrMask::RNR_RETRY) {
            new.rnr_retry = attr.rnr_retry;
        }
        if mask.contains(QpAttrMask::RQ_PSN) {
            new.rq_psn = attr.rq_psn & 0xff_ffff;
        }
        if mask.contains(QpAttrMask::SQ_PSN) {
            new.sq_psn = attr.sq_psn & 0xff_ffff;
        }
        if mask.contains(QpAttrMask::MAX_QP_RD_ATOMIC) {
            new.max_rd_atomic = attr.max_rd_atomic;
        }
        if mask.contains(QpAttrMask::MAX_DEST_RD_ATOMIC) {
            new.max_dest_rd_atomic = attr.max_dest_rd_atomic;
        }
        if mask.contains(QpAttrMask::MIN_RNR_TIMER) {
            new.min_rnr_timer = attr.min_rnr_timer;
        }
        if mask.contains(QpAttrMask::DEST_QPN) {
            new.dest_qp_num = attr.dest_qp_num;
        }
        if mask.contains(QpAttrMask::EN_SQD_ASYNC_NOTIFY) {
            new.en_sqd_async_notify = attr.en_sqd_async_notify;
        }
        if matches!(next, QpState::Reset | QpState::Err) {
            shared.rnr.reset();
        }
        if next == QpState::Reset {
            // Back to the state of a new QP: empty rings, every index from 0 (the provider
            // starts its producer indices from 0 again too), so that no WQE posted before the
            // reset runs after it.
            new = QpAttr::default();
            sq.ci = 0;
            *rq_ci = 0;
            for field in [DB_SQ_PI, DB_RQ_PI, DB_SQ_CI, DB_RQ_CI] {
                shared.db.store(field, 0)?;
            }
        }
        if mask.contains(QpAttrMask::RQ_PSN) || next == QpState::Reset {
            shared.epsn.store(new.rq_psn, Ordering::Relaxed);
        }
        if mask.contains(QpAttrMask::SQ_PSN) || next == QpState::Reset {
            shared.sq_psn.store(new.sq_psn, Ordering::Relaxed);
        }
        let left = shared.set_state(&mut new, next);
        *cur = new;
        drop(cur);
        if next == QpState::Err {
            // A receive WQE taken from an SRQ by a message that will not end completes before
            // the QP says it takes no more (and whichever path put the QP in the error state).
            wire.abandon(shared);
        }
        if left {
            shared.srq_left();
        }
        // The next request looks its destination up again, with the new attributes.
        sq.peer = None;
        if next == QpState::Err && cur_state != QpState::Err {
            crate::comp::flush(shared, true, &mut sq.ci);
            crate::comp::flush(shared, false, &mut rq_ci);
        }
        match next {
            // Flushed: what the wire holds lets go of the WQEs' memory, and a message under
            // way is not finished.
            QpState::Err => {
                wire_req.clear(sq.ci);
                wire.reset();
            }
            // A new QP: its PSNs, MSN and saved atomics start afresh, so that a packet of the
            // QP's last connection is not answered as a duplicate of this one.
            QpState::Reset => {
                *wire_req = WireReq::new();
                *wire = WireResp::new();
            }
            _ => {
                if let Some(r) = resources {
                    wire.set_resources(r);
                }
            }
        }
        drop(srq_ci);
        drop(rq_ci);
        drop(wire);
        drop(wire_req);
        drop(sq);
        if next == QpState::Rts && cur_state != QpState::Rts && shared.ctx_db.is_some() {
            // Doorbell mode "poll": the device's poller watches the QP from now on.
            let dev = qp.device();
            dev.poller().watch(dev.poll_queue(), &qp.shared)?;
        }
        Ok(())
    }

    pub(crate) fn query(qp: &Qp<SrdmaDevice>, _mask: QpAttrMask) -> Result<QpQuery> {
        let shared = &qp.shared;
        let mut attr = *shared.attr.lock();
        attr.cap = shared.cap;
        attr.sq_psn = shared.sq_psn.load(Ordering::Relaxed);
        attr.rq_psn = shared.epsn.load(Ordering::Relaxed);
        if attr.port_num == 0 {
            attr.port_num = PORT;
        }
        Ok(QpQuery {
            attr,
            cap: shared.cap,
            sq_sig_all: shared.sq_sig_all,
        })
    }
}

/// Checks the values of the attributes in `mask` against what srdma supports.
fn validate(attr: &QpAttr, mask: QpAttrMask) -> Result {
    let bad = (mask.contains(QpAttrMask::PORT) && attr.port_num != PORT)
        || (mask.contains(QpAttrMask::PKEY_INDEX) && attr.pkey_index != 0)
        || (mask.contains(QpAttrMask::PATH_MTU) && !(1..=5).contains(&attr.path_mtu))
        || (mask.contains(QpAttrMask::TIMEOUT) && attr.timeout > 31)
        || (mask.contains(QpAttrMask::RETRY_CNT) && attr.retry_cnt > 7)
        || (mask.contains(QpAttrMask::RNR_RETRY) && attr.rnr_retry > 7)
        || (mask.contains(QpAttrMask::MIN_RNR_TIMER) && attr.min_rnr_timer > 31)
        || (mask.contains(QpAttrMask::MAX_QP_RD_ATOMIC)
            && u32::from(attr.max_rd_atomic) > MAX_RD_ATOM)
        || (mask.contains(QpAttrMask::MAX_DEST_RD_ATOMIC)
            && u32::from(attr.max_dest_rd_atomic) > MAX_RD_ATOM)
        || (mask.contains(QpAttrMask::ACCESS_FLAGS)
            && !attr.qp_access_flags.difference(QP_ACCESS_FLAGS).is_empty())
        || (mask.contains(QpAttrMask::DEST_QPN) && attr.dest_qp_num > 0xff_ffff)
        || (mask.contains(QpAttrMask::AV)
            && (u32::from(attr.ah_attr.sgid_index) >= GID_TBL_LEN
                || (attr.ah_attr.port_num != 0 && attr.ah_attr.port_num != PORT)));
    if bad {
        return Err(EINVAL);
    }
    Ok(())
}

// SPDX-License-Identifier: GPL-2.0-only

//! Shared receive queues: one receive ring that several QPs take receive WQEs from.

use crate::{
    device::SrdmaDevice,
    doorbell::DbRecord,
    limits::{Charge, Kind},
    params::*,
    qp::Ring,
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    new_mutex, new_spinlock_irqsave,
    prelude::*,
    rdma::{
        mmap::MmapEntry,
        pd::Pd,
        srq::{Srq, SrqAttr, SrqAttrMask, SrqEvents, SrqType},
        uapi::{srdma_create_srq_resp, SRDMA_RQ_WQE_HDR_SIZE, SRDMA_SGE_SIZE},
        ucontext::User,
        udata::UData,
    },
    sync::{Arc, Mutex, SpinLockIrqSave},
};

static NEXT_SRQ_NUM: AtomicU32 = AtomicU32::new(1);

/// The receive queue that the QPs on an SRQ take receive WQEs from.
pub(crate) struct SrqShared {
    pub(crate) ring: Ring,
    /// The producer and consumer indices (`rq_pi`, `rq_ci` of `struct srdma_qp_db`).
    pub(crate) db: DbRecord,
    /// The next receive WQE; the lock serialises deliveries from all QPs on the SRQ.
    pub(crate) ci: Pin<KBox<Mutex<u32>>>,
    pub(crate) max_sge: u32,
    /// Serialises kernel callers' posts, which may come in atomic context.
    pub(crate) kpost: Pin<KBox<SpinLockIrqSave<()>>>,
    /// The armed limit: when fewer WQEs remain, the limit event fires and disarms it (0).
    limit: AtomicU32,
    events: Arc<SrqEvents>,
}

impl SrqShared {
    /// Called after a receive WQE was taken, with `remaining` still posted: raises the limit
    /// event once if fewer than the armed limit remain.
    pub(crate) fn consumed(&self, remaining: u32) {
        let limit = self.limit.load(Ordering::Relaxed);
        if limit != 0
            && remaining < limit
            && self
                .limit
                .compare_exchange(limit, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.events.limit_reached();
        }
    }
}

/// srdma's part of a shared receive queue.
pub(crate) struct SrdmaSrq {
    /// Its place within the device's limit.
    _charge: Charge,
    pub(crate) shared: Arc<SrqShared>,
    attr: Pin<KBox<Mutex<SrqAttr>>>,
    _entry: Option<MmapEntry>,
}

impl SrdmaSrq {
    pub(crate) fn new(
        pd: &Pd<SrdmaDevice>,
        srq_type: SrqType,
        attr: &SrqAttr,
        events: Arc<SrqEvents>,
        user: Option<User<'_, SrdmaDevice>>,
    ) -> Result<(Self, SrqAttr)> {
        if srq_type != SrqType::Basic {
            return Err(EOPNOTSUPP);
        }
        if attr.max_wr == 0 || attr.max_wr > MAX_SRQ_WR || attr.max_sge > MAX_SGE {
            return Err(EINVAL);
        }
        let charge = pd.device().limits().charge(Kind::Srq)?;
        let wqe_cnt = attr.max_wr.next_power_of_two();
        let wqe_size = (SRDMA_RQ_WQE_HDR_SIZE + attr.max_sge * SRDMA_SGE_SIZE).next_power_of_two();
        let ring = Ring::new(wqe_cnt, wqe_size, user.is_none().then_some(attr.max_sge))?;
        let real = SrqAttr {
            max_wr: wqe_cnt,
            max_sge: attr.max_sge,
            srq_limit: 0,
        };
        let db = DbRecord::alloc_for(pd.device(), user.as_ref())?;
        let mut entry = None;
        if let Some(mut user) = user {
            let uctx = user.ucontext;
            let e = uctx.insert_mmap(ring.mem.clone())?;
            let resp = srdma_create_srq_resp {
                rq_mmap_key: e.offset(),
                rq_size: ring.mem.len() as u32,
                rq_wqe_cnt: wqe_cnt,
                rq_wqe_size: wqe_size,
                srq_num: NEXT_SRQ_NUM.fetch_add(1, Ordering::Relaxed) & 0xff_ffff,
                db: db.location(),
            };
            user.udata.write(&resp)?;
            entry = Some(e);
        }
        let shared = SrqShared {
            ring,
            db,
            ci: KBox::pin_init(new_mutex!(0), GFP_KERNEL)?,
            max_sge: attr.max_sge,
            kpost: KBox::pin_init(new_spinlock_irqsave!(()), GFP_KERNEL)?,
            limit: AtomicU32::new(0),
            events,
        };
        Ok((
            SrdmaSrq {
                _charge: charge,
                shared: Arc::new(shared, GFP_KERNEL)?,
                attr: KBox::pin_init(new_mutex!(real), GFP_KERNEL)?,
                _entry: entry,
            },
            real,
        ))
    }

    pub(crate) fn modify(
        srq: &Srq<SrdmaDevice>,
        attr: &SrqAttr,
        mask: SrqAttrMask,
        _udata: Option<UData<'_>>,
    ) -> Result {
        if mask.contains(SrqAttrMask::MAX_WR) {
            // The ring is mapped by the process; resizing it is not supported.
            return Err(EOPNOTSUPP);
        }
        let mut cur = srq.attr.lock();
        if mask.contains(SrqAttrMask::LIMIT) {
            if attr.srq_limit > cur.max_wr {
                return Err(EINVAL);
            }
            cur.srq_limit = attr.srq_limit;
            srq.shared.limit.store(attr.srq_limit, Ordering::Relaxed);
        }
        Ok(())
    }

    pub(crate) fn query(srq: &Srq<SrdmaDevice>) -> Result<SrqAttr> {
        let mut attr = *srq.attr.lock();
        // The data path disarms the limit when the event fires.
        attr.srq_limit = srq.shared.limit.load(Ordering::Relaxed);
        Ok(attr)
    }
}

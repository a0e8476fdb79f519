// SPDX-License-Identifier: GPL-2.0-only

//! Completion queues: a ring of CQEs that the process maps and polls without a syscall.

use crate::{
    counters::{Counter, DeviceCounters},
    device::SrdmaDevice,
    doorbell::DbRecord,
    limits::{Charge, Kind},
    params::MAX_CQE,
    qp::QpShared,
    trace,
    wc::flags as ibv,
};
use core::sync::atomic::{fence, AtomicBool, AtomicU32, Ordering};
use kernel::{
    impl_has_hr_timer, new_spinlock_irqsave,
    prelude::*,
    rdma::{
        cq::{
            Cq, CqEvents, CqFlags, CqInitAttr, CqModeration, NotifyFlags, Wc, WcFlags, WcOpcode,
            WcStatus, WcWriter,
        },
        mmap::{MmapEntry, SharedPages},
        qp::QpHandle,
        uapi::{
            srdma_cq_db, srdma_cqe, srdma_create_cq_resp, SRDMA_CQE_SIZE, SRDMA_CQ_ARM_NEXT,
            SRDMA_CQ_ARM_SOLICITED,
        },
        ucontext::User,
        Device,
    },
    sync::{Arc, ArcBorrow, SpinLockIrqSave},
    time::{
        hrtimer::{HrTimer, HrTimerCallback},
        Ktime,
    },
};

/// Byte offsets in a CQ's doorbell record (`struct srdma_cq_db`).
const DB_CQ_CI: usize = core::mem::offset_of!(srdma_cq_db, ci);
const DB_CQ_ARM: usize = core::mem::offset_of!(srdma_cq_db, arm);

const CQE_SIZE: usize = SRDMA_CQE_SIZE as usize;

/// A CQE ring and where it is published.
struct CqRing {
    /// `cqe_cnt * SRDMA_CQE_SIZE` bytes, rounded up to pages.
    mem: Arc<SharedPages>,
    /// Entries in the ring, a power of two.
    cqe_cnt: u32,
    /// The ring's mmap offset, for user CQs.
    entry: Option<MmapEntry>,
    /// Free-running index of the next CQE the kernel writes.
    producer: u32,
    /// For kernel callers' CQs, what each slot's CQE reports as its QP: the QP's handle, or
    /// nothing once the QP is destroyed (its CQE is then skipped). Empty for user CQs.
    handles: KVec<Option<QpHandle>>,
}

impl CqRing {
    fn new(cqe: u32, user: Option<&User<'_, SrdmaDevice>>) -> Result<Self> {
        if cqe == 0 || cqe > MAX_CQE {
            return Err(EINVAL);
        }
        // One slot stays empty so that a full ring is told apart from an empty one.
        let cqe_cnt = (cqe + 1).next_power_of_two();
        let mem = SharedPages::new(cqe_cnt as usize * CQE_SIZE)?;
        let entry = match user {
            Some(user) => Some(user.ucontext.insert_mmap(mem.clone())?),
            None => None,
        };
        let mut handles = KVec::new();
        if user.is_none() {
            handles.extend_with(cqe_cnt as usize, None, GFP_KERNEL)?;
        }
        Ok(Self {
            mem,
            cqe_cnt,
            entry,
            producer: 0,
            handles,
        })
    }

    fn resp(&self, db: &DbRecord, cq_id: u32) -> srdma_create_cq_resp {
        srdma_create_cq_resp {
            ring_mmap_key: self.entry.as_ref().map_or(0, |e| e.offset()),
            ring_size: self.mem.len() as u32,
            cqe_cnt: self.cqe_cnt,
            db: db.location(),
            cq_id,
            reserved: 0,
        }
    }
}

/// The state of a CQ that QPs write completions to.
#[pin_data]
pub(crate) struct CqShared {
    /// Kernel callers poll and arm from any context (softirq for `IB_POLL_SOFTIRQ`, tasklets),
    /// so the ring's lock is a spinlock that keeps interrupts off.
    ring: Pin<KBox<SpinLockIrqSave<CqRing>>>,
    /// The consumer index and the arm word: written by the process for user CQs, by
    /// `poll_cq` and `req_notify_cq` for kernel callers' CQs.
    db: DbRecord,
    cq_id: u32,
    events: Arc<CqEvents>,
    /// Whether the CQ overran; the error event is reported once.
    overran: AtomicBool,
    /// Whether each CQE carries the time it was written (the creator asked for timestamps).
    stamp: bool,
    /// The moderation `ibv_modify_cq` set: the count in the high half, the period (µs) in the
    /// low half; zero is none.
    moderation: AtomicU32,
    /// Completions that arrived while the CQ was armed and raised no event yet; written under
    /// the ring's lock.
    unreported: AtomicU32,
    /// Raises the event of completions that waited out the moderation period.
    #[pin]
    period: HrTimer<CqShared>,
    /// Where completion events are counted.
    counters: Arc<DeviceCounters>,
}

impl_has_hr_timer! {
    impl HasHrTimer for CqShared { self.period }
}

impl HrTimerCallback for CqShared {
    fn run(this: ArcBorrow<'_, Self>) {
        let notify = {
            let _ring = this.ring.lock();
            // Nothing waits if the count was reached since; an event goes only to a consumer
            // that is still armed.
            let waiting = this.unreported.swap(0, Ordering::Relaxed) != 0;
            waiting
                && this.db.load(DB_CQ_ARM).is_ok_and(|arm| arm != 0)
                && this.db.store(DB_CQ_ARM, 0).is_ok()
        };
        if notify {
            this.raise();
        }
    }
}

/// What `rdma resource show cq -dd` shows of a CQ.
pub(crate) struct CqShown {
    pub(crate) depth: u32,
    pub(crate) producer: u32,
    pub(crate) consumer: u32,
    pub(crate) arm: u32,
    pub(crate) overran: bool,
}

impl CqShared {
    /// The CQ's ring as it stands, for `rdma resource show cq -dd`.
    pub(crate) fn show(&self) -> Result<CqShown> {
        let (depth, producer) = {
            let ring = self.ring.lock();
            (ring.cqe_cnt, ring.producer)
        };
        Ok(CqShown {
            depth,
            producer,
            consumer: self.db.load(DB_CQ_CI)?,
            arm: self.db.load(DB_CQ_ARM)?,
            overran: self.overran.load(Ordering::Relaxed),
        })
    }

    /// Writes `cqe` as the next CQE: the body first, then the owner word with release
    /// ordering, so a consumer that sees the new phase sees the whole CQE. Raises the
    /// completion event if the CQ is armed for it (`solicited`: the message asked for one).
    /// Fails with `ENOSPC` when the ring is full: the CQ overran, which its consumer hears
    /// about as the CQ error event. `from` is the QP the CQE is of: a kernel caller's QP
    /// destroyed already gets no CQE (`ESRCH`), checked under the ring's lock, which
    /// [`CqShared::forget`] takes after the QP was marked dead.
    pub(crate) fn push(
        self: &Arc<Self>,
        cqe: &srdma_cqe,
        solicited: bool,
        from: &QpShared,
    ) -> Result {
        let notify = {
            let mut ring = self.ring.lock();
            if !from.is_alive() {
                return Err(ESRCH);
            }
            let consumer = self.db.load(DB_CQ_CI)?;
            // A consumer index the process corrupted reads as an overrun too.
            if ring.producer.wrapping_sub(consumer) >= ring.cqe_cnt {
                drop(ring);
                if !self.overran.swap(true, Ordering::Relaxed) {
                    self.events.error();
                }
                return Err(ENOSPC);
            }
            let idx = (ring.producer & (ring.cqe_cnt - 1)) as usize;
            let phase = ((ring.producer / ring.cqe_cnt) & 1) ^ 1;
            let mut body = *cqe;
            body.owner = phase ^ 1;
            if self.stamp {
                // CLOCK_MONOTONIC never goes below zero.
                body.timestamp = Ktime::ktime_get().to_ns() as u64;
            }
            ring.mem.write_obj(idx * CQE_SIZE, &body)?;
            if let Some(slot) = ring.handles.get_mut(idx) {
                *slot = from.handle;
            }
            ring.mem.store_u32(idx * CQE_SIZE + OWNER_OFFSET, phase)?;
            ring.producer = ring.producer.wrapping_add(1);
            trace::srdma_cqe(self.cq_id, cqe.qp_num, cqe.opcode, cqe.status, cqe.byte_len);
            // Pairs with the consumer's barrier between arming and polling again: either it
            // sees this CQE, or this sees its arm word.
            fence(Ordering::SeqCst);
            let arm = self.db.load(DB_CQ_ARM)?;
            let wanted = arm == SRDMA_CQ_ARM_NEXT
                || (arm == SRDMA_CQ_ARM_SOLICITED && (solicited || cqe.status != 0));
            let fire = wanted && self.moderate();
            if fire {
                self.db.store(DB_CQ_ARM, 0)?;
            }
            fire
        };
        // Outside the ring lock: the handler may poll the CQ.
        if notify {
            self.raise();
        }
        Ok(())
    }

    /// Counts a completion that the armed CQ wants an event for; returns whether the event
    /// goes now, or else waits for more completions or for the moderation period, whose timer
    /// the first waiting completion starts. The caller holds the ring's lock.
    fn moderate(self: &Arc<Self>) -> bool {
        let m = self.moderation.load(Ordering::Relaxed);
        let (count, period) = (m >> 16, m & 0xffff);
        if m == 0 {
            self.unreported.store(0, Ordering::Relaxed);
            return true;
        }
        let waiting = self.unreported.load(Ordering::Relaxed) + 1;
        if count != 0 && waiting >= count {
            self.unreported.store(0, Ordering::Relaxed);
            // A period timer still queued would find nothing waiting; it goes now so that the
            // next completion starts a period of its own.
            HrTimer::try_cancel(self);
            return true;
        }
        self.unreported.store(waiting, Ordering::Relaxed);
        if waiting == 1 && period != 0 {
            HrTimer::start(self, u64::from(period) * 1000);
        }
        false
    }

    /// Delivers a completion event.
    fn raise(&self) {
        self.counters.inc(Counter::CqEvents);
        self.events.completion();
    }

    /// Sets the moderation of completion events; see [`CqModeration`]. Completions already
    /// waiting keep waiting, for the new count or period.
    pub(crate) fn set_moderation(&self, m: CqModeration) {
        let _ring = self.ring.lock();
        let v = (u32::from(m.count) << 16) | u32::from(m.period_us);
        self.moderation.store(v, Ordering::Relaxed);
    }

    /// Arms the CQ of a kernel caller; returns whether completions are waiting, if asked.
    pub(crate) fn arm(&self, flags: NotifyFlags) -> Result<bool> {
        let ring = self.ring.lock();
        let arm = if flags.solicited_only() {
            SRDMA_CQ_ARM_SOLICITED
        } else {
            SRDMA_CQ_ARM_NEXT
        };
        self.db.store(DB_CQ_ARM, arm)?;
        Ok(flags.report_missed() && self.db.load(DB_CQ_CI)? != ring.producer)
    }

    /// Moves CQEs into a kernel caller's array of work completions, skipping those of
    /// destroyed QPs.
    pub(crate) fn poll(&self, out: &mut WcWriter<'_>) -> Result {
        let ring = self.ring.lock();
        // The kernel caller's CQ: nobody else writes the consumer index.
        let mut ci = self.db.load(DB_CQ_CI)?;
        while out.has_room() && ci != ring.producer {
            let idx = (ci & (ring.cqe_cnt - 1)) as usize;
            if let Some(Some(qp)) = ring.handles.get(idx) {
                let c: srdma_cqe = ring.mem.read_obj(idx * CQE_SIZE)?;
                out.push(&to_wc(&c, *qp));
            }
            ci = ci.wrapping_add(1);
        }
        self.db.store(DB_CQ_CI, ci)
    }

    /// Called as a QP of this CQ is destroyed, once it is marked dead: a CQE of it being
    /// written is written before this returns (every write holds the ring's lock and refuses a
    /// dead QP), and none comes after. For a kernel caller's QP (`qp`) its CQEs not yet polled
    /// are removed too: no work completion names a QP after its destruction.
    pub(crate) fn forget(&self, qp: Option<QpHandle>) {
        let mut ring = self.ring.lock();
        let Some(qp) = qp else {
            return;
        };
        let Ok(ci) = self.db.load(DB_CQ_CI) else {
            return;
        };
        let (producer, mask) = (ring.producer, ring.cqe_cnt - 1);
        let mut i = ci;
        while i != producer {
            if let Some(slot) = ring.handles.get_mut((i & mask) as usize) {
                if *slot == Some(qp) {
                    *slot = None;
                }
            }
            i = i.wrapping_add(1);
        }
    }
}

/// Converts a CQE of QP `qp` to the work completion of a kernel caller; its flags differ in
/// number from the user ABI's (`enum ibv_wc_flags`).
fn to_wc(c: &srdma_cqe, qp: QpHandle) -> Wc {
    let mut flags = WcFlags::empty();
    if c.wc_flags & ibv::GRH != 0 {
        flags |= WcFlags::GRH;
        if c.network_hdr_type != 0 {
            flags |= WcFlags::WITH_NETWORK_HDR_TYPE;
        }
    }
    if c.wc_flags & ibv::WITH_IMM != 0 {
        flags |= WcFlags::WITH_IMM;
    }
    if c.wc_flags & ibv::WITH_INV != 0 {
        flags |= WcFlags::WITH_INVALIDATE;
    }
    // srdma writes the CQEs of kernel callers' QPs itself, with numbers these enums have.
    let (status, opcode) = match (WcStatus::from_raw(c.status), WcOpcode::from_raw(c.opcode)) {
        (Some(status), Some(opcode)) => (status, opcode),
        _ => (WcStatus::GeneralErr, WcOpcode::Send),
    };
    Wc {
        wr_id: c.wr_id,
        status,
        opcode,
        vendor_err: c.vendor_err,
        byte_len: c.byte_len,
        qp: Some(qp),
        ex: c.imm_data,
        src_qp: c.src_qp,
        wc_flags: flags,
        pkey_index: c.pkey_index,
        slid: u32::from(c.slid),
        sl: c.sl,
        dlid_path_bits: c.dlid_path_bits,
        port_num: crate::device::PORT,
        network_hdr_type: c.network_hdr_type,
    }
}

const OWNER_OFFSET: usize = CQE_SIZE - 4;

/// srdma's part of a completion queue.
pub(crate) struct SrdmaCq {
    pub(crate) shared: Arc<CqShared>,
    /// Its place within the device's limit.
    _charge: Charge,
}

impl Drop for SrdmaCq {
    fn drop(&mut self) {
        // No event after the CQ is gone: its moderation period ends here.
        HrTimer::cancel(&self.shared);
        // The ring's mapping belongs to the user context, which may go right after the CQ;
        // QPs still held by the data path keep the ring's memory, not its mapping. The entry
        // goes after the lock is released: removing it may sleep.
        let entry = self.shared.ring.lock().entry.take();
        drop(entry);
    }
}

impl SrdmaCq {
    /// Creates a CQ with at least `attr.cqe` entries; returns it with its real size.
    pub(crate) fn new(
        dev: &Device<SrdmaDevice>,
        attr: &CqInitAttr,
        events: Arc<CqEvents>,
        user: Option<User<'_, SrdmaDevice>>,
    ) -> Result<(Self, u32)> {
        if !attr.flags.without(CqFlags::TIMESTAMP_COMPLETION).is_empty() {
            return Err(EOPNOTSUPP);
        }
        let charge = dev.limits().charge(Kind::Cq)?;
        let ring = CqRing::new(attr.cqe, user.as_ref())?;
        let cq_id = dev.next_cq_id();
        let db = DbRecord::alloc_for(dev, user.as_ref())?;
        let resp = ring.resp(&db, cq_id);
        let cqe = ring.cqe_cnt - 1;
        if let Some(mut user) = user {
            user.udata.write(&resp)?;
        }
        let ring = KBox::pin_init(new_spinlock_irqsave!(ring), GFP_KERNEL)?;
        let shared = Arc::pin_init(
            pin_init!(CqShared {
                ring,
                db,
                cq_id,
                events,
                overran: AtomicBool::new(false),
                stamp: attr.flags.contains(CqFlags::TIMESTAMP_COMPLETION),
                moderation: AtomicU32::new(0),
                unreported: AtomicU32::new(0),
                period <- HrTimer::new(),
                counters: dev.counters().clone(),
            }),
            GFP_KERNEL,
        )?;
        Ok((
            SrdmaCq {
                shared,
                _charge: charge,
            },
            cqe,
        ))
    }

    /// Moves the CQ to a ring of at least `cqe` entries, carrying over the CQEs not yet
    /// consumed; refuses a ring too small for them.
    pub(crate) fn resize(
        cq: &Cq<SrdmaDevice>,
        cqe: u32,
        user: Option<User<'_, SrdmaDevice>>,
    ) -> Result<u32> {
        let cq = &cq.shared;
        let mut new = CqRing::new(cqe, user.as_ref())?;
        // The response names only the new ring, so it is written before the lock is taken
        // (copying to userspace may sleep).
        if let Some(mut user) = user {
            user.udata.write(&new.resp(&cq.db, cq.cq_id))?;
        }
        let mut ring = cq.ring.lock();
        // The consumer index is the process's word: bound what it claims by what was produced.
        let consumer = cq.db.load(DB_CQ_CI)?;
        let pending = ring.producer.wrapping_sub(consumer);
        if pending > ring.cqe_cnt {
            return Err(EINVAL);
        }
        if pending >= new.cqe_cnt {
            return Err(EINVAL);
        }
        let mut cqe_buf = [0u8; CQE_SIZE];
        for i in 0..pending {
            let from = (consumer.wrapping_add(i) & (ring.cqe_cnt - 1)) as usize * CQE_SIZE;
            ring.mem.read(from, &mut cqe_buf)?;
            // Index `i` of the new ring is written in its first pass: phase 1.
            cqe_buf[OWNER_OFFSET..].copy_from_slice(&1u32.to_le_bytes());
            new.mem.write(i as usize * CQE_SIZE, &cqe_buf)?;
            let from_slot = (consumer.wrapping_add(i) & (ring.cqe_cnt - 1)) as usize;
            if let (Some(to), Some(from)) =
                (new.handles.get_mut(i as usize), ring.handles.get(from_slot))
            {
                *to = *from;
            }
        }
        new.producer = pending;
        cq.db.store(DB_CQ_CI, 0)?;
        cq.overran.store(false, Ordering::Relaxed);
        let real = new.cqe_cnt - 1;
        let old = core::mem::replace(&mut *ring, new);
        drop(ring);
        // The old ring's memory and mapping go outside the lock: freeing them may sleep.
        drop(old);
        Ok(real)
    }
}

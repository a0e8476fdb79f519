// SPDX-License-Identifier: GPL-2.0-only

//! The engine worker of a device: carries out the work that kernel callers post, and the
//! receiver-not-ready retries of send queues.
//!
//! Kernel callers may post in atomic context (ib_mad posts under a spinlock with interrupts
//! off), where the engine cannot run: it takes mutexes and allocates. Their `post_send` only
//! writes the WQEs and queues the QP here; a work item processes its send queue soon after.
//! A second work item waits for the RNR timers of refused WQEs and processes those send queues
//! again when their time is up. A third takes the packets the RoCEv2 transport received (in
//! softirq context, where the engine cannot run either) to the responder.

use crate::{device::SrdmaDevice, qp::QpShared, req, transport::roce};
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::{
    impl_has_work, net,
    net::skb::SkBuff,
    new_condvar, new_mutex, new_spinlock, new_spinlock_irqsave, new_work,
    prelude::*,
    rdma::Device,
    sync::{Arc, CondVar, Mutex, SpinLock, SpinLockIrqSave},
    time::{msecs_to_jiffies, Ktime},
    types::ARef,
    workqueue::{Queue, Work, WorkItem},
};

/// Work item IDs: posted work, RNR retries, received packets.
const POSTED: u64 = 0;
const RETRY: u64 = 1;
const RECEIVED: u64 = 2;

/// The most received packets waiting for the engine; more are dropped (and counted), as a NIC
/// drops what its receive ring cannot hold.
const RX_BACKLOG: usize = 4096;

/// The longest the retry work item sleeps before it looks again, in milliseconds.
const RETRY_TICK_MS: u32 = 10;

/// QPs with newly posted kernel work, and the work item that processes them.
#[pin_data]
pub(crate) struct Worker {
    #[pin]
    work: Work<Worker, POSTED>,
    /// Kernel callers post (and so queue QPs here) in any context, interrupts off included.
    #[pin]
    pending: SpinLockIrqSave<KVec<Arc<QpShared>>>,
    #[pin]
    retry_work: Work<Worker, RETRY>,
    /// Send queues waiting for an RNR retry, with the `ktime` (ns) of the retry.
    #[pin]
    retries: SpinLock<KVec<(Arc<QpShared>, i64)>>,
    /// What the retry work item sleeps on between looks (nobody wakes it early).
    #[pin]
    nap: Mutex<()>,
    #[pin]
    nap_cv: CondVar,
    #[pin]
    rx_work: Work<Worker, RECEIVED>,
    /// Packets from the wire, queued in softirq context.
    #[pin]
    rx: SpinLockIrqSave<KVec<SkBuff>>,
    /// Packets dropped because [`Worker::rx`] was full; the receive work counts them.
    rx_overflow: AtomicU64,
    /// The network device of the srdma device, which finds the device while it is registered.
    ndev: ARef<net::device::Device>,
}

impl_has_work! {
    impl HasWork<Self, POSTED> for Worker { self.work }
    impl HasWork<Self, RETRY> for Worker { self.retry_work }
    impl HasWork<Self, RECEIVED> for Worker { self.rx_work }
}

impl Worker {
    pub(crate) fn new(ndev: ARef<net::device::Device>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                work <- new_work!("srdma::Worker::work"),
                pending <- new_spinlock_irqsave!(KVec::new(), "srdma::Worker::pending"),
                retry_work <- new_work!("srdma::Worker::retry_work"),
                retries <- new_spinlock!(KVec::new(), "srdma::Worker::retries"),
                nap <- new_mutex!(()),
                nap_cv <- new_condvar!("srdma::Worker::nap_cv"),
                rx_work <- new_work!("srdma::Worker::rx_work"),
                rx <- new_spinlock_irqsave!(KVec::new(), "srdma::Worker::rx"),
                rx_overflow: AtomicU64::new(0),
                ndev,
            }),
            GFP_KERNEL,
        )
    }

    /// Queues `qp` for processing on the device's `queue`; callable in atomic context.
    pub(crate) fn schedule(self: &Arc<Self>, queue: &Queue, qp: Arc<QpShared>) -> Result {
        {
            let mut pending = self.pending.lock();
            if !pending.iter().any(|q| Arc::ptr_eq(q, &qp)) {
                pending.push(qp, GFP_ATOMIC)?;
            }
        }
        // Already queued work runs after this and sees the QP.
        let _ = queue.enqueue::<_, POSTED>(self.clone());
        Ok(())
    }

    /// Processes the send queue of `qp` again at `ktime` `at` (ns), on the device's `queue`.
    pub(crate) fn retry_at(self: &Arc<Self>, queue: &Queue, qp: &Arc<QpShared>, at: i64) -> Result {
        {
            let mut retries = self.retries.lock();
            match retries.iter_mut().find(|(q, _)| Arc::ptr_eq(q, qp)) {
                Some(entry) => entry.1 = at,
                None => retries.push((qp.clone(), at), GFP_ATOMIC)?,
            }
        }
        let _ = queue.enqueue::<_, RETRY>(self.clone());
        Ok(())
    }

    /// Queues a packet from the wire for the responder or completer, on the device's `queue`;
    /// called in softirq context.
    pub(crate) fn received(self: &Arc<Self>, queue: &Queue, skb: SkBuff) {
        let full = {
            let mut rx = self.rx.lock();
            if rx.len() >= RX_BACKLOG {
                Some(skb)
            } else {
                // A failed push frees the packet.
                if rx.push(skb, GFP_ATOMIC).is_err() {
                    self.rx_overflow.fetch_add(1, Ordering::Relaxed);
                }
                None
            }
        };
        if let Some(skb) = full {
            self.rx_overflow.fetch_add(1, Ordering::Relaxed);
            // Freed outside the lock.
            drop(skb);
        }
        let _ = queue.enqueue::<_, RECEIVED>(self.clone());
    }

    /// Whether packets from the wire wait for the receive work.
    pub(crate) fn rx_pending(&self) -> bool {
        !self.rx.lock().is_empty()
    }

    /// Takes the retries that are due at `now`; returns them and when the next one is due.
    fn due(&self, now: i64) -> Result<(KVec<Arc<QpShared>>, Option<i64>)> {
        let taken = core::mem::take(&mut *self.retries.lock());
        let (mut due, mut keep) = (KVec::new(), KVec::new());
        for (q, at) in taken.into_iter() {
            if at <= now {
                due.push(q, GFP_KERNEL)?;
            } else {
                keep.push((q, at), GFP_KERNEL)?;
            }
        }
        let mut retries = self.retries.lock();
        // A QP queued again meanwhile may now be there twice; its second turn finds it waiting
        // or done.
        for entry in keep.into_iter() {
            retries.push(entry, GFP_ATOMIC)?;
        }
        let next = retries.iter().map(|(_, at)| *at).min();
        Ok((due, next))
    }
}

impl WorkItem<RETRY> for Worker {
    type Pointer = Arc<Worker>;

    fn run(this: Arc<Worker>) {
        loop {
            let Ok((due, next)) = this.due(Ktime::ktime_get().to_ns()) else {
                return;
            };
            if !due.is_empty() {
                let Some(dev) = Device::<SrdmaDevice>::get_by_netdev(&this.ndev) else {
                    // Dropped outside the lock: the last reference to a QP may free it.
                    let gone = core::mem::take(&mut *this.retries.lock());
                    drop(gone);
                    return;
                };
                for q in due.iter() {
                    let mut ci = q.sq_ci.lock();
                    let _ = req::process_sq(&dev, q, &mut ci);
                }
            }
            let Some(next) = next else {
                // Nothing waits; `retry_at` queues the work again.
                return;
            };
            let wait_ms = (next - Ktime::ktime_get().to_ns())
                .clamp(0, i64::from(RETRY_TICK_MS) * 1_000_000)
                / 1_000_000;
            let mut guard = this.nap.lock();
            let _ = this
                .nap_cv
                .wait_interruptible_timeout(&mut guard, msecs_to_jiffies(wait_ms as u32).max(1));
        }
    }
}

impl WorkItem<POSTED> for Worker {
    type Pointer = Arc<Worker>;

    fn run(this: Arc<Worker>) {
        let queued = core::mem::take(&mut *this.pending.lock());
        // A device that is going away processes nothing more; its QPs are being destroyed.
        let Some(dev) = Device::<SrdmaDevice>::get_by_netdev(&this.ndev) else {
            return;
        };
        for q in queued.iter() {
            let mut ci = q.sq_ci.lock();
            // Failures became error completions; a QP not ready to send keeps its work.
            let _ = req::process_sq(&dev, q, &mut ci);
        }
    }
}

impl WorkItem<RECEIVED> for Worker {
    type Pointer = Arc<Worker>;

    fn run(this: Arc<Worker>) {
        let Some(dev) = Device::<SrdmaDevice>::get_by_netdev(&this.ndev) else {
            let gone = core::mem::take(&mut *this.rx.lock());
            drop(gone);
            return;
        };
        loop {
            let packets = core::mem::take(&mut *this.rx.lock());
            if packets.is_empty() {
                break;
            }
            for skb in packets.into_iter() {
                roce::receive(&dev, skb);
            }
        }
        let overflow = this.rx_overflow.swap(0, Ordering::Relaxed);
        if overflow != 0 {
            roce::count_overflow(&dev, overflow);
        }
    }
}

// SPDX-License-Identifier: GPL-2.0-only

//! The engine worker of a device: carries out the work that kernel callers post, and the
//! receiver-not-ready retries of send queues.
//!
//! Kernel callers may post in atomic context (ib_mad posts under a spinlock with interrupts
//! off), where the engine cannot run: it takes mutexes and allocates. Their `post_send` only
//! writes the WQEs and queues the QP here; a work item processes its send queue soon after.
//! A send queue whose run reached its budget goes on here, and so do the doorbell kicks that
//! a context running a queue found noted after two more runs ([`req::run_kicked`]).
//! A second work item processes those send queues again whose time came: the RNR timers of
//! refused WQEs and the retransmission timers of the wire; a high-resolution timer queues it
//! when the earliest is due, so a retry waits its timer and a scheduling delay, not a jiffy,
//! and no worker sleeps meanwhile. Setting a QP's time queues that work (which arms the timer)
//! only when the time comes before the one the timer is armed for: on the wire every pass over
//! a busy send queue moves its retransmission time later, and a hop through the worker for each
//! would cost a wake-up and two context switches per message. The device's receive thread
//! ([`Worker::receive`]) takes the packets the RoCEv2 transport received (in softirq context,
//! where the engine cannot run either) to the responder and completer.

use crate::{device::SrdmaDevice, qp::QpShared, req, transport::roce};
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::{
    impl_has_hr_timer, impl_has_work,
    kthread::Running,
    net,
    net::skb::SkBuff,
    new_condvar, new_spinlock, new_spinlock_irqsave, new_work,
    prelude::*,
    rdma::Device,
    sync::{Arc, ArcBorrow, CondVar, SpinLock, SpinLockIrqSave},
    time::{
        hrtimer::{HrTimer, HrTimerCallback},
        Ktime,
    },
    types::ARef,
    workqueue::{Queue, Work, WorkItem},
};

/// Work item IDs: posted work, RNR retries.
const POSTED: u64 = 0;
const RETRY: u64 = 1;

/// The most received packets waiting for the engine; more are dropped (and counted), as a NIC
/// drops what its receive ring cannot hold.
const RX_BACKLOG: usize = 4096;

/// How long the retry work waits before it tries again when it had no memory.
const RETRY_AFTER_ENOMEM_NS: u64 = 1_000_000;

/// The send queues waiting for a retry, and when the timer expires.
struct Retries {
    /// Each QP with the `ktime` (ns) of its retry.
    queued: KVec<(Arc<QpShared>, i64)>,
    /// The `ktime` the timer was armed for by the retry work, which alone arms it; `i64::MAX`
    /// when it is not armed. From the timer's expiry until the work it queues has run, this
    /// is the past expiry, and that work arms the timer again from `queued`.
    armed_for: i64,
}

/// QPs with newly posted work (kernel callers', and doorbells of user QPs whose send queue
/// was being run), and the work item that processes them.
#[pin_data]
pub(crate) struct Worker {
    #[pin]
    work: Work<Worker, POSTED>,
    /// Kernel callers post (and so queue QPs here) in any context, interrupts off included.
    #[pin]
    pending: SpinLockIrqSave<KVec<Arc<QpShared>>>,
    #[pin]
    retry_work: Work<Worker, RETRY>,
    /// Send queues waiting for a retry. The timer is armed and cancelled under this lock (its
    /// callback does not take it), so that `armed_for` says when it expires.
    #[pin]
    retries: SpinLock<Retries>,
    /// Queues the retry work when the earliest of [`Worker::retries`] is due.
    #[pin]
    timer: HrTimer<Worker>,
    /// Packets from the wire, queued in softirq context.
    #[pin]
    rx: SpinLockIrqSave<KVec<SkBuff>>,
    /// Where the receive thread waits for packets.
    #[pin]
    rx_ready: CondVar,
    /// Packets dropped because [`Worker::rx`] was full; the receive work counts them.
    rx_overflow: AtomicU64,
    /// The QPs whose responder holds back an ACK until the receive thread's batch ends.
    #[pin]
    acks: SpinLock<KVec<Arc<QpShared>>>,
    /// The network device of the srdma device, which finds the device while it is registered.
    ndev: ARef<net::device::Device>,
}

impl_has_work! {
    impl HasWork<Self, POSTED> for Worker { self.work }
    impl HasWork<Self, RETRY> for Worker { self.retry_work }
}

impl_has_hr_timer! {
    impl HasHrTimer for Worker { self.timer }
}

impl HrTimerCallback for Worker {
    fn run(this: ArcBorrow<'_, Self>) {
        // The work runs on the device's queue, which outlives the registration: a device
        // that is not registered any more retries nothing.
        if let Some(dev) = Device::<SrdmaDevice>::get_by_netdev(&this.ndev) {
            let _ = dev.queue().enqueue::<_, RETRY>(Arc::from(this));
        }
    }
}

impl Worker {
    pub(crate) fn new(ndev: ARef<net::device::Device>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                work <- new_work!("srdma::Worker::work"),
                pending <- new_spinlock_irqsave!(KVec::new(), "srdma::Worker::pending"),
                retry_work <- new_work!("srdma::Worker::retry_work"),
                retries <- new_spinlock!(
                    Retries {
                        queued: KVec::new(),
                        armed_for: i64::MAX,
                    },
                    "srdma::Worker::retries"
                ),
                timer <- HrTimer::new(),
                rx <- new_spinlock_irqsave!(KVec::new(), "srdma::Worker::rx"),
                rx_ready <- new_condvar!("srdma::Worker::rx_ready"),
                rx_overflow: AtomicU64::new(0),
                acks <- new_spinlock!(KVec::new(), "srdma::Worker::acks"),
                ndev,
            }),
            GFP_KERNEL,
        )
    }

    /// Has the receive thread send the ACK `qp`'s responder holds back at the end of its batch.
    pub(crate) fn ack_later(&self, qp: Arc<QpShared>) -> Result {
        self.acks.lock().push(qp, GFP_ATOMIC)?;
        Ok(())
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
            match retries.queued.iter_mut().find(|(q, _)| Arc::ptr_eq(q, qp)) {
                Some(entry) => entry.1 = at,
                None => retries.queued.push((qp.clone(), at), GFP_ATOMIC)?,
            }
            if at >= retries.armed_for {
                // The timer expires first, and the work it queues arms it again for this one.
                return Ok(());
            }
        }
        let _ = queue.enqueue::<_, RETRY>(self.clone());
        Ok(())
    }

    /// Arms the timer for `ktime` `at`, `wait` ns from now, under the retries lock. A timer
    /// whose callback is running cannot be cancelled nor armed again: the work that callback
    /// queues arms it from what is queued then.
    fn arm(self: &Arc<Self>, retries: &mut Retries, at: i64, wait: i64) {
        HrTimer::try_cancel(self);
        if HrTimer::start(self, wait as u64) {
            retries.armed_for = at;
        } else {
            retries.armed_for = i64::MAX;
        }
    }

    /// Queues a packet from the wire for the responder or completer, on the device's receive
    /// thread ([`Worker::receive`]); called in softirq context.
    ///
    /// The thread is woken as the network stack wakes a socket's reader: with the hint that
    /// it may take this CPU, where the packet is now. The scheduler then wakes it here when
    /// this CPU runs nothing else that waits, the CPU of the interrupt (or, for a peer on this
    /// host, of the sender), which the packet's data is hot in; otherwise a thread woken from
    /// a softirq stays on whichever CPU it last ran on, which on a VM costs an interrupt
    /// between CPUs per wake-up.
    pub(crate) fn received(&self, skb: SkBuff) {
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
        self.rx_ready.notify_sync();
    }

    /// Whether packets from the wire wait for the receive work.
    pub(crate) fn rx_pending(&self) -> bool {
        !self.rx.lock().is_empty()
    }

    /// Stops the retry timer for good, waiting for its callback; called once the device is
    /// unregistered (then nothing arms it again).
    pub(crate) fn stop(self: &Arc<Self>) {
        HrTimer::cancel(self);
    }

    /// Takes the retries that are due at `now`; the others stay queued.
    fn due(&self, now: i64) -> Result<KVec<Arc<QpShared>>> {
        // Room for all of them (and a few queued meanwhile) before any is taken out, so that
        // running out of memory here leaves every retry queued.
        let n = self.retries.lock().queued.len() + 8;
        let (mut due, mut keep) = (KVec::with_capacity(n, GFP_KERNEL)?, KVec::new());
        keep.reserve(n, GFP_KERNEL)?;
        let taken = core::mem::take(&mut self.retries.lock().queued);
        for (q, at) in taken.into_iter() {
            if at <= now {
                due.push(q, GFP_KERNEL)?;
            } else {
                keep.push((q, at), GFP_KERNEL)?;
            }
        }
        // Back with what was queued meanwhile (a QP queued again may now be there twice; its
        // second turn finds it waiting or done). Nothing is allocated or dropped under the
        // lock, where an entry may hold a QP's last reference: `keep` is given room for the
        // queued entries outside it, takes them and is swapped in.
        loop {
            let queued = self.retries.lock().queued.len();
            keep.reserve(queued, GFP_KERNEL)?;
            let mut retries = self.retries.lock();
            if keep.capacity() - keep.len() >= retries.queued.len() {
                for entry in core::mem::take(&mut retries.queued) {
                    // Within the room checked above: no allocation, so it cannot fail.
                    let _ = keep.push(entry, GFP_NOWAIT);
                }
                core::mem::swap(&mut retries.queued, &mut keep);
                return Ok(due);
            }
        }
    }
}

impl WorkItem<RETRY> for Worker {
    type Pointer = Arc<Worker>;

    fn run(this: Arc<Worker>) {
        let Some(dev) = Device::<SrdmaDevice>::get_by_netdev(&this.ndev) else {
            // Dropped outside the lock: the last reference to a QP may free it.
            let gone = core::mem::take(&mut this.retries.lock().queued);
            drop(gone);
            return;
        };
        let Ok(due) = this.due(Ktime::ktime_get().to_ns()) else {
            // No memory to sort them: they stay queued, and the timer looks again.
            let mut retries = this.retries.lock();
            let at = Ktime::ktime_get().to_ns() + RETRY_AFTER_ENOMEM_NS as i64;
            this.arm(&mut retries, at, RETRY_AFTER_ENOMEM_NS as i64);
            return;
        };
        for q in due.iter() {
            let mut sq = q.sq_run.lock();
            let _ = req::process_sq(&dev, q, &mut sq, req::Runner::Engine);
            drop(sq);
            let _ = req::run_kicked(&dev, q, req::Runner::Engine);
        }
        drop(due);
        // Retries queued meanwhile, or by the passes above, count too. The timer is armed
        // while the device reference is held: once unregistration has waited for it, nothing
        // arms the timer again and [`Worker::stop`] can cancel it for good.
        let mut retries = this.retries.lock();
        let Some(next) = retries.queued.iter().map(|(_, at)| *at).min() else {
            retries.armed_for = i64::MAX;
            return;
        };
        let wait = next - Ktime::ktime_get().to_ns();
        if wait <= 0 {
            // Due already: another turn, after the queue's other work had its chance.
            retries.armed_for = i64::MAX;
            drop(retries);
            let _ = dev.queue().enqueue::<_, RETRY>(this);
            return;
        }
        this.arm(&mut retries, next, wait);
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
            let mut sq = q.sq_run.lock();
            // Failures became error completions; a QP not ready to send keeps its work.
            let _ = req::process_sq(&dev, q, &mut sq, req::Runner::Engine);
            drop(sq);
            let _ = req::run_kicked(&dev, q, req::Runner::Engine);
        }
    }
}

impl Worker {
    /// The device's receive thread: takes the packets from the wire to the responder and
    /// completer, a batch at a time, until the device goes.
    pub(crate) fn receive(&self, running: &Running) {
        loop {
            let packets = {
                let mut rx = self.rx.lock();
                while rx.is_empty() && !running.should_stop() {
                    // Kernel threads take no signals; the stop wakes the wait.
                    let _ = self.rx_ready.wait_interruptible(&mut rx);
                }
                // One backlog per batch; `received` queues what arrives meanwhile.
                core::mem::take(&mut *rx)
            };
            if running.should_stop() {
                return;
            }
            self.receive_batch(packets);
        }
    }

    fn receive_batch(&self, packets: KVec<SkBuff>) {
        let Some(dev) = Device::<SrdmaDevice>::get_by_netdev(&self.ndev) else {
            return;
        };
        for skb in packets.into_iter() {
            roce::receive(&dev, skb);
        }
        let acks = core::mem::take(&mut *self.acks.lock());
        roce::responder::flush_acks(&dev, &acks);
        let overflow = self.rx_overflow.swap(0, Ordering::Relaxed);
        if overflow != 0 {
            roce::count_overflow(&dev, overflow);
        }
    }
}

// SPDX-License-Identifier: GPL-2.0-only

//! The doorbell poller of a device (doorbell mode "poll").
//!
//! A work item watches the SQ doorbell records of the RTS QPs of poll-mode contexts and
//! processes new WQEs without a syscall. When nothing arrived for a while it sets
//! `SRDMA_CTX_NEED_WAKEUP` in their context records, looks once more, and naps; a process that
//! then rings a doorbell sees the flag and kicks, which processes its WQEs and ends the nap
//! (the model of io_uring's SQPOLL). Naps are bounded, so a wake-up lost in a race delays work
//! but never strands it. The work item gives the CPU back after a short batch by queueing itself
//! again, and ends when no QP is left to watch.

use crate::{
    clock::Now,
    counters::Counter,
    device::SrdmaDevice,
    qp::{QpShared, SqRun, DB_SQ_PI},
    req,
    ucontext::CTX_FLAGS,
};
use core::sync::atomic::{fence, AtomicBool, Ordering};
use kernel::{
    impl_has_work, net, new_condvar, new_mutex, new_work,
    prelude::*,
    rdma::{qp::QpState, uapi::SRDMA_CTX_NEED_WAKEUP, Device},
    sync::{Arc, CondVar, Mutex},
    time::{msecs_to_jiffies, Ktime},
    types::ARef,
    workqueue::{Queue, Work, WorkItem},
};

/// How long the poller keeps looking after the last WQE before it sleeps.
const IDLE_NS: i64 = 200_000;
/// How long one run of the work item polls before it queues itself again.
const BATCH_NS: i64 = 2_000_000;
/// The longest nap: how late a WQE is processed if a wake-up is lost.
const NAP_MS: u32 = 10;

/// The doorbell poller of a device.
#[pin_data]
pub(crate) struct Poller {
    #[pin]
    work: Work<Poller>,
    /// The QPs whose doorbells are watched.
    #[pin]
    qps: Mutex<KVec<Arc<QpShared>>>,
    /// Whether the work item is queued or running (polling or napping).
    running: AtomicBool,
    /// Whether it naps, flags up, until a kick.
    napping: AtomicBool,
    #[pin]
    nap: Mutex<()>,
    #[pin]
    nap_cv: CondVar,
    /// The network device of the srdma device, which finds the device while it is registered.
    ndev: ARef<net::device::Device>,
}

impl_has_work! {
    impl HasWork<Self> for Poller { self.work }
}

/// Whether `q`, whose SQ state is `sq`, has WQEs the kernel has not taken yet and can take
/// now: not while the head WQE waits for its RNR timer (the worker retries it then). Against
/// the kernel's own consumer index, not the record's copy, which the process may rewrite: a
/// copy that never matches would keep the poller from sleeping.
fn has_send_work(q: &QpShared, sq: &SqRun) -> bool {
    q.state() == QpState::Rts
        && q.db.load(DB_SQ_PI).ok() != Some(sq.ci)
        && !q.rnr.waiting(&Now::new())
}

fn set_need_wakeup(qps: &[Arc<QpShared>], on: bool) {
    for ctx in qps.iter().filter_map(|q| q.ctx_db.as_ref()) {
        let _ = ctx.store(CTX_FLAGS, if on { SRDMA_CTX_NEED_WAKEUP } else { 0 });
    }
}

impl Poller {
    pub(crate) fn new(ndev: ARef<net::device::Device>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                work <- new_work!("srdma::Poller::work"),
                qps <- new_mutex!(KVec::new()),
                running: AtomicBool::new(false),
                napping: AtomicBool::new(false),
                nap <- new_mutex!(()),
                nap_cv <- new_condvar!("srdma::Poller::nap_cv"),
                ndev,
            }),
            GFP_KERNEL,
        )
    }

    /// Starts watching `q` (a user QP of a poll-mode context that entered RTS); the poller
    /// runs on the device's `queue`.
    pub(crate) fn watch(self: &Arc<Self>, queue: &Queue, q: &Arc<QpShared>) -> Result {
        {
            let mut qps = self.qps.lock();
            if !qps.iter().any(|w| Arc::ptr_eq(w, q)) {
                qps.push(q.clone(), GFP_KERNEL)?;
            }
        }
        self.wake(queue);
        Ok(())
    }

    /// Starts the poller on the device's `queue`, or ends its nap, after a kick; returns
    /// whether it was idle.
    pub(crate) fn wake(self: &Arc<Self>, queue: &Queue) -> bool {
        if !self.running.swap(true, Ordering::AcqRel) {
            let _ = queue.enqueue(self.clone());
            return true;
        }
        let napping = self.napping.load(Ordering::Acquire);
        self.nap_cv.notify_all();
        napping
    }

    /// Drops the QPs that are gone or out of RTS; returns whether any is left.
    fn prune(qps: &mut KVec<Arc<QpShared>>) -> bool {
        let watched = |q: &QpShared| q.is_alive() && q.state() == QpState::Rts;
        if qps.iter().all(|q| watched(q)) {
            return !qps.is_empty();
        }
        // Without memory for the shorter list, the QPs stay until the next pass; `pass` skips
        // those out of RTS.
        let Ok(mut kept) = KVec::with_capacity(qps.len(), GFP_KERNEL) else {
            return true;
        };
        for q in core::mem::take(qps).into_iter() {
            if watched(&q) {
                // Within the capacity reserved above: no allocation, no failure.
                let _ = kept.push(q, GFP_KERNEL);
            } else if let Some(ctx) = q.ctx_db.as_ref() {
                // Its process kicks from now on, as it would with no poller.
                let _ = ctx.store(CTX_FLAGS, SRDMA_CTX_NEED_WAKEUP);
            }
        }
        *qps = kept;
        !qps.is_empty()
    }

    /// One pass over the watched QPs; returns whether any had work.
    fn pass(dev: &Device<SrdmaDevice>, qps: &[Arc<QpShared>]) -> bool {
        let mut busy = false;
        for q in qps.iter() {
            let mut sq = q.sq_run.lock();
            if has_send_work(q, &sq) {
                let _ = req::process_sq(dev, q, &mut sq, req::Runner::Engine);
                busy = true;
            }
            drop(sq);
            let _ = req::run_kicked(dev, q, req::Runner::Engine);
        }
        busy
    }
}

impl WorkItem for Poller {
    type Pointer = Arc<Poller>;

    fn run(this: Arc<Poller>) {
        loop {
            // A registration reference only while polling, never across a nap: unregistration
            // waits for it before it destroys the QPs that would end the naps.
            let Some(dev) = Device::<SrdmaDevice>::get_by_netdev(&this.ndev) else {
                this.running.store(false, Ordering::Release);
                return;
            };
            let mut qps = this.qps.lock();
            set_need_wakeup(&qps, false);
            let start = Ktime::ktime_get().to_ns();
            let mut last_work = start;
            loop {
                if !Self::prune(&mut qps) {
                    this.running.store(false, Ordering::Release);
                    return;
                }
                let now = Ktime::ktime_get().to_ns();
                if Self::pass(&dev, &qps) {
                    last_work = now;
                } else if now - last_work > IDLE_NS {
                    set_need_wakeup(&qps, true);
                    // Pairs with the provider's barrier between its producer index and its
                    // look at the flag: either it kicks, or this sees its WQEs.
                    fence(Ordering::SeqCst);
                    if !qps.iter().any(|q| {
                        let work = has_send_work(q, &q.sq_run.lock());
                        let _ = req::run_kicked(&dev, q, req::Runner::Engine);
                        work
                    }) {
                        break;
                    }
                    set_need_wakeup(&qps, false);
                    last_work = now;
                }
                if now - start > BATCH_NS {
                    // Back to the workqueue, which reschedules between work items.
                    drop(qps);
                    let _ = dev.poll_queue().enqueue(this.clone());
                    return;
                }
                core::hint::spin_loop();
            }
            dev.counters().inc(Counter::PollerSleeps);
            drop(qps);
            drop(dev);
            // Until a kick, or NAP_MS at most: a wake-up lost in a race costs latency, not
            // progress.
            let mut guard = this.nap.lock();
            this.napping.store(true, Ordering::Release);
            let _ = this
                .nap_cv
                .wait_interruptible_timeout(&mut guard, msecs_to_jiffies(NAP_MS));
            this.napping.store(false, Ordering::Release);
        }
    }
}

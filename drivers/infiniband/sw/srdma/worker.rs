// SPDX-License-Identifier: GPL-2.0-only

//! The engine worker of a device: carries out the work that kernel callers post.
//!
//! Kernel callers may post in atomic context (ib_mad posts under a spinlock with interrupts
//! off), where the engine cannot run: it takes mutexes and allocates. Their `post_send` only
//! writes the WQEs and queues the QP here; a work item processes its send queue soon after.

use crate::{device::SrdmaDevice, engine, qp::QpShared};
use kernel::{
    impl_has_work, net, new_spinlock, new_work,
    prelude::*,
    rdma::Device,
    sync::{Arc, SpinLock},
    types::ARef,
    workqueue::{self, Work, WorkItem},
};

/// QPs with newly posted kernel work, and the work item that processes them.
#[pin_data]
pub(crate) struct Worker {
    #[pin]
    work: Work<Worker>,
    #[pin]
    pending: SpinLock<KVec<Arc<QpShared>>>,
    /// The network device of the srdma device, which finds the device while it is registered.
    ndev: ARef<net::device::Device>,
}

impl_has_work! {
    impl HasWork<Self> for Worker { self.work }
}

impl Worker {
    pub(crate) fn new(ndev: ARef<net::device::Device>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                work <- new_work!("srdma::Worker::work"),
                pending <- new_spinlock!(KVec::new(), "srdma::Worker::pending"),
                ndev,
            }),
            GFP_KERNEL,
        )
    }

    /// Queues `qp` for processing; callable in atomic context.
    pub(crate) fn schedule(self: &Arc<Self>, qp: Arc<QpShared>) -> Result {
        {
            let mut pending = self.pending.lock();
            if !pending.iter().any(|q| Arc::ptr_eq(q, &qp)) {
                pending.push(qp, GFP_ATOMIC)?;
            }
        }
        // Already queued work runs after this and sees the QP.
        let _ = workqueue::system_unbound().enqueue(self.clone());
        Ok(())
    }
}

impl WorkItem for Worker {
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
            let _ = engine::process_sq(&dev, q, &mut ci);
        }
    }
}

// SPDX-License-Identifier: GPL-2.0

//! Completion queues (`struct ib_cq`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::driver::Driver;

/// The attributes a CQ is created with (`struct ib_cq_init_attr`).
#[derive(Clone, Copy, Debug)]
pub struct CqInitAttr {
    /// Minimum number of entries.
    pub cqe: u32,
    /// Completion vector for events.
    pub comp_vector: u32,
    /// `IB_UVERBS_CQ_FLAGS_*`.
    pub flags: u32,
}

super::object::driver_object!(
    /// A completion queue of driver `T`: ib_core's `struct ib_cq` followed by the driver's
    /// data.
    Cq,
    ib_cq,
    Cq
);

impl<T: Driver> Cq<T> {
    /// Returns the number of entries the CQ has.
    pub fn cqe(&self) -> u32 {
        // SAFETY: `cqe` is written at creation and resize, which ib_core serialises with users.
        unsafe { (*self.raw()).cqe as u32 }
    }
}

// SPDX-License-Identifier: GPL-2.0

//! Protection domains (`struct ib_pd`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::driver::Driver;

super::object::driver_object!(
    /// A protection domain of driver `T`: ib_core's `struct ib_pd` followed by the driver's
    /// data.
    Pd,
    ib_pd,
    Pd
);

impl<T: Driver> Pd<T> {
    /// Returns whether the PD belongs to a user process (rather than a kernel ULP).
    pub fn is_user(&self) -> bool {
        // SAFETY: `uobject` is set by ib_core before the PD is used and never changes.
        !unsafe { (*self.raw()).uobject }.is_null()
    }
}

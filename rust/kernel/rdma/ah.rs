// SPDX-License-Identifier: GPL-2.0

//! Address handles (`struct ib_ah`): where a UD work request goes.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{driver::Driver, pd::Pd};

/// Flags of address handle creation and destruction (`RDMA_*_AH_SLEEPABLE`).
pub mod flags {
    /// The caller may sleep.
    pub const SLEEPABLE: u32 = crate::bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE;
}

super::object::driver_object!(
    /// An address handle of driver `T`: ib_core's `struct ib_ah` followed by the driver's data.
    Ah,
    ib_ah,
    Ah
);

impl<T: Driver> Ah<T> {
    /// Returns the PD of the AH.
    pub fn pd(&self) -> &Pd<T> {
        // SAFETY: ib_core sets `pd` before calling the driver; it outlives the AH.
        unsafe { Pd::from_raw((*self.raw()).pd) }
    }
}

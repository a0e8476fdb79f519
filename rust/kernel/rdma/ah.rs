// SPDX-License-Identifier: GPL-2.0

//! Address handles (`struct ib_ah`): where a UD work request goes.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{driver::Driver, pd::Pd};
use crate::{bindings, types::Opaque};
use core::ops::Deref;

/// Flags of address handle creation and destruction (`RDMA_*_AH_SLEEPABLE`).
pub mod flags {
    /// The caller may sleep.
    pub const SLEEPABLE: u32 = crate::bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE;
}

/// An address handle of driver `T`: ib_core's `struct ib_ah` followed by the driver's data.
///
/// # Invariants
///
/// A `&Ah<T>` is only handed out while the AH is alive with `data` initialised.
#[repr(C)]
pub struct Ah<T: Driver> {
    ib: Opaque<bindings::ib_ah>,
    pub(crate) data: T::Ah,
}

// SAFETY: `T::Ah` is `Send + Sync`; the C part is managed by ib_core.
unsafe impl<T: Driver> Send for Ah<T> {}
// SAFETY: See `Send`.
unsafe impl<T: Driver> Sync for Ah<T> {}

impl<T: Driver> Ah<T> {
    /// Returns the PD of the AH.
    pub fn pd(&self) -> &Pd<T> {
        // SAFETY: ib_core sets `pd` before calling the driver; it outlives the AH.
        unsafe { Pd::from_raw((*self.ib.get()).pd) }
    }
}

impl<T: Driver> Deref for Ah<T> {
    type Target = T::Ah;

    fn deref(&self) -> &T::Ah {
        &self.data
    }
}

// SPDX-License-Identifier: GPL-2.0

//! Memory windows (`struct ib_mw`): remote access to part of a memory region, granted and
//! revoked by work requests.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{driver::Driver, pd::Pd};
use crate::bindings;

/// The type of a memory window (`enum ib_mw_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum MwType {
    /// Bound by `ibv_bind_mw` to the PD; cannot be invalidated.
    Type1 = bindings::ib_mw_type_IB_MW_TYPE_1,
    /// Bound by a work request to the posting QP; invalidated by work requests.
    Type2 = bindings::ib_mw_type_IB_MW_TYPE_2,
}

impl MwType {
    pub(crate) fn from_raw(raw: u32) -> Option<Self> {
        match raw {
            bindings::ib_mw_type_IB_MW_TYPE_1 => Some(Self::Type1),
            bindings::ib_mw_type_IB_MW_TYPE_2 => Some(Self::Type2),
            _ => None,
        }
    }
}

super::object::driver_object!(
    /// A memory window of driver `T`: ib_core's `struct ib_mw` followed by the driver's data.
    Mw,
    ib_mw,
    Mw
);

impl<T: Driver> Mw<T> {
    /// Returns the PD of the window.
    pub fn pd(&self) -> &Pd<T> {
        // SAFETY: ib_core sets `pd` before calling the driver; it outlives the window.
        unsafe { Pd::from_raw((*self.raw()).pd) }
    }
}

// SPDX-License-Identifier: GPL-2.0

//! Counters bound to QPs (`struct rdma_counter`): what `rdma statistic qp` shows.
//!
//! ib_core makes a counter when an operator binds a QP by hand (`rdma statistic qp bind`) or
//! when a port's auto mode (`rdma statistic qp set link DEV/PORT auto type on`) groups a new
//! QP; it asks the driver to bind and unbind QPs, to fill in the counter's values and to let
//! go of it. A counter's values have the same layout as its port's ([`Driver::port_stats`]):
//! ib_core adds them to the port's figures, so the port's own figures must leave out what the
//! QPs counted while they were bound; when a counter goes, ib_core keeps its last values in the
//! port's history.
//!
//! C header: [`include/rdma/rdma_counter.h`](srctree/include/rdma/rdma_counter.h).
//!
//! [`Driver::port_stats`]: super::Driver::port_stats

use super::{device::Device, driver::Driver};
use crate::bindings;
use core::{marker::PhantomData, num::NonZeroU32};

/// A counter of a device of driver `T`, as ib_core passes it to the driver's counter
/// operations.
///
/// # Invariants
///
/// `raw` points to a live `rdma_counter` of a device of `T` for `'a`, whose `id` only the
/// holder of a `&mut Counter` writes (ib_core holds the counter's lock, or no one else knows
/// the counter).
pub struct Counter<'a, T: Driver> {
    raw: *mut bindings::rdma_counter,
    _p: PhantomData<(&'a bindings::rdma_counter, T)>,
}

impl<'a, T: Driver> Counter<'a, T> {
    /// Wraps the counter ib_core passes to an operation.
    ///
    /// # Safety
    ///
    /// `raw` points to a live counter of a device of `T` for `'a`, and for a `Counter` used
    /// mutably nothing else reads or writes its `id` meanwhile.
    pub(crate) unsafe fn from_raw(raw: *mut bindings::rdma_counter) -> Self {
        // INVARIANT: The caller's guarantees.
        Self {
            raw,
            _p: PhantomData,
        }
    }

    pub(crate) fn raw(&self) -> *mut bindings::rdma_counter {
        self.raw
    }

    /// Returns the counter's number, which `rdma statistic` shows as `cntn`; `None` for a
    /// counter that ib_core just made, before the driver numbered it.
    pub fn id(&self) -> Option<NonZeroU32> {
        // SAFETY: The counter is live (type invariant); `id` is written only through `&mut`.
        NonZeroU32::new(unsafe { (*self.raw).id })
    }

    /// Numbers a new counter; the number must be unique among the device's live counters, as
    /// ib_core finds counters by it.
    pub fn set_id(&mut self, id: NonZeroU32) {
        // SAFETY: The counter is live and no one else accesses `id` while `self` is borrowed
        // mutably (type invariant).
        unsafe { (*self.raw).id = id.get() };
    }

    /// Returns the port the counter counts for, numbered from 1.
    pub fn port(&self) -> u32 {
        // SAFETY: The counter is live (type invariant); ib_core sets `port` before it calls the
        // driver and never changes it.
        unsafe { (*self.raw).port }
    }

    /// Returns the device of the counter.
    pub fn device(&self) -> &'a Device<T> {
        // SAFETY: The counter is live for `'a` and its device is a device of `T` (type
        // invariant), which outlives its counters.
        unsafe { Device::<T>::from_raw((*self.raw).device) }
    }
}

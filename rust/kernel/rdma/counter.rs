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

use super::{
    device::Device,
    driver::{Adapter, Driver},
    qp::Qp,
    stats,
};
use crate::{
    bindings,
    error::{code::EINVAL, from_result},
};
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

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// ib_core passes a live QP of `T` and a live counter of its device, and holds the
    /// counter's lock.
    pub(crate) unsafe extern "C" fn counter_bind_qp(
        counter: *mut bindings::rdma_counter,
        ibqp: *mut bindings::ib_qp,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live counter of a `T` device; ib_core's lock keeps others off its id.
            let mut c = unsafe { Counter::<T>::from_raw(counter) };
            // SAFETY: A live QP of `T`.
            let q = unsafe { Qp::<T>::from_raw(ibqp) };
            T::counter_bind_qp(&mut c, q)?;
            // SAFETY: The driver records the binding in the QP, where ib_core looks for it
            // (the contract of `counter_bind_qp`), under the counter's lock.
            unsafe { (*ibqp).counter = counter };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a live QP of `T` bound to a counter, and holds that counter's lock.
    pub(crate) unsafe extern "C" fn counter_unbind_qp(
        ibqp: *mut bindings::ib_qp,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live QP of `T`.
            let q = unsafe { Qp::<T>::from_raw(ibqp) };
            // SAFETY: As above; `counter` is what `counter_bind_qp` recorded.
            let counter = unsafe { (*ibqp).counter };
            if counter.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: The QP's counter is live while the QP is bound to it, and its lock held.
            let c = unsafe { Counter::<T>::from_raw(counter) };
            T::counter_unbind_qp(&c, q)?;
            // SAFETY: As in `counter_bind_qp`: the binding recorded where ib_core looks.
            unsafe { (*ibqp).counter = core::ptr::null_mut() };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a counter of a device of `T` that no QP is bound to, as it frees it.
    pub(crate) unsafe extern "C" fn counter_dealloc(
        counter: *mut bindings::rdma_counter,
    ) -> crate::ffi::c_int {
        // SAFETY: A live counter of a `T` device that no one else uses any more.
        let c = unsafe { Counter::<T>::from_raw(counter) };
        T::counter_dealloc(&c);
        0
    }

    /// # Safety
    ///
    /// ib_core passes a new counter of a device of `T`.
    pub(crate) unsafe extern "C" fn counter_alloc_stats(
        counter: *mut bindings::rdma_counter,
    ) -> *mut bindings::rdma_hw_stats {
        // SAFETY: A live counter of a `T` device.
        let c = unsafe { Counter::<T>::from_raw(counter) };
        // ib_core adds a counter's values to its port's by index: the layouts are one.
        stats::alloc(T::port_stats(c.device(), c.port()))
    }

    /// # Safety
    ///
    /// ib_core passes a counter of a device of `T` whose values `counter_alloc_stats` made,
    /// and holds the counter's lock, under which alone the values are written.
    pub(crate) unsafe extern "C" fn counter_update_stats(
        counter: *mut bindings::rdma_counter,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live counter of a `T` device.
            let c = unsafe { Counter::<T>::from_raw(counter) };
            // SAFETY: As above.
            let stats = unsafe { (*c.raw()).stats };
            if stats.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: `stats` came from `stats::alloc` in `counter_alloc_stats`, and its values
            // are written only under the counter's lock, which ib_core holds.
            let values = unsafe { stats::values(stats) };
            T::counter_update_stats(&c, values)?;
            Ok(0)
        })
    }
}

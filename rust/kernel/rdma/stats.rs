// SPDX-License-Identifier: GPL-2.0

//! Hardware counters (`struct rdma_hw_stats`), shown in sysfs (`hw_counters/`) and by
//! `rdma statistic`.
//!
//! A driver names its counters in a static table of [`Desc`]; ib_core allocates the values
//! once per port (and once for the device) and asks the driver to fill them in
//! ([`Driver::get_hw_stats`]) when someone reads them, at most
//! once per lifespan (10 ms by default).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{
    device::Device,
    driver::{Adapter, Driver},
};
use crate::{
    bindings,
    error::{code::EINVAL, from_result},
    str::CStr,
};

/// The description of one counter (`struct rdma_stat_desc`): its name, as sysfs and netlink
/// show it.
///
/// # Invariants
///
/// `name` points to a `'static` NUL-terminated string and `priv` is null.
#[repr(transparent)]
pub struct Desc(bindings::rdma_stat_desc);

// SAFETY: A `Desc` only holds a pointer to a `'static` string that is never written; sharing it
// between threads is sharing that string.
unsafe impl Sync for Desc {}

// SAFETY: As for `Sync`: the pointed-to string is `'static` and immutable.
unsafe impl Send for Desc {}

impl Desc {
    /// Describes a counter named `name`, which appears as a file of that name in `hw_counters/`.
    pub const fn new(name: &'static CStr) -> Self {
        // INVARIANT: `name` is `'static` and NUL-terminated; `priv` is null.
        Self(bindings::rdma_stat_desc {
            name: name.as_char_ptr(),
            flags: 0,
            priv_: core::ptr::null(),
        })
    }

    /// Returns the name of the counter.
    pub fn name(&self) -> &'static CStr {
        // SAFETY: By the type invariant `name` is a `'static` NUL-terminated string.
        unsafe { CStr::from_char_ptr(self.0.name) }
    }
}

/// Where a set of counters belongs: the device as a whole or one of its ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The device-wide counters (`alloc_hw_device_stats`).
    Device,
    /// The counters of a port, numbered from 1 (`alloc_hw_port_stats`).
    Port(u32),
}

impl Scope {
    /// Returns the scope ib_core means by `port`, which is 0 for the device-wide counters.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::rdma::stats::Scope;
    ///
    /// assert_eq!(Scope::from_port(0), Scope::Device);
    /// assert_eq!(Scope::from_port(1), Scope::Port(1));
    /// ```
    pub fn from_port(port: u32) -> Self {
        if port == 0 {
            Self::Device
        } else {
            Self::Port(port)
        }
    }
}

/// Allocates the values of the counters described by `descs` (`rdma_alloc_hw_stats_struct`)
/// with the default lifespan; ib_core owns and frees the result. Returns null when the
/// allocation fails or there are too many counters, which ib_core treats as "no counters".
pub(crate) fn alloc(descs: &'static [Desc]) -> *mut bindings::rdma_hw_stats {
    let Ok(n) = crate::ffi::c_int::try_from(descs.len()) else {
        return core::ptr::null_mut();
    };
    if n == 0 {
        return core::ptr::null_mut();
    }
    // SAFETY: `Desc` is a transparent `rdma_stat_desc`; the table lives for `'static`, as
    // ib_core keeps pointing to it, and holds `n` entries whose names are `'static` strings.
    unsafe {
        bindings::rdma_alloc_hw_stats_struct(
            descs.as_ptr().cast(),
            n,
            bindings::RDMA_HW_STATS_DEFAULT_LIFESPAN as crate::ffi::c_ulong,
        )
    }
}

/// Returns the values of `stats` for the driver to fill in.
///
/// # Safety
///
/// `stats` was allocated by [`alloc`] and nothing else accesses its values for `'a`: ib_core
/// holds `stats->lock` when it calls `get_hw_stats`, except while it sets the counters up, when
/// no one else knows them yet.
pub(crate) unsafe fn values<'a>(stats: *mut bindings::rdma_hw_stats) -> &'a mut [u64] {
    // SAFETY: `value` is a flexible array of `num_counters` entries, allocated with the struct;
    // the caller guarantees that nothing else accesses it.
    unsafe {
        let n = usize::try_from((*stats).num_counters).unwrap_or(0);
        core::slice::from_raw_parts_mut((*stats).value.as_mut_ptr(), n)
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// `ibdev` is a live device of `T`, as ib_core guarantees.
    pub(crate) unsafe extern "C" fn alloc_hw_port_stats(
        ibdev: *mut bindings::ib_device,
        port: u32,
    ) -> *mut bindings::rdma_hw_stats {
        // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
        let dev = unsafe { Device::<T>::from_raw(ibdev) };
        alloc(T::port_stats(dev, port))
    }

    /// # Safety
    ///
    /// `ibdev` is a live device of `T`, as ib_core guarantees.
    pub(crate) unsafe extern "C" fn alloc_hw_device_stats(
        ibdev: *mut bindings::ib_device,
    ) -> *mut bindings::rdma_hw_stats {
        // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
        let dev = unsafe { Device::<T>::from_raw(ibdev) };
        alloc(T::device_stats(dev))
    }

    /// # Safety
    ///
    /// `ibdev` is a live device of `T` and `stats` one of the counter sets that
    /// `alloc_hw_port_stats` (for `port` > 0) or `alloc_hw_device_stats` (for `port` 0) made for
    /// it, whose values no one else accesses during the call (ib_core holds `stats->lock`, or
    /// is still setting the counters up).
    pub(crate) unsafe extern "C" fn get_hw_stats(
        ibdev: *mut bindings::ib_device,
        stats: *mut bindings::rdma_hw_stats,
        port: u32,
        _index: crate::ffi::c_int,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device that has `T`'s ops, hence is a `Device<T>`.
            let dev = unsafe { Device::<T>::from_raw(ibdev) };
            if stats.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: `stats` came from `alloc` through our allocation operations and
            // its values are ours for the call.
            let values = unsafe { values(stats) };
            T::get_hw_stats(dev, Scope::from_port(port), values)?;
            // All counters are filled in, whatever `index` asked for: ib_core then keeps them
            // for the lifespan.
            Ok(values.len() as crate::ffi::c_int)
        })
    }
}

// SPDX-License-Identifier: GPL-2.0

//! Driver details of resources in `rdma resource show ... -dd`: ib_core's resource tracking
//! asks the driver to add its own attributes of a QP, CQ or MR to the netlink answer
//! (`fill_res_*_entry` of `struct ib_device_ops`), and the `rdma` tool prints them by name.
//!
//! C header: [`include/rdma/restrack.h`](srctree/include/rdma/restrack.h).

use super::{cq::Cq, driver::Adapter, mr::Mr, qp::Qp, Driver};
use crate::{bindings, error::from_result, prelude::*, str::CStr};
use core::marker::PhantomData;

/// The driver's attributes of one resource, being added to a netlink message: each has a name
/// (as `rdma` prints it) and a value.
///
/// # Invariants
///
/// `msg` is a netlink message being filled, with the driver attribute table open, for `'a`.
pub struct DriverAttrs<'a> {
    msg: *mut bindings::sk_buff,
    _msg: PhantomData<&'a mut bindings::sk_buff>,
}

impl DriverAttrs<'_> {
    /// A number, printed in decimal.
    pub fn u32(&mut self, name: &CStr, value: u32) -> Result {
        // SAFETY: `msg` is a message being filled (type invariant); `name` is NUL-terminated.
        Self::put(unsafe { bindings::rdma_nl_put_driver_u32(self.msg, name.as_char_ptr(), value) })
    }

    /// A number, printed in hexadecimal (keys, masks).
    pub fn u32_hex(&mut self, name: &CStr, value: u32) -> Result {
        // SAFETY: As for `u32`.
        Self::put(unsafe {
            bindings::rdma_nl_put_driver_u32_hex(self.msg, name.as_char_ptr(), value)
        })
    }

    /// A 64-bit number, printed in decimal.
    pub fn u64(&mut self, name: &CStr, value: u64) -> Result {
        // SAFETY: As for `u32`.
        Self::put(unsafe { bindings::rdma_nl_put_driver_u64(self.msg, name.as_char_ptr(), value) })
    }

    /// A word.
    pub fn string(&mut self, name: &CStr, value: &CStr) -> Result {
        // SAFETY: As for `u32`; `value` is NUL-terminated too.
        Self::put(unsafe {
            bindings::rdma_nl_put_driver_string(self.msg, name.as_char_ptr(), value.as_char_ptr())
        })
    }

    /// The message is full: ib_core sends what it has and asks again.
    fn put(ret: crate::ffi::c_int) -> Result {
        if ret == 0 {
            Ok(())
        } else {
            Err(EMSGSIZE)
        }
    }

    /// Opens the driver attribute table in `msg`, runs `fill` on it and closes it; on failure
    /// the table is taken out again and the error returned.
    ///
    /// # Safety
    ///
    /// `msg` is a netlink message that ib_core is filling with a resource's attributes.
    unsafe fn with(
        msg: *mut bindings::sk_buff,
        fill: impl FnOnce(&mut DriverAttrs<'_>) -> Result,
    ) -> Result {
        // SAFETY: `msg` is a message being filled (caller guarantee).
        let table = unsafe { bindings::rdma_nest_start_driver(msg) };
        if table.is_null() {
            return Err(EMSGSIZE);
        }
        // INVARIANT: The table is open until `fill` returns.
        let mut attrs = DriverAttrs {
            msg,
            _msg: PhantomData,
        };
        let ret = fill(&mut attrs);
        // SAFETY: `table` was opened in `msg` above and nothing closed it.
        unsafe {
            if ret.is_ok() {
                bindings::nla_nest_end(msg, table);
            } else {
                bindings::nla_nest_cancel(msg, table);
            }
        }
        ret
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// ib_core passes a message being filled and a live QP of `T`.
    pub(crate) unsafe extern "C" fn fill_res_qp_entry(
        msg: *mut bindings::sk_buff,
        ibqp: *mut bindings::ib_qp,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live QP of `T`.
            let qp = unsafe { Qp::<T>::from_raw(ibqp) };
            // SAFETY: A message being filled.
            unsafe { DriverAttrs::with(msg, |attrs| T::fill_res_qp(qp, attrs))? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a message being filled and a live CQ of `T`.
    pub(crate) unsafe extern "C" fn fill_res_cq_entry(
        msg: *mut bindings::sk_buff,
        ibcq: *mut bindings::ib_cq,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live CQ of `T`.
            let cq = unsafe { Cq::<T>::from_raw(ibcq) };
            // SAFETY: A message being filled.
            unsafe { DriverAttrs::with(msg, |attrs| T::fill_res_cq(cq, attrs))? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a message being filled and a live MR that `Mr::<T>::into_raw` made.
    pub(crate) unsafe extern "C" fn fill_res_mr_entry(
        msg: *mut bindings::sk_buff,
        ibmr: *mut bindings::ib_mr,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The MR came from `Mr::<T>::into_raw` and is alive.
            let mr = unsafe { &*ibmr.cast::<Mr<T>>() };
            // SAFETY: A message being filled.
            unsafe { DriverAttrs::with(msg, |attrs| T::fill_res_mr(mr, attrs))? };
            Ok(0)
        })
    }
}

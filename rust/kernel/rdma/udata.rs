// SPDX-License-Identifier: GPL-2.0

//! Driver-specific data of uverbs commands (`struct ib_udata`).
//!
//! Userspace appends a request to a command and reserves room for a response; both are the
//! driver's own structures, declared in its uapi header. Requests and responses may grow over
//! time: a shorter request is zero-extended, a longer one must end in zeroes, and a response is
//! cut to the room userspace gave.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use crate::{
    bindings,
    prelude::*,
    types::{AsBytes, FromBytes},
    uaccess::UserSlice,
};
use core::marker::PhantomData;

/// The driver data of one uverbs command.
///
/// # Invariants
///
/// `ptr` is a valid `ib_udata` whose buffers are user addresses, for the lifetime `'a`.
pub struct UData<'a> {
    ptr: *mut bindings::ib_udata,
    _p: PhantomData<&'a mut bindings::ib_udata>,
}

impl<'a> UData<'a> {
    /// Wraps the `ib_udata` that ib_core passes to an operation; null for kernel callers.
    ///
    /// # Safety
    ///
    /// `ptr` must be null or a valid `ib_udata` of a user command for the lifetime `'a`.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::ib_udata) -> Option<Self> {
        if ptr.is_null() {
            return None;
        }
        // INVARIANT: The caller guarantees validity for `'a`.
        Some(Self {
            ptr,
            _p: PhantomData,
        })
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::ib_udata {
        self.ptr
    }

    /// Returns the length of the request in bytes.
    pub fn inlen(&self) -> usize {
        // SAFETY: `ptr` is valid (type invariant).
        unsafe { (*self.ptr).inlen }
    }

    /// Returns the room for the response in bytes.
    pub fn outlen(&self) -> usize {
        // SAFETY: `ptr` is valid (type invariant).
        unsafe { (*self.ptr).outlen }
    }

    /// Reads the request as a `R`.
    ///
    /// A shorter request reads as if zero-extended; bytes beyond `size_of::<R>()` must be zero,
    /// or the request is refused with `EOPNOTSUPP` (it asks for something this driver does not
    /// know).
    pub fn read<R: FromBytes>(&self) -> Result<R> {
        let size = core::mem::size_of::<R>();
        let inlen = self.inlen();
        // SAFETY: `ptr` is valid (type invariant).
        let inbuf = unsafe { (*self.ptr).inbuf } as usize;
        let mut value = core::mem::MaybeUninit::<R>::zeroed();
        let n = inlen.min(size);
        // SAFETY: `value` is `size` bytes of initialised (zeroed) memory, and `n <= size`.
        let bytes = unsafe { core::slice::from_raw_parts_mut(value.as_mut_ptr().cast::<u8>(), n) };
        UserSlice::new(inbuf, n).reader().read_slice(bytes)?;
        if inlen > size {
            let mut rest = UserSlice::new(inbuf + size, inlen - size).reader();
            let mut chunk = [0u8; 64];
            while !rest.is_empty() {
                let len = rest.len().min(chunk.len());
                rest.read_slice(&mut chunk[..len])?;
                if chunk[..len].iter().any(|&b| b != 0) {
                    return Err(EOPNOTSUPP);
                }
            }
        }
        // SAFETY: `R: FromBytes`, so any bytes (here: a prefix from userspace and zeroes) are
        // a valid `R`.
        Ok(unsafe { value.assume_init() })
    }

    /// Writes `resp` as the response, cut to the room userspace reserved.
    pub fn write<W: AsBytes>(&mut self, resp: &W) -> Result {
        let size = core::mem::size_of::<W>();
        let n = self.outlen().min(size);
        // SAFETY: `ptr` is valid (type invariant).
        let outbuf = unsafe { (*self.ptr).outbuf } as usize;
        // SAFETY: `W: AsBytes`, so all `size` bytes of `resp` are initialised.
        let bytes = unsafe { core::slice::from_raw_parts((resp as *const W).cast::<u8>(), n) };
        UserSlice::new(outbuf, n).writer().write_slice(bytes)
    }
}

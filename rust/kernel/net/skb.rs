// SPDX-License-Identifier: GPL-2.0

//! Socket buffers (`struct sk_buff`): the packets of the network stack.
//!
//! C header: [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h).
//!
//! ```
//! use kernel::net::skb::SkBuff;
//!
//! let mut skb = SkBuff::alloc(128, GFP_KERNEL)?;
//! skb.reserve(64)?;
//! skb.put_data(b"payload")?;
//! skb.push(4)?.copy_from_slice(b"hdr:");
//! assert_eq!(skb.data()?, b"hdr:payload");
//! assert_eq!((skb.len(), skb.headroom()), (11, 60));
//! assert!(skb.push(61).is_err());
//! skb.pull(4)?;
//! assert_eq!(skb.data()?, b"payload");
//! # Ok::<(), Error>(())
//! ```

use crate::{alloc::Flags, bindings, prelude::*};
use core::ptr::NonNull;

/// A socket buffer this value owns: its data is linear unless said otherwise, and nobody else
/// holds a reference to it.
///
/// # Invariants
///
/// `ptr` is a valid `sk_buff` whose one reference this value holds, and which is not a clone
/// (its data is not shared).
pub struct SkBuff {
    ptr: NonNull<bindings::sk_buff>,
}

// SAFETY: An sk_buff that one owner holds may move between threads; the network stack hands
// them between CPUs all the time.
unsafe impl Send for SkBuff {}

impl SkBuff {
    /// Allocates a buffer with room for `size` bytes, all of it tailroom.
    pub fn alloc(size: u32, flags: Flags) -> Result<Self> {
        // SAFETY: `__alloc_skb` may be called in any context the flags allow.
        let ptr = unsafe { bindings::__alloc_skb(size, flags.as_raw(), 0, bindings::NUMA_NO_NODE) };
        // INVARIANT: A new sk_buff with one reference, ours, and its own data.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
        })
    }

    /// The raw pointer, for the abstractions that hand the buffer to C.
    pub fn as_raw(&self) -> *mut bindings::sk_buff {
        self.ptr.as_ptr()
    }

    /// Gives up ownership: the caller takes the reference (to hand to a function that
    /// consumes the buffer).
    pub fn into_raw(self) -> *mut bindings::sk_buff {
        let ptr = self.ptr.as_ptr();
        core::mem::forget(self);
        ptr
    }

    /// The number of bytes of data.
    pub fn len(&self) -> usize {
        // SAFETY: The buffer is valid (type invariant).
        unsafe { (*self.ptr.as_ptr()).len as usize }
    }

    /// Whether the buffer holds no data.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The free bytes before the data.
    pub fn headroom(&self) -> usize {
        // SAFETY: The buffer is valid (type invariant).
        unsafe { bindings::skb_headroom(self.ptr.as_ptr()) as usize }
    }

    /// The free bytes after the data.
    pub fn tailroom(&self) -> usize {
        // SAFETY: The buffer is valid (type invariant).
        usize::try_from(unsafe { bindings::skb_tailroom(self.ptr.as_ptr()) }).unwrap_or(0)
    }

    /// Moves the start of an empty buffer `len` bytes on, making that much headroom.
    pub fn reserve(&mut self, len: usize) -> Result {
        if !self.is_empty() || len > self.tailroom() {
            return Err(EINVAL);
        }
        // SAFETY: The buffer is ours and empty, and `len` fits its tailroom (checked above).
        unsafe { bindings::skb_reserve(self.ptr.as_ptr(), len as i32) };
        Ok(())
    }

    /// Appends `src` to the data.
    pub fn put_data(&mut self, src: &[u8]) -> Result {
        if src.len() > self.tailroom() {
            return Err(EINVAL);
        }
        // SAFETY: The buffer is ours and not shared (type invariant), and the bytes fit its
        // tailroom (checked above); `skb_put` returns where they go.
        unsafe {
            let dst = bindings::skb_put(self.ptr.as_ptr(), src.len() as u32);
            core::ptr::copy_nonoverlapping(src.as_ptr(), dst.cast(), src.len());
        }
        Ok(())
    }

    /// Prepends `len` zeroed bytes to the data and returns them, to be written.
    pub fn push(&mut self, len: usize) -> Result<&mut [u8]> {
        if len > self.headroom() {
            return Err(EINVAL);
        }
        // SAFETY: The buffer is ours and not shared (type invariant), and `len` fits its
        // headroom (checked above); the bytes are zeroed before a slice is made of them, and
        // the slice borrows the buffer mutably.
        unsafe {
            let p = bindings::skb_push(self.ptr.as_ptr(), len as u32).cast::<u8>();
            core::ptr::write_bytes(p, 0, len);
            Ok(core::slice::from_raw_parts_mut(p, len))
        }
    }

    /// Removes `len` bytes from the start of the linear data.
    pub fn pull(&mut self, len: usize) -> Result {
        if len > self.headlen() {
            return Err(EINVAL);
        }
        // SAFETY: The buffer is ours; `len` is within its linear data (checked above).
        unsafe { bindings::skb_pull(self.ptr.as_ptr(), len as u32) };
        Ok(())
    }

    /// The bytes of data in the linear part.
    fn headlen(&self) -> usize {
        // SAFETY: The buffer is valid (type invariant).
        unsafe { bindings::skb_headlen(self.ptr.as_ptr()) as usize }
    }

    /// The data, if all of it is linear.
    pub fn data(&self) -> Result<&[u8]> {
        let len = self.len();
        if self.headlen() != len {
            return Err(EINVAL);
        }
        // SAFETY: The linear data is `len` initialised bytes at `data` (checked above), which
        // nobody else writes while we hold the buffer (type invariant).
        Ok(unsafe { core::slice::from_raw_parts((*self.ptr.as_ptr()).data, len) })
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: We hold the buffer's reference (type invariant).
        unsafe { bindings::consume_skb(self.ptr.as_ptr()) };
    }
}

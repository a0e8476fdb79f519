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

use crate::{alloc::Flags, bindings, net::device::Device, prelude::*};
use core::{marker::PhantomData, ptr::NonNull};

/// A socket buffer this value owns: its data is linear unless said otherwise, and nobody else
/// holds a reference to it.
///
/// # Invariants
///
/// `ptr` is a valid `sk_buff` whose one reference this value holds, and which is not a clone
/// (its data is not shared). `tail`, if set, is the memory of a fragment of that buffer that
/// [`SkBuff::append_tail`] made and that nothing else refers to, with its length.
pub struct SkBuff {
    ptr: NonNull<bindings::sk_buff>,
    tail: Option<(NonNull<u8>, usize)>,
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
            tail: None,
        })
    }

    /// The raw pointer, for the abstractions that hand the buffer to C.
    pub fn as_raw(&self) -> *mut bindings::sk_buff {
        self.ptr.as_ptr()
    }

    /// Takes ownership of a buffer from C.
    ///
    /// # Safety
    ///
    /// `ptr` must be a valid, unshared `sk_buff` whose reference the caller hands over.
    pub unsafe fn from_raw(ptr: NonNull<bindings::sk_buff>) -> Self {
        // INVARIANT: The caller hands over the one reference to an unshared buffer.
        Self { ptr, tail: None }
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

    /// Appends `len` zeroed bytes to the data and returns them, to be written.
    pub fn put(&mut self, len: usize) -> Result<&mut [u8]> {
        if len > self.tailroom() {
            return Err(EINVAL);
        }
        // SAFETY: The buffer is ours and not shared (type invariant), and `len` fits its
        // tailroom (checked above); the bytes are zeroed before a slice is made of them, and the
        // slice borrows the buffer mutably.
        unsafe {
            let p = bindings::skb_put(self.ptr.as_ptr(), len as u32).cast::<u8>();
            core::ptr::write_bytes(p, 0, len);
            Ok(core::slice::from_raw_parts_mut(p, len))
        }
    }

    /// The data, if all of it is linear, to be written.
    pub fn data_mut(&mut self) -> Result<&mut [u8]> {
        let len = self.len();
        if self.headlen() != len {
            return Err(EINVAL);
        }
        // SAFETY: The linear data is `len` initialised bytes at `data` (checked above), and the
        // buffer is ours alone (type invariant), borrowed mutably.
        Ok(unsafe { core::slice::from_raw_parts_mut((*self.ptr.as_ptr()).data, len) })
    }

    /// Marks the start of the data as the start of the network header.
    pub fn set_network_header(&mut self) {
        // SAFETY: The buffer is ours (type invariant); this only records an offset.
        unsafe { bindings::skb_reset_network_header(self.ptr.as_ptr()) };
    }

    /// Marks the start of the data as the start of the transport header.
    pub fn set_transport_header(&mut self) {
        // SAFETY: The buffer is ours (type invariant); this only records an offset.
        unsafe { bindings::skb_reset_transport_header(self.ptr.as_ptr()) };
    }

    /// Makes the data linear, so that [`SkBuff::data`] and [`SkBuff::from_network_header`]
    /// see all of it.
    pub fn linearize(&mut self) -> Result {
        // SAFETY: The buffer is ours (type invariant); the helper may reallocate its head.
        crate::error::to_result(unsafe { bindings::skb_linearize(self.ptr.as_ptr()) })
    }

    /// The linear bytes from the start of the network header to the end of the data: the
    /// headers that were pulled on receive, then the data. Fails if the data is not linear or
    /// no network header lies before it.
    pub fn from_network_header(&self) -> Result<&[u8]> {
        let skb = self.ptr.as_ptr();
        // SAFETY: The buffer is valid (type invariant); these only compute addresses inside its
        // head.
        let (nh, data) = unsafe { (bindings::skb_network_header(skb), (*skb).data) };
        let before = (data as usize).checked_sub(nh as usize).ok_or(EINVAL)?;
        if self.headlen() != self.len() || before > self.headroom() {
            return Err(EINVAL);
        }
        // SAFETY: The network header lies in the head, `before` bytes before the data (checked
        // against the headroom above), and the `len` bytes of data follow linearly; nobody else
        // writes them while we hold the buffer.
        Ok(unsafe { core::slice::from_raw_parts(nh, before + self.len()) })
    }

    /// The bytes of data in the linear part.
    fn headlen(&self) -> usize {
        // SAFETY: The buffer is valid (type invariant).
        unsafe { bindings::skb_headlen(self.ptr.as_ptr()) as usize }
    }

    /// The linear part of the data (all of it unless fragments were appended).
    pub fn head(&self) -> &[u8] {
        // SAFETY: The linear data is `headlen` initialised bytes at `data`, which nobody else
        // writes while we hold the buffer (type invariant).
        unsafe { core::slice::from_raw_parts((*self.ptr.as_ptr()).data, self.headlen()) }
    }

    /// Appends `len` bytes at `offset` of `page` to the data as a fragment that refers to the
    /// page, without copying: the network stack (or the device, with scatter-gather DMA) reads
    /// the page when it sends the buffer. The buffer takes its own reference on the page, so
    /// the page stays allocated until the buffer is freed. Fails with `EOPNOTSUPP` for a page
    /// that must not be referenced that way (slab memory) and with `EMSGSIZE` when the buffer
    /// has no fragment left; the buffer is unchanged then.
    ///
    /// # Safety
    ///
    /// `page` is a valid page, `offset + len` lies within it, and its bytes may be read by
    /// whoever the buffer goes to, at any time until the buffer is freed.
    pub unsafe fn append_page(
        &mut self,
        page: *mut bindings::page,
        offset: usize,
        len: usize,
    ) -> Result {
        // SAFETY: The buffer is ours (type invariant); the page and range are the caller's
        // guarantee; the helper takes the page reference the fragment holds.
        crate::error::to_result(unsafe {
            bindings::skb_append_page(self.ptr.as_ptr(), page, offset, len)
        })
    }

    /// Appends `len` zeroed bytes of new memory to the data as a fragment, to be written with
    /// [`SkBuff::write_tail`]: a trailer after page fragments, where the linear part cannot be.
    /// A buffer has at most one.
    pub fn append_tail(&mut self, len: usize) -> Result {
        if self.tail.is_some() {
            return Err(EBUSY);
        }
        // SAFETY: The buffer is ours (type invariant); the helper allocates the fragment and
        // hands its reference to the buffer.
        let p = unsafe { bindings::skb_append_new_frag(self.ptr.as_ptr(), len) };
        // INVARIANT: `p` is the new fragment's `len` bytes, which only this buffer refers to.
        self.tail = Some((NonNull::new(p.cast()).ok_or(ENOMEM)?, len));
        Ok(())
    }

    /// Writes `src` into the trailer that [`SkBuff::append_tail`] made, of the same length.
    pub fn write_tail(&mut self, src: &[u8]) -> Result {
        let (p, len) = self.tail.ok_or(EINVAL)?;
        if src.len() != len {
            return Err(EINVAL);
        }
        // SAFETY: `p` is `len` bytes of a fragment of this buffer that only it refers to (type
        // invariant); the buffer is ours and not yet handed on, borrowed mutably.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), p.as_ptr(), len) };
        Ok(())
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
        unsafe { bindings::skb_consume(self.ptr.as_ptr()) };
    }
}

/// A buffer just received, with the network device it arrived on: what a receive callback of
/// the networking core gets. The device is only known while the callback runs.
pub struct Received<'a> {
    skb: SkBuff,
    _callback: PhantomData<&'a Device>,
}

impl<'a> Received<'a> {
    /// Wraps a buffer that a receive callback got.
    ///
    /// # Safety
    ///
    /// `ptr` must be a valid, unshared `sk_buff` whose reference the caller hands over, and
    /// whose `dev` is a network device that stays alive for `'a`.
    pub unsafe fn from_raw(ptr: NonNull<bindings::sk_buff>) -> Self {
        Self {
            // SAFETY: The caller hands over the buffer.
            skb: unsafe { SkBuff::from_raw(ptr) },
            _callback: PhantomData,
        }
    }

    /// The network device the buffer arrived on.
    pub fn dev(&self) -> Option<&'a Device> {
        // SAFETY: The buffer is valid; its `dev`, if set, lives for `'a` (`from_raw`).
        let dev = unsafe {
            (*self.skb.as_raw())
                .__bindgen_anon_1
                .__bindgen_anon_1
                .__bindgen_anon_1
                .dev
        };
        // SAFETY: See above.
        NonNull::new(dev).map(|d| unsafe { Device::from_raw(d.as_ptr()) })
    }

    /// The buffer, to keep beyond the callback; it no longer names its device.
    pub fn into_skb(self) -> SkBuff {
        // SAFETY: The buffer is ours; clearing `dev` keeps nobody from reaching a device that
        // may go away once the callback returns.
        unsafe {
            (*self.skb.as_raw())
                .__bindgen_anon_1
                .__bindgen_anon_1
                .__bindgen_anon_1
                .dev = core::ptr::null_mut()
        };
        self.skb
    }
}

impl core::ops::Deref for Received<'_> {
    type Target = SkBuff;

    fn deref(&self) -> &SkBuff {
        &self.skb
    }
}

impl core::ops::DerefMut for Received<'_> {
    fn deref_mut(&mut self) -> &mut SkBuff {
        &mut self.skb
    }
}

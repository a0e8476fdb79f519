// SPDX-License-Identifier: GPL-2.0

//! Memory that a software device copies from and to, one page at a time.
//!
//! A software RDMA device moves a message from the pages one registration names to the pages
//! another names, as a NIC's DMA engine would. A [`PageSlice`] is part of one page, borrowed
//! from what keeps that page for the device: the pin of a [`Umem`](super::mr::Umem), or the
//! kernel caller that lent a [`KernelBuf`](super::mr::KernelBuf); a [`PageRun`] is a stretch of
//! a umem's pages. [`copy`] moves bytes between two slices and [`copy_run`] between two runs,
//! with a single copy through temporary kernel mappings (a whole page with the architecture's
//! page copy); the bytes never pass through a Rust reference, so a process writing its pages
//! meanwhile changes only what it reads back.
//!
//! C header: [`include/linux/highmem.h`](srctree/include/linux/highmem.h).

use super::mmap::SharedPages;
use crate::{bindings, page::PAGE_SIZE, prelude::*};
use core::{marker::PhantomData, ptr::NonNull};

/// `len` bytes at `offset` of one page, which stays the device's for `'a`.
///
/// # Invariants
///
/// `page` is a valid page that its owner keeps (pinned, or lent to the device) for `'a`, and
/// `offset + len <= PAGE_SIZE`; it may be written only if `writable`.
pub struct PageSlice<'a> {
    page: NonNull<bindings::page>,
    offset: usize,
    len: usize,
    writable: bool,
    _owner: PhantomData<&'a ()>,
}

impl<'a> PageSlice<'a> {
    /// Makes the slice of `len` bytes at `offset` of `page`; `None` if it leaves the page.
    ///
    /// # Safety
    ///
    /// `page` is a valid page that stays allocated, and may be read by the device (and written,
    /// if `writable`), for `'a`.
    pub(crate) unsafe fn new(
        page: *mut bindings::page,
        offset: usize,
        len: usize,
        writable: bool,
    ) -> Option<Self> {
        if offset.checked_add(len)? > PAGE_SIZE {
            return None;
        }
        // INVARIANT: The range lies in the page (checked); the rest is the caller's guarantee.
        Some(Self {
            page: NonNull::new(page)?,
            offset,
            len,
            writable,
            _owner: PhantomData,
        })
    }

    /// `len` bytes at `offset` of the kernel's page of zeroes, read-only: what a device reads
    /// from memory that holds nothing (a null MR). `None` if the range leaves the page.
    pub fn zeroes(offset: usize, len: usize) -> Option<PageSlice<'static>> {
        // SAFETY: The zero page is allocated for the kernel's lifetime and always readable; the
        // slice is not writable.
        unsafe { PageSlice::new(bindings::rdma_zero_page(), offset, len, false) }
    }

    /// The number of bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the slice holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The offset in the page of `n` bytes at byte `at` of the slice.
    fn at(&self, at: usize, n: usize) -> Result<usize> {
        if at.checked_add(n).ok_or(EFAULT)? > self.len {
            return Err(EFAULT);
        }
        Ok(self.offset + at)
    }

    /// Copies `dst.len()` bytes from byte `at` of the slice into `dst`.
    pub fn read(&self, at: usize, dst: &mut [u8]) -> Result {
        let offset = self.at(at, dst.len())?;
        // SAFETY: The page is valid and the device's for the borrow (type invariant), the
        // range lies within it (checked above), and `dst` is ours to write.
        unsafe {
            bindings::memcpy_from_page(
                dst.as_mut_ptr().cast(),
                self.page.as_ptr(),
                offset,
                dst.len(),
            )
        };
        Ok(())
    }

    /// The offset in the page of `n` bytes at byte `at` of the slice, to be written: fails for
    /// a page its owner did not give the device to write (a read-only pin).
    fn at_writable(&self, at: usize, n: usize) -> Result<usize> {
        if !self.writable {
            return Err(EPERM);
        }
        self.at(at, n)
    }

    /// Copies `src` to byte `at` of the slice.
    pub fn write(&self, at: usize, src: &[u8]) -> Result {
        let offset = self.at_writable(at, src.len())?;
        // SAFETY: As for `read`, and the page may be written (checked above); `src` is only
        // read.
        unsafe {
            bindings::memcpy_to_page(self.page.as_ptr(), offset, src.as_ptr().cast(), src.len())
        };
        Ok(())
    }
}

impl PageSlice<'_> {
    /// Stores `value` (native byte order) in the eight bytes at byte `at` of the slice with one
    /// store ordered after everything written before it (release): a CPU reading them sees the
    /// old value or the new one, never a mix. Fails with `EINVAL` if they are not 8-byte
    /// aligned in the page, `EPERM` if the page may not be written. 64-bit kernels only (one
    /// store of 8 bytes).
    #[cfg(CONFIG_64BIT)]
    pub fn store_u64_release(&self, at: usize, value: u64) -> Result {
        let offset = self.at_writable(at, 8)?;
        if offset % 8 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: The page is valid and the device's to write for the borrow (type invariant,
        // `at_writable`), and the aligned eight bytes lie within it (checked above).
        unsafe { bindings::rdma_store_release_u64(self.page.as_ptr(), offset, value) };
        Ok(())
    }

    /// Continues CRC-32 `crc` (as `crc32_le`) over `n` bytes from byte `at` of the slice.
    pub fn crc32(&self, at: usize, n: usize, crc: u32) -> Result<u32> {
        let offset = self.at(at, n)?;
        // SAFETY: The page is valid and the device's for the borrow (type invariant), and the
        // range lies within it (checked above); the helper only reads it.
        Ok(unsafe { bindings::rdma_crc32_page(crc, self.page.as_ptr(), offset, n) })
    }

    /// Appends `n` bytes from byte `at` of the slice to `skb` as a fragment that refers to the
    /// page (see [`SkBuff::append_page`]): the page stays allocated while the buffer lives,
    /// and the network stack reads it when the buffer leaves. The zero page is refused
    /// (`EOPNOTSUPP`): a fragment may be written in place further down the stack, and that
    /// page is every process's zeroes.
    ///
    /// [`SkBuff::append_page`]: crate::net::skb::SkBuff::append_page
    #[cfg(CONFIG_INET)]
    pub fn append_to(&self, skb: &mut crate::net::skb::SkBuff, at: usize, n: usize) -> Result {
        // SAFETY: The helper only returns the address of the zero page.
        if self.page.as_ptr() == unsafe { bindings::rdma_zero_page() } {
            return Err(EOPNOTSUPP);
        }
        let offset = self.at(at, n)?;
        // SAFETY: The page is valid (type invariant) and the range lies within it (checked
        // above); the buffer takes its own reference, so it stays allocated as long as the
        // buffer may read it, and the device may read the page (type invariant).
        unsafe { skb.append_page(self.page.as_ptr(), offset, n) }
    }
}

/// `len` bytes from byte `offset` of the first page of a run of pages that stay the device's for
/// `'a`: a stretch of pinned memory across pages, copied with one call for all of them
/// ([`copy_run`]) where a [`PageSlice`] would take a call per page.
///
/// # Invariants
///
/// Every page in `pages` is a valid page that its owner keeps (pinned) for `'a`,
/// `offset < PAGE_SIZE` and `offset + len <= pages.len() * PAGE_SIZE`; the pages may be written
/// only if `writable`.
pub struct PageRun<'a> {
    pages: &'a [*mut bindings::page],
    offset: usize,
    len: usize,
    writable: bool,
}

impl<'a> PageRun<'a> {
    /// Makes the run of `len` bytes from byte `offset` of the first of `pages`; `None` if the
    /// offset is not in the first page or the bytes leave the last.
    ///
    /// # Safety
    ///
    /// Every entry of `pages` is a valid page that stays allocated, and may be read by the device
    /// (and written, if `writable`), for `'a`.
    pub(crate) unsafe fn new(
        pages: &'a [*mut bindings::page],
        offset: usize,
        len: usize,
        writable: bool,
    ) -> Option<Self> {
        if offset >= PAGE_SIZE || offset.checked_add(len)? > pages.len().checked_mul(PAGE_SIZE)? {
            return None;
        }
        // INVARIANT: The bytes lie in the pages (checked); the rest is the caller's guarantee.
        Some(Self {
            pages,
            offset,
            len,
            writable,
        })
    }

    /// The number of bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the run holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Copies the first `n` bytes of `src` to the first `n` bytes of `dst`: `EFAULT` if either is
/// shorter, `EPERM` if `dst` may not be written. The runs may share pages; bytes are copied in
/// ascending order, a page's part at a time.
pub fn copy_run(dst: &PageRun<'_>, src: &PageRun<'_>, n: usize) -> Result {
    if !dst.writable {
        return Err(EPERM);
    }
    if n > dst.len || n > src.len {
        return Err(EFAULT);
    }
    // SAFETY: Every page of both runs is valid and the device's for the borrows, `dst`'s to
    // write (type invariants, checked above); both offsets lie in their first page and `n`
    // bytes from them lie in their runs (type invariants and the check above), which is all
    // the helper reaches.
    unsafe {
        bindings::rdma_copy_pages(
            dst.pages.as_ptr(),
            dst.offset,
            src.pages.as_ptr(),
            src.offset,
            n,
        )
    };
    Ok(())
}

/// Copies `n` bytes from byte `src_at` of `src`, memory a process shares with the kernel (a
/// ring), to byte `dst_at` of `dst`, once: `EINVAL` if they leave `src`, `EFAULT` if they leave
/// `dst`, `EPERM` if `dst` may not be written. Bytes the process writes meanwhile come out old
/// or new; either is only what it asked to send.
pub fn copy_from_shared(
    dst: &PageSlice<'_>,
    dst_at: usize,
    src: &SharedPages,
    src_at: usize,
    n: usize,
) -> Result {
    let d = dst.at_writable(dst_at, n)?;
    let s = src.range(src_at, n)?;
    // SAFETY: The page is valid and the device's to write for the borrow (type invariant,
    // `at_writable`) and the range lies within it; `s` is `n` bytes of `src`'s allocation
    // (`range`), which lives as long as the borrow of `src` and is read here in C only, as
    // `SharedPages` allows.
    unsafe { bindings::memcpy_to_page(dst.page.as_ptr(), d, s.cast(), n) };
    Ok(())
}

/// Copies `n` bytes from byte `src_at` of `src` to byte `dst_at` of `dst`. Both may be parts of
/// one page, overlapping or not.
pub fn copy(
    dst: &PageSlice<'_>,
    dst_at: usize,
    src: &PageSlice<'_>,
    src_at: usize,
    n: usize,
) -> Result {
    let d = dst.at_writable(dst_at, n)?;
    let s = src.at(src_at, n)?;
    // SAFETY: Both pages are valid and the device's for the borrows (type invariants), and
    // both ranges lie within their pages (checked above).
    unsafe { bindings::rdma_copy_page(dst.page.as_ptr(), d, src.page.as_ptr(), s, n) };
    Ok(())
}

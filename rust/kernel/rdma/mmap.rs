// SPDX-License-Identifier: GPL-2.0

//! Memory that a driver shares with a user process through `mmap` on the uverbs file.
//!
//! [`SharedPages`] is kernel memory (from `vmalloc_user`) that userspace maps and may rewrite at
//! any moment: the kernel only reads it through copies and atomic loads, never through
//! references. An [`MmapEntry`] publishes it to one user context under an mmap offset; the
//! memory stays alive while the entry exists or any mapping of it does.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/linux/vmalloc.h`](srctree/include/linux/vmalloc.h).

use super::driver::{Adapter, Driver};
use crate::{
    bindings,
    prelude::*,
    sync::{Arc, UniqueArc},
    types::{AsBytes, FromBytes, Opaque},
};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering},
};

/// The atomic types through which the kernel touches [`SharedPages`].
trait SharedAtomic: Sized {
    /// # Safety
    ///
    /// `ptr` must be valid and aligned for `Self` for `'a`, and accessed only atomically.
    unsafe fn at<'a>(ptr: *mut u8) -> &'a Self;
}

macro_rules! shared_atomic {
    ($($t:ty),*) => {$(
        impl SharedAtomic for $t {
            unsafe fn at<'a>(ptr: *mut u8) -> &'a Self {
                // SAFETY: The caller's guarantee is `from_ptr`'s.
                unsafe { <$t>::from_ptr(ptr.cast()) }
            }
        }
    )*};
}
shared_atomic!(AtomicU8, AtomicU32, AtomicU64);

/// Zeroed, page-granular kernel memory that userspace can map.
///
/// # Invariants
///
/// `ptr` is a `vmalloc_user`-style (`VM_USERMAP`) allocation of `len` bytes (a multiple of
/// the page size), owned by this value. Its contents may change at any time (userspace writes
/// to it); the kernel only accesses them through atomics or through copies made in C (as
/// [`copy_from_shared`](super::pages::copy_from_shared) does), never through references or
/// plain Rust accesses, so that concurrent writes from userspace are never a data race on the
/// kernel's side.
pub struct SharedPages {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: The memory is plain kernel memory, usable from any thread; all accesses are atomics,
// which tolerate concurrent writers.
unsafe impl Send for SharedPages {}
// SAFETY: See `Send`: shared access never creates references to the contents.
unsafe impl Sync for SharedPages {}

impl SharedPages {
    /// Allocates `len` bytes, rounded up to whole pages, zeroed, and charged to the memory
    /// cgroup of the calling task (the process that will map them).
    pub fn new(len: usize) -> Result<Arc<Self>> {
        if len == 0 {
            return Err(EINVAL);
        }
        let len = len
            .checked_next_multiple_of(bindings::PAGE_SIZE)
            .ok_or(EINVAL)?;
        // The reference count first: once the memory exists, nothing can fail.
        let arc = UniqueArc::new_uninit(GFP_KERNEL)?;
        // SAFETY: `vmalloc_user_account` takes any size and returns zeroed memory that
        // `remap_vmalloc_range` may map, or null.
        let ptr = unsafe { bindings::vmalloc_user_account(len as _) }.cast::<u8>();
        let ptr = NonNull::new(ptr).ok_or(ENOMEM)?;
        // INVARIANT: `ptr` is a fresh `vmalloc_user` allocation of `len` bytes.
        Ok(arc.write(Self { ptr, len }).into())
    }

    /// Returns the size in bytes, a multiple of the page size.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Returns whether the buffer is empty (never true).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check(&self, offset: usize, len: usize, align: usize) -> Result {
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        if end > self.len || offset % align != 0 {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Loads the `u32` at `offset` (4-byte aligned) with acquire ordering: what userspace
    /// wrote before it stored the value is visible afterwards.
    pub fn load_u32(&self, offset: usize) -> Result<u32> {
        Ok(self.atomic::<AtomicU32>(offset)?.load(Ordering::Acquire))
    }

    /// Stores `value` at `offset` (4-byte aligned) with release ordering: what the kernel wrote
    /// before is visible to userspace once it sees the value.
    pub fn store_u32(&self, offset: usize, value: u32) -> Result {
        self.atomic::<AtomicU32>(offset)?
            .store(value, Ordering::Release);
        Ok(())
    }

    /// Copies `dst.len()` bytes at `offset` out of the shared memory; the copy is private and
    /// can be validated without userspace changing it underneath. Bytes that userspace writes
    /// during the copy come out old or new, each word as one or the other.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result {
        self.check(offset, dst.len(), 1)?;
        let mut at = offset;
        for chunk in dst.chunks_mut(8) {
            match <&mut [u8; 8]>::try_from(&mut *chunk) {
                Ok(word) if at % 8 == 0 => {
                    *word = self
                        .atomic::<AtomicU64>(at)?
                        .load(Ordering::Relaxed)
                        .to_ne_bytes();
                }
                _ => {
                    for (i, b) in chunk.iter_mut().enumerate() {
                        *b = self.atomic::<AtomicU8>(at + i)?.load(Ordering::Relaxed);
                    }
                }
            }
            at += chunk.len();
        }
        Ok(())
    }

    /// Copies `src` into the shared memory at `offset`.
    pub fn write(&self, offset: usize, src: &[u8]) -> Result {
        self.check(offset, src.len(), 1)?;
        let mut at = offset;
        for chunk in src.chunks(8) {
            match <&[u8; 8]>::try_from(chunk) {
                Ok(word) if at % 8 == 0 => {
                    self.atomic::<AtomicU64>(at)?
                        .store(u64::from_ne_bytes(*word), Ordering::Relaxed);
                }
                _ => {
                    for (i, b) in chunk.iter().enumerate() {
                        self.atomic::<AtomicU8>(at + i)?
                            .store(*b, Ordering::Relaxed);
                    }
                }
            }
            at += chunk.len();
        }
        Ok(())
    }

    /// The atomic of type `A` at byte `offset`, if it lies in bounds and is aligned for `A`.
    ///
    /// Userspace writes the memory with plain stores at any time; the kernel touches it only
    /// through atomics, so that its reads and writes are defined whatever userspace does
    /// meanwhile (relaxed ones compile to plain loads and stores).
    fn atomic<A: SharedAtomic>(&self, offset: usize) -> Result<&A> {
        self.check(
            offset,
            core::mem::size_of::<A>(),
            core::mem::align_of::<A>(),
        )?;
        // SAFETY: In bounds and aligned (checked); the memory lives as long as `self` and is
        // only ever accessed through atomics on the kernel side (type invariant).
        Ok(unsafe { A::at(self.ptr.as_ptr().add(offset)) })
    }

    /// Copies the `T` at `offset` out of the shared memory.
    pub fn read_obj<T: FromBytes>(&self, offset: usize) -> Result<T> {
        let mut value = core::mem::MaybeUninit::<T>::uninit();
        // SAFETY: `value` is `size_of::<T>()` bytes of writable memory.
        let bytes = unsafe {
            core::slice::from_raw_parts_mut(
                value.as_mut_ptr().cast::<u8>(),
                core::mem::size_of::<T>(),
            )
        };
        self.read(offset, bytes)?;
        // SAFETY: All bytes were written, and any bytes are a valid `T` (`FromBytes`).
        Ok(unsafe { value.assume_init() })
    }

    /// Copies `value` into the shared memory at `offset`.
    pub fn write_obj<T: AsBytes>(&self, offset: usize, value: &T) -> Result {
        // SAFETY: `T: AsBytes`, so all of its bytes are initialised.
        let bytes = unsafe {
            core::slice::from_raw_parts((value as *const T).cast::<u8>(), core::mem::size_of::<T>())
        };
        self.write(offset, bytes)
    }

    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The address of the `len` bytes at `offset`, for a copy made in C; `EINVAL` if they leave
    /// the memory.
    pub(crate) fn range(&self, offset: usize, len: usize) -> Result<*const u8> {
        self.check(offset, len, 1)?;
        // SAFETY: `offset + len <= self.len` (checked), so the result lies in the allocation.
        Ok(unsafe { self.ptr.as_ptr().add(offset) })
    }
}

impl Drop for SharedPages {
    fn drop(&mut self) {
        // SAFETY: `ptr` is our `vmalloc_user` allocation; no mapping refers to it any more,
        // because mappings hold the `Arc` through their mmap entry.
        unsafe { bindings::vfree(self.ptr.as_ptr().cast()) };
    }
}

/// The C entry and the memory it publishes; freed by ib_core's `mmap_free` callback.
#[repr(C)]
pub(crate) struct EntryInner {
    rdma: Opaque<bindings::rdma_user_mmap_entry>,
    pub(crate) pages: Arc<SharedPages>,
}

impl EntryInner {
    /// Returns the entry that contains `rdma`.
    ///
    /// # Safety
    ///
    /// `rdma` must be the entry of an `EntryInner` inserted by [`MmapEntry::insert`], alive for
    /// `'a`.
    pub(crate) unsafe fn from_raw<'a>(rdma: *mut bindings::rdma_user_mmap_entry) -> &'a Self {
        // SAFETY: `rdma` is the first field of a `repr(C)` `EntryInner` (caller guarantee).
        unsafe { &*rdma.cast::<Self>() }
    }

    /// Frees an entry after ib_core dropped its last reference.
    ///
    /// # Safety
    ///
    /// `rdma` must be the entry of an `EntryInner` inserted by [`MmapEntry::insert`] that nothing
    /// refers to any more.
    pub(crate) unsafe fn free(rdma: *mut bindings::rdma_user_mmap_entry) {
        // SAFETY: The entry was allocated by `KBox` in `MmapEntry::insert` and is unused now.
        drop(unsafe { KBox::from_raw(rdma.cast::<Self>()) });
    }
}

/// Memory published to a user context at an mmap offset.
///
/// Dropping the entry removes the offset, so new `mmap` calls fail; mappings already made keep
/// the memory until they are unmapped.
///
/// # Invariants
///
/// `ptr` is an `EntryInner` inserted into a user context, for which this value holds the
/// insertion (removed on drop).
pub struct MmapEntry {
    ptr: NonNull<EntryInner>,
}

// SAFETY: Removing the entry may happen on any thread; ib_core locks its table.
unsafe impl Send for MmapEntry {}
// SAFETY: `&MmapEntry` only reads the immutable offset.
unsafe impl Sync for MmapEntry {}

impl MmapEntry {
    /// Inserts `pages` into the mmap table of `ucontext`.
    ///
    /// # Safety
    ///
    /// `ucontext` must be a valid user context whose driver frees entries with
    /// [`EntryInner::free`] in `mmap_free` and maps them with `remap_vmalloc_range`.
    pub(crate) unsafe fn insert(
        ucontext: *mut bindings::ib_ucontext,
        pages: Arc<SharedPages>,
    ) -> Result<Self> {
        let len = pages.len();
        let inner = KBox::new(
            EntryInner {
                rdma: Opaque::new(
                    // SAFETY: `rdma_user_mmap_entry` is plain data for which zero is valid.
                    unsafe { core::mem::zeroed() },
                ),
                pages,
            },
            GFP_KERNEL,
        )?;
        let raw = KBox::into_raw(inner);
        // SAFETY: `raw` is a valid entry at a stable address; `ucontext` is valid (caller).
        let ret =
            unsafe { bindings::rdma_user_mmap_entry_insert(ucontext, (*raw).rdma.get(), len) };
        if ret != 0 {
            // SAFETY: The insertion failed, so we still own the allocation.
            drop(unsafe { KBox::from_raw(raw) });
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: The entry is inserted and we hold the insertion.
        Ok(Self {
            // SAFETY: `KBox::into_raw` never returns null.
            ptr: unsafe { NonNull::new_unchecked(raw) },
        })
    }

    /// Returns the offset userspace passes to `mmap` to map the memory.
    pub fn offset(&self) -> u64 {
        // SAFETY: The entry is valid while inserted (type invariant); `start_pgoff` is fixed.
        let pgoff = unsafe { (*(*self.ptr.as_ptr()).rdma.get()).start_pgoff };
        (pgoff as u64) << bindings::PAGE_SHIFT
    }
}

impl Drop for MmapEntry {
    fn drop(&mut self) {
        // SAFETY: We hold the insertion (type invariant); afterwards ib_core frees the entry
        // through `mmap_free` once the last mapping is gone.
        unsafe { bindings::rdma_user_mmap_entry_remove((*self.ptr.as_ptr()).rdma.get()) };
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// ib_core passes a live context of `T` and the VMA being mapped.
    pub(crate) unsafe extern "C" fn mmap(
        ibuctx: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> crate::ffi::c_int {
        // SAFETY: Looks the offset up in the context's table; it also checks that the VMA's
        // length equals the entry's.
        let rdma = unsafe { bindings::rdma_user_mmap_entry_get(ibuctx, vma) };
        if rdma.is_null() {
            return EINVAL.to_errno();
        }
        // SAFETY: `Ucontext::insert_mmap` is the only way entries get into a `T` context.
        let entry = unsafe { EntryInner::from_raw(rdma) };
        // SAFETY: The pages are a `vmalloc_user` allocation of exactly the VMA's length.
        let ret = unsafe { bindings::remap_vmalloc_range(vma, entry.pages.as_ptr().cast(), 0) };
        // SAFETY: Drops the reference taken by `rdma_user_mmap_entry_get`; the VMA keeps its own.
        unsafe { bindings::rdma_user_mmap_entry_put(rdma) };
        ret
    }

    /// # Safety
    ///
    /// ib_core calls this once, when the last reference to an entry is gone.
    pub(crate) unsafe extern "C" fn mmap_free(rdma: *mut bindings::rdma_user_mmap_entry) {
        // SAFETY: Entries of `T` contexts are `EntryInner`s and this is the last reference.
        unsafe { EntryInner::free(rdma) };
    }
}

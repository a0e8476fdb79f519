// SPDX-License-Identifier: GPL-2.0

//! Memory regions (`struct ib_mr`) and pinned user memory (`struct ib_umem`).
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/rdma/ib_umem.h`](srctree/include/rdma/ib_umem.h).

use super::{
    device::Device,
    driver::{Adapter, Driver},
    pages::{PageRun, PageSlice},
    pd::Pd,
    ucontext::User,
};
use crate::{bindings, error::from_err_ptr, page::PAGE_SIZE, prelude::*, types::Opaque};
use core::{
    ffi::c_void,
    ops::Deref,
    ptr::{null_mut, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};

super::typed::flag_set! {
    /// Access rights of a memory region or window (`enum ib_access_flags`).
    ///
    /// Bits the type does not name are kept, so that a driver can refuse what it does not
    /// implement:
    ///
    /// ```
    /// use kernel::rdma::mr::Access;
    ///
    /// const SUPPORTED: Access = Access::LOCAL_WRITE.union(Access::REMOTE_WRITE);
    /// let asked = Access::LOCAL_WRITE | Access::REMOTE_ATOMIC;
    /// assert!(asked.contains(Access::LOCAL_WRITE));
    /// assert_eq!(asked.difference(SUPPORTED), Access::REMOTE_ATOMIC);
    /// assert!(!Access::from_bits_retain(1 << 30).difference(SUPPORTED).is_empty());
    /// ```
    pub struct Access(u32) {
        /// The local device may write to the region.
        const LOCAL_WRITE = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE;
        /// Peers may write to the region with RDMA writes.
        const REMOTE_WRITE = bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE;
        /// Peers may read the region with RDMA reads.
        const REMOTE_READ = bindings::ib_access_flags_IB_ACCESS_REMOTE_READ;
        /// Peers may use atomic operations on the region.
        const REMOTE_ATOMIC = bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC;
        /// Memory windows may be bound to the region.
        const MW_BIND = bindings::ib_access_flags_IB_ACCESS_MW_BIND;
        /// Addresses in the region (or window) count from 0 rather than from its start address.
        const ZERO_BASED = bindings::ib_access_flags_IB_ZERO_BASED;
        /// Flags a device may ignore (`IB_ACCESS_OPTIONAL`, such as relaxed ordering).
        const OPTIONAL = bindings::ib_access_flags_IB_ACCESS_OPTIONAL;
    }
}

impl Access {
    /// The rights ib_core passes in a C `int`.
    pub(crate) fn from_c(raw: crate::ffi::c_int) -> Self {
        Self::from_bits_retain(raw as u32)
    }
}

/// User memory pinned for a memory region.
///
/// Pinning is charged to the process's locked memory (`RLIMIT_MEMLOCK`) unless it has
/// `CAP_IPC_LOCK`; dropping the value unpins the pages and releases the charge.
///
/// # Invariants
///
/// `ptr` is a umem returned by `ib_umem_get` and owned by this value; `pages` holds the pages
/// it pinned, in order, the first byte lying `offset` bytes into the first; `writable` says
/// whether they were pinned for writing.
pub struct Umem {
    ptr: NonNull<bindings::ib_umem>,
    pages: KVVec<*mut bindings::page>,
    offset: usize,
    len: usize,
    writable: bool,
}

// SAFETY: A umem is a description of pinned pages; it may be released from any thread, and the
// page pointers are only read.
unsafe impl Send for Umem {}
// SAFETY: `&Umem` only reads immutable fields.
unsafe impl Sync for Umem {}

impl Umem {
    /// Pins `len` bytes of the calling process's memory at `addr` for access `access`.
    pub fn get<T: Driver>(dev: &Device<T>, addr: u64, len: u64, access: Access) -> Result<Self> {
        let start = usize::try_from(addr).map_err(|_| EINVAL)?;
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        let offset = start % PAGE_SIZE;
        let npages = offset.checked_add(len).ok_or(EINVAL)?.div_ceil(PAGE_SIZE);
        // The page table costs a pointer per page, charged to the caller as the pin is.
        let mut pages = KVVec::with_capacity(npages, GFP_KERNEL_ACCOUNT)?;
        // SAFETY: The device is valid; `ib_umem_get` checks the range against the caller's
        // address space and returns a umem or an error pointer.
        let raw = from_err_ptr(unsafe {
            bindings::ib_umem_get(dev.as_raw(), start as _, len, access.bits() as i32)
        })?;
        // SAFETY: `from_err_ptr` passed, so the pointer is valid and not null.
        let ptr = unsafe { NonNull::new_unchecked(raw) };
        // SAFETY: The umem is valid; `pages` has room for `npages` pointers, which the helper
        // writes at most.
        let filled = unsafe { bindings::ib_umem_pages(ptr.as_ptr(), pages.as_mut_ptr(), npages) };
        if filled != npages {
            // SAFETY: The umem is ours and not used after this.
            unsafe { bindings::ib_umem_release(ptr.as_ptr()) };
            return Err(EFAULT);
        }
        // SAFETY: The helper initialised the first `npages` entries, within the capacity.
        unsafe { pages.set_len(npages) };
        // SAFETY: The umem is valid; `writable` is set by `ib_umem_get` and fixed.
        let writable = unsafe { (*ptr.as_ptr()).writable() } != 0;
        // INVARIANT: `ib_umem_get` succeeded, so `ptr` is a umem we own; `pages` holds its
        // pages in order and the first byte lies `offset` bytes into the first.
        Ok(Self {
            ptr,
            pages,
            offset,
            len,
            writable,
        })
    }

    /// Returns the length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The number of pages pinned.
    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// Returns whether the umem is empty (never true: `ib_umem_get` refuses empty ranges).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes from byte `offset` to the end of their page, at most `n` of them; `None` if
    /// `offset` is not in the umem.
    pub fn slice(&self, offset: usize, n: usize) -> Option<PageSlice<'_>> {
        if offset >= self.len {
            return None;
        }
        let pos = self.offset.checked_add(offset)?;
        let page = *self.pages.get(pos / PAGE_SIZE)?;
        let in_page = pos % PAGE_SIZE;
        let len = n.min(PAGE_SIZE - in_page).min(self.len - offset);
        // SAFETY: The page is pinned for as long as the umem lives (type invariant), which the
        // slice borrows, and for writing if `writable`.
        unsafe { PageSlice::new(page, in_page, len, self.writable) }
    }

    /// The bytes from byte `offset` of the umem, at most `n` of them, as one run of pages;
    /// `None` if `offset` is not in the umem.
    pub fn run(&self, offset: usize, n: usize) -> Option<PageRun<'_>> {
        if offset >= self.len {
            return None;
        }
        let n = n.min(self.len - offset);
        let pos = self.offset.checked_add(offset)?;
        let first = pos / PAGE_SIZE;
        let end = pos.checked_add(n)?.div_ceil(PAGE_SIZE);
        let pages = self.pages.get(first..end)?;
        // SAFETY: The pages are pinned for as long as the umem lives (type invariant), which the
        // run borrows, and for writing if `writable`.
        unsafe { PageRun::new(pages, pos % PAGE_SIZE, n, self.writable) }
    }

    /// Calls `f(slice, range)` for each page's part of the `n` bytes at byte `offset`, `range`
    /// being where that part lies in the `n` bytes.
    fn pieces(
        &self,
        offset: usize,
        n: usize,
        mut f: impl FnMut(PageSlice<'_>, core::ops::Range<usize>) -> Result,
    ) -> Result {
        if offset.checked_add(n).ok_or(EINVAL)? > self.len {
            return Err(EINVAL);
        }
        let mut done = 0;
        while done < n {
            let slice = self.slice(offset + done, n - done).ok_or(EINVAL)?;
            let len = slice.len();
            f(slice, done..done + len)?;
            done += len;
        }
        Ok(())
    }

    /// Copies `dst.len()` bytes at byte `offset` of the pinned memory into `dst`.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result {
        self.pieces(offset, dst.len(), |slice, r| slice.read(0, &mut dst[r]))
    }

    /// Copies `src` into the pinned memory at byte `offset`; fails if it was pinned read-only
    /// (its pages may belong to a file the process may not write).
    pub fn write(&self, offset: usize, src: &[u8]) -> Result {
        self.pieces(offset, src.len(), |slice, r| slice.write(0, &src[r]))
    }

    /// Returns the user address the umem starts at.
    pub fn address(&self) -> u64 {
        // SAFETY: The umem is valid (type invariant); `address` is fixed.
        unsafe { (*self.ptr.as_ptr()).address as u64 }
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: We own the umem (type invariant).
        unsafe { bindings::ib_umem_release(self.ptr.as_ptr()) };
    }
}

/// A buffer a kernel caller handed the device: the memory of an SGE in one of its work
/// requests, or a page it mapped into a fast-register MR (`ib_map_mr_sg`).
///
/// Only made for devices with virtual DMA (`ib_uses_virt_dma`), to which ib_core's mapping
/// functions hand kernel virtual addresses. This is the only way a driver reaches kernel memory
/// that a caller names: an address read from a ring, a key or a peer's request can never become
/// one. As for a device's DMA, the verbs give the buffer to the device until the work request
/// completes or the registration is invalidated, and the driver must not touch it afterwards.
///
/// # Invariants
///
/// `addr..addr + len` lies in the kernel's linear map and was handed to a device with virtual
/// DMA by a kernel caller, which does not read or write it while the device owns it.
#[derive(Clone, Debug)]
pub struct KernelBuf {
    addr: usize,
    len: usize,
}

impl KernelBuf {
    /// Makes the buffer of `len` bytes at kernel virtual address `addr`; `None` unless all of
    /// it lies in the linear map.
    ///
    /// # Safety
    ///
    /// A kernel caller handed `addr..addr + len` to a device with virtual DMA, in a work request
    /// or a mapping, and keeps it for the device as the verbs require.
    pub(crate) unsafe fn new(addr: u64, len: u64) -> Option<Self> {
        let start = usize::try_from(addr).ok()?;
        let len = usize::try_from(len).ok()?;
        if len == 0 {
            return None;
        }
        let last = start.checked_add(len - 1)?;
        // The linear map is contiguous, so both ends being in it puts the range in it.
        // SAFETY: `virt_addr_valid` only computes on the value.
        let valid = unsafe {
            bindings::virt_addr_valid(start as _) && bindings::virt_addr_valid(last as _)
        };
        // INVARIANT: Checked above; the rest is the caller's guarantee.
        valid.then_some(Self { addr: start, len })
    }

    /// The kernel virtual address of the first byte, as the caller wrote it in the SGE.
    pub fn addr(&self) -> u64 {
        self.addr as u64
    }

    /// The number of bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: an empty buffer is never made.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of `n` bytes at byte `offset`, if they lie in the buffer.
    fn at(&self, offset: usize, n: usize) -> Result<usize> {
        if offset.checked_add(n).ok_or(EFAULT)? > self.len {
            return Err(EFAULT);
        }
        self.addr.checked_add(offset).ok_or(EFAULT)
    }

    /// The bytes from byte `offset` to the end of their page, at most `n` of them; `None` if
    /// `offset` is not in the buffer.
    pub fn slice(&self, offset: usize, n: usize) -> Option<PageSlice<'_>> {
        if offset >= self.len {
            return None;
        }
        let addr = self.addr.checked_add(offset)?;
        let in_page = addr % PAGE_SIZE;
        let len = n.min(PAGE_SIZE - in_page).min(self.len - offset);
        // SAFETY: `addr` lies in the linear map (type invariant), where `virt_to_page` only
        // computes.
        let page = unsafe { bindings::virt_to_page(addr as *const c_void) };
        // SAFETY: The page is the caller's buffer, lent to the device to read and write while
        // the buffer lives (type invariant); the slice borrows the buffer.
        unsafe { PageSlice::new(page, in_page, len, true) }
    }

    /// Copies `dst.len()` bytes at byte `offset` of the buffer into `dst`.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result {
        let src = self.at(offset, dst.len())?;
        // SAFETY: The bytes lie in the buffer, which is mapped and not written by its owner
        // while the device has it (type invariant); it cannot overlap the driver's own `dst`.
        unsafe { core::ptr::copy_nonoverlapping(src as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Copies `src` to byte `offset` of the buffer.
    pub fn write(&self, offset: usize, src: &[u8]) -> Result {
        let dst = self.at(offset, src.len())?;
        // SAFETY: As for `read`: the caller gave the buffer to the device to write.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst as *mut u8, src.len()) };
        Ok(())
    }
}

/// Whether `dev` uses virtual DMA, so that [`KernelBuf`]s can be made for it.
pub(crate) fn uses_virt_dma<T: Driver>(dev: &Device<T>) -> bool {
    // SAFETY: The device is valid.
    unsafe { bindings::ib_uses_virt_dma(dev.as_raw()) }
}

/// The user memory an `ibv_reg_mr` asks for.
#[derive(Clone, Copy, Debug)]
pub struct UserRegion {
    /// Start address in the process.
    pub start: u64,
    /// Length in bytes.
    pub length: u64,
    /// The I/O virtual address peers use for the start.
    pub iova: u64,
    /// The rights asked for, unknown ones included.
    pub access: Access,
}

/// What the driver returns for a new memory region: its data and keys.
pub struct MrCreated<M> {
    /// The driver's data of the MR.
    pub data: M,
    /// The local key.
    pub lkey: u32,
    /// The remote key.
    pub rkey: u32,
}

/// The page callback of the mapping in progress (see [`SgMapper::map`]).
type SetPage<'a> = &'a mut dyn FnMut(KernelBuf) -> Result;

/// A memory region of driver `T`: ib_core's `struct ib_mr` followed by the driver's data.
/// Unlike other objects, the driver allocates MRs; this type does it for the driver.
///
/// # Invariants
///
/// A `&Mr<T>` is only handed out while the MR is alive with `data` initialised. `set_page` is
/// null or points to the `SetPage` of the [`SgMapper::map`] call that is running on the MR.
#[repr(C)]
pub struct Mr<T: Driver> {
    ib: Opaque<bindings::ib_mr>,
    set_page: AtomicPtr<c_void>,
    data: T::Mr,
}

// SAFETY: `T::Mr` is `Send + Sync`; the C part is managed by ib_core.
unsafe impl<T: Driver> Send for Mr<T> {}
// SAFETY: See `Send`.
unsafe impl<T: Driver> Sync for Mr<T> {}

impl<T: Driver> Mr<T> {
    /// Allocates an MR around `created` and returns the `ib_mr` for ib_core.
    pub(crate) fn into_raw(created: MrCreated<T::Mr>) -> Result<*mut bindings::ib_mr> {
        // SAFETY: `ib_mr` is plain C data for which zero is the initial state.
        let ib: bindings::ib_mr = unsafe { core::mem::zeroed() };
        let mr = KBox::new(
            Self {
                ib: Opaque::new(ib),
                set_page: AtomicPtr::new(null_mut()),
                data: created.data,
            },
            GFP_KERNEL,
        )?;
        let raw = KBox::into_raw(mr);
        // SAFETY: `raw` is valid; the keys are the driver's to set before ib_core sees the MR.
        unsafe {
            (*(*raw).ib.get()).lkey = created.lkey;
            (*(*raw).ib.get()).rkey = created.rkey;
        }
        Ok(raw.cast())
    }

    /// Frees an MR made by [`Mr::into_raw`].
    ///
    /// # Safety
    ///
    /// `ibmr` must come from [`Mr::into_raw`] of this `T` and not be used any more.
    pub(crate) unsafe fn free(ibmr: *mut bindings::ib_mr) {
        // SAFETY: The MR was allocated by `KBox` in `into_raw` (caller guarantee).
        drop(unsafe { KBox::from_raw(ibmr.cast::<Self>()) });
    }

    /// Returns the local key.
    ///
    /// The driver sets the keys at creation; the owner of a fast-register MR changes their key
    /// byte (`ib_update_fast_reg_key`) before it posts a registration, and that post is where
    /// the driver reads them.
    pub fn lkey(&self) -> u32 {
        // SAFETY: The MR is alive; the field is read through a raw pointer, without a
        // reference to the C struct, which its owner may write.
        unsafe { core::ptr::addr_of!((*self.ib.get()).lkey).read() }
    }

    /// Returns the address of the MR's first byte (`iova`), for fast-register MRs as its owner
    /// set it when it posts the registration: `ib_map_mr_sg` sets it and the owner may change
    /// it afterwards (NFS over RDMA puts a transaction ID in its upper bits).
    pub fn iova(&self) -> u64 {
        // SAFETY: As for `lkey`.
        unsafe { core::ptr::addr_of!((*self.ib.get()).iova).read() }
    }

    /// Returns the length in bytes (`length`), for fast-register MRs what `ib_map_mr_sg`
    /// mapped.
    pub fn length(&self) -> u64 {
        // SAFETY: As for `lkey`.
        unsafe { core::ptr::addr_of!((*self.ib.get()).length).read() }
    }
}

/// The scatter/gather list a kernel caller maps into a fast-register MR (`ib_map_mr_sg`).
///
/// # Invariants
///
/// `sg` is a DMA-mapped list of `nents` entries and `offset` null or valid, for `'a`; the MR is
/// a fast-register MR of `T`.
pub struct SgMapper<'a, T: Driver> {
    mr: &'a Mr<T>,
    sg: *mut bindings::scatterlist,
    nents: i32,
    offset: *mut u32,
}

/// What [`SgMapper::map`] mapped: the MR's new address range.
#[derive(Clone, Copy, Debug)]
pub struct Mapped {
    /// SG entries mapped (a prefix of the list).
    pub entries: u32,
    /// The address of the first mapped byte, which peers and SGEs use.
    pub iova: u64,
    /// Bytes mapped.
    pub length: u64,
    /// The size of the pages handed to the callback.
    pub page_size: u32,
}

impl<'a, T: Driver> SgMapper<'a, T> {
    /// # Safety
    ///
    /// The arguments of ib_core's `map_mr_sg` for a fast-register MR of `T`.
    pub(crate) unsafe fn new(
        mr: &'a Mr<T>,
        sg: *mut bindings::scatterlist,
        nents: i32,
        offset: *mut u32,
    ) -> Self {
        // INVARIANT: The caller passes ib_core's arguments.
        Self {
            mr,
            sg,
            nents,
            offset,
        }
    }

    /// Converts the longest prefix of the list that one MR can map into pages of the size the
    /// caller chose (`ib_sg_to_pages`), calling `set_page` with each page. An error from
    /// `set_page` ends the mapping there. Fails with `EBUSY` while another mapping of the MR is
    /// running.
    pub fn map(self, set_page: &mut dyn FnMut(KernelBuf) -> Result) -> Result<Mapped> {
        let mut cb: SetPage<'_> = set_page;
        let cb_ptr = core::ptr::addr_of_mut!(cb).cast::<c_void>();
        self.mr
            .set_page
            .compare_exchange(null_mut(), cb_ptr, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| EBUSY)?;
        // SAFETY: The list and offset are valid (type invariant); `set_page_trampoline` finds
        // `cb` through the MR while this call runs, and only then.
        let n = unsafe {
            bindings::ib_sg_to_pages(
                self.mr.ib.get(),
                self.sg,
                self.nents,
                self.offset,
                Some(set_page_trampoline::<T>),
            )
        };
        self.mr.set_page.store(null_mut(), Ordering::Release);
        let entries = u32::try_from(n).map_err(|_| Error::from_errno(n))?;
        // SAFETY: The MR is alive; `ib_map_mr_sg` set `page_size` before calling the driver.
        let page_size = unsafe { core::ptr::addr_of!((*self.mr.ib.get()).page_size).read() };
        Ok(Mapped {
            entries,
            iova: self.mr.iova(),
            length: self.mr.length(),
            page_size,
        })
    }
}

/// # Safety
///
/// Called by `ib_sg_to_pages` for an MR of `T` from within [`SgMapper::map`].
unsafe extern "C" fn set_page_trampoline<T: Driver>(
    ibmr: *mut bindings::ib_mr,
    addr: u64,
) -> crate::ffi::c_int {
    // SAFETY: The MR is an `Mr<T>` (caller guarantee) whose C part comes first.
    let mr = unsafe { &*ibmr.cast::<Mr<T>>() };
    let cb = mr.set_page.load(Ordering::Acquire).cast::<SetPage<'_>>();
    if cb.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: `ib_map_mr_sg` set the page size before mapping.
    let page_size = unsafe { core::ptr::addr_of!((*ibmr).page_size).read() };
    // SAFETY: Fast-register MRs exist only on devices with virtual DMA (`alloc_mr` refuses the
    // others), so the page is one of a kernel caller's mapped scatter/gather list, which it
    // keeps mapped while the MR maps it.
    let Some(page) = (unsafe { KernelBuf::new(addr, u64::from(page_size)) }) else {
        return EFAULT.to_errno();
    };
    // SAFETY: A non-null pointer is the callback of the running `map` (type invariant), which
    // nothing else uses while `ib_sg_to_pages` runs.
    match unsafe { (*cb)(page) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

impl<T: Driver> Deref for Mr<T> {
    type Target = T::Mr;

    fn deref(&self) -> &T::Mr {
        &self.data
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// ib_core passes a live PD of `T` and `udata` null or valid.
    pub(crate) unsafe extern "C" fn reg_user_mr(
        ibpd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        iova: u64,
        access: crate::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        let reg = || -> Result<*mut bindings::ib_mr> {
            // SAFETY: A live PD of `T`.
            let pd = unsafe { Pd::<T>::from_raw(ibpd) };
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            let region = UserRegion {
                start,
                length,
                iova,
                access: Access::from_c(access),
            };
            Mr::<T>::into_raw(T::reg_user_mr(pd, &region, user)?)
        };
        match reg() {
            Ok(mr) => mr,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// ib_core passes a live kernel PD of `T`.
    pub(crate) unsafe extern "C" fn get_dma_mr(
        ibpd: *mut bindings::ib_pd,
        access: crate::ffi::c_int,
    ) -> *mut bindings::ib_mr {
        // SAFETY: A live PD of `T`.
        let pd = unsafe { Pd::<T>::from_raw(ibpd) };
        let created = if uses_virt_dma(pd.device()) {
            T::get_dma_mr(pd, Access::from_c(access))
        } else {
            Err(EOPNOTSUPP)
        };
        match created.and_then(Mr::<T>::into_raw) {
            Ok(mr) => mr,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// ib_core passes a live PD of `T`.
    pub(crate) unsafe extern "C" fn alloc_mr(
        ibpd: *mut bindings::ib_pd,
        mr_type: bindings::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut bindings::ib_mr {
        let alloc = || -> Result<*mut bindings::ib_mr> {
            if mr_type != bindings::ib_mr_type_IB_MR_TYPE_MEM_REG {
                return Err(EOPNOTSUPP);
            }
            // SAFETY: A live PD of `T`.
            let pd = unsafe { Pd::<T>::from_raw(ibpd) };
            if !uses_virt_dma(pd.device()) {
                return Err(EOPNOTSUPP);
            }
            Mr::<T>::into_raw(T::alloc_fast_mr(pd, max_num_sg)?)
        };
        match alloc() {
            Ok(mr) => mr,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// ib_core passes an MR that `alloc_mr` made (only those are mapped), a DMA-mapped list
    /// of `sg_nents` entries and `sg_offset` null or valid.
    pub(crate) unsafe extern "C" fn map_mr_sg(
        ibmr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        sg_nents: crate::ffi::c_int,
        sg_offset: *mut crate::ffi::c_uint,
    ) -> crate::ffi::c_int {
        // SAFETY: The MR came from `Mr::<T>::into_raw` and is alive.
        let mr = unsafe { &*ibmr.cast::<Mr<T>>() };
        // SAFETY: ib_core's arguments, for a fast-register MR of `T`.
        let mapper = unsafe { SgMapper::new(mr, sg, sg_nents, sg_offset) };
        match T::map_mr_sg(mr, mapper) {
            Ok(n) => i32::try_from(n).unwrap_or(i32::MAX),
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// ib_core calls this once for an MR made by `reg_user_mr`, `get_dma_mr` or `alloc_mr`.
    pub(crate) unsafe extern "C" fn dereg_mr(
        ibmr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        if T::HAS_MAY_DEREG_MR {
            // SAFETY: The MR came from `Mr::<T>::into_raw` and is alive until freed below.
            let mr = unsafe { &*ibmr.cast::<Mr<T>>() };
            if let Err(e) = T::may_dereg_mr(mr) {
                return e.to_errno();
            }
        }
        // SAFETY: The MR came from `Mr::<T>::into_raw` and ib_core is done with it.
        unsafe { Mr::<T>::free(ibmr) };
        0
    }
}

// SPDX-License-Identifier: GPL-2.0-only

//! Fast-register MRs of kernel callers: `ib_alloc_mr`, pages mapped with `ib_map_mr_sg`, then
//! registered under a key by an `IB_WR_REG_MR` work request and invalidated by LOCAL_INV or a
//! peer's SEND_WITH_INV, both carried out by the engine in WQE order.
//!
//! Each registration is an object of its own ([`Registration`]): an access in flight holds
//! the one it resolved, and copies under its lock, so once an invalidation has completed no
//! copy touches the pages any more and the caller may unmap them.

use crate::{
    device::SrdmaDevice,
    keys::Keys,
    mr::{Denied, MrMem},
    params::MAX_FAST_REG_PAGES,
    pd::PdRef,
};
use kernel::{
    new_mutex, new_spinlock,
    prelude::*,
    rdma::{
        mr::{Access, KernelBuf, SgMapper},
        pages::PageSlice,
        uapi::srdma_wqe_bind,
    },
    sync::{Arc, Mutex, SpinLock},
};

/// Rights a registration can grant.
const FAST_REG_ACCESS: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_WRITE)
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_ATOMIC);

/// The pages the last `ib_map_mr_sg` mapped.
struct Mapping {
    /// `max_pages` entries; the first `n` are mapped.
    pages: KVec<Option<KernelBuf>>,
    n: usize,
    iova: u64,
    length: u64,
    page_size: u64,
}

/// The fast-register part of an MR.
pub(crate) struct FastMr {
    max_pages: usize,
    /// Filled by `ib_map_mr_sg`, which may run in atomic context, so a spinlock and no
    /// allocation.
    mapped: Pin<KBox<SpinLock<Mapping>>>,
    /// The registration in force.
    current: Pin<KBox<Mutex<Option<Arc<Registration>>>>>,
}

impl FastMr {
    pub(crate) fn new(max_pages: u32) -> Result<Self> {
        if max_pages == 0 || max_pages > MAX_FAST_REG_PAGES {
            return Err(EINVAL);
        }
        let max_pages = max_pages as usize;
        let mut pages = KVec::new();
        pages.extend_with(max_pages, None, GFP_KERNEL)?;
        Ok(Self {
            max_pages,
            mapped: KBox::pin_init(
                new_spinlock!(Mapping {
                    pages,
                    n: 0,
                    iova: 0,
                    length: 0,
                    page_size: 0,
                }),
                GFP_KERNEL,
            )?,
            current: KBox::pin_init(new_mutex!(None), GFP_KERNEL)?,
        })
    }

    /// `ib_map_mr_sg`: replaces the mapped pages; returns the number of SG entries mapped.
    pub(crate) fn map(&self, sg: SgMapper<'_, SrdmaDevice>) -> Result<u32> {
        let mut m = self.mapped.lock();
        m.n = 0;
        let m = &mut *m;
        let mapped = sg.map(&mut |page| {
            let slot = m.pages.get_mut(m.n).ok_or(ENOMEM)?;
            *slot = Some(page);
            m.n += 1;
            Ok(())
        })?;
        if !mapped.page_size.is_power_of_two() {
            m.n = 0;
            return Err(EINVAL);
        }
        m.iova = mapped.iova;
        m.length = mapped.length;
        m.page_size = u64::from(mapped.page_size);
        Ok(mapped.entries)
    }

    /// Registers the mapped pages under `key` with rights `access`, for the addresses
    /// `iova..iova + length` (the MR's owner may have moved `iova` since the mapping, but not
    /// its offset in the first page, and not beyond what was mapped); the MR must not be
    /// registered already.
    fn register(
        &self,
        key: u32,
        access: Access,
        iova: u64,
        length: u64,
    ) -> core::result::Result<(), Denied> {
        let mut current = self.current.lock();
        if current.is_some() {
            return Err(Denied);
        }
        let mut pages = KVec::with_capacity(self.max_pages, GFP_KERNEL).map_err(|_| Denied)?;
        let (mapped_iova, mapped_length, page_size) = {
            let m = self.mapped.lock();
            // Within the capacity just reserved: no allocation under the spinlock.
            for page in m.pages[..m.n].iter().flatten() {
                pages.push(page.clone(), GFP_ATOMIC).map_err(|_| Denied)?;
            }
            (m.iova, m.length, m.page_size)
        };
        if pages.is_empty() || page_size == 0 || length > mapped_length {
            return Err(Denied);
        }
        let reg = Registration {
            pages,
            // The first mapped byte lies this far into the first page, whatever `iova` says.
            first: mapped_iova & (page_size - 1),
            iova,
            length,
            page_size,
            key,
            access,
            valid: KBox::pin_init(new_mutex!(true), GFP_KERNEL).map_err(|_| Denied)?,
        };
        *current = Some(Arc::new(reg, GFP_KERNEL).map_err(|_| Denied)?);
        Ok(())
    }

    /// Ends the registration under `key`.
    fn invalidate(&self, key: u32) -> core::result::Result<(), Denied> {
        let mut current = self.current.lock();
        match &*current {
            Some(reg) if reg.key == key => {
                // Waits for a copy in progress; later copies through it fail.
                *reg.valid.lock() = false;
                *current = None;
                Ok(())
            }
            _ => Err(Denied),
        }
    }

    /// The registration in force, if any.
    pub(crate) fn registration(&self) -> Option<Arc<Registration>> {
        self.current.lock().clone()
    }
}

impl Drop for FastMr {
    fn drop(&mut self) {
        // Deregistered while registered: a copy in flight holds the registration, so it is
        // ended here, after that copy, before the owner frees the pages.
        if let Some(reg) = self.current.lock().take() {
            *reg.valid.lock() = false;
        }
    }
}

/// One registration of a fast-register MR: pages of `page_size` bytes that map the addresses
/// `iova..iova + length`, the byte at `iova` lying `first` bytes into the first page.
pub(crate) struct Registration {
    pages: KVec<KernelBuf>,
    first: u64,
    iova: u64,
    length: u64,
    page_size: u64,
    key: u32,
    access: Access,
    /// Cleared by the invalidation; held while copying.
    valid: Pin<KBox<Mutex<bool>>>,
}

impl Registration {
    /// Checks an access of `len` bytes at `addr` under `key` with rights `need`; returns its
    /// offset from the start of the first page.
    pub(crate) fn check(&self, key: u32, need: Access, addr: u64, len: u64) -> Option<usize> {
        if key != self.key || !self.access.contains(need) {
            return None;
        }
        let end = addr.checked_add(len)?;
        if addr < self.iova || end > self.iova.checked_add(self.length)? {
            return None;
        }
        usize::try_from(addr - self.iova + self.first).ok()
    }

    /// Runs `f` while the registration is valid, and keeps it so until `f` returns: an
    /// invalidation waits, so once it has completed no copy through the registration runs.
    pub(crate) fn hold<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let valid = self.valid.lock();
        if !*valid {
            return Err(EFAULT);
        }
        f()
    }

    /// The bytes at `offset` (from the start of the first page) to the end of their page, at
    /// most `n`.
    pub(crate) fn slice(&self, offset: usize, n: usize) -> Option<PageSlice<'_>> {
        let page_size = self.page_size as usize;
        let page = self.pages.get(offset.checked_div(page_size)?)?;
        let in_page = offset.checked_rem(page_size)?;
        page.slice(in_page, n.min(page_size - in_page))
    }
}

/// The fast-register MR among `keys` whose keys have the index of `key`, in PD `pd`.
fn lookup(keys: &Keys, key: u32, pd: &PdRef) -> Option<Arc<crate::mr::MrShared>> {
    let mr = keys.mrs.lock().get(key >> 8)?;
    (mr.pd == *pd && matches!(mr.mem, MrMem::Fast(_))).then_some(mr)
}

/// Carries out an `IB_WR_REG_MR` of a kernel caller's QP in PD `pd` that `b` describes:
/// the MR that `b.mr_lkey` names gets the key `b.new_rkey` (the same index, a new key byte),
/// rights `b.access` and the addresses `b.addr..b.addr + b.length`.
pub(crate) fn register(
    keys: &Keys,
    pd: &PdRef,
    b: &srdma_wqe_bind,
) -> core::result::Result<(), Denied> {
    let (lkey, key) = (b.mr_lkey, b.new_rkey);
    let access = Access::from_bits_retain(b.access);
    let writable = access.intersects(Access::REMOTE_WRITE | Access::REMOTE_ATOMIC);
    if key >> 8 != lkey >> 8
        || !access.difference(FAST_REG_ACCESS).is_empty()
        || (writable && !access.contains(Access::LOCAL_WRITE))
    {
        return Err(Denied);
    }
    let mr = lookup(keys, lkey, pd).ok_or(Denied)?;
    match &mr.mem {
        MrMem::Fast(fast) => fast.register(key, access, b.addr, b.length),
        _ => Err(Denied),
    }
}

/// Invalidates the registration under `key` of a fast-register MR among `keys` in PD `pd`
/// (LOCAL_INV, or SEND_WITH_INV at the responder).
pub(crate) fn invalidate(keys: &Keys, pd: &PdRef, key: u32) -> core::result::Result<(), Denied> {
    let mr = lookup(keys, key, pd).ok_or(Denied)?;
    match &mr.mem {
        MrMem::Fast(fast) => fast.invalidate(key),
        _ => Err(Denied),
    }
}

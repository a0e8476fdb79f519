// SPDX-License-Identifier: GPL-2.0-only

//! Memory regions: pinned user memory (or all kernel memory) and the keys that name it.

use crate::{device::SrdmaDevice, params::MAX_MR_SIZE, table::Reservation};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    prelude::*,
    rdma::{
        mr::{access, DmaMemory, MrCreated, Umem, UserRegion},
        pd::Pd,
        ucontext::User,
    },
    sync::Arc,
};

/// Memory key indexes; a key is `index << 8 | key byte`. Index 0 is never used, so that a
/// zeroed key is always invalid; the upper half belongs to memory windows.
pub(crate) const MR_INDEX_MIN: u32 = 1;
pub(crate) const MR_INDEX_MAX: u32 = crate::mw::MW_INDEX_MIN - 1;

/// Rights srdma implements; `IB_ACCESS_OPTIONAL` hints are accepted and ignored.
const SUPPORTED_ACCESS: u32 = access::LOCAL_WRITE
    | access::REMOTE_WRITE
    | access::REMOTE_READ
    | access::REMOTE_ATOMIC
    | access::MW_BIND
    | access::OPTIONAL;

/// The memory behind an MR.
pub(crate) enum MrMem {
    /// Pinned user pages.
    User(Umem),
    /// Kernel callers' memory, addressed by kernel virtual address (the MR's iova is 0).
    Kernel(DmaMemory),
}

impl MrMem {
    /// Copies `dst.len()` bytes at byte `offset` of the MR into `dst`.
    pub(crate) fn read(&self, offset: usize, dst: &mut [u8]) -> Result {
        match self {
            MrMem::User(umem) => umem.read(offset, dst),
            MrMem::Kernel(mem) => mem.read(offset as u64, dst),
        }
    }

    /// Copies `src` to byte `offset` of the MR.
    pub(crate) fn write(&self, offset: usize, src: &[u8]) -> Result {
        match self {
            MrMem::User(umem) => umem.write(offset, src),
            MrMem::Kernel(mem) => mem.write(offset as u64, src),
        }
    }
}

/// What the data path needs of an MR, found by key.
pub(crate) struct MrShared {
    /// The PD the MR belongs to.
    pub(crate) pd_id: u32,
    pub(crate) mem: MrMem,
    /// The address peers and work requests use for the first byte.
    pub(crate) iova: u64,
    pub(crate) length: u64,
    pub(crate) access: u32,
    /// Memory windows bound to the MR; it cannot be deregistered while there are any.
    pub(crate) windows: AtomicU32,
}

/// srdma's part of a memory region.
pub(crate) struct SrdmaMr {
    _key: Reservation<MrShared>,
    shared: Arc<MrShared>,
}

impl SrdmaMr {
    /// Refuses deregistration while windows are bound to the MR, as verbs requires. A bind
    /// that races with the deregistration may still take the MR: its pages then stay pinned,
    /// and reachable through the window, until the window is unbound or deallocated.
    pub(crate) fn may_dereg(&self) -> Result {
        if self.shared.windows.load(Ordering::Relaxed) != 0 {
            return Err(EBUSY);
        }
        Ok(())
    }

    fn publish(pd: &Pd<SrdmaDevice>, shared: MrShared) -> Result<MrCreated<Self>> {
        let key = Reservation::new(pd.device().mrs())?;
        let shared = Arc::new(shared, GFP_KERNEL)?;
        key.publish(shared.clone());
        let k = key.id() << 8;
        Ok(MrCreated {
            data: SrdmaMr { _key: key, shared },
            lkey: k,
            rkey: k,
        })
    }

    pub(crate) fn reg_user(
        pd: &Pd<SrdmaDevice>,
        region: &UserRegion,
        _user: Option<User<'_, SrdmaDevice>>,
    ) -> Result<MrCreated<Self>> {
        if region.access & !SUPPORTED_ACCESS != 0 {
            return Err(EOPNOTSUPP);
        }
        if region.length == 0 || region.length > MAX_MR_SIZE {
            return Err(EINVAL);
        }
        region.iova.checked_add(region.length).ok_or(EINVAL)?;
        let umem = Umem::get(pd.device(), region.start, region.length, region.access)?;
        Self::publish(
            pd,
            MrShared {
                pd_id: pd.id(),
                mem: MrMem::User(umem),
                iova: region.iova,
                length: region.length,
                access: region.access,
                windows: AtomicU32::new(0),
            },
        )
    }

    pub(crate) fn dma(
        pd: &Pd<SrdmaDevice>,
        access: u32,
        mem: DmaMemory,
    ) -> Result<MrCreated<Self>> {
        if access & !SUPPORTED_ACCESS != 0 {
            return Err(EOPNOTSUPP);
        }
        Self::publish(
            pd,
            MrShared {
                pd_id: pd.id(),
                mem: MrMem::Kernel(mem),
                iova: 0,
                length: u64::MAX,
                access,
                windows: AtomicU32::new(0),
            },
        )
    }
}

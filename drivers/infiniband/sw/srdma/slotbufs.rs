// SPDX-License-Identifier: GPL-2.0-only

//! The buffers that kernel callers' work requests name, kept beside their rings slot by slot.
//! The engine reaches kernel memory only through these: an address read from a ring, a key or
//! a peer's request never becomes a kernel pointer.

use kernel::{new_spinlock_irqsave, prelude::*, rdma::mr::KernelBuf, sync::SpinLockIrqSave};

/// The buffers of the SGEs of each slot of one ring of a kernel caller.
pub(crate) struct SlotBufs {
    per_slot: usize,
    /// Written when posting, which may run in atomic context.
    bufs: Pin<KBox<SpinLockIrqSave<KVVec<Option<KernelBuf>>>>>,
}

impl SlotBufs {
    /// For `slots` slots of up to `per_slot` SGEs.
    pub(crate) fn new(slots: u32, per_slot: u32) -> Result<Self> {
        let per_slot = per_slot as usize;
        let n = (slots as usize).checked_mul(per_slot).ok_or(EINVAL)?;
        let mut bufs = KVVec::new();
        bufs.extend_with(n, None, GFP_KERNEL)?;
        Ok(Self {
            per_slot,
            bufs: KBox::pin_init(new_spinlock_irqsave!(bufs), GFP_KERNEL)?,
        })
    }

    /// Sets the buffers of `slot` to `buf(i)` for each SGE `i`; the SGEs a WQE does not use
    /// lose theirs, so nothing outlives the work request that lent it.
    pub(crate) fn fill(&self, slot: usize, buf: impl Fn(usize) -> Option<KernelBuf>) -> Result {
        let start = slot.checked_mul(self.per_slot).ok_or(EINVAL)?;
        let mut bufs = self.bufs.lock();
        let end = start.checked_add(self.per_slot).ok_or(EINVAL)?;
        let entries = bufs.get_mut(start..end).ok_or(EINVAL)?;
        for (i, e) in entries.iter_mut().enumerate() {
            *e = buf(i);
        }
        Ok(())
    }

    /// The buffer of SGE `i` of `slot`.
    pub(crate) fn get(&self, slot: usize, i: usize) -> Option<KernelBuf> {
        if i >= self.per_slot {
            return None;
        }
        let at = slot.checked_mul(self.per_slot)?.checked_add(i)?;
        self.bufs.lock().get(at)?.clone()
    }
}

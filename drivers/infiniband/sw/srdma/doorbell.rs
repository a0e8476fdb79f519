// SPDX-License-Identifier: GPL-2.0-only

//! Doorbell records: small per-queue slots in pages that a process maps.
//!
//! Each user context owns a set of doorbell pages, created on demand and published with mmap.
//! A QP, SRQ or CQ takes one record; userspace writes its producer or consumer index there
//! and the kernel reads it, treating the value as untrusted.

use crate::device::SrdmaDevice;
use kernel::{
    new_mutex,
    prelude::*,
    rdma::{
        mmap::{MmapEntry, SharedPages},
        uapi::{srdma_db_loc, SRDMA_DB_PAGE_SIZE, SRDMA_DB_RECORD_SIZE},
        ucontext::User,
        Device,
    },
    sync::{Arc, Mutex},
};

const RECORDS_PER_PAGE: usize = (SRDMA_DB_PAGE_SIZE / SRDMA_DB_RECORD_SIZE) as usize;
const WORDS: usize = RECORDS_PER_PAGE / 64;

struct DbPage {
    mem: Arc<SharedPages>,
    /// The page's mapping, for pages of user contexts.
    entry: Option<MmapEntry>,
    used: [u64; WORDS],
}

/// The doorbell pages of one user context.
#[derive(Default)]
pub(crate) struct DbPages {
    pages: KVec<DbPage>,
}

/// The doorbell pages of a context, shared by the records taken from them.
pub(crate) type DbPool = Arc<Mutex<DbPages>>;

impl DbPages {
    /// Withdraws the pages' mappings, as their user context goes; records still held by the
    /// data path keep the memory.
    pub(crate) fn unpublish(&mut self) {
        for page in self.pages.iter_mut() {
            drop(page.entry.take());
        }
    }
}

pub(crate) fn new_pool() -> Result<DbPool> {
    Arc::pin_init(new_mutex!(DbPages::default()), GFP_KERNEL)
}

/// One doorbell record; returned to its page when dropped.
pub(crate) struct DbRecord {
    mem: Arc<SharedPages>,
    key: u64,
    page: usize,
    slot: usize,
    pool: DbPool,
}

impl DbRecord {
    /// Takes a record for a queue of `dev`: from the user context's pages for a process, from
    /// the device's unmapped pages for a kernel caller.
    pub(crate) fn alloc_for(
        dev: &Device<SrdmaDevice>,
        user: Option<&User<'_, SrdmaDevice>>,
    ) -> Result<Self> {
        match user {
            Some(user) => {
                let uctx = user.ucontext;
                Self::alloc(&uctx.db, |pages| uctx.insert_mmap(pages).map(Some))
            }
            None => Self::alloc(dev.kernel_db(), |_| Ok(None)),
        }
    }

    /// Takes a free record, mapping a new page into the process when all are taken.
    /// `publish` makes a new page mmap-able (it is the user context's `insert_mmap`); for the
    /// records of kernel callers' queues, which nobody maps, it returns `None`.
    pub(crate) fn alloc(
        pool: &DbPool,
        publish: impl FnOnce(Arc<SharedPages>) -> Result<Option<MmapEntry>>,
    ) -> Result<Self> {
        let mut pages = pool.lock();
        let found = pages.pages.iter().enumerate().find_map(|(i, p)| {
            p.used
                .iter()
                .enumerate()
                .find(|(_, w)| **w != u64::MAX)
                .map(|(w, bits)| (i, w * 64 + bits.trailing_ones() as usize))
        });
        let (page, slot) = match found {
            Some(found) => found,
            None => {
                let mem = SharedPages::new(SRDMA_DB_PAGE_SIZE as usize)?;
                let entry = publish(mem.clone())?;
                pages.pages.push(
                    DbPage {
                        mem,
                        entry,
                        used: [0; WORDS],
                    },
                    GFP_KERNEL,
                )?;
                (pages.pages.len() - 1, 0)
            }
        };
        let p = &mut pages.pages[page];
        p.used[slot / 64] |= 1 << (slot % 64);
        let rec = DbRecord {
            mem: p.mem.clone(),
            key: p.entry.as_ref().map_or(0, |e| e.offset()),
            page,
            slot,
            pool: pool.clone(),
        };
        // A record taken again starts clean, whatever its previous owner left.
        rec.mem
            .write(rec.offset(), &[0; SRDMA_DB_RECORD_SIZE as usize])?;
        Ok(rec)
    }

    /// Returns the byte offset of the record in its page.
    pub(crate) fn offset(&self) -> usize {
        self.slot * SRDMA_DB_RECORD_SIZE as usize
    }

    /// Tells userspace where the record is.
    pub(crate) fn location(&self) -> srdma_db_loc {
        srdma_db_loc {
            db_mmap_key: self.key,
            db_offset: self.offset() as u32,
            reserved: 0,
        }
    }

    /// Reads the `u32` at `field` (a byte offset within the record) as userspace last wrote it.
    pub(crate) fn load(&self, field: usize) -> Result<u32> {
        self.mem.load_u32(self.offset() + field)
    }

    /// Writes the `u32` at `field` (a byte offset within the record).
    pub(crate) fn store(&self, field: usize, value: u32) -> Result {
        self.mem.store_u32(self.offset() + field, value)
    }
}

impl Drop for DbRecord {
    fn drop(&mut self) {
        let mut pages = self.pool.lock();
        if let Some(p) = pages.pages.get_mut(self.page) {
            p.used[self.slot / 64] &= !(1 << (self.slot % 64));
        }
    }
}

// SPDX-License-Identifier: GPL-2.0-only

//! Completion queues: a ring of CQEs that the process maps and polls without a syscall.

use crate::{device::SrdmaDevice, doorbell::DbRecord, params::MAX_CQE};
use kernel::{
    new_mutex,
    prelude::*,
    rdma::{
        cq::{Cq, CqInitAttr},
        mmap::{MmapEntry, SharedPages},
        uapi::{srdma_cqe, srdma_create_cq_resp, SRDMA_CQE_SIZE},
        ucontext::User,
        Device,
    },
    sync::{Arc, Mutex},
};

const CQE_SIZE: usize = SRDMA_CQE_SIZE as usize;

/// A CQE ring and where it is published.
struct CqRing {
    /// `cqe_cnt * SRDMA_CQE_SIZE` bytes, rounded up to pages.
    mem: Arc<SharedPages>,
    /// Entries in the ring, a power of two.
    cqe_cnt: u32,
    /// The ring's mmap offset, for user CQs.
    entry: Option<MmapEntry>,
    /// Free-running index of the next CQE the kernel writes.
    producer: u32,
}

impl CqRing {
    fn new(cqe: u32, user: Option<&User<'_, SrdmaDevice>>) -> Result<Self> {
        if cqe == 0 || cqe > MAX_CQE {
            return Err(EINVAL);
        }
        // One slot stays empty so that a full ring is told apart from an empty one.
        let cqe_cnt = (cqe + 1).next_power_of_two();
        let mem = SharedPages::new(cqe_cnt as usize * CQE_SIZE)?;
        let entry = match user {
            Some(user) => Some(user.ucontext.insert_mmap(mem.clone())?),
            None => None,
        };
        Ok(Self {
            mem,
            cqe_cnt,
            entry,
            producer: 0,
        })
    }

    fn resp(&self, db: Option<&DbRecord>, cq_id: u32) -> srdma_create_cq_resp {
        srdma_create_cq_resp {
            ring_mmap_key: self.entry.as_ref().map_or(0, |e| e.offset()),
            ring_size: self.mem.len() as u32,
            cqe_cnt: self.cqe_cnt,
            db: db.map(|d| d.location()).unwrap_or_default(),
            cq_id,
            reserved: 0,
        }
    }
}

/// The state of a CQ that QPs write completions to.
pub(crate) struct CqShared {
    ring: Pin<KBox<Mutex<CqRing>>>,
    /// The consumer index and arm word, for user CQs.
    db: Option<DbRecord>,
    cq_id: u32,
}

impl CqShared {
    /// Writes `cqe` as the next CQE: the body first, then the owner word with release
    /// ordering, so a consumer that sees the new phase sees the whole CQE. Fails with `ENOSPC`
    /// when the ring is full (the CQ overran).
    pub(crate) fn push(&self, cqe: &srdma_cqe) -> Result {
        let mut ring = self.ring.lock();
        let consumer = match &self.db {
            Some(db) => db.load(0)?,
            None => ring.producer,
        };
        // A consumer index the process corrupted reads as an overrun too.
        if ring.producer.wrapping_sub(consumer) >= ring.cqe_cnt {
            return Err(ENOSPC);
        }
        let idx = (ring.producer & (ring.cqe_cnt - 1)) as usize;
        let phase = ((ring.producer / ring.cqe_cnt) & 1) ^ 1;
        let mut body = *cqe;
        body.owner = phase ^ 1;
        ring.mem.write_obj(idx * CQE_SIZE, &body)?;
        ring.mem.store_u32(idx * CQE_SIZE + OWNER_OFFSET, phase)?;
        ring.producer = ring.producer.wrapping_add(1);
        Ok(())
    }
}

const OWNER_OFFSET: usize = CQE_SIZE - 4;

/// srdma's part of a completion queue.
pub(crate) struct SrdmaCq {
    pub(crate) shared: Arc<CqShared>,
}

impl SrdmaCq {
    /// Creates a CQ with at least `attr.cqe` entries; returns it with its real size.
    pub(crate) fn new(
        dev: &Device<SrdmaDevice>,
        attr: &CqInitAttr,
        user: Option<User<'_, SrdmaDevice>>,
    ) -> Result<(Self, u32)> {
        if attr.flags != 0 {
            return Err(EOPNOTSUPP);
        }
        let ring = CqRing::new(attr.cqe, user.as_ref())?;
        let cq_id = dev.next_cq_id();
        let db = match &user {
            Some(user) => {
                let uctx = user.ucontext;
                Some(DbRecord::alloc(&uctx.db, |pages| uctx.insert_mmap(pages))?)
            }
            None => None,
        };
        let resp = ring.resp(db.as_ref(), cq_id);
        let cqe = ring.cqe_cnt - 1;
        if let Some(mut user) = user {
            user.udata.write(&resp)?;
        }
        let shared = CqShared {
            ring: KBox::pin_init(new_mutex!(ring), GFP_KERNEL)?,
            db,
            cq_id,
        };
        Ok((
            SrdmaCq {
                shared: Arc::new(shared, GFP_KERNEL)?,
            },
            cqe,
        ))
    }

    /// Moves the CQ to a ring of at least `cqe` entries, carrying over the CQEs not yet
    /// consumed; refuses a ring too small for them.
    pub(crate) fn resize(
        cq: &Cq<SrdmaDevice>,
        cqe: u32,
        user: Option<User<'_, SrdmaDevice>>,
    ) -> Result<u32> {
        let cq = &cq.shared;
        let mut new = CqRing::new(cqe, user.as_ref())?;
        let mut ring = cq.ring.lock();
        // The consumer index is the process's word: bound what it claims by what was produced.
        let consumer = match &cq.db {
            Some(db) => db.load(0)?,
            None => ring.producer,
        };
        let pending = ring.producer.wrapping_sub(consumer);
        if pending > ring.cqe_cnt {
            return Err(EINVAL);
        }
        if pending >= new.cqe_cnt {
            return Err(EINVAL);
        }
        let mut cqe_buf = [0u8; CQE_SIZE];
        for i in 0..pending {
            let from = (consumer.wrapping_add(i) & (ring.cqe_cnt - 1)) as usize * CQE_SIZE;
            ring.mem.read(from, &mut cqe_buf)?;
            // Index `i` of the new ring is written in its first pass: phase 1.
            cqe_buf[OWNER_OFFSET..].copy_from_slice(&1u32.to_le_bytes());
            new.mem.write(i as usize * CQE_SIZE, &cqe_buf)?;
        }
        new.producer = pending;
        if let Some(mut user) = user {
            user.udata.write(&new.resp(cq.db.as_ref(), cq.cq_id))?;
        }
        if let Some(db) = &cq.db {
            db.store(0, 0)?;
        }
        let real = new.cqe_cnt - 1;
        *ring = new;
        Ok(real)
    }
}

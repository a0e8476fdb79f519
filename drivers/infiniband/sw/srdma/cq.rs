// SPDX-License-Identifier: GPL-2.0-only

//! Completion queues: a ring of CQEs that the process maps and polls without a syscall.

use crate::{device::SrdmaDevice, doorbell::DbRecord, params::MAX_CQE};
use kernel::{
    prelude::*,
    rdma::{
        cq::CqInitAttr,
        mmap::{MmapEntry, SharedPages},
        uapi::{srdma_create_cq_resp, SRDMA_CQE_SIZE},
        ucontext::User,
        Device,
    },
    sync::Arc,
};

/// srdma's part of a completion queue.
pub(crate) struct SrdmaCq {
    /// The CQE ring; its length is `cqe_cnt * SRDMA_CQE_SIZE`, rounded up to pages.
    #[expect(
        dead_code,
        reason = "written by the data path once completions are generated"
    )]
    ring: Arc<SharedPages>,
    /// Entries in the ring, a power of two.
    #[expect(
        dead_code,
        reason = "used by the data path once completions are generated"
    )]
    cqe_cnt: u32,
    /// The consumer index and arm word, for user CQs.
    _db: Option<DbRecord>,
    /// The ring's mmap offset, for user CQs.
    _ring_entry: Option<MmapEntry>,
}

impl SrdmaCq {
    /// Creates a CQ with at least `attr.cqe` entries; returns it with its real size.
    pub(crate) fn new(
        dev: &Device<SrdmaDevice>,
        attr: &CqInitAttr,
        user: Option<User<'_, SrdmaDevice>>,
    ) -> Result<(Self, u32)> {
        if attr.cqe == 0 || attr.cqe > MAX_CQE {
            return Err(EINVAL);
        }
        if attr.flags != 0 {
            return Err(EOPNOTSUPP);
        }
        // One slot stays empty so that a full ring is told apart from an empty one.
        let cqe_cnt = (attr.cqe + 1).next_power_of_two();
        let ring = SharedPages::new(cqe_cnt as usize * SRDMA_CQE_SIZE as usize)?;
        let cq_id = dev.next_cq_id();
        let Some(mut user) = user else {
            return Ok((
                SrdmaCq {
                    ring,
                    cqe_cnt,
                    _db: None,
                    _ring_entry: None,
                },
                cqe_cnt - 1,
            ));
        };
        let uctx = user.ucontext;
        let db = DbRecord::alloc(&uctx.db, |pages| uctx.insert_mmap(pages))?;
        let ring_entry = uctx.insert_mmap(ring.clone())?;
        let resp = srdma_create_cq_resp {
            ring_mmap_key: ring_entry.offset(),
            ring_size: ring.len() as u32,
            cqe_cnt,
            db: db.location(),
            cq_id,
            reserved: 0,
        };
        user.udata.write(&resp)?;
        Ok((
            SrdmaCq {
                ring,
                cqe_cnt,
                _db: Some(db),
                _ring_entry: Some(ring_entry),
            },
            cqe_cnt - 1,
        ))
    }
}

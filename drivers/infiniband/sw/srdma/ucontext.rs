// SPDX-License-Identifier: GPL-2.0-only

//! The per-process state of srdma: a user context.

use crate::{
    device::SrdmaDevice,
    doorbell::{new_pool, DbPool, DbRecord},
    params::MAX_INLINE_DATA,
};
use kernel::{
    prelude::*,
    rdma::{
        driver::UcontextInit,
        uapi::{
            srdma_alloc_ucontext_resp, srdma_ctx_db, SRDMA_ABI_VERSION, SRDMA_CQE_SIZE,
            SRDMA_CTX_NEED_WAKEUP, SRDMA_DB_MODE_POLL, SRDMA_DB_PAGE_SIZE, SRDMA_DB_RECORD_SIZE,
            SRDMA_WQE_BB_SIZE,
        },
        udata::UData,
        Device,
    },
    sync::Arc,
};

/// Byte offset of the flags in a context record (`struct srdma_ctx_db`).
pub(crate) const CTX_FLAGS: usize = core::mem::offset_of!(srdma_ctx_db, flags);

/// srdma's part of a user context.
pub(crate) struct SrdmaUcontext {
    /// The doorbell pages of the process.
    pub(crate) db: DbPool,
    /// The context record, for contexts in doorbell mode "poll".
    pub(crate) ctx_db: Option<Arc<DbRecord>>,
}

impl Drop for SrdmaUcontext {
    fn drop(&mut self) {
        // Mapping entries must go before the context does (ib_core checks, then frees it).
        self.db.lock().unpublish();
    }
}

impl SrdmaUcontext {
    pub(crate) fn new(
        dev: &Device<SrdmaDevice>,
        init: UcontextInit<'_, SrdmaDevice>,
        udata: &mut UData<'_>,
    ) -> Result<Self> {
        let db = new_pool()?;
        let mode = dev.doorbell_mode();
        let mut resp = srdma_alloc_ucontext_resp {
            abi_version: SRDMA_ABI_VERSION,
            max_inline_data: MAX_INLINE_DATA,
            wqe_bb_size: SRDMA_WQE_BB_SIZE,
            cqe_size: SRDMA_CQE_SIZE,
            db_page_size: SRDMA_DB_PAGE_SIZE,
            db_record_size: SRDMA_DB_RECORD_SIZE,
            doorbell_mode: mode,
            null_mr_lkey: crate::mr::NULL_MR_KEY,
            ..Default::default()
        };
        let ctx_db = if mode == SRDMA_DB_MODE_POLL {
            let rec = DbRecord::alloc(&db, |pages| init.insert_mmap(pages).map(Some))?;
            // The process kicks until a poller watches one of its QPs.
            rec.store(CTX_FLAGS, SRDMA_CTX_NEED_WAKEUP)?;
            resp.ctx_db = rec.location();
            Some(Arc::new(rec, GFP_KERNEL)?)
        } else {
            None
        };
        udata.write(&resp)?;
        Ok(Self { db, ctx_db })
    }
}

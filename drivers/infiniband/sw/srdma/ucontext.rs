// SPDX-License-Identifier: GPL-2.0-only

//! The per-process state of srdma: a user context.

use crate::doorbell::{new_pool, DbPool};
use kernel::{
    prelude::*,
    rdma::{
        driver::UcontextInit,
        uapi::{
            srdma_alloc_ucontext_resp, SRDMA_ABI_VERSION, SRDMA_CQE_SIZE, SRDMA_DB_PAGE_SIZE,
            SRDMA_DB_RECORD_SIZE, SRDMA_WQE_BB_SIZE,
        },
        udata::UData,
    },
};

use crate::{device::SrdmaDevice, params::MAX_INLINE_DATA};

/// srdma's part of a user context.
pub(crate) struct SrdmaUcontext {
    /// The doorbell pages of the process.
    pub(crate) db: DbPool,
}

impl SrdmaUcontext {
    pub(crate) fn new(_init: UcontextInit<'_, SrdmaDevice>, udata: &mut UData<'_>) -> Result<Self> {
        let resp = srdma_alloc_ucontext_resp {
            abi_version: SRDMA_ABI_VERSION,
            max_inline_data: MAX_INLINE_DATA,
            wqe_bb_size: SRDMA_WQE_BB_SIZE,
            cqe_size: SRDMA_CQE_SIZE,
            db_page_size: SRDMA_DB_PAGE_SIZE,
            db_record_size: SRDMA_DB_RECORD_SIZE,
        };
        udata.write(&resp)?;
        Ok(Self { db: new_pool()? })
    }
}

// SPDX-License-Identifier: GPL-2.0-only

//! The memory keys of a device: the tables its MRs and memory windows are found in by key
//! index, and the lock that keeps the atomics on its memory atomic with each other.
//!
//! Each QP holds its device's keys, so the data path reaches a QP's memory through the QP
//! alone: a request for a QP of another device needs neither that device nor a reference
//! that keeps it registered.

use crate::{
    mr::{MrShared, MR_INDEX_MAX, MR_INDEX_MIN},
    mw::{MwShared, MW_INDEX_MAX, MW_INDEX_MIN},
    table::{new_table, Table},
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// The memory keys of one device.
pub(crate) struct Keys {
    /// The MRs by key index.
    pub(crate) mrs: Table<MrShared>,
    /// The memory windows by key index.
    pub(crate) mws: Table<MwShared>,
    /// Serialises the atomic operations that target the device's memory.
    pub(crate) atomics: Pin<KBox<Mutex<()>>>,
}

impl Keys {
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::new(
            Self {
                mrs: new_table(MR_INDEX_MIN, MR_INDEX_MAX)?,
                mws: new_table(MW_INDEX_MIN, MW_INDEX_MAX)?,
                atomics: KBox::pin_init(new_mutex!(()), GFP_KERNEL)?,
            },
            GFP_KERNEL,
        )
        .map_err(Into::into)
    }
}

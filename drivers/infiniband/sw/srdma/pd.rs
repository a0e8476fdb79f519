// SPDX-License-Identifier: GPL-2.0-only

//! Protection domains: the scope in which memory regions, QPs and address handles meet.

use crate::limits::Charge;
use kernel::{prelude::*, sync::Arc};

/// Who a protection domain, and so everything in it, belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Owner {
    /// A user process, through uverbs.
    User,
    /// A kernel caller (a ULP, ib_mad): the only owner whose memory may be kernel memory.
    Kernel,
}

struct Identity {
    owner: Owner,
}

/// The identity of a protection domain, held by the PD and by everything that belongs to it
/// (MRs, windows, QPs), and compared by address.
///
/// # Invariants
///
/// Two different PDs never compare equal: each has its own allocation, which stays allocated
/// while any `PdRef` to it exists, so no later PD can be given its address. Nothing is
/// counted, so nothing can wrap.
#[derive(Clone)]
pub(crate) struct PdRef(Arc<Identity>);

impl PdRef {
    /// Whether the PD belongs to a user process or to a kernel caller.
    pub(crate) fn owner(&self) -> Owner {
        self.0.owner
    }
}

impl PartialEq for PdRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for PdRef {}

/// srdma's part of a protection domain. A PD carries no state beyond its identity: what
/// belongs to it holds that identity, and ib_core keeps PDs alive while anything refers to them.
pub(crate) struct SrdmaPd {
    id: PdRef,
    /// Its place within the device's limit.
    _charge: Charge,
}

impl SrdmaPd {
    pub(crate) fn new(owner: Owner, charge: Charge) -> Result<Self> {
        Ok(Self {
            id: PdRef(Arc::new(Identity { owner }, GFP_KERNEL)?),
            _charge: charge,
        })
    }

    /// The PD's identity, for what belongs to it.
    pub(crate) fn id(&self) -> PdRef {
        self.id.clone()
    }
}

// SPDX-License-Identifier: GPL-2.0-only

//! Protection domains: the scope in which memory regions, QPs and address handles meet.

/// srdma's part of a protection domain. A PD carries no state beyond its id: what belongs to
/// it records the id, and ib_core keeps PDs alive while anything refers to them.
pub(crate) struct SrdmaPd {
    id: u32,
}

impl SrdmaPd {
    pub(crate) fn new(id: u32) -> Self {
        Self { id }
    }

    pub(crate) fn id(&self) -> u32 {
        self.id
    }
}

// SPDX-License-Identifier: GPL-2.0-only

//! Protection domains: the scope in which memory regions, QPs and address handles meet.

/// srdma's part of a protection domain. A PD carries no state of its own: what belongs to it
/// points to it, and ib_core keeps PDs alive while anything does.
pub(crate) struct SrdmaPd;

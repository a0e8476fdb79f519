// SPDX-License-Identifier: GPL-2.0-only

//! The object limits a device advertises (`ibv_devinfo`: `max_pd`, `max_qp`, ...), enforced:
//! every live object holds a charge against its kind's limit, given back when it goes.

use crate::params::{MAX_AH, MAX_CQ, MAX_MR, MAX_MW, MAX_PD, MAX_QP, MAX_SRQ};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{prelude::*, sync::Arc};

/// The kinds of objects a device limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Pd,
    Cq,
    Qp,
    Srq,
    Mr,
    Mw,
    Ah,
}

impl Kind {
    const ALL: [Kind; 7] = [
        Kind::Pd,
        Kind::Cq,
        Kind::Qp,
        Kind::Srq,
        Kind::Mr,
        Kind::Mw,
        Kind::Ah,
    ];

    /// The most objects of this kind a device holds at once: what it advertises.
    fn max(self) -> u32 {
        match self {
            Kind::Pd => MAX_PD,
            Kind::Cq => MAX_CQ,
            Kind::Qp => MAX_QP,
            Kind::Srq => MAX_SRQ,
            Kind::Mr => MAX_MR,
            Kind::Mw => MAX_MW,
            Kind::Ah => MAX_AH,
        }
    }
}

/// The live objects of a device, by kind.
pub(crate) struct Limits {
    live: [AtomicU32; Kind::ALL.len()],
}

impl Limits {
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(
            Self {
                live: [const { AtomicU32::new(0) }; Kind::ALL.len()],
            },
            GFP_KERNEL,
        )?)
    }

    /// Charges one more object of `kind`; fails with `ENOMEM`, as verbs users expect of an
    /// exhausted resource, when the device holds as many as it advertises.
    pub(crate) fn charge(self: &Arc<Self>, kind: Kind) -> Result<Charge> {
        self.live[kind as usize]
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < kind.max()).then_some(n + 1)
            })
            .map_err(|_| ENOMEM)?;
        Ok(Charge {
            limits: self.clone(),
            kind,
        })
    }
}

/// One object's place within its kind's limit; given back when dropped.
pub(crate) struct Charge {
    limits: Arc<Limits>,
    kind: Kind,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.limits.live[self.kind as usize].fetch_sub(1, Ordering::AcqRel);
    }
}

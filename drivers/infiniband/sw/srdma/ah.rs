// SPDX-License-Identifier: GPL-2.0-only

//! Address handles: the destination of UD sends.

use crate::{
    device::{SrdmaDevice, PORT},
    params::GID_TBL_LEN,
};
use kernel::{
    prelude::*,
    rdma::{pd::Pd, qp::AhAttr, ucontext::User},
};

/// srdma's part of an address handle: the validated address vector.
pub(crate) struct SrdmaAh {
    pub(crate) attr: AhAttr,
}

impl SrdmaAh {
    pub(crate) fn new(
        _pd: &Pd<SrdmaDevice>,
        attr: &AhAttr,
        _user: Option<User<'_, SrdmaDevice>>,
    ) -> Result<Self> {
        if attr.port_num != PORT || u32::from(attr.sgid_index) >= GID_TBL_LEN {
            return Err(EINVAL);
        }
        Ok(Self { attr: *attr })
    }
}

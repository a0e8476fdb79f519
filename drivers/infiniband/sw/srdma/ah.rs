// SPDX-License-Identifier: GPL-2.0-only

//! Address handles: the destination of UD sends.

use crate::{
    device::{SrdmaDevice, PORT},
    limits::{Charge, Kind},
    params::GID_TBL_LEN,
};
use kernel::{
    prelude::*,
    rdma::{pd::Pd, qp::AhAttr, ucontext::User},
};

/// srdma's part of an address handle: the validated address vector.
pub(crate) struct SrdmaAh {
    pub(crate) attr: AhAttr,
    /// Its place within the device's limit.
    _charge: Charge,
}

impl SrdmaAh {
    pub(crate) fn new(
        pd: &Pd<SrdmaDevice>,
        attr: &AhAttr,
        _user: Option<User<'_, SrdmaDevice>>,
    ) -> Result<Self> {
        if attr.port_num != PORT || u32::from(attr.sgid_index) >= GID_TBL_LEN {
            return Err(EINVAL);
        }
        Ok(Self {
            attr: *attr,
            _charge: pd.device().limits().charge(Kind::Ah)?,
        })
    }
}

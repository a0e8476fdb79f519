// SPDX-License-Identifier: GPL-2.0-only

//! Transports: how a request reaches the responder of its destination QP and how the
//! response comes back. The requester, responder and completer are the same whichever carries
//! the request.
//!
//! - [`loopback`]: the destination is a QP of an srdma device in the same network namespace
//!   of this host; the request travels by reference and the responder answers during the send.
//! - [`roce`]: anything else, as RoCEv2 packets through the device's network device.

mod loopback;
pub(crate) mod roce;

use crate::{
    device::SrdmaDevice,
    message::{Request, Response},
    qp::QpShared,
};
use kernel::rdma::Device;

/// Whether `dgid` is the GID of an srdma device in the namespace of `dev`'s network device,
/// which [`loopback`] reaches.
pub(crate) fn is_local(dev: &Device<SrdmaDevice>, dgid: &[u8; 16]) -> bool {
    loopback::is_local(dev, dgid)
}

/// Sends `req` of QP `q` of device `dev` to the QP it names at GID `dgid`, and returns the
/// response.
pub(crate) fn send(
    dev: &Device<SrdmaDevice>,
    q: &QpShared,
    dgid: &[u8; 16],
    req: &Request<'_>,
) -> Response {
    match loopback::send(dev, q, dgid, req) {
        Some(response) => response,
        None => roce::send(dev, q, dgid, req),
    }
}

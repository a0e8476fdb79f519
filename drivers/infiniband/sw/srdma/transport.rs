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
use kernel::{rdma::Device, sync::Arc};

pub(crate) use loopback::{Local, Peer};

/// Which transport carries the requests to a GID: looked up once per work request.
pub(crate) enum Route {
    /// An srdma device of this host has the GID.
    Local(Local),
    /// RoCEv2 packets through the network device.
    Wire,
}

/// The route from device `dev` to QP `qpn` at GID `dgid`.
pub(crate) fn route(dev: &Device<SrdmaDevice>, dgid: &[u8; 16], qpn: u32) -> Route {
    match loopback::find(dev, dgid, qpn) {
        Some(local) => Route::Local(local),
        None => Route::Wire,
    }
}

/// Sends datagram `req` of QP `q` of device `dev` to GID `dgid`, and returns the response.
pub(crate) fn send(
    dev: &Device<SrdmaDevice>,
    q: &QpShared,
    dgid: &[u8; 16],
    req: &Request<'_>,
) -> Response {
    match route(dev, dgid, req.dest_qpn) {
        Route::Local(to) => loopback::send(q, to.qp.as_ref(), req),
        Route::Wire => roce::send(dev, q, dgid, req),
    }
}

/// Hands `req` of QP `q` to the responder of QP `to` on this host (none: the device at the
/// destination GID has no QP of that number).
pub(crate) fn send_local(q: &QpShared, to: Option<&Arc<QpShared>>, req: &Request<'_>) -> Response {
    loopback::send(q, to, req)
}

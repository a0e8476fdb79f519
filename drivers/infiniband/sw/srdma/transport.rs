// SPDX-License-Identifier: GPL-2.0-only

//! Transports: how a request reaches the responder of its destination QP and how the
//! response comes back. The requester, responder and completer are the same whichever carries
//! the request.
//!
//! - [`loopback`]: the destination is a QP of an srdma device on this host; the request
//!   travels by reference and the responder answers during the send.

mod loopback;

use crate::{
    message::{Request, Response},
    qp::QpShared,
};

/// Sends `req` of QP `q` to the QP it names at GID `dgid`, and returns the response.
pub(crate) fn send(q: &QpShared, dgid: &[u8; 16], req: &Request<'_>) -> Response {
    loopback::send(q, dgid, req)
}

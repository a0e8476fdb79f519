// SPDX-License-Identifier: GPL-2.0-only

//! The loopback transport: the destination QP is on this host, found by the GID of its
//! device's network device (in the namespace of the sender's) and its QP number. The request
//! travels by reference: the responder reads the requester's memory spans and writes its own,
//! one copy, page to page.

use crate::{
    device::{SrdmaDevice, PORT},
    message::{Request, Response},
    qp::QpShared,
    resp,
};
use kernel::{net, rdma::Device, sync::Arc};

/// A destination on this host: the QP of that number, if its device has one.
pub(crate) struct Local {
    pub(crate) qp: Option<Arc<QpShared>>,
}

/// The destination on this host of a connected QP's requests, kept between its requests
/// (`SqRun::peer`): the QP, and the source GID the requests carry.
///
/// It holds the destination QP, not its device: a QP reaches its memory through its own keys,
/// and a device that goes away destroys its QPs first, which the responder then finds dead.
pub(crate) struct Peer {
    pub(crate) qp: Arc<QpShared>,
    pub(crate) sgid: [u8; 16],
}

/// The srdma device in the namespace of `from` with GID `dgid` and its QP `qpn`; `None` if no
/// srdma device here has the GID.
pub(super) fn find(from: &Device<SrdmaDevice>, dgid: &[u8; 16], qpn: u32) -> Option<Local> {
    let net = from.netdev(PORT)?.net()?;
    let ndev = net::device::Device::find_by_addr(&net, net::ip::Addr::from_mapped(dgid))?;
    let dev = Device::<SrdmaDevice>::get_by_netdev(&ndev)?;
    // An srdma device at `dgid` answers for its QPs, whether the QP is there or not.
    let qp = dev.qps().lock().get(qpn);
    Some(Local { qp })
}

/// Hands `req` of QP `q` to the responder of `to`, if there is a QP there; counts it as sent
/// by `q` and, if it reached a QP, as received there.
pub(super) fn send(q: &QpShared, to: Option<&Arc<QpShared>>, req: &Request<'_>) -> Response {
    q.counters.send.sent(to.map(|qp| &qp.counters));
    match to {
        Some(qp) => resp::receive(qp, req),
        None => Response::Lost,
    }
}

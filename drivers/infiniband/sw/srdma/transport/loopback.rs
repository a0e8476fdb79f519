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
use kernel::{
    net,
    rdma::{Device, DeviceRef},
    sync::Arc,
};

/// A destination on this host: its device (kept registered while the request is carried out)
/// and its QP, if the device has a QP of that number.
pub(crate) struct Local {
    dev: DeviceRef<SrdmaDevice>,
    qp: Option<Arc<QpShared>>,
}

/// The srdma device in the namespace of `from` with GID `dgid` and its QP `qpn`; `None` if no
/// srdma device here has the GID.
pub(super) fn find(from: &Device<SrdmaDevice>, dgid: &[u8; 16], qpn: u32) -> Option<Local> {
    let net = from.netdev(PORT)?.net()?;
    let ndev = net::device::Device::find_by_addr(&net, net::ip::Addr::from_mapped(dgid))?;
    let dev = Device::<SrdmaDevice>::get_by_netdev(&ndev)?;
    // An srdma device at `dgid` answers for its QPs, whether the QP is there or not.
    let qp = dev.qps().lock().get(qpn);
    Some(Local { dev, qp })
}

/// Hands `req` of QP `q` to the responder of its destination `to`; counts it as sent by `q`
/// and, if it reached a QP, as received there.
pub(super) fn send(q: &QpShared, to: &Local, req: &Request<'_>) -> Response {
    q.counters.send.sent(to.qp.as_ref().map(|qp| &qp.counters));
    match &to.qp {
        Some(qp) => resp::receive(&to.dev, qp, req),
        None => Response::Lost,
    }
}

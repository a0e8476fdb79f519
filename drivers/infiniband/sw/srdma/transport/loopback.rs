// SPDX-License-Identifier: GPL-2.0-only

//! The loopback transport: the destination QP is on this host, found by the GID of its
//! device's network device and its QP number. The request travels by reference: the
//! responder reads the requester's memory spans and writes its own, one copy, page to page.

use crate::{
    device::SrdmaDevice,
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
/// and its QP.
struct Dest {
    dev: DeviceRef<SrdmaDevice>,
    qp: Arc<QpShared>,
}

fn find(dgid: &[u8; 16], qpn: u32) -> Option<Dest> {
    let ndev = net::device::Device::find_by_ip(dgid)?;
    let dev = Device::<SrdmaDevice>::get_by_netdev(&ndev)?;
    let qp = dev.qps().lock().get(qpn)?;
    Some(Dest { dev, qp })
}

/// Hands `req` of QP `q` to the responder of the QP it names at `dgid`; counts it as sent by
/// `q` and, if it reached a QP, as received there.
pub(crate) fn send(q: &QpShared, dgid: &[u8; 16], req: &Request<'_>) -> Response {
    let dest = find(dgid, req.dest_qpn);
    q.counters.send.sent(dest.as_ref().map(|d| &d.qp.counters));
    match dest {
        Some(dest) => resp::receive(&dest.dev, &dest.qp, req),
        None => Response::Lost,
    }
}

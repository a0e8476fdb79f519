// SPDX-License-Identifier: GPL-2.0-only

//! The loopback transport: the destination QP is on this host, found by the GID of its
//! device's network device (in the namespace of the sender's) and its QP number. The request travels by reference: the
//! responder reads the requester's memory spans and writes its own, one copy, page to page.

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
/// and its QP.
struct Dest {
    dev: DeviceRef<SrdmaDevice>,
    qp: Arc<QpShared>,
}

fn find(from: &Device<SrdmaDevice>, dgid: &[u8; 16], qpn: u32) -> Option<Result<Dest, ()>> {
    let net = from.netdev(PORT)?.net()?;
    let ndev = net::device::Device::find_by_ip(&net, dgid)?;
    let dev = Device::<SrdmaDevice>::get_by_netdev(&ndev)?;
    // An srdma device at `dgid` answers for its QPs, whether the QP is there or not.
    let qp = dev.qps().lock().get(qpn);
    Some(qp.map(|qp| Dest { dev, qp }).ok_or(()))
}

/// Whether an srdma device in the namespace of `from` has GID `dgid`.
pub(crate) fn is_local(from: &Device<SrdmaDevice>, dgid: &[u8; 16]) -> bool {
    let Some(net) = from.netdev(PORT).and_then(|n| n.net()) else {
        return false;
    };
    net::device::Device::find_by_ip(&net, dgid)
        .is_some_and(|ndev| Device::<SrdmaDevice>::get_by_netdev(&ndev).is_some())
}

/// Hands `req` of QP `q` of device `from` to the responder of the QP it names at `dgid`, if
/// an srdma device in the namespace of `from` has that GID; counts it as sent by `q` and, if
/// it reached a QP, as received there. `None` if no srdma device here has the GID.
pub(crate) fn send(
    from: &Device<SrdmaDevice>,
    q: &QpShared,
    dgid: &[u8; 16],
    req: &Request<'_>,
) -> Option<Response> {
    let dest = find(from, dgid, req.dest_qpn)?;
    q.counters
        .send
        .sent(dest.as_ref().ok().map(|d| &d.qp.counters));
    Some(match dest {
        Ok(dest) => resp::receive(&dest.dev, &dest.qp, req),
        Err(()) => Response::Lost,
    })
}

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
    table::Table,
};
use kernel::{net, rdma::Device, sync::Arc};

/// A destination on this host: the QP table of its device, and the QP of that number if the
/// device has one.
pub(crate) struct Local {
    qps: Table<QpShared>,
    pub(crate) qp: Option<Arc<QpShared>>,
}

/// The destination on this host of a connected QP's requests, kept between its requests
/// (`SqRun::peer`): the QP table of the destination's device and the QP number, and the source
/// GID the requests carry.
///
/// It holds the table, not the QP: a destination destroyed leaves the table at once, and its
/// memory goes with it, however long the QP that reached it last stays idle. Nor does it hold
/// the device: a QP reaches its memory through its own keys, and a device that goes away
/// destroys its QPs first.
pub(crate) struct Peer {
    qps: Table<QpShared>,
    qpn: u32,
    pub(crate) sgid: [u8; 16],
}

impl Peer {
    /// The destination `to`, found for requests to QP `qpn` from source GID `sgid`; `None` if
    /// its device has no such QP.
    pub(crate) fn new(to: &Local, qpn: u32, sgid: [u8; 16]) -> Option<Self> {
        to.qp.as_ref()?;
        Some(Self {
            qps: to.qps.clone(),
            qpn,
            sgid,
        })
    }

    /// The destination QP, while it lives.
    pub(crate) fn qp(&self) -> Option<Arc<QpShared>> {
        self.qps.lock().get(self.qpn).filter(|qp| qp.is_alive())
    }
}

/// The srdma device in the namespace of `from` with GID `dgid` and its QP `qpn`; `None` if no
/// srdma device here has the GID.
pub(super) fn find(from: &Device<SrdmaDevice>, dgid: &[u8; 16], qpn: u32) -> Option<Local> {
    let net = from.netdev(PORT)?.net()?;
    let ndev = net::device::Device::find_by_addr(&net, net::ip::Addr::from_mapped(dgid))?;
    let dev = Device::<SrdmaDevice>::get_by_netdev(&ndev)?;
    // An srdma device at `dgid` answers for its QPs, whether the QP is there or not.
    let qps = dev.qps().clone();
    let qp = qps.lock().get(qpn);
    Some(Local { qps, qp })
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

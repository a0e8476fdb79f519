// SPDX-License-Identifier: GPL-2.0-only

//! srdma: a software RDMA device.
//!
//! srdma registers an `ib_device` with ib_core and emulates in software what an RDMA NIC does.
//! Devices are created on top of an Ethernet device with
//! `rdma link add srdma0 type srdma netdev eth0`; the port follows the network device's state
//! and its RoCE GIDs follow the network device's addresses.

use kernel::{net::notifier, prelude::*, rdma};

mod ah;
mod clock;
mod comp;
mod counters;
mod cq;
mod device;
mod doorbell;
mod fastreg;
mod grh;
mod keys;
mod kverbs;
mod limits;
mod link;
mod log;
mod message;
mod mr;
mod mw;
mod params;
mod payload;
mod pd;
mod poller;
mod qp;
mod req;
mod res;
mod resp;
mod rnr;
mod slotbufs;
mod srq;
mod table;
mod trace;
mod transport;
mod ucontext;
mod wc;
mod worker;
mod wqe;

module! {
    type: SrdmaModule,
    name: "srdma",
    author: "The srdma developers",
    description: "Software RDMA device",
    license: "GPL",
    alias: ["rdma-link-srdma"],
}

/// The module's registrations, torn down in field order: first no new links, then no devices,
/// then no more netdevice events, and last the RoCEv2 sockets.
struct SrdmaModule {
    _link: Pin<KBox<rdma::link::Registration<link::SrdmaLink>>>,
    _devices: rdma::DriverGuard<device::SrdmaDevice>,
    _netdev_events: Pin<KBox<notifier::Registration<link::SrdmaLink>>>,
    _tunnels: kernel::net::udp_tunnel::Registration<transport::roce::Rx>,
}

impl kernel::Module for SrdmaModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let tunnels = transport::roce::register()?;
        let netdev_events = KBox::pin_init(notifier::Registration::new(), GFP_KERNEL)?;
        let devices = rdma::DriverGuard::new();
        let link = KBox::pin_init(rdma::link::Registration::new(), GFP_KERNEL)?;
        Ok(SrdmaModule {
            _link: link,
            _devices: devices,
            _netdev_events: netdev_events,
            _tunnels: tunnels,
        })
    }
}

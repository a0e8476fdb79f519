// SPDX-License-Identifier: GPL-2.0-only

//! `rdma link add ... type srdma netdev DEV`, and what happens to a device when its network
//! device changes.

use crate::{
    device::{eui64_from_mac, link_usable, update_port_state, SrdmaDevice, PORT},
    transport::roce,
};
use kernel::{
    c_str,
    net::{self, notifier},
    prelude::*,
    rdma::{self, link::LinkOps, Device},
    str::CStr,
};

/// srdma's link type and netdevice event handler.
pub(crate) struct SrdmaLink;

impl LinkOps for SrdmaLink {
    const TYPE: &'static CStr = c_str!("srdma");

    fn newlink(name: &CStr, ndev: &net::device::Device) -> Result {
        if ndev.hw_type() != net::device::HwType::ETHER {
            pr_warn!(
                "cannot bind {} to {}: not an Ethernet device\n",
                name,
                ndev.name()
            );
            return Err(EINVAL);
        }
        let mac = ndev.mac_addr().ok_or(EINVAL)?;
        if Device::<SrdmaDevice>::get_by_netdev(ndev).is_some() {
            pr_warn!(
                "cannot bind {} to {}: an srdma device is bound to it already\n",
                name,
                ndev.name()
            );
            return Err(EEXIST);
        }
        if rdma::name_in_use(name) {
            pr_warn!(
                "cannot create {}: an RDMA device of that name exists\n",
                name
            );
            return Err(EEXIST);
        }

        let guid = eui64_from_mac(mac);
        let tunnel = roce::open(name, ndev);
        let data = SrdmaDevice::new(name, guid, link_usable(ndev), ndev.into(), tunnel)?;
        let mut dev = Device::alloc(&crate::THIS_MODULE, data)?;
        dev.set_node_guid(guid);
        dev.set_node_desc(c_str!("srdma"));
        dev.set_netdev(ndev, PORT)?;
        // Under the NIC's device, as a hardware RDMA function sits under its PCI device:
        // tools find the network interface through `/sys/class/infiniband/NAME/device/net/`.
        if let Some(parent) = ndev.parent() {
            dev.set_parent(parent);
        }
        dev.register(name).inspect_err(|e| {
            pr_warn!("registering {} on {} failed: {:?}\n", name, ndev.name(), e);
        })
    }
}

impl notifier::Notifier for SrdmaLink {
    fn notify(event: notifier::Event, ndev: &net::device::Device) {
        let Some(dev) = Device::<SrdmaDevice>::get_by_netdev(ndev) else {
            return;
        };
        match event {
            // ib_core drops its reference to the network device while unregistering, which
            // the network device's unregistration is waiting for.
            notifier::Event::Unregister => dev.unregister_queued(),
            notifier::Event::Up | notifier::Event::Down | notifier::Event::Change => {
                update_port_state(&dev)
            }
            _ => {}
        }
    }
}

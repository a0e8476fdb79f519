// SPDX-License-Identifier: GPL-2.0

#include <linux/if_vlan.h>
#include <linux/inetdevice.h>
#include <linux/netdevice.h>
#include <net/addrconf.h>

void rust_helper_dev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

void rust_helper_dev_put(struct net_device *dev)
{
	dev_put(dev);
}

bool rust_helper_netif_running(const struct net_device *dev)
{
	return netif_running(dev);
}

bool rust_helper_netif_carrier_ok(const struct net_device *dev)
{
	return netif_carrier_ok(dev);
}

bool rust_helper_is_vlan_dev(const struct net_device *dev)
{
	return is_vlan_dev(dev);
}

struct net_device *
rust_helper_netdev_notifier_info_to_dev(const struct netdev_notifier_info *info)
{
	return netdev_notifier_info_to_dev(info);
}

struct net_device *rust_helper_ipv6_dev_find_hold(struct net *net, const struct in6_addr *addr)
{
	struct net_device *dev;

	rcu_read_lock();
	dev = ipv6_dev_find(net, addr, NULL);
	dev_hold(dev);
	rcu_read_unlock();
	return dev;
}

struct net_device *rust_helper_ip_dev_find(struct net *net, __be32 addr)
{
	return ip_dev_find(net, addr);
}

/* The bitfield is out of bindgen's reach. */
bool rust_helper_netdev_is_registered(const struct net_device *dev)
{
	return dev->reg_state == NETREG_REGISTERED;
}

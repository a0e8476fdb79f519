// SPDX-License-Identifier: GPL-2.0

#include <linux/netdevice.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

void rust_helper_get_net(struct net *net)
{
	get_net(net);
}

void rust_helper_put_net(struct net *net)
{
	put_net(net);
}

struct net *rust_helper_maybe_get_net(struct net *net)
{
	return maybe_get_net(net);
}

void *rust_helper_net_generic(const struct net *net, unsigned int id)
{
	return net_generic(net, id);
}

struct net *rust_helper_dev_net(const struct net_device *dev)
{
	return dev_net(dev);
}

unsigned int rust_helper_ll_reserved_space(const struct net_device *dev)
{
	return LL_RESERVED_SPACE(dev);
}

// SPDX-License-Identifier: GPL-2.0

#include <linux/skbuff.h>

unsigned int rust_helper_skb_headroom(const struct sk_buff *skb)
{
	return skb_headroom(skb);
}

int rust_helper_skb_tailroom(const struct sk_buff *skb)
{
	return skb_tailroom(skb);
}

void rust_helper_skb_reserve(struct sk_buff *skb, int len)
{
	skb_reserve(skb, len);
}

unsigned int rust_helper_skb_headlen(const struct sk_buff *skb)
{
	return skb_headlen(skb);
}

void rust_helper_skb_reset_network_header(struct sk_buff *skb)
{
	skb_reset_network_header(skb);
}

void rust_helper_skb_reset_transport_header(struct sk_buff *skb)
{
	skb_reset_transport_header(skb);
}

unsigned char *rust_helper_skb_network_header(const struct sk_buff *skb)
{
	return skb_network_header(skb);
}

int rust_helper_skb_linearize(struct sk_buff *skb)
{
	return skb_linearize(skb);
}

void rust_helper_skb_dst_set(struct sk_buff *skb, struct dst_entry *dst)
{
	skb_dst_set(skb, dst);
}

/* consume_skb() is a function only with CONFIG_TRACEPOINTS, an inline otherwise. */
void rust_helper_skb_consume(struct sk_buff *skb)
{
	consume_skb(skb);
}

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

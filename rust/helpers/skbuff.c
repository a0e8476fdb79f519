// SPDX-License-Identifier: GPL-2.0

#include <linux/mm.h>
#include <linux/net.h>
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

/*
 * Appends len bytes at off of page as the next fragment, the buffer taking its own reference
 * on the page. Refuses a page the network stack must not take references to (slab memory,
 * see sendpage_ok()) and a buffer whose fragments are all used.
 */
int rust_helper_skb_append_page(struct sk_buff *skb, struct page *page, size_t off, size_t len)
{
	int i = skb_shinfo(skb)->nr_frags;

	if (i >= MAX_SKB_FRAGS)
		return -EMSGSIZE;
	if (!sendpage_ok(page))
		return -EOPNOTSUPP;
	get_page(page);
	skb_fill_page_desc(skb, i, page, off, len);
	skb->len += len;
	skb->data_len += len;
	skb->truesize += len;
	return 0;
}

/*
 * Appends len bytes of new, zeroed memory as the next fragment and returns them (or NULL):
 * what follows page fragments (a trailer) cannot go in the linear part.
 */
void *rust_helper_skb_append_new_frag(struct sk_buff *skb, size_t len)
{
	int i = skb_shinfo(skb)->nr_frags;
	struct page *page;
	void *p;

	if (i >= MAX_SKB_FRAGS || len > PAGE_SIZE)
		return NULL;
	p = netdev_alloc_frag(len);
	if (!p)
		return NULL;
	memset(p, 0, len);
	page = virt_to_head_page(p);
	skb_fill_page_desc(skb, i, page, p - page_address(page), len);
	skb->len += len;
	skb->data_len += len;
	skb->truesize += len;
	return p;
}

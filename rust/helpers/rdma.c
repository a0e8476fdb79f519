// SPDX-License-Identifier: GPL-2.0

#include <linux/crc32.h>
#include <linux/highmem.h>
#include <linux/kmsan.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/vmalloc.h>
#include <net/netlink.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/srdma-abi.h>
#include <rdma/uverbs_ioctl.h>

#define UVERBS_MODULE_NAME rdma_rust
#include <rdma/uverbs_named_ioctl.h>

struct ib_device *rust_helper_rdma_device_to_ibdev(struct device *device)
{
	return rdma_device_to_ibdev(device);
}

bool rust_helper_ib_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}

struct ib_ucontext *rust_helper_rdma_udata_to_ucontext(struct ib_udata *udata)
{
	return container_of(udata, struct uverbs_attr_bundle, driver_udata)->context;
}

struct ib_udata *rust_helper_uverbs_attr_bundle_udata(struct uverbs_attr_bundle *attrs)
{
	return &attrs->driver_udata;
}

/* The parent lives in an anonymous union of struct ib_device, which bindgen names by position. */
void rust_helper_ib_device_set_parent(struct ib_device *dev, struct device *parent)
{
	dev->dev.parent = parent;
}

u8 *rust_helper_rdma_ah_retrieve_dmac(struct rdma_ah_attr *attr)
{
	return rdma_ah_retrieve_dmac(attr);
}

bool rust_helper_ib_uses_virt_dma(struct ib_device *dev)
{
	return ib_uses_virt_dma(dev);
}

bool rust_helper_virt_addr_valid(unsigned long addr)
{
	return virt_addr_valid(addr);
}

/*
 * vmalloc_user() charged to the caller's memory cgroup: memory that a process maps from a
 * driver (rings, doorbell pages) counts against that process's memory limit. Its size is the
 * process's choice, so running out is the process's error: no allocation-failure warning and
 * no OOM kill, just NULL.
 */
void *rust_helper_vmalloc_user_account(unsigned long size)
{
	return __vmalloc_node_range(size, SHMLBA, VMALLOC_START, VMALLOC_END,
				    GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN |
				    __GFP_RETRY_MAYFAIL, PAGE_KERNEL, VM_USERMAP, NUMA_NO_NODE,
				    __builtin_return_address(0));
}

/*
 * Copies between parts of two pages through temporary mappings. A loopback copy may have its
 * source and destination in one page (an RDMA WRITE to the memory it is sent from), so one
 * page is mapped once and the copy is a memmove. A whole page takes copy_page(), the
 * architecture's copy for exactly that: on x86-64 without FSRM, memcpy() is an unrolled loop
 * that QEMU's emulated CPU runs at half the speed of copy_page()'s string move. Not
 * copy_highpage(): it also hands the source's page metadata (arm64 MTE tags, sparc ADI tags)
 * to the destination, which belongs to another process.
 */
static inline void rdma_copy_page_part(struct page *dst, size_t dst_off, struct page *src,
				       size_t src_off, size_t len)
{
	char *d, *s;

	if (dst == src) {
		d = kmap_local_page(dst);
		memmove(d + dst_off, d + src_off, len);
		kunmap_local(d);
		return;
	}
	d = kmap_local_page(dst);
	s = kmap_local_page(src);
	if (!dst_off && !src_off && len == PAGE_SIZE) {
		copy_page(d, s);
		kmsan_copy_page_meta(dst, src);
	} else {
		memcpy(d + dst_off, s + src_off, len);
	}
	kunmap_local(s);
	kunmap_local(d);
}

void rust_helper_rdma_copy_page(struct page *dst, size_t dst_off, struct page *src,
				size_t src_off, size_t len)
{
	rdma_copy_page_part(dst, dst_off, src, src_off, len);
}

/*
 * Copies len bytes from byte src_off of the run of pages src to byte dst_off of the run dst,
 * in pieces that each lie in one page of either run: the loop over a long copy's pages stays
 * here, one call for all of them. Both offsets are below PAGE_SIZE and both runs hold len bytes
 * from them.
 */
void rust_helper_rdma_copy_pages(struct page *const *dst, size_t dst_off,
				 struct page *const *src, size_t src_off, size_t len)
{
	while (len) {
		size_t n = min3(len, PAGE_SIZE - dst_off, PAGE_SIZE - src_off);

		rdma_copy_page_part(*dst, dst_off, *src, src_off, n);
		len -= n;
		dst_off += n;
		src_off += n;
		if (dst_off == PAGE_SIZE) {
			dst++;
			dst_off = 0;
		}
		if (src_off == PAGE_SIZE) {
			src++;
			src_off = 0;
		}
	}
}

/*
 * Stores val in the aligned eight bytes at off of page with release ordering: one store that
 * a CPU sees whole, after everything written before it (an RDMA ATOMIC WRITE).
 */
#ifdef CONFIG_64BIT
void rust_helper_rdma_store_release_u64(struct page *page, size_t off, u64 val)
{
	u64 *p = kmap_local_page(page);

	/*
	 * RDMA ATOMIC WRITE: one store of 8 bytes, ordered after every write the responder made
	 * before it; pairs with the reader's acquire load (or spin) of those bytes, which then
	 * sees the earlier writes too.
	 */
	smp_store_release(&p[off / sizeof(u64)], val);
	kunmap_local(p);
}
#endif

/* The page of zeroes that every read-only zero mapping shares. */
struct page *rust_helper_rdma_zero_page(void)
{
	return ZERO_PAGE(0);
}

/* Continues CRC-32 (little-endian, as crc32_le) crc over len bytes at off of page. */
u32 rust_helper_rdma_crc32_page(u32 crc, struct page *page, size_t off, size_t len)
{
	char *p = kmap_local_page(page);

	crc = crc32_le(crc, p + off, len);
	kunmap_local(p);
	return crc;
}

/* Fills pages[0..n) with the pages the umem pinned, in order; returns how many it filled. */
size_t rust_helper_ib_umem_pages(struct ib_umem *umem, struct page **pages, size_t n)
{
	struct sg_page_iter it;
	size_t i = 0;

	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (i == n)
			break;
		pages[i++] = sg_page_iter_page(&it);
	}
	return i;
}

struct page *rust_helper_virt_to_page(const void *kaddr)
{
	return virt_to_page(kaddr);
}

void rust_helper_memcpy_from_page(char *to, struct page *page, size_t offset, size_t len)
{
	memcpy_from_page(to, page, offset, len);
}

void rust_helper_memcpy_to_page(struct page *page, size_t offset, const char *from, size_t len)
{
	memcpy_to_page(page, offset, from, len);
}

/* Opens the table of driver attributes of a resource in a netlink answer (rdma res -dd). */
struct nlattr *rust_helper_rdma_nest_start_driver(struct sk_buff *msg)
{
	return nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
}

void rust_helper_nla_nest_end(struct sk_buff *msg, struct nlattr *start)
{
	nla_nest_end(msg, start);
}

void rust_helper_nla_nest_cancel(struct sk_buff *msg, struct nlattr *start)
{
	nla_nest_cancel(msg, start);
}

/*
 * A doorbell for user QPs as an ioctl: a driver method of the QP object, RDMA_DOORBELL_METHOD,
 * whose one attribute, RDMA_DOORBELL_ATTR_HANDLE, is the QP's handle. It calls the driver's
 * post_send with no work request, as the write command POST_SEND with an empty list does, but
 * without that command's allocation and copies; the ioctl's attribute bundle is on the stack
 * and the QP's uobject is held for reading, as POST_SEND holds it. Both IDs are the first of
 * the driver name space, so a driver's ABI header names them. bindgen sees only the helper's
 * prototype: its libclang crashes on the method tree's initialisers.
 */
#ifndef __BINDGEN__
enum {
	RDMA_DOORBELL_METHOD = UVERBS_ID_DRIVER_NS,
};

enum {
	RDMA_DOORBELL_ATTR_HANDLE = UVERBS_ID_DRIVER_NS,
};

/* The only driver that has the method so far; its ABI header names the IDs. */
static_assert(SRDMA_IB_METHOD_QP_DOORBELL == RDMA_DOORBELL_METHOD);
static_assert(SRDMA_IB_ATTR_QP_DOORBELL_HANDLE == RDMA_DOORBELL_ATTR_HANDLE);

static int UVERBS_HANDLER(RDMA_DOORBELL_METHOD)(struct uverbs_attr_bundle *attrs)
{
	struct ib_qp *qp = uverbs_attr_get_obj(attrs, RDMA_DOORBELL_ATTR_HANDLE);
	const struct ib_send_wr *bad_wr;

	if (IS_ERR(qp))
		return PTR_ERR(qp);
	return qp->device->ops.post_send(qp->real_qp, NULL, &bad_wr);
}

DECLARE_UVERBS_NAMED_METHOD(RDMA_DOORBELL_METHOD,
			    UVERBS_ATTR_IDR(RDMA_DOORBELL_ATTR_HANDLE, UVERBS_OBJECT_QP,
					    UVERBS_ACCESS_READ, UA_MANDATORY));

ADD_UVERBS_METHODS(rdma_doorbell_qp, UVERBS_OBJECT_QP, &UVERBS_METHOD(RDMA_DOORBELL_METHOD));

static const struct uapi_definition rdma_doorbell_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_QP, &rdma_doorbell_qp),
	{},
};

/* The doorbell method's definition, for ib_device.driver_def. */
const struct uapi_definition *rust_helper_rdma_doorbell_defs(void)
{
	return rdma_doorbell_defs;
}
#else
const struct uapi_definition *rust_helper_rdma_doorbell_defs(void);
#endif

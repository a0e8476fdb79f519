// SPDX-License-Identifier: GPL-2.0

#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

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

size_t rust_helper_ib_umem_copy_to(struct ib_umem *umem, size_t offset, const void *src,
				   size_t length)
{
	return sg_pcopy_from_buffer(umem->sgt_append.sgt.sgl, umem->sgt_append.sgt.orig_nents,
				    src, length, offset + ib_umem_offset(umem));
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

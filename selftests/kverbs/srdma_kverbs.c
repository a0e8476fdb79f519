// SPDX-License-Identifier: GPL-2.0-only
/*
 * Kernel callers of srdma: a module that, when loaded, creates and destroys every verbs object
 * on the device named by its "dev" parameter through the kernel verbs API (as a kernel ULP
 * would), moves data between two of its QPs with ib_post_send (inline and through SGEs),
 * registers two separate pages in a fast-register MR and writes to them through it, drives
 * completion-driven traffic on IB_POLL_SOFTIRQ and IB_POLL_WORKQUEUE CQs (posting from the
 * completion handlers) and drains the QPs, and prints one KTAP line per check. Loading fails
 * if any check fails.
 */
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *dev = "srdma0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device to test");

static int test_num, failures;

#define CHECK(cond, fmt, ...)                                                   \
	do {                                                                    \
		bool __ok = (cond);                                             \
		pr_info("%sok %d " fmt "\n", __ok ? "" : "not ", ++test_num,    \
			##__VA_ARGS__);                                         \
		if (!__ok)                                                      \
			failures++;                                             \
	} while (0)

/* Waits up to two seconds for one completion on an IB_POLL_DIRECT CQ. */
static int poll_one(struct ib_cq *cq, struct ib_wc *wc)
{
	int i, n;

	for (i = 0; i < 2000; i++) {
		n = ib_poll_cq(cq, 1, wc);
		if (n)
			return n;
		usleep_range(1000, 2000);
	}
	return 0;
}

/* Connects qp to dest_qpn at the GID of gattr, sending from that same GID (one device). */
static int to_rts(struct ib_qp *qp, u32 dest_qpn, const struct ib_gid_attr *gattr)
{
	union ib_gid gid = gattr->gid;
	struct ib_qp_attr a = {};
	int ret;

	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IB_ACCESS_REMOTE_WRITE;
	ret = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
			   IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, &gid, 0, gattr->index, 1, 0);
	ret = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
			   IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.max_rd_atomic = 1;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			    IB_QP_RNR_RETRY | IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC);
}

/* An RC QP of pd on cq with depth WRs and sges send SGEs (one receive SGE). */
static struct ib_qp *rc_qp_sges(struct ib_pd *pd, struct ib_cq *cq, u32 depth, u32 max_inline,
				u32 sges)
{
	struct ib_qp_init_attr qia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = sges,
			 .max_recv_sge = 1, .max_inline_data = max_inline },
	};

	return ib_create_qp(pd, &qia);
}

/* An RC QP of pd on cq with depth WRs and one SGE each way. */
static struct ib_qp *rc_qp(struct ib_pd *pd, struct ib_cq *cq, u32 depth, u32 max_inline)
{
	return rc_qp_sges(pd, cq, depth, max_inline, 1);
}

/* Sends len bytes from A to B, inline or through an SGE, and checks what B received. */
static noinline_for_stack void send_one(struct ib_device *ibdev, struct ib_pd *pd,
					struct ib_cq *cq, struct ib_qp *a, struct ib_qp *b,
					size_t len, bool inl)
{
	u8 *src = kmalloc(len, GFP_KERNEL), *dst = kzalloc(len, GFP_KERNEL), *copy = NULL;
	struct ib_sge ssge, rsge;
	struct ib_send_wr wr = {};
	struct ib_recv_wr rwr = {};
	const struct ib_send_wr *bad;
	const struct ib_recv_wr *rbad;
	struct ib_wc wc[2] = {};
	u64 smap, rmap;
	int ret, got = 0, i;

	if (!src || !dst) {
		CHECK(false, "buffers for %zu bytes", len);
		goto out;
	}
	get_random_bytes(src, len);
	copy = kmemdup(src, len, GFP_KERNEL);
	smap = ib_dma_map_single(ibdev, src, len, DMA_TO_DEVICE);
	rmap = ib_dma_map_single(ibdev, dst, len, DMA_FROM_DEVICE);
	rsge = (struct ib_sge){ .addr = rmap, .length = len, .lkey = pd->local_dma_lkey };
	rwr.wr_id = 2;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	ret = ib_post_recv(b, &rwr, &rbad);
	CHECK(!ret, "ib_post_recv of %zu bytes (%d)", len, ret);
	/* Inline payloads are read at post time, from a kernel virtual address. */
	ssge = (struct ib_sge){ .addr = inl ? (u64)(uintptr_t)src : smap, .length = len,
				.lkey = pd->local_dma_lkey };
	wr.wr_id = 1;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED | (inl ? IB_SEND_INLINE : 0);
	wr.sg_list = &ssge;
	wr.num_sge = 1;
	ret = ib_post_send(a, &wr, &bad);
	CHECK(!ret, "ib_post_send %s of %zu bytes (%d)", inl ? "inline" : "SGE", len, ret);
	if (inl)
		memset(src, 0xee, len); /* the buffer is the caller's again at once */
	for (i = 0; i < 2 && !ret; i++) {
		if (!poll_one(cq, &wc[i]))
			break;
		got++;
	}
	CHECK(got == 2, "two completions (%d, status %d)", got, got ? wc[0].status : -1);
	if (got == 2) {
		struct ib_wc *s = wc[0].wr_id == 1 ? &wc[0] : &wc[1];
		struct ib_wc *r = wc[0].wr_id == 2 ? &wc[0] : &wc[1];

		CHECK(s->status == IB_WC_SUCCESS && s->opcode == IB_WC_SEND && s->qp == a,
		      "send completion: status %d, opcode %d, its QP", s->status, s->opcode);
		CHECK(r->status == IB_WC_SUCCESS && r->opcode == IB_WC_RECV && r->qp == b &&
		      r->byte_len == len, "receive completion: status %d, %u bytes", r->status,
		      r->byte_len);
	}
	ib_dma_unmap_single(ibdev, smap, len, DMA_TO_DEVICE);
	ib_dma_unmap_single(ibdev, rmap, len, DMA_FROM_DEVICE);
	CHECK(got == 2 && copy && !memcmp(copy, dst, len), "%zu bytes arrived intact", len);
out:
	kfree(copy);
	kfree(src);
	kfree(dst);
}

/* Posts one signaled work request on qp and waits for its completion. */
static int post_wait(struct ib_qp *qp, struct ib_cq *cq, struct ib_send_wr *wr, struct ib_wc *wc)
{
	const struct ib_send_wr *bad;

	wr->send_flags |= IB_SEND_SIGNALED;
	if (ib_post_send(qp, wr, &bad))
		return -EINVAL;
	return poll_one(cq, wc) ? 0 : -ETIMEDOUT;
}

/* Registers the pages of the MR under the next key byte, with a REG_MR posted on qp. */
static void reg_mr(struct ib_qp *qp, struct ib_cq *cq, struct ib_mr *mr, const char *what)
{
	struct ib_reg_wr reg = {};
	struct ib_wc wc = {};
	int ret;

	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	reg.wr.opcode = IB_WR_REG_MR;
	reg.mr = mr;
	reg.key = mr->rkey;
	reg.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	ret = post_wait(qp, cq, &reg.wr, &wc);
	CHECK(!ret && wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_REG_MR,
	      "fastreg: %s: IB_WR_REG_MR completes (%d, status %d, opcode %d)", what, ret,
	      wc.status, wc.opcode);
}

/*
 * An RDMA WRITE of len bytes at smap (under lkey) from qp to the MR's first byte; returns the
 * status.
 */
static int write_to(struct ib_qp *qp, struct ib_cq *cq, u32 lkey, u64 smap, u32 len,
		    struct ib_mr *mr)
{
	struct ib_sge sge = { .addr = smap, .length = len, .lkey = lkey };
	struct ib_rdma_wr w = {};
	struct ib_wc wc = {};

	w.wr.opcode = IB_WR_RDMA_WRITE;
	w.wr.sg_list = &sge;
	w.wr.num_sge = 1;
	w.remote_addr = mr->iova;
	w.rkey = mr->rkey;
	if (post_wait(qp, cq, &w.wr, &wc))
		return -1;
	return wc.status;
}

/*
 * Fast registration, as storage ULPs use it: the tail of one page and the head of another,
 * separately allocated, mapped into one MR, registered, written through its rkey, invalidated
 * locally and by a peer's SEND_WITH_INV.
 */
static noinline_for_stack void test_fastreg(struct ib_device *ibdev, struct ib_pd *pd,
					    struct ib_cq *cq, struct ib_qp *a, struct ib_qp *b)
{
	const u32 head = 100, len = PAGE_SIZE - 100 + 2000;
	u8 *p0 = (u8 *)__get_free_page(GFP_KERNEL), *p1 = (u8 *)__get_free_page(GFP_KERNEL);
	u8 *src = kmalloc(len, GFP_KERNEL), *msg = kzalloc(64, GFP_KERNEL);
	struct scatterlist sg[2];
	struct ib_send_wr inv = {};
	struct ib_recv_wr rwr = {};
	const struct ib_recv_wr *rbad;
	struct ib_sge ssge, rsge;
	struct ib_wc wc[2] = {};
	struct ib_mr *mr;
	u64 smap, mmap;
	int n, ret, got = 0, i;
	u32 key;

	if (!p0 || !p1 || !src || !msg) {
		CHECK(false, "fastreg: buffers");
		goto free;
	}
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 4);
	CHECK(!IS_ERR(mr), "fastreg: ib_alloc_mr of 4 pages");
	if (IS_ERR(mr))
		goto free;
	get_random_bytes(src, len);
	memset(p0, 0, PAGE_SIZE);
	memset(p1, 0, PAGE_SIZE);
	sg_init_table(sg, 2);
	sg_set_buf(&sg[0], p0 + head, PAGE_SIZE - head);
	sg_set_buf(&sg[1], p1, len - (PAGE_SIZE - head));
	n = ib_dma_map_sg(ibdev, sg, 2, DMA_BIDIRECTIONAL);
	ret = ib_map_mr_sg(mr, sg, n, NULL, PAGE_SIZE);
	CHECK(ret == 2 && mr->iova == sg_dma_address(&sg[0]) && mr->length == len,
	      "fastreg: ib_map_mr_sg maps both entries (%d), iova and length %llu", ret,
	      mr->length);
	smap = ib_dma_map_single(ibdev, src, len, DMA_TO_DEVICE);
	mmap = ib_dma_map_single(ibdev, msg, 64, DMA_BIDIRECTIONAL);

	reg_mr(b, cq, mr, "first key");
	ret = write_to(a, cq, pd->local_dma_lkey, smap, len, mr);
	CHECK(ret == IB_WC_SUCCESS, "fastreg: RDMA WRITE of %u bytes through the rkey (%d)",
	      len, ret);
	CHECK(!memcmp(p0 + head, src, PAGE_SIZE - head) &&
	      !memcmp(p1, src + PAGE_SIZE - head, len - (PAGE_SIZE - head)) && !p0[head - 1] &&
	      !p1[len - (PAGE_SIZE - head)],
	      "fastreg: the bytes landed in both pages, nothing around them");

	/*
	 * From the MR to itself, by lkey and rkey: both ends are registrations whose copies hold
	 * a lock, so the bytes take the engine's bounce path.
	 */
	ret = write_to(a, cq, mr->lkey, mr->iova + 2048, 64, mr);
	CHECK(ret == IB_WC_SUCCESS && !memcmp(p0 + head, src + 2048, 64) &&
	      !memcmp(p0 + head + 64, src + 64, 64),
	      "fastreg: a write from the MR to itself moves 64 bytes, no more (%d)", ret);

	inv.opcode = IB_WR_LOCAL_INV;
	inv.ex.invalidate_rkey = mr->rkey;
	ret = post_wait(b, cq, &inv, &wc[0]);
	CHECK(!ret && wc[0].status == IB_WC_SUCCESS && wc[0].opcode == IB_WC_LOCAL_INV,
	      "fastreg: IB_WR_LOCAL_INV completes (%d, status %d)", ret, wc[0].status);

	/*
	 * Registered again under the next key, at an address with a tag in its upper bits as
	 * NFS over RDMA gives it after mapping; the peer writes there, then its SEND_WITH_INV
	 * ends the registration.
	 */
	mr->iova = (mr->iova & 0xffffffffULL) | (0x5eedULL << 32);
	reg_mr(b, cq, mr, "second key, tagged iova");
	get_random_bytes(src, 64);
	ret = write_to(a, cq, pd->local_dma_lkey, smap, 64, mr);
	CHECK(ret == IB_WC_SUCCESS && !memcmp(p0 + head, src, 64),
	      "fastreg: a write to the tagged iova 0x%llx lands (%d)", mr->iova, ret);
	key = mr->rkey;
	rsge = (struct ib_sge){ .addr = mmap, .length = 64, .lkey = pd->local_dma_lkey };
	rwr.wr_id = 7;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	ret = ib_post_recv(b, &rwr, &rbad);
	ssge = (struct ib_sge){ .addr = smap, .length = 16, .lkey = pd->local_dma_lkey };
	memset(&inv, 0, sizeof(inv));
	inv.wr_id = 8;
	inv.opcode = IB_WR_SEND_WITH_INV;
	inv.send_flags = IB_SEND_SIGNALED;
	inv.ex.invalidate_rkey = key;
	inv.sg_list = &ssge;
	inv.num_sge = 1;
	{
		const struct ib_send_wr *bad;

		ret = ret ?: ib_post_send(a, &inv, &bad);
	}
	for (i = 0; i < 2 && !ret; i++) {
		if (!poll_one(cq, &wc[i]))
			break;
		got++;
	}
	if (got == 2) {
		struct ib_wc *r = wc[0].wr_id == 7 ? &wc[0] : &wc[1];
		struct ib_wc *s = wc[0].wr_id == 8 ? &wc[0] : &wc[1];

		CHECK(s->status == IB_WC_SUCCESS && s->opcode == IB_WC_SEND,
		      "fastreg: SEND_WITH_INV completes (status %d)", s->status);
		CHECK(r->status == IB_WC_SUCCESS && r->opcode == IB_WC_RECV &&
		      (r->wc_flags & IB_WC_WITH_INVALIDATE) && r->ex.invalidate_rkey == key &&
		      r->byte_len == 16 && !memcmp(msg, src, 16),
		      "fastreg: the receive has IB_WC_WITH_INVALIDATE and rkey 0x%x (0x%x, flags 0x%x)",
		      key, r->ex.invalidate_rkey, r->wc_flags);
	} else {
		CHECK(false, "fastreg: SEND_WITH_INV: two completions (%d, %d)", got, ret);
	}

	/* Invalidated: a write through the rkey is refused and changes nothing. */
	get_random_bytes(src, len);
	ret = write_to(a, cq, pd->local_dma_lkey, smap, len, mr);
	CHECK(ret == IB_WC_REM_ACCESS_ERR && memcmp(p0 + head, src, 16),
	      "fastreg: a write through the invalidated rkey: IB_WC_REM_ACCESS_ERR (%d)", ret);

	ib_dma_unmap_single(ibdev, smap, len, DMA_TO_DEVICE);
	ib_dma_unmap_single(ibdev, mmap, 64, DMA_BIDIRECTIONAL);
	ib_dma_unmap_sg(ibdev, sg, 2, DMA_BIDIRECTIONAL);
	CHECK(!ib_dereg_mr(mr), "fastreg: ib_dereg_mr");
free:
	kfree(msg);
	kfree(src);
	free_page((unsigned long)p1);
	free_page((unsigned long)p0);
}

/*
 * A ULP's completion-driven traffic on a CQ that ib_core polls for it (IB_POLL_SOFTIRQ or
 * IB_POLL_WORKQUEUE): each send completion posts the next send and each receive completion
 * posts the next receive, from the completion handler's context (softirq for the first), until
 * POLLED_MSGS messages arrived; then ib_drain_qp on both QPs, as ULPs tear down.
 */
#define POLLED_MSGS 200
#define POLLED_LEN 256

struct polled {
	struct ib_cqe send_cqe, recv_cqe;
	struct ib_qp *a, *b;
	struct ib_sge ssge, rsge;
	atomic_t sends, recvs, errors;
	/* The first failure, so that the result says what went wrong. */
	int first_status, first_opcode;
	bool draining;
	struct completion done;
	u8 *sbuf, *rbuf;
};

static int polled_post_send(struct polled *p)
{
	struct ib_send_wr wr = { .wr_cqe = &p->send_cqe, .sg_list = &p->ssge, .num_sge = 1,
				 .opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED };
	const struct ib_send_wr *bad;

	return ib_post_send(p->a, &wr, &bad);
}

static int polled_post_recv(struct polled *p)
{
	struct ib_recv_wr wr = { .wr_cqe = &p->recv_cqe, .sg_list = &p->rsge, .num_sge = 1 };
	const struct ib_recv_wr *bad;

	return ib_post_recv(p->b, &wr, &bad);
}

static void polled_failed(struct polled *p, struct ib_wc *wc)
{
	if (atomic_inc_return(&p->errors) == 1) {
		p->first_status = wc->status;
		p->first_opcode = wc->opcode;
	}
	complete(&p->done);
}

static void polled_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct polled *p = container_of(wc->wr_cqe, struct polled, send_cqe);

	if (READ_ONCE(p->draining))
		return;
	if (wc->status != IB_WC_SUCCESS) {
		polled_failed(p, wc);
		return;
	}
	if (atomic_inc_return(&p->sends) < POLLED_MSGS && polled_post_send(p))
		atomic_inc(&p->errors);
}

static void polled_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct polled *p = container_of(wc->wr_cqe, struct polled, recv_cqe);

	if (READ_ONCE(p->draining))
		return;
	if (wc->status != IB_WC_SUCCESS || wc->byte_len != POLLED_LEN) {
		polled_failed(p, wc);
		return;
	}
	if (atomic_inc_return(&p->recvs) == POLLED_MSGS)
		complete(&p->done);
	else if (polled_post_recv(p))
		atomic_inc(&p->errors);
}

static noinline_for_stack void polled(struct ib_device *ibdev, struct ib_pd *pd,
				      enum ib_poll_context ctx, const char *name)
{
	const struct ib_gid_attr *sgid;
	struct polled *p;
	struct ib_cq *cq;
	int ret, i;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	cq = ib_alloc_cq(ibdev, NULL, 64, 0, ctx);
	sgid = rdma_get_gid_attr(ibdev, 1, 1);
	CHECK(p && !IS_ERR(cq) && !IS_ERR(sgid), "%s: ib_alloc_cq, GID 1", name);
	if (!p || IS_ERR(cq) || IS_ERR(sgid))
		goto out;
	p->sbuf = kmalloc(POLLED_LEN, GFP_KERNEL);
	p->rbuf = kzalloc(POLLED_LEN, GFP_KERNEL);
	if (!p->sbuf || !p->rbuf)
		goto out;
	get_random_bytes(p->sbuf, POLLED_LEN);
	p->ssge = (struct ib_sge){ .addr = ib_dma_map_single(ibdev, p->sbuf, POLLED_LEN,
							     DMA_TO_DEVICE),
				   .length = POLLED_LEN, .lkey = pd->local_dma_lkey };
	p->rsge = (struct ib_sge){ .addr = ib_dma_map_single(ibdev, p->rbuf, POLLED_LEN,
							     DMA_FROM_DEVICE),
				   .length = POLLED_LEN, .lkey = pd->local_dma_lkey };
	p->send_cqe.done = polled_send_done;
	p->recv_cqe.done = polled_recv_done;
	init_completion(&p->done);
	p->a = rc_qp(pd, cq, 16, 0);
	p->b = rc_qp(pd, cq, 16, 0);
	CHECK(!IS_ERR(p->a) && !IS_ERR(p->b), "%s: two RC QPs", name);
	if (IS_ERR(p->a) || IS_ERR(p->b))
		goto unmap;
	ret = to_rts(p->a, p->b->qp_num, sgid) ?: to_rts(p->b, p->a->qp_num, sgid);
	CHECK(!ret, "%s: both QPs in RTS (%d)", name, ret);
	for (i = 0; !ret && i < 16; i++)
		ret = polled_post_recv(p);
	ret = ret ?: polled_post_send(p);
	if (!ret)
		wait_for_completion_timeout(&p->done, 20 * HZ);
	CHECK(!ret && atomic_read(&p->recvs) == POLLED_MSGS && !atomic_read(&p->errors),
	      "%s: %d messages, each send and receive posted from the completion handler (%d sent, %d received, %d errors; the first: %s on opcode %d)",
	      name, POLLED_MSGS, atomic_read(&p->sends), atomic_read(&p->recvs),
	      atomic_read(&p->errors),
	      atomic_read(&p->errors) ? ib_wc_status_msg(p->first_status) : "none",
	      p->first_opcode);
	CHECK(!memcmp(p->sbuf, p->rbuf, POLLED_LEN), "%s: the bytes arrived intact", name);
	WRITE_ONCE(p->draining, true);
	ib_drain_qp(p->a);
	ib_drain_qp(p->b);
	CHECK(true, "%s: ib_drain_qp on both QPs returned", name);
unmap:
	if (!IS_ERR_OR_NULL(p->a))
		ib_destroy_qp(p->a);
	if (!IS_ERR_OR_NULL(p->b))
		ib_destroy_qp(p->b);
	ib_dma_unmap_single(ibdev, p->ssge.addr, POLLED_LEN, DMA_TO_DEVICE);
	ib_dma_unmap_single(ibdev, p->rsge.addr, POLLED_LEN, DMA_FROM_DEVICE);
out:
	if (p) {
		kfree(p->sbuf);
		kfree(p->rbuf);
	}
	kfree(p);
	if (!IS_ERR_OR_NULL(sgid))
		rdma_put_gid_attr(sgid);
	if (!IS_ERR_OR_NULL(cq))
		ib_free_cq(cq);
}

/*
 * An inline SEND of 1 KiB, the largest inline payload, from three kernel buffers, between two
 * fresh QPs that take 1 KiB inline and three send SGEs: the payload is copied into the WQE piece
 * by piece at post time (the buffers are overwritten right after the post), and B receives the
 * three buffers' bytes in order.
 */
static noinline_for_stack void inline_sges(struct ib_device *ibdev, struct ib_pd *pd,
					   const struct ib_gid_attr *sgid)
{
	static const u32 lens[3] = { 400, 1, 623 };
	u8 *src[3] = {}, *dst = kzalloc(1024, GFP_KERNEL);
	struct ib_qp *a = ERR_PTR(-EINVAL), *b = ERR_PTR(-EINVAL);
	struct ib_sge ssge[3], rsge;
	struct ib_send_wr wr = {};
	struct ib_recv_wr rwr = {};
	const struct ib_send_wr *bad;
	const struct ib_recv_wr *rbad;
	struct ib_wc wc[2] = {};
	struct ib_cq *cq;
	bool same = true;
	int ret, i, j, got = 0, at = 0;
	u64 rmap;

	cq = ib_alloc_cq(ibdev, NULL, 16, 0, IB_POLL_DIRECT);
	CHECK(!IS_ERR(cq), "inline SGEs: ib_alloc_cq");
	if (IS_ERR(cq))
		goto free;
	a = rc_qp_sges(pd, cq, 4, 1024, 3);
	b = rc_qp_sges(pd, cq, 4, 1024, 3);
	CHECK(!IS_ERR(a) && !IS_ERR(b), "inline SGEs: two RC QPs that take 1 KiB inline");
	if (IS_ERR(a) || IS_ERR(b) || !dst)
		goto out;
	ret = to_rts(a, b->qp_num, sgid) ?: to_rts(b, a->qp_num, sgid);
	CHECK(!ret, "inline SGEs: the QPs to RTS (%d)", ret);
	if (ret)
		goto out;
	for (i = 0; i < 3; i++) {
		src[i] = kmalloc(lens[i], GFP_KERNEL);
		if (!src[i])
			goto out;
		for (j = 0; j < lens[i]; j++)
			src[i][j] = i * 37 + j;
		ssge[i] = (struct ib_sge){ .addr = (u64)(uintptr_t)src[i], .length = lens[i],
					   .lkey = pd->local_dma_lkey };
	}
	rmap = ib_dma_map_single(ibdev, dst, 1024, DMA_FROM_DEVICE);
	rsge = (struct ib_sge){ .addr = rmap, .length = 1024, .lkey = pd->local_dma_lkey };
	rwr.wr_id = 2;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	ret = ib_post_recv(b, &rwr, &rbad);
	wr.wr_id = 1;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE;
	wr.sg_list = ssge;
	wr.num_sge = 3;
	ret = ret ?: ib_post_send(a, &wr, &bad);
	CHECK(!ret, "inline SGEs: 1 KiB inline from three SGEs posted (%d)", ret);
	for (i = 0; i < 3; i++)
		memset(src[i], 0xee, lens[i]);
	for (i = 0; i < 2 && !ret; i++) {
		if (!poll_one(cq, &wc[i]))
			break;
		got++;
	}
	ib_dma_unmap_single(ibdev, rmap, 1024, DMA_FROM_DEVICE);
	for (i = 0; i < 3; i++)
		for (j = 0; j < lens[i]; j++, at++)
			same &= dst[at] == (u8)(i * 37 + j);
	CHECK(got == 2 && wc[0].status == IB_WC_SUCCESS && wc[1].status == IB_WC_SUCCESS &&
	      same, "inline SGEs: 1024 bytes arrived in order (%d completions, status %d/%d)",
	      got, wc[0].status, wc[1].status);
out:
	if (!IS_ERR(a))
		ib_destroy_qp(a);
	if (!IS_ERR(b))
		ib_destroy_qp(b);
	ib_free_cq(cq);
free:
	for (i = 0; i < 3; i++)
		kfree(src[i]);
	kfree(dst);
}

static noinline_for_stack void test_data(struct ib_device *ibdev, struct ib_pd *pd)
{
	const struct ib_gid_attr *sgid;
	struct ib_qp *a, *b;
	struct ib_cq *cq;
	struct ib_send_wr wr = {};
	const struct ib_send_wr *bad = NULL;
	struct ib_sge sge;
	static u8 big[512];
	int ret;

	cq = ib_alloc_cq(ibdev, NULL, 64, 0, IB_POLL_DIRECT);
	CHECK(!IS_ERR(cq), "data: ib_alloc_cq");
	if (IS_ERR(cq))
		return;
	/* GID 1: the IPv4 address, which the engine finds its destination by. */
	sgid = rdma_get_gid_attr(ibdev, 1, 1);
	CHECK(!IS_ERR(sgid), "data: GID 1");
	if (IS_ERR(sgid))
		goto free_cq;
	a = rc_qp(pd, cq, 16, 128);
	b = rc_qp(pd, cq, 16, 128);
	CHECK(!IS_ERR(a) && !IS_ERR(b), "data: two RC QPs");
	if (IS_ERR(a) || IS_ERR(b))
		goto put;
	ret = to_rts(a, b->qp_num, sgid);
	CHECK(!ret, "data: QP A to RTS (%d)", ret);
	ret = ret ?: to_rts(b, a->qp_num, sgid);
	CHECK(!ret, "data: QP B to RTS (%d)", ret);
	if (!ret) {
		send_one(ibdev, pd, cq, a, b, 64, true);
		send_one(ibdev, pd, cq, a, b, 128, true); /* the QPs' max_inline_data */
		send_one(ibdev, pd, cq, a, b, 4096, false);
		send_one(ibdev, pd, cq, a, b, 1, false);
		sge = (struct ib_sge){ .addr = (u64)(uintptr_t)big, .length = sizeof(big),
				       .lkey = pd->local_dma_lkey };
		wr.opcode = IB_WR_SEND;
		wr.send_flags = IB_SEND_INLINE;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ret = ib_post_send(a, &wr, &bad);
		CHECK(ret == -EINVAL && bad == &wr,
		      "inline above max_inline_data refused: %d, bad_wr set", ret);
		inline_sges(ibdev, pd, sgid);
		/* Last: its final check leaves A in the error state. */
		test_fastreg(ibdev, pd, cq, a, b);
	}
put:
	if (!IS_ERR(a))
		ib_destroy_qp(a);
	if (!IS_ERR(b))
		ib_destroy_qp(b);
	rdma_put_gid_attr(sgid);
free_cq:
	ib_free_cq(cq);
}

/*
 * An SGE of the PD's DMA lkey whose address lies outside the linear map (a vmalloc buffer,
 * which no ULP may hand a device with virtual DMA) completes with IB_WC_LOC_PROT_ERR: srdma
 * reaches kernel memory only as the buffers a work request lends it.
 */
static noinline_for_stack void test_outside(struct ib_device *ibdev, struct ib_pd *pd)
{
	const struct ib_gid_attr *sgid;
	struct ib_qp *a, *b;
	struct ib_send_wr wr = {};
	struct ib_wc wc = {};
	struct ib_sge sge;
	struct ib_cq *cq;
	void *v = vzalloc(64);
	int ret;

	cq = ib_alloc_cq(ibdev, NULL, 16, 0, IB_POLL_DIRECT);
	sgid = rdma_get_gid_attr(ibdev, 1, 1);
	CHECK(v && !IS_ERR(cq) && !IS_ERR(sgid), "outside: CQ, GID 1, buffer");
	if (!v || IS_ERR(cq) || IS_ERR(sgid))
		goto free;
	a = rc_qp(pd, cq, 4, 0);
	b = rc_qp(pd, cq, 4, 0);
	ret = IS_ERR(a) || IS_ERR(b) ? -ENOMEM : to_rts(a, b->qp_num, sgid);
	ret = ret ?: to_rts(b, a->qp_num, sgid);
	CHECK(!ret, "outside: two RC QPs in RTS (%d)", ret);
	if (!ret) {
		sge = (struct ib_sge){ .addr = (u64)(uintptr_t)v, .length = 64,
				       .lkey = pd->local_dma_lkey };
		wr.opcode = IB_WR_SEND;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ret = post_wait(a, cq, &wr, &wc);
		CHECK(!ret && wc.status == IB_WC_LOC_PROT_ERR,
		      "outside: a SEND from a vmalloc address: IB_WC_LOC_PROT_ERR (%d, status %d)",
		      ret, wc.status);
	}
	if (!IS_ERR(a))
		ib_destroy_qp(a);
	if (!IS_ERR(b))
		ib_destroy_qp(b);
free:
	if (!IS_ERR(sgid))
		rdma_put_gid_attr(sgid);
	if (!IS_ERR(cq))
		ib_free_cq(cq);
	vfree(v);
}

static void run(struct ib_device *ibdev)
{
	struct ib_qp_init_attr qia = {};
	struct ib_srq_init_attr sia = {};
	struct ib_qp_attr qa = {}, got = {};
	struct rdma_ah_attr aa = {};
	struct ib_qp_init_attr init = {};
	const struct ib_gid_attr *sgid;
	union ib_gid dgid;
	struct ib_pd *pd, *upd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct ib_srq *srq;
	struct ib_ah *ah;
	int ret;

	pd = ib_alloc_pd(ibdev, 0);
	CHECK(!IS_ERR(pd), "ib_alloc_pd");
	if (IS_ERR(pd))
		return;
	CHECK(pd->local_dma_lkey != 0, "PD has a DMA lkey from get_dma_mr (0x%x)",
	      pd->local_dma_lkey);

	/*
	 * A DMA MR with remote rights would hand any peer all of the kernel's memory; srdma lends
	 * a kernel buffer only to the work request that names it.
	 */
	upd = ib_alloc_pd(ibdev, IB_PD_UNSAFE_GLOBAL_RKEY);
	CHECK(PTR_ERR_OR_ZERO(upd) == -EOPNOTSUPP, "no PD with an unsafe global rkey (%d)",
	      PTR_ERR_OR_ZERO(upd));
	if (!IS_ERR(upd))
		ib_dealloc_pd(upd);

	cq = ib_alloc_cq(ibdev, NULL, 64, 0, IB_POLL_DIRECT);
	CHECK(!IS_ERR(cq), "ib_alloc_cq");
	if (IS_ERR(cq))
		goto free_pd;
	CHECK(cq->cqe >= 64, "CQ has at least 64 entries (%d)", cq->cqe);

	qia.send_cq = cq;
	qia.recv_cq = cq;
	qia.qp_type = IB_QPT_RC;
	qia.sq_sig_type = IB_SIGNAL_REQ_WR;
	qia.cap = (struct ib_qp_cap){ .max_send_wr = 32, .max_recv_wr = 32,
				      .max_send_sge = 2, .max_recv_sge = 2,
				      .max_inline_data = 64 };
	qp = ib_create_qp(pd, &qia);
	CHECK(!IS_ERR(qp), "ib_create_qp (RC)");
	if (!IS_ERR(qp)) {
		CHECK(qp->qp_num >= 16, "QP number %u", qp->qp_num);
		qa.qp_state = IB_QPS_INIT;
		qa.port_num = 1;
		qa.qp_access_flags = IB_ACCESS_REMOTE_WRITE;
		ret = ib_modify_qp(qp, &qa, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
				   IB_QP_ACCESS_FLAGS);
		CHECK(!ret, "ib_modify_qp RESET->INIT (%d)", ret);
		ret = ib_query_qp(qp, &got, IB_QP_STATE, &init);
		CHECK(!ret && got.qp_state == IB_QPS_INIT && init.cap.max_send_wr >= 32,
		      "ib_query_qp: INIT, caps kept");
		qa.qp_state = IB_QPS_RTS;
		ret = ib_modify_qp(qp, &qa, IB_QP_STATE);
		CHECK(ret == -EINVAL, "INIT->RTS refused: %d", ret);
		CHECK(!ib_destroy_qp(qp), "ib_destroy_qp");
	}

	sia.attr.max_wr = 64;
	sia.attr.max_sge = 1;
	sia.srq_type = IB_SRQT_BASIC;
	srq = ib_create_srq(pd, &sia);
	CHECK(!IS_ERR(srq), "ib_create_srq");
	if (!IS_ERR(srq)) {
		/*
		 * ib_drain_qp of a QP on an SRQ waits for its Last WQE Reached event, up to 60 s
		 * without it.
		 */
		qia.srq = srq;
		qp = ib_create_qp(pd, &qia);
		CHECK(!IS_ERR(qp), "ib_create_qp (RC, on the SRQ)");
		if (!IS_ERR(qp)) {
			unsigned long t0 = jiffies;

			qa.qp_state = IB_QPS_INIT;
			ret = ib_modify_qp(qp, &qa, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
					   IB_QP_ACCESS_FLAGS);
			CHECK(!ret, "ib_modify_qp RESET->INIT (on the SRQ) (%d)", ret);
			ib_drain_qp(qp);
			CHECK(time_before(jiffies, t0 + HZ),
			      "ib_drain_qp of a QP on an SRQ returns at its Last WQE Reached event (%u ms)",
			      jiffies_to_msecs(jiffies - t0));
			CHECK(!ib_destroy_qp(qp), "ib_destroy_qp (on the SRQ)");
		}
		qia.srq = NULL;
		ib_destroy_srq(srq);
		CHECK(true, "ib_destroy_srq");
	}

	sgid = rdma_get_gid_attr(ibdev, 1, 0);
	CHECK(!IS_ERR(sgid), "GID 0 of port 1");
	if (!IS_ERR(sgid)) {
		aa.type = RDMA_AH_ATTR_TYPE_ROCE;
		rdma_ah_set_port_num(&aa, 1);
		dgid = sgid->gid;
		rdma_ah_set_grh(&aa, &dgid, 0, 0, 1, 0);
		ah = rdma_create_ah(pd, &aa, RDMA_CREATE_AH_SLEEPABLE);
		CHECK(!IS_ERR(ah), "rdma_create_ah to our own GID");
		if (!IS_ERR(ah)) {
			rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
			CHECK(true, "rdma_destroy_ah");
		}
		rdma_put_gid_attr(sgid);
	}

	ib_free_cq(cq);
	CHECK(true, "ib_free_cq");
	test_data(ibdev, pd);
	test_outside(ibdev, pd);
	polled(ibdev, pd, IB_POLL_SOFTIRQ, "IB_POLL_SOFTIRQ");
	polled(ibdev, pd, IB_POLL_WORKQUEUE, "IB_POLL_WORKQUEUE");
free_pd:
	ib_dealloc_pd(pd);
	CHECK(true, "ib_dealloc_pd");
}

static int __init srdma_kverbs_init(void)
{
	struct ib_device *ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);

	pr_info("TAP version 13\n");
	CHECK(ibdev, "device %s found", dev);
	if (ibdev) {
		run(ibdev);
		ib_device_put(ibdev);
	}
	pr_info("1..%d\n", test_num);
	return failures ? -EINVAL : 0;
}

static void __exit srdma_kverbs_exit(void)
{
}

module_init(srdma_kverbs_init);
module_exit(srdma_kverbs_exit);
MODULE_DESCRIPTION("srdma selftest: verbs objects and data from a kernel caller");
MODULE_LICENSE("GPL");

// SPDX-License-Identifier: GPL-2.0-only
/*
 * Memory windows of srdma between two devices (the contract in notes/mw-spec.md): type 2
 * windows bound by the BIND_MW work request, zero-based windows, the access violations a
 * window catches, SEND_WITH_INV and LOCAL_INV, type 1 windows bound with ibv_bind_mw, the
 * bind errors, invalidations that must fail, ibv_dereg_mr of an MR with a bound window, and
 * the same through the work-request API (ibv_wr_bind_mw, ibv_wr_local_inv, ibv_wr_send_inv).
 * The requester QP is on DEV_A, the responder (the QP windows are bound on) on DEV_B; an error
 * completion moves both QPs of a pair to the error state, so error cases get pairs of their
 * own. Every completion is waited for at most 5 s (1 s once one has failed to come). Prints TAP.
 *   srdma_mw DEV_A DEV_B
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "srdma_tap.h"

#define BUF (1024 * 1024)
#define WBUF (64 * 1024)	/* B's window memory, with an MR of its own */
#define WOFF 4096	/* where windows start in it */
#define WLEN 8192	/* and how long they are */
#define WPTR (wbuf + WOFF)
#define WADDR ((uintptr_t)wbuf + WOFF)
#define RW (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define MW_INDEX_MIN 0x800000

/* One side: a device with its PD and one registered buffer (full rights, for SGEs). */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	char *buf;
	union ibv_gid gid;
	int gidx;
};

/* A connected RC pair: a on side A, b on side B, each with a CQ of its own. */
struct pair {
	struct ibv_cq *ca, *cb;
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *xa, *xb;
};

static struct side A, B;
static char *wbuf;		/* B's window memory */
static struct ibv_mr *wmr;	/* over wbuf: LOCAL_WRITE | MW_BIND, no remote rights */
static char snapbuf[WBUF];
static int wait_ms = 5000;
static uint64_t next_id = 1;

static void fill(char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = rand();
}

/* Remembers B's window memory; same() tells whether it is still so. */
static void snap(void)
{
	memcpy(snapbuf, wbuf, WBUF);
}

static int same(void)
{
	if (!memcmp(snapbuf, wbuf, WBUF))
		return 1;
	printf("# B's window memory changed\n");
	return 0;
}

/* The index of port 1's IPv4-mapped GID (RoCE on the veth's address), or -1. */
static int find_gid(struct side *s)
{
	static const unsigned char v4[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_port_attr pa;

	if (ibv_query_port(s->ctx, 1, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++)
		if (!ibv_query_gid(s->ctx, 1, i, &s->gid) && !memcmp(s->gid.raw, v4, sizeof(v4)))
			return i;
	return -1;
}

static void open_side(struct side *s, const char *name)
{
	s->ctx = open_dev(name);
	if (!s->ctx) {
		printf("Bail out! no device %s\n", name);
		exit(1);
	}
	s->pd = ibv_alloc_pd(s->ctx);
	s->buf = aligned_alloc(4096, BUF);
	if (s->buf)
		memset(s->buf, 0, BUF);
	s->mr = s->pd && s->buf ? ibv_reg_mr(s->pd, s->buf, BUF, IBV_ACCESS_LOCAL_WRITE |
						  IBV_ACCESS_REMOTE_WRITE |
						  IBV_ACCESS_REMOTE_READ) : NULL;
	s->gidx = find_gid(s);
	if (!s->mr || s->gidx < 0) {
		printf("Bail out! cannot set up %s (%s)\n", name, s->gidx < 0 ? "no IPv4 GID" :
		       strerror(errno));
		exit(1);
	}
}

static void close_side(struct side *s)
{
	ibv_dereg_mr(s->mr);
	ibv_dealloc_pd(s->pd);
	ibv_close_device(s->ctx);
	free(s->buf);
}

static struct ibv_qp *new_qp(struct side *s, struct ibv_cq *cq, uint64_t ops)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .pd = s->pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD | (ops ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0),
		.send_ops_flags = ops,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	return cq ? ibv_create_qp_ex(s->ctx, &ia) : NULL;
}

/* Brings an RC QP of side s to RTS, talking to QPN dqpn at gid. */
static int connect_qp(struct ibv_qp *qp, struct side *s, uint32_t dqpn, union ibv_gid *gid)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						     IBV_ACCESS_REMOTE_READ |
						     IBV_ACCESS_REMOTE_ATOMIC };

	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS))
		return -1;
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				   .dest_qp_num = dqpn, .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
				   .ah_attr = { .is_global = 1, .port_num = 1,
						.grh = { .dgid = *gid, .sgid_index = s->gidx,
							 .hop_limit = 1 } } };
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER))
		return -1;
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 1, .retry_cnt = 1,
				   .rnr_retry = 0, .max_rd_atomic = 1 };
	return ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				      IBV_QP_MAX_QP_RD_ATOMIC);
}

static void pair_free(struct pair *p)
{
	if (p->a)
		ibv_destroy_qp(p->a);
	if (p->b)
		ibv_destroy_qp(p->b);
	if (p->ca)
		ibv_destroy_cq(p->ca);
	if (p->cb)
		ibv_destroy_cq(p->cb);
	memset(p, 0, sizeof(*p));
}

/*
 * A connected pair; with ops, its QPs come from ibv_create_qp_ex with those send_ops_flags.
 * On failure everything in *p is NULL, and every helper below then fails without waiting.
 */
static void pair_new(struct pair *p, uint64_t ops)
{
	memset(p, 0, sizeof(*p));
	p->ca = ibv_create_cq(A.ctx, 32, NULL, NULL, 0);
	p->cb = ibv_create_cq(B.ctx, 32, NULL, NULL, 0);
	p->a = new_qp(&A, p->ca, ops);
	p->b = new_qp(&B, p->cb, ops);
	if (p->a && p->b && !connect_qp(p->a, &A, p->b->qp_num, &B.gid) &&
	    !connect_qp(p->b, &B, p->a->qp_num, &A.gid)) {
		if (ops) {
			p->xa = ibv_qp_to_qp_ex(p->a);
			p->xb = ibv_qp_to_qp_ex(p->b);
		}
		return;
	}
	printf("# cannot set up a QP pair (%s)\n", strerror(errno));
	pair_free(p);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * Waits for the next completion on cq; 1 if it has wr_id and status and, when the status is
 * success, opcode (the opcode of an error completion is undefined). *out gets it.
 */
static int expect(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status status, int opcode,
		  struct ibv_wc *out, const char *who)
{
	double end = now_ms() + wait_ms;
	struct ibv_wc wc;
	int n = 0;

	if (!cq)
		return 0;
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && now_ms() < end)
		usleep(500);
	if (n != 1) {
		printf("# %s: %s\n", who, n < 0 ? "ibv_poll_cq failed" : "no completion");
		if (n == 0)
			wait_ms = 1000;
		return 0;
	}
	if (out)
		*out = wc;
	if (wc.wr_id == wr_id && wc.status == status &&
	    (status != IBV_WC_SUCCESS || wc.opcode == (enum ibv_wc_opcode)opcode))
		return 1;
	printf("# %s: completion wr_id %llu status %d (%s) opcode %d;", who,
	       (unsigned long long)wc.wr_id, wc.status, ibv_wc_status_str(wc.status), wc.opcode);
	printf(" want wr_id %llu status %d (%s) opcode %d\n", (unsigned long long)wr_id, status,
	       ibv_wc_status_str(status), opcode);
	return 0;
}

/* Whether no completion shows up on cq within ms milliseconds. */
static int quiet(struct ibv_cq *cq, int ms)
{
	double end = now_ms() + ms;
	struct ibv_wc wc;

	if (!cq)
		return 0;
	while (now_ms() < end) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n) {
			printf("# unexpected completion: wr_id %llu status %d opcode %d\n",
			       (unsigned long long)wc.wr_id, wc.status, wc.opcode);
			return 0;
		}
		usleep(500);
	}
	return 1;
}

static int post(struct ibv_qp *qp, struct ibv_send_wr *wr, const char *who)
{
	struct ibv_send_wr *bad;
	int ret;

	if (!qp)
		return -1;
	ret = ibv_post_send(qp, wr, &bad);
	if (ret)
		printf("# %s: ibv_post_send: %s\n", who, strerror(ret));
	return ret;
}

static struct ibv_mw *alloc_mw(enum ibv_mw_type type)
{
	struct ibv_mw *mw = ibv_alloc_mw(B.pd, type);

	if (!mw)
		printf("# ibv_alloc_mw(type %d): %s\n", type, strerror(errno));
	return mw;
}

static void free_mw(struct ibv_mw *mw)
{
	int ret = mw ? ibv_dealloc_mw(mw) : 0;

	if (ret)
		printf("# ibv_dealloc_mw: %s\n", strerror(ret));
}

/* The rkey a type 2 window is bound with: the next key byte. */
static uint32_t key(struct ibv_mw *mw)
{
	return mw ? ibv_inc_rkey(mw->rkey) : 0;
}

/*
 * Binds type 2 window mw with rkey over wbuf + off .. + len of mr (an MR over wbuf) with a
 * signaled BIND_MW work request on B's QP of p; 1 if it completes with want.
 */
static int bind2(struct pair *p, struct ibv_mw *mw, uint32_t rkey, struct ibv_mr *mr,
		 uint64_t off, uint64_t len, unsigned int access, enum ibv_wc_status want,
		 const char *who)
{
	struct ibv_send_wr wr = { .wr_id = next_id++, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED };

	if (!mw || !mr) {
		printf("# %s: no window or no MR\n", who);
		return 0;
	}
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ mr, (uintptr_t)wbuf + off, len, access };
	return !post(p->b, &wr, who) && expect(p->cb, wr.wr_id, want, IBV_WC_BIND_MW, NULL, who);
}

/*
 * Binds type 1 window mw over wbuf + off .. + len of wmr with ibv_bind_mw on B's QP of p
 * (len 0 unbinds); 1 if that returns 0 and sets mw->rkey to ibv_inc_rkey of the old rkey,
 * and, signaled, completes with BIND_MW success, unsignaled, completes with nothing.
 */
static int bind1(struct pair *p, struct ibv_mw *mw, uint64_t off, uint64_t len,
		 unsigned int access, int signaled, const char *who)
{
	struct ibv_mw_bind mb = { .wr_id = next_id++,
				 .send_flags = signaled ? IBV_SEND_SIGNALED : 0,
				  .bind_info = { wmr, (uintptr_t)wbuf + off, len, access } };
	uint32_t old;
	int ret;

	if (!mw || !wmr || !p->b) {
		printf("# %s: no window, MR or QP\n", who);
		return 0;
	}
	old = mw->rkey;
	ret = ibv_bind_mw(p->b, mw, &mb);
	if (ret || mw->rkey != ibv_inc_rkey(old)) {
		printf("# %s: ibv_bind_mw returned %d (%s), rkey %#x -> %#x\n", who, ret,
		       strerror(ret), old, mw->rkey);
		return 0;
	}
	return signaled ? expect(p->cb, mb.wr_id, IBV_WC_SUCCESS, IBV_WC_BIND_MW, NULL, who) :
			  quiet(p->cb, 100);
}

/* A reads or writes len bytes at A.buf + loff, remotely raddr through rkey; 1 if want. */
static int rdma(struct pair *p, enum ibv_wr_opcode op, uint64_t loff, uint32_t len,
		uint64_t raddr, uint32_t rkey, enum ibv_wc_status want, const char *who)
{
	struct ibv_sge sge = { (uintptr_t)A.buf + loff, len, A.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = next_id++, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED, .wr.rdma = { raddr, rkey } };

	return !post(p->a, &wr, who) &&
	       expect(p->ca, wr.wr_id, want,
		      op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE, NULL, who);
}

/* A writes len random bytes at raddr (in wbuf) through rkey; 1 if it succeeds and they land. */
static int write_lands(struct pair *p, uint64_t raddr, uint32_t rkey, uint32_t len,
		       const char *who)
{
	fill(A.buf, len);
	if (!rdma(p, IBV_WR_RDMA_WRITE, 0, len, raddr, rkey, IBV_WC_SUCCESS, who))
		return 0;
	if (!memcmp(A.buf, (char *)(uintptr_t)raddr, len))
		return 1;
	printf("# %s: the bytes differ\n", who);
	return 0;
}

/* A writes 16 bytes at raddr through rkey; 1 if REM_ACCESS_ERR and B's memory unchanged. */
static int write_fails(struct pair *p, uint64_t raddr, uint32_t rkey, const char *who)
{
	fill(A.buf, 16);
	snap();
	return rdma(p, IBV_WR_RDMA_WRITE, 0, 16, raddr, rkey, IBV_WC_REM_ACCESS_ERR, who) && same();
}

/*
 * Posts a receive on B's QP of p (into B.buf) and a signaled SEND_WITH_INV of rkey carrying len
 * random bytes from A; *rid and *sid are their wr_ids. 1 if both were posted.
 */
static int send_inv(struct pair *p, uint32_t rkey, uint32_t len, uint64_t *rid, uint64_t *sid)
{
	struct ibv_sge rs = { (uintptr_t)B.buf, 4096, B.mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = next_id++, .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_sge ss = { (uintptr_t)A.buf, len, A.mr->lkey };
	struct ibv_send_wr swr = { .wr_id = next_id++, .sg_list = &ss, .num_sge = 1,
				   .opcode = IBV_WR_SEND_WITH_INV, .send_flags = IBV_SEND_SIGNALED,
				   .invalidate_rkey = rkey };

	*rid = rwr.wr_id;
	*sid = swr.wr_id;
	fill(A.buf, len);
	memset(B.buf, 0, 4096);
	if (!p->b || ibv_post_recv(p->b, &rwr, &rbad)) {
		printf("# ibv_post_recv failed\n");
		return 0;
	}
	return !post(p->a, &swr, "send_with_inv");
}

/* Whether receive completion rwc reports the invalidation of rkey and len intact bytes. */
static int recv_inv_ok(struct ibv_wc *rwc, uint32_t rkey, uint32_t len)
{
	if ((rwc->wc_flags & IBV_WC_WITH_INV) && rwc->invalidated_rkey == rkey &&
	    rwc->byte_len == len && !memcmp(A.buf, B.buf, len))
		return 1;
	printf("# receive: wc_flags %#x invalidated_rkey %#x byte_len %u, data %s\n",
	       rwc->wc_flags, rwc->invalidated_rkey, rwc->byte_len,
	       memcmp(A.buf, B.buf, len) ? "differs" : "intact");
	return 0;
}

/* B's QP of p invalidates rkey with a signaled LOCAL_INV; 1 if it completes with want. */
static int local_inv(struct pair *p, uint32_t rkey, enum ibv_wc_status want, const char *who)
{
	struct ibv_send_wr wr = { .wr_id = next_id++, .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey };

	return !post(p->b, &wr, who) && expect(p->cb, wr.wr_id, want, IBV_WC_LOCAL_INV, NULL, who);
}

/* a. The device reports memory windows. */
static void test_caps(void)
{
	struct ibv_device_attr da[2];
	int ok = 1;

	for (int i = 0; i < 2; i++) {
		struct ibv_context *ctx = i ? B.ctx : A.ctx;

		memset(&da[i], 0, sizeof(da[i]));
		ok &= !ibv_query_device(ctx, &da[i]) &&
		      (da[i].device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
		      (da[i].device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && da[i].max_mw > 0;
	}
	result(ok,
	       "query_device: MEM_WINDOW and MEM_WINDOW_TYPE_2B in device_cap_flags, max_mw > 0 (caps %#llx, max_mw %d)",
	       (unsigned long long)da[1].device_cap_flags,
	       da[1].max_mw);
}

/* b. A type 2 window: bind, write and read through it. */
static void type2(void)
{
	struct ibv_mw *mw = alloc_mw(IBV_MW_TYPE_2);
	uint32_t k = key(mw);
	struct pair p;
	int ok;

	result(mw && mw->type == IBV_MW_TYPE_2 && mw->pd == B.pd && mw->rkey >> 8 >= MW_INDEX_MIN,
	       "type 2: ibv_alloc_mw gives a window whose rkey index is >= 0x800000 (rkey %#x)",
	       mw ? mw->rkey : 0);
	pair_new(&p, 0);
	fill(wbuf, WBUF);
	result(bind2(&p, mw, k, wmr, WOFF, WLEN, RW, IBV_WC_SUCCESS, "bind"),
	       "type 2: a signaled BIND_MW work request completes IBV_WC_BIND_MW, success");
	snap();
	fill(A.buf, WLEN);
	ok = rdma(&p, IBV_WR_RDMA_WRITE, 0, WLEN, WADDR, k, IBV_WC_SUCCESS, "write") &&
	     !memcmp(A.buf, WPTR, WLEN) && !memcmp(wbuf, snapbuf, WOFF) &&
	     !memcmp(WPTR + WLEN, snapbuf + WOFF + WLEN, WBUF - WOFF - WLEN);
	result(ok,
	       "type 2: an RDMA WRITE of the whole window (%d bytes) through its rkey lands byte for byte, nothing outside it",
	       WLEN);
	fill(WPTR, WLEN);
	memset(A.buf + BUF / 2, 0, WLEN);
	ok = rdma(&p, IBV_WR_RDMA_READ, BUF / 2, 1000, WADDR + 100, k, IBV_WC_SUCCESS, "read") &&
	     !memcmp(A.buf + BUF / 2, WPTR + 100, 1000);
	result(ok, "type 2: an RDMA READ of 1000 bytes at offset 100 returns the window's bytes");
	free_mw(mw);
	pair_free(&p);
}

/* c. A zero-based type 2 window. */
static void zero_based(void)
{
	struct ibv_mw *mw = alloc_mw(IBV_MW_TYPE_2);
	uint32_t k = key(mw);
	struct pair p;
	int ok;

	pair_new(&p, 0);
	fill(wbuf, WBUF);
	result(bind2(&p, mw, k, wmr, WOFF, WLEN, RW | IBV_ACCESS_ZERO_BASED, IBV_WC_SUCCESS,
		     "bind"),
	       "zero-based type 2 window: the bind completes IBV_WC_BIND_MW, success");
	snap();
	fill(A.buf, 300);
	ok = rdma(&p, IBV_WR_RDMA_WRITE, 0, 300, 100, k, IBV_WC_SUCCESS, "write") &&
	     !memcmp(A.buf, WPTR + 100, 300) && !memcmp(wbuf, snapbuf, WOFF + 100) &&
	     !memcmp(WPTR + 400, snapbuf + WOFF + 400, WBUF - WOFF - 400);
	result(ok,
	       "zero-based: a write to remote_addr 100 lands at window start + 100, nothing else");
	fill(WPTR, WLEN);
	memset(A.buf + BUF / 2, 0, WLEN);
	ok = rdma(&p, IBV_WR_RDMA_READ, BUF / 2, WLEN, 0, k, IBV_WC_SUCCESS, "read") &&
	     !memcmp(A.buf + BUF / 2, WPTR, WLEN);
	result(ok, "zero-based: a read of %d bytes at remote_addr 0 returns the whole window",
	       WLEN);
	result(write_fails(&p, WADDR, k, "write at the window's address"),
	       "zero-based: remote_addr = the window's virtual address is out of range: IBV_WC_REM_ACCESS_ERR, nothing written");
	free_mw(mw);
	pair_free(&p);
}

/* d. Access violations through type 2 windows. */
static void violations(void)
{
	struct ibv_mw *mw;
	struct pair p, q;
	uint32_t k, k2;
	int ok;

	/* Beyond the window's end, inside the MR. */
	mw = alloc_mw(IBV_MW_TYPE_2);
	k = key(mw);
	pair_new(&p, 0);
	ok = bind2(&p, mw, k, wmr, WOFF, WLEN, RW, IBV_WC_SUCCESS, "bind");
	result(ok && write_fails(&p, WADDR + WLEN - 8, k, "write across the end"),
	       "a 16-byte write across the window's end (inside the MR): IBV_WC_REM_ACCESS_ERR, nothing written");
	free_mw(mw);
	pair_free(&p);

	/* A right the window lacks. */
	mw = alloc_mw(IBV_MW_TYPE_2);
	k = key(mw);
	pair_new(&p, 0);
	fill(WPTR, WLEN);
	memset(A.buf + BUF / 2, 0, 64);
	ok = bind2(&p, mw, k, wmr, WOFF, WLEN, IBV_ACCESS_REMOTE_READ, IBV_WC_SUCCESS, "bind") &&
	     rdma(&p, IBV_WR_RDMA_READ, BUF / 2, 64, WADDR, k, IBV_WC_SUCCESS, "read") &&
	     !memcmp(A.buf + BUF / 2, WPTR, 64);
	result(ok, "a read-only window: an RDMA READ through it succeeds");
	result(ok && write_fails(&p, WADDR, k, "write to a read-only window"),
	       "a read-only window: an RDMA WRITE through it: IBV_WC_REM_ACCESS_ERR, nothing written");
	free_mw(mw);
	pair_free(&p);

	/* The old rkey after LOCAL_INV and a rebind with a new key byte. */
	mw = alloc_mw(IBV_MW_TYPE_2);
	k = key(mw);
	k2 = ibv_inc_rkey(k);
	pair_new(&p, 0);
	ok = bind2(&p, mw, k, wmr, WOFF, WLEN, RW, IBV_WC_SUCCESS, "bind") &&
	     write_lands(&p, WADDR, k, 64, "write") &&
	     local_inv(&p, k, IBV_WC_SUCCESS, "local_inv") &&
	     bind2(&p, mw, k2, wmr, WOFF, WLEN, RW, IBV_WC_SUCCESS, "rebind") &&
	     write_lands(&p, WADDR, k2, 64, "write with the new rkey");
	result(ok,
	       "type 2: bind, write, LOCAL_INV, rebind with the next key byte: the new rkey works");
	result(ok && write_fails(&p, WADDR, k, "write with the old rkey"),
	       "type 2: the rkey before the rebind: IBV_WC_REM_ACCESS_ERR, nothing written");
	free_mw(mw);
	pair_free(&p);

	/* A type 2 window used through another QP than the one it is bound to. */
	mw = alloc_mw(IBV_MW_TYPE_2);
	k = key(mw);
	pair_new(&p, 0);
	pair_new(&q, 0);
	ok = bind2(&p, mw, k, wmr, WOFF, WLEN, RW, IBV_WC_SUCCESS, "bind") &&
	     write_lands(&p, WADDR, k, 256, "write from the bound QP's peer");
	result(ok, "type 2: a write from the peer of the QP the window is bound to lands");
	result(ok && write_fails(&q, WADDR, k, "write through another QP pair"),
	       "type 2: the same rkey through another QP pair on the same PDs: IBV_WC_REM_ACCESS_ERR, nothing written");
	free_mw(mw);
	pair_free(&q);
	pair_free(&p);
}

/* e. SEND_WITH_INV of a bound type 2 window. */
static void send_with_inv(void)
{
	struct ibv_mw *mw = alloc_mw(IBV_MW_TYPE_2);
	uint32_t k = key(mw), k2 = ibv_inc_rkey(k);
	uint64_t rid, sid;
	struct ibv_wc rwc;
	struct pair p;
	int ok, posted;

	pair_new(&p, 0);
	ok = bind2(&p, mw, k, wmr, WOFF, WLEN, RW, IBV_WC_SUCCESS, "bind");
	posted = ok && send_inv(&p, k, 1000, &rid, &sid);
	result(posted && expect(p.ca, sid, IBV_WC_SUCCESS, IBV_WC_SEND, NULL, "send"),
	       "SEND_WITH_INV of a bound window's rkey: the send completes IBV_WC_SEND, success");
	result(posted && expect(p.cb, rid, IBV_WC_SUCCESS, IBV_WC_RECV, &rwc, "receive") &&
	       recv_inv_ok(&rwc, k, 1000),
	       "SEND_WITH_INV: the receive completes IBV_WC_RECV with IBV_WC_WITH_INV, invalidated_rkey %#x, 1000 bytes intact",
	       k);
	result(posted && write_fails(&p, WADDR, k, "write after SEND_WITH_INV"),
	       "a write through the invalidated rkey: IBV_WC_REM_ACCESS_ERR, nothing written");
	pair_free(&p);
	pair_new(&p, 0);
	ok = posted && bind2(&p, mw, k2, wmr, WOFF, WLEN, RW, IBV_WC_SUCCESS, "bind again");
	result(ok, "the invalidated window binds again (next key byte, on a new QP pair)");
	result(ok && write_lands(&p, WADDR + 10, k2, 1000, "write with the new rkey"),
	       "a write through its new rkey lands");
	free_mw(mw);
	pair_free(&p);
}

/* f. LOCAL_INV of a bound type 2 window. */
static void local_invalidate(void)
{
	struct ibv_mw *mw = alloc_mw(IBV_MW_TYPE_2);
	uint32_t k = key(mw);
	struct pair p;
	int ok;

	pair_new(&p, 0);
	ok = bind2(&p, mw, k, wmr, WOFF, WLEN, RW, IBV_WC_SUCCESS, "bind") &&
	     write_lands(&p, WADDR, k, 64, "write") &&
	     local_inv(&p, k, IBV_WC_SUCCESS, "local_inv");
	result(ok, "LOCAL_INV of a bound type 2 window completes IBV_WC_LOCAL_INV, success");
	result(ok && write_fails(&p, WADDR, k, "write after LOCAL_INV"),
	       "a write through the invalidated rkey: IBV_WC_REM_ACCESS_ERR, nothing written");
	free_mw(mw);
	pair_free(&p);
}

/* g. A type 1 window, bound with ibv_bind_mw. */
static void type1(void)
{
	struct ibv_mw *mw = alloc_mw(IBV_MW_TYPE_1);
	uint32_t k1, k2;
	struct pair p;
	int ok;

	result(mw && mw->type == IBV_MW_TYPE_1 && mw->pd == B.pd && mw->rkey >> 8 >= MW_INDEX_MIN,
	       "type 1: ibv_alloc_mw gives a window whose rkey index is >= 0x800000 (rkey %#x)",
	       mw ? mw->rkey : 0);
	pair_new(&p, 0);
	ok = bind1(&p, mw, WOFF, WLEN, RW, 1, "bind");
	result(ok,
	       "type 1: ibv_bind_mw returns 0, mw->rkey becomes ibv_inc_rkey of the old, the signaled bind completes IBV_WC_BIND_MW, success");
	k1 = mw ? mw->rkey : 0;
	result(ok && write_lands(&p, WADDR, k1, WLEN, "write"),
	       "type 1: a write of the whole window through mw->rkey lands");
	ok = bind1(&p, mw, WOFF + 4096, 4096, RW, 0, "unsignaled rebind");
	k2 = mw ? mw->rkey : 0;
	result(ok && write_lands(&p, WADDR + 4100, k2, 100, "write with the new rkey"),
	       "type 1: an unsignaled rebind returns 0, a new rkey, no completion; the new rkey works");
	result(ok && write_fails(&p, WADDR + 4096, k1, "write with the old rkey"),
	       "type 1: the rkey before the rebind: IBV_WC_REM_ACCESS_ERR, nothing written");
	pair_free(&p);

	pair_new(&p, 0);
	ok = bind1(&p, mw, WOFF, 0, 0, 1, "unbind");
	result(ok, "type 1: a bind of length 0 (unbind) returns 0 and completes IBV_WC_BIND_MW");
	result(ok && write_fails(&p, WADDR + 4096, mw->rkey, "write after the unbind"),
	       "type 1: after the unbind, a write through mw->rkey: IBV_WC_REM_ACCESS_ERR, nothing written");
	pair_free(&p);

	pair_new(&p, 0);
	ok = bind1(&p, mw, WOFF, WLEN, RW, 1, "bind again");
	result(ok && local_inv(&p, mw->rkey, IBV_WC_LOC_QP_OP_ERR, "local_inv of type 1"),
	       "type 1: LOCAL_INV of its rkey: IBV_WC_LOC_QP_OP_ERR");
	pair_free(&p);
	pair_new(&p, 0);
	result(ok && write_lands(&p, WADDR, mw->rkey, 500, "write after the failed LOCAL_INV"),
	       "type 1: still bound after the failed LOCAL_INV (a write from a new QP pair lands)");
	free_mw(mw);
	pair_free(&p);
}

/* h. Binds that fail. */
static void bind_errors(void)
{
	struct ibv_mw *mw, *mw2;
	struct ibv_mr *m;
	struct pair p;
	uint32_t k;
	int ok;

	/* The MR lacks MW_BIND. */
	m = ibv_reg_mr(B.pd, wbuf, WBUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	mw = alloc_mw(IBV_MW_TYPE_2);
	pair_new(&p, 0);
	result(m && bind2(&p, mw, key(mw), m, WOFF, WLEN, RW, IBV_WC_MW_BIND_ERR, "bind"),
	       "bind on an MR registered without IBV_ACCESS_MW_BIND: IBV_WC_MW_BIND_ERR");
	free_mw(mw);
	pair_free(&p);
	if (m)
		ibv_dereg_mr(m);

	/* The range leaves the MR. */
	mw = alloc_mw(IBV_MW_TYPE_2);
	pair_new(&p, 0);
	result(bind2(&p, mw, key(mw), wmr, WBUF - 100, 200, RW, IBV_WC_MW_BIND_ERR, "bind"),
	       "bind of a range reaching past the MR's end: IBV_WC_MW_BIND_ERR");
	free_mw(mw);
	pair_free(&p);

	/* A writable window on an MR without LOCAL_WRITE. */
	m = ibv_reg_mr(B.pd, wbuf, WBUF, IBV_ACCESS_MW_BIND);
	if (!m)
		printf("# ibv_reg_mr(MW_BIND only): %s\n", strerror(errno));
	mw = alloc_mw(IBV_MW_TYPE_2);
	mw2 = alloc_mw(IBV_MW_TYPE_2);
	pair_new(&p, 0);
	ok = m && bind2(&p, mw, key(mw), m, WOFF, WLEN, IBV_ACCESS_REMOTE_READ, IBV_WC_SUCCESS,
			"read-only bind");
	result(ok, "a read-only window on an MR without LOCAL_WRITE binds");
	result(ok && bind2(&p, mw2, key(mw2), m, WOFF, WLEN, RW, IBV_WC_MW_BIND_ERR,
			   "writable bind"),
	       "a writable window on an MR without LOCAL_WRITE: IBV_WC_MW_BIND_ERR");
	free_mw(mw);
	free_mw(mw2);
	pair_free(&p);
	if (m && ibv_dereg_mr(m))
		printf("# ibv_dereg_mr: %s\n", strerror(errno));

	/* A bound type 2 window bound again without invalidation. */
	mw = alloc_mw(IBV_MW_TYPE_2);
	k = key(mw);
	pair_new(&p, 0);
	ok = bind2(&p, mw, k, wmr, WOFF, WLEN, RW, IBV_WC_SUCCESS, "bind");
	result(ok && bind2(&p, mw, ibv_inc_rkey(k), wmr, WOFF, WLEN, RW, IBV_WC_MW_BIND_ERR,
			   "second bind"),
	       "a bound type 2 window bound again without invalidation: IBV_WC_MW_BIND_ERR");
	free_mw(mw);
	pair_free(&p);
}

/* SEND_WITH_INV of rkey from p's A QP must fail at both ends with REM_INV_REQ_ERR. */
static void bad_send_inv(struct pair *p, int ready, uint32_t rkey, const char *what)
{
	uint64_t rid, sid;
	int posted = ready && send_inv(p, rkey, 100, &rid, &sid);

	result(posted && expect(p->cb, rid, IBV_WC_REM_INV_REQ_ERR, IBV_WC_RECV, NULL, "receive"),
	       "SEND_WITH_INV of %s: the receive completes IBV_WC_REM_INV_REQ_ERR", what);
	result(posted && expect(p->ca, sid, IBV_WC_REM_INV_REQ_ERR, IBV_WC_SEND, NULL, "send"),
	       "SEND_WITH_INV of %s: the send completes IBV_WC_REM_INV_REQ_ERR", what);
}

/* i. SEND_WITH_INV of rkeys that cannot be invalidated. */
static void inv_errors(void)
{
	struct ibv_mw *mw = alloc_mw(IBV_MW_TYPE_1);
	struct pair p, q;
	uint32_t k;
	int ok;

	pair_new(&p, 0);
	ok = bind1(&p, mw, WOFF, WLEN, RW, 1, "bind");
	bad_send_inv(&p, ok, mw ? mw->rkey : 0, "a bound type 1 window's rkey");
	free_mw(mw);
	pair_free(&p);

	pair_new(&p, 0);
	bad_send_inv(&p, 1, 0xfeedfa42, "an unknown rkey (0xfeedfa42)");
	pair_free(&p);

	mw = alloc_mw(IBV_MW_TYPE_2);
	k = key(mw);
	pair_new(&p, 0);
	pair_new(&q, 0);
	ok = bind2(&p, mw, k, wmr, WOFF, WLEN, RW, IBV_WC_SUCCESS, "bind");
	bad_send_inv(&q, ok, k, "a type 2 window's rkey at a QP it is not bound to");
	free_mw(mw);
	pair_free(&q);
	pair_free(&p);
}

/* j. ibv_dereg_mr of an MR with a bound window; ibv_dealloc_mw of a bound window. */
static void dereg_busy(void)
{
	struct ibv_mr *m = ibv_reg_mr(B.pd, wbuf, WBUF,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = alloc_mw(IBV_MW_TYPE_2);
	uint32_t k = key(mw);
	int ok, ret, err, ret2;
	struct pair p;

	pair_new(&p, 0);
	ok = m && bind2(&p, mw, k, m, WOFF, WLEN, RW, IBV_WC_SUCCESS, "bind");
	errno = 0;
	ret = ok ? ibv_dereg_mr(m) : -1;
	err = errno;
	if (!ret)
		m = NULL;
	result(ok && ret && err == EBUSY,
	       "ibv_dereg_mr of an MR with a bound window fails with EBUSY (returns %d, errno %d)",
	       ret, err);
	result(ok && m && write_lands(&p, WADDR, k, 2000, "write"),
	       "the MR stays usable: a write through the window lands");
	ret = mw ? ibv_dealloc_mw(mw) : -1;
	mw = NULL;
	ret2 = m ? ibv_dereg_mr(m) : -1;
	if (!ret2)
		m = NULL;
	result(!ret && !ret2,
	       "after ibv_dealloc_mw (returns %d), ibv_dereg_mr succeeds (returns %d)", ret, ret2);

	mw = alloc_mw(IBV_MW_TYPE_2);
	k = key(mw);
	ok = bind2(&p, mw, k, wmr, WOFF, WLEN, RW, IBV_WC_SUCCESS, "bind") &&
	     write_lands(&p, WADDR, k, 64, "write");
	ret = mw ? ibv_dealloc_mw(mw) : -1;
	result(ok && !ret && write_fails(&p, WADDR, k, "write after dealloc"),
	       "ibv_dealloc_mw of a bound window returns 0 (%d); its rkey then fails: IBV_WC_REM_ACCESS_ERR, nothing written",
	       ret);
	pair_free(&p);
	if (m)
		ibv_dereg_mr(m);
}

/* k. The work-request API: wr_bind_mw, wr_rdma_write, wr_send_inv, wr_local_inv. */
static int wr_bind(struct pair *p, struct ibv_mw *mw, uint32_t rkey, const char *who)
{
	struct ibv_mw_bind_info bi = { wmr, WADDR, WLEN, RW };
	uint64_t id = next_id++;
	int ret;

	if (!mw || !wmr)
		return 0;
	ibv_wr_start(p->xb);
	p->xb->wr_id = id;
	p->xb->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(p->xb, mw, rkey, &bi);
	ret = ibv_wr_complete(p->xb);
	if (ret)
		printf("# %s: ibv_wr_complete: %s\n", who, strerror(ret));
	return !ret && expect(p->cb, id, IBV_WC_SUCCESS, IBV_WC_BIND_MW, NULL, who);
}

static void wr_api(void)
{
	uint64_t ops = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV |
		       IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE;
	struct ibv_mw *mw = alloc_mw(IBV_MW_TYPE_2);
	uint32_t k = key(mw), k2 = ibv_inc_rkey(k);
	struct ibv_sge rs = { (uintptr_t)B.buf, 4096, B.mr->lkey };
	uint64_t rid = next_id++, wid = next_id++, sid = next_id++;
	struct ibv_recv_wr rwr = { .wr_id = rid, .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_wc rwc;
	struct pair p;
	int ok, ret = -1;

	pair_new(&p, ops);
	ok = p.xa && p.xb && p.xa->wr_rdma_write && p.xa->wr_send_inv && p.xb->wr_bind_mw &&
	     p.xb->wr_local_inv;
	result(ok,
	       "ibv_create_qp_ex with send_ops_flags BIND_MW|LOCAL_INV|SEND_WITH_INV|RDMA_WRITE: an ibv_qp_ex with those builders");
	ok = ok && wr_bind(&p, mw, k, "wr_bind_mw");
	result(ok, "wr_bind_mw of a type 2 window completes IBV_WC_BIND_MW, success");

	fill(wbuf, WBUF);
	fill(A.buf, 2000);
	memset(B.buf, 0, 4096);
	if (ok && !ibv_post_recv(p.b, &rwr, &rbad)) {
		ibv_wr_start(p.xa);
		p.xa->wr_id = wid;
		p.xa->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(p.xa, k, WADDR + 50);
		ibv_wr_set_sge(p.xa, A.mr->lkey, (uintptr_t)A.buf, 1000);
		p.xa->wr_id = sid;
		ibv_wr_send_inv(p.xa, k);
		ibv_wr_set_sge(p.xa, A.mr->lkey, (uintptr_t)A.buf + 1000, 1000);
		ret = ibv_wr_complete(p.xa);
		if (ret)
			printf("# ibv_wr_complete: %s\n", strerror(ret));
	}
	result(!ret && expect(p.ca, wid, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, NULL,
			      "wr_rdma_write") &&
	       !memcmp(A.buf, WPTR + 50, 1000),
	       "wr_rdma_write through the window's rkey lands byte for byte");
	ok = !ret && expect(p.ca, sid, IBV_WC_SUCCESS, IBV_WC_SEND, NULL, "wr_send_inv") &&
	     expect(p.cb, rid, IBV_WC_SUCCESS, IBV_WC_RECV, &rwc, "receive");
	if (ok) {
		/* recv_inv_ok compares from A.buf: the send's bytes start at A.buf + 1000. */
		memmove(A.buf, A.buf + 1000, 1000);
		ok = recv_inv_ok(&rwc, k, 1000);
	}
	result(ok,
	       "wr_send_inv in the same batch: IBV_WC_SEND; the receive has IBV_WC_WITH_INV, invalidated_rkey %#x, 1000 bytes intact",
	       k);
	ok = ok && wr_bind(&p, mw, k2, "wr_bind_mw again");
	result(ok, "the invalidated window binds again with wr_bind_mw (next key byte)");
	if (ok) {
		uint64_t id = next_id++;

		ibv_wr_start(p.xb);
		p.xb->wr_id = id;
		p.xb->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_local_inv(p.xb, k2);
		ret = ibv_wr_complete(p.xb);
		if (ret)
			printf("# wr_local_inv: ibv_wr_complete: %s\n", strerror(ret));
		ok = !ret && expect(p.cb, id, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV, NULL,
				    "wr_local_inv");
	}
	result(ok, "wr_local_inv completes IBV_WC_LOCAL_INV, success");
	result(ok && write_fails(&p, WADDR, k2, "write after wr_local_inv"),
	       "a write through the rkey wr_local_inv invalidated: IBV_WC_REM_ACCESS_ERR");
	free_mw(mw);
	pair_free(&p);
}

int main(int argc, char **argv)
{
	ksft_print_header();
	srand(5);
	open_side(&A, argc > 1 ? argv[1] : "srdma_a");
	open_side(&B, argc > 2 ? argv[2] : "srdma_b");
	wbuf = aligned_alloc(4096, WBUF);
	if (!wbuf) {
		printf("Bail out! no memory\n");
		return 1;
	}
	wmr = ibv_reg_mr(B.pd, wbuf, WBUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	if (!wmr)
		printf("# ibv_reg_mr(LOCAL_WRITE | MW_BIND): %s\n", strerror(errno));
	test_caps();
	type2();
	zero_based();
	violations();
	send_with_inv();
	local_invalidate();
	type1();
	bind_errors();
	inv_errors();
	dereg_busy();
	wr_api();
	if (wmr && ibv_dereg_mr(wmr))
		printf("# ibv_dereg_mr of the window MR: %s\n", strerror(errno));
	free(wbuf);
	close_side(&A);
	close_side(&B);
	tap_done();
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The work-request API (ibv_qp_ex, ibv_wr_*) of the srdma provider, between QPs of two srdma
 * devices: every builder srdma supports with random payloads compared byte for byte, SGE,
 * SGE-list, inline and inline-list data, a batch of several work requests in one
 * ibv_wr_start/ibv_wr_complete, ibv_wr_abort, the errors ibv_wr_complete reports (nothing is
 * posted then), send_ops_flags srdma refuses, UC, and UD with ibv_wr_set_ud_addr. Prints TAP.
 *   srdma_wr_api DEV_A DEV_B
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <linux/const.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srdma_tap.h"

#define BUF (1024 * 1024)
#define QKEY 0x11111111
#define GRH 40
#define ANY_LEN UINT32_MAX

/* One side: a device with its PD, CQ and one registered buffer. */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *buf;
	union ibv_gid gid;
};

static struct side A, B;
static unsigned int max_inline;

#define ALL_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE | \
		 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |                 \
		 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |         \
		 IBV_QP_EX_WITH_ATOMIC_WRITE)

static void skip(const char *desc, const char *why)
{
	ksft_test_result_skip("%s: %s\n", desc, why);
	fflush(stdout);
}

static void open_side(struct side *s, const char *name)
{
	s->ctx = open_dev(name);
	if (!s->ctx) {
		printf("Bail out! no device %s\n", name);
		exit(1);
	}
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 256, NULL, NULL, 0);
	s->buf = aligned_alloc(4096, BUF);
	memset(s->buf, 0, BUF);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						      IBV_ACCESS_REMOTE_READ |
						      IBV_ACCESS_REMOTE_ATOMIC);
	if (!s->pd || !s->cq || !s->mr || ibv_query_gid(s->ctx, 1, 1, &s->gid)) {
		printf("Bail out! cannot set up %s\n", name);
		exit(1);
	}
}

/* Creates a QP with the work-request API on side s; NULL (errno set) on failure. */
static struct ibv_qp *create_ex(struct side *s, enum ibv_qp_type type, uint64_t ops, int depth)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = type, .pd = s->pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = ops,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 4,
			 .max_recv_sge = 4, .max_inline_data = 256 },
	};
	struct ibv_qp *qp = ibv_create_qp_ex(s->ctx, &ia);

	if (qp)
		max_inline = ia.cap.max_inline_data;
	return qp;
}

/* Brings a connected QP (RC or UC) to RTS, talking to remote QPN dqpn at gid. */
static int connect_qp(struct ibv_qp *qp, uint32_t dqpn, union ibv_gid *gid)
{
	int rc = qp->qp_type == IBV_QPT_RC;
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						     (rc ? IBV_ACCESS_REMOTE_READ |
							   IBV_ACCESS_REMOTE_ATOMIC : 0) };

	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS))
		return -1;
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				   .dest_qp_num = dqpn, .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
				   .ah_attr = { .is_global = 1, .port_num = 1,
						.grh = { .dgid = *gid, .sgid_index = 1,
							 .hop_limit = 1 } } };
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN |
				   (rc ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0)))
		return -1;
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 1, .retry_cnt = 1,
				   .rnr_retry = 0, .max_rd_atomic = 1 };
	return ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN |
				      (rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
						    IBV_QP_MAX_QP_RD_ATOMIC : 0));
}

/* A connected pair of type: a on side A (with the WR API), b on side B. */
static void new_pair(enum ibv_qp_type type, uint64_t ops, struct ibv_qp **a, struct ibv_qp **b)
{
	*a = create_ex(&A, type, ops, 64);
	*b = create_ex(&B, type, ops, 64);
	if (!*a || !*b || connect_qp(*a, (*b)->qp_num, &B.gid) ||
	    connect_qp(*b, (*a)->qp_num, &A.gid)) {
		printf("Bail out! cannot set up a QP pair (%s)\n", strerror(errno));
		exit(1);
	}
}

/* Polls cq until n completions arrived or ms milliseconds passed; returns how many. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	int got = 0;

	for (int t = 0; t < ms && got < n; t++) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			break;
		got += r;
		if (got < n)
			usleep(1000);
	}
	return got;
}

/* Whether no completion shows up on either side within ms milliseconds. */
static int quiet(int ms)
{
	struct ibv_wc wc;

	return poll_n(A.cq, &wc, 1, ms) == 0 && poll_n(B.cq, &wc, 1, 1) == 0;
}

static void fill(char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = rand();
}

static void post_recv(struct ibv_qp *qp, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)B.buf + off, len, B.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		printf("# ibv_post_recv failed\n");
}

/*
 * Checks one send completion (wr_id, opcode) on A and, if rop >= 0, one receive on B of rlen
 * bytes. The byte_len of RECV_RDMA_WITH_IMM is the kernel's business (srdma reports 0 where
 * rxe reports the length written), not the provider's: ANY_LEN skips that check.
 */
static int completes(uint64_t wr_id, enum ibv_wc_opcode sop, uint64_t rid, int rop,
		     uint32_t rlen, struct ibv_wc *rwc)
{
	struct ibv_wc swc;
	int ok = poll_n(A.cq, &swc, 1, 2000) == 1 && swc.status == IBV_WC_SUCCESS &&
		 swc.wr_id == wr_id && swc.opcode == sop;

	if (!ok)
		printf("# send completion: wr_id %llu status %d opcode %d\n",
		       (unsigned long long)swc.wr_id, swc.status, swc.opcode);
	if (rop < 0)
		return ok;
	if (poll_n(B.cq, rwc, 1, 2000) != 1 || rwc->status != IBV_WC_SUCCESS ||
	    rwc->wr_id != rid || rwc->opcode != (enum ibv_wc_opcode)rop ||
	    (rlen != ANY_LEN && rwc->byte_len != rlen)) {
		printf("# receive completion: wr_id %llu status %d opcode %d len %u\n",
		       (unsigned long long)rwc->wr_id, rwc->status, rwc->opcode, rwc->byte_len);
		return 0;
	}
	return ok;
}

static void rc_tests(void)
{
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *x;
	struct ibv_wc rwc;
	char *s = A.buf, *r = B.buf;
	int ret;

	new_pair(IBV_QPT_RC, ALL_OPS, &a, &b);
	x = ibv_qp_to_qp_ex(a);
	result(x && x->wr_send && x->wr_atomic_fetch_add && x->wr_atomic_write &&
	       !x->wr_send_inv,
	       "RC QP with all 8 send ops: ibv_qp_to_qp_ex gives the builders asked for");
	if (!x)
		return;

	/* SEND through one SGE. */
	fill(s, 5000);
	post_recv(b, 100, 0, BUF / 2);
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)s + 3, 5000);
	ret = ibv_wr_complete(x);
	result(!ret && completes(1, IBV_WC_SEND, 100, IBV_WC_RECV, 5000, &rwc) &&
	       !memcmp(s + 3, r, 5000), "wr_send + wr_set_sge: 5000 bytes arrive intact");

	/* SEND inline; the source changes right after the setter, before wr_complete. */
	{
		char src[1024], want[1024];

		fill(src, max_inline);
		memcpy(want, src, max_inline);
		post_recv(b, 101, 0, BUF / 2);
		ibv_wr_start(x);
		x->wr_id = 2;
		ibv_wr_send(x);
		ibv_wr_set_inline_data(x, src, max_inline);
		memset(src, 0, sizeof(src));
		ret = ibv_wr_complete(x);
		result(!ret && completes(2, IBV_WC_SEND, 101, IBV_WC_RECV, max_inline, &rwc) &&
		       !memcmp(want, r, max_inline),
		       "wr_send + wr_set_inline_data of max_inline_data (%u) bytes, copied at once",
		       max_inline);
	}

	/* SEND with immediate, SGE list of 3 unaligned pieces. */
	{
		struct ibv_sge l[3] = { { (uintptr_t)s + 1, 100, A.mr->lkey },
					{ (uintptr_t)s + 5000, 5000, A.mr->lkey },
					{ (uintptr_t)s + 20001, 1, A.mr->lkey } };
		static char want[5101];

		fill(s, 30000);
		memcpy(want, s + 1, 100);
		memcpy(want + 100, s + 5000, 5000);
		memcpy(want + 5100, s + 20001, 1);
		post_recv(b, 102, 7, BUF / 2);
		ibv_wr_start(x);
		x->wr_id = 3;
		ibv_wr_send_imm(x, htonl(0xdeadbeef));
		ibv_wr_set_sge_list(x, 3, l);
		ret = ibv_wr_complete(x);
		result(!ret && completes(3, IBV_WC_SEND, 102, IBV_WC_RECV, 5101, &rwc) &&
		       (rwc.wc_flags & IBV_WC_WITH_IMM) && rwc.imm_data == htonl(0xdeadbeef) &&
		       !memcmp(want, r + 7, 5101),
		       "wr_send_imm + wr_set_sge_list (3 SGEs): payload and immediate arrive");
	}

	/* SEND of an inline list. */
	{
		char p1[10], p2[1], p3[50], want[61];
		struct ibv_data_buf l[4] = { { p1, 10 }, { p2, 0 }, { p2, 1 }, { p3, 50 } };

		fill(p1, 10), fill(p2, 1), fill(p3, 50);
		memcpy(want, p1, 10), memcpy(want + 10, p2, 1), memcpy(want + 11, p3, 50);
		post_recv(b, 103, 0, BUF / 2);
		ibv_wr_start(x);
		x->wr_id = 4;
		ibv_wr_send(x);
		ibv_wr_set_inline_data_list(x, 4, l);
		ret = ibv_wr_complete(x);
		result(!ret && completes(4, IBV_WC_SEND, 103, IBV_WC_RECV, 61, &rwc) &&
		       !memcmp(want, r,
			       61), "wr_send + wr_set_inline_data_list (4 buffers, one empty)");
	}

	/* RDMA WRITE through an SGE, then inline. */
	fill(s, 70000);
	ibv_wr_start(x);
	x->wr_id = 5;
	ibv_wr_rdma_write(x, B.mr->rkey, (uintptr_t)r + 100);
	ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)s, 70000);
	ret = ibv_wr_complete(x);
	result(!ret && completes(5, IBV_WC_RDMA_WRITE, 0, -1, 0, NULL) && !memcmp(s, r + 100,
										  70000),
	       "wr_rdma_write + wr_set_sge: 70000 bytes land");
	{
		char src[200];

		fill(src, sizeof(src));
		ibv_wr_start(x);
		x->wr_id = 6;
		ibv_wr_rdma_write(x, B.mr->rkey, (uintptr_t)r + 3);
		ibv_wr_set_inline_data(x, src, sizeof(src));
		ret = ibv_wr_complete(x);
		result(!ret && completes(6, IBV_WC_RDMA_WRITE, 0, -1, 0, NULL) &&
		       !memcmp(src, r + 3,
			       sizeof(src)), "wr_rdma_write + wr_set_inline_data: 200 bytes land");
	}

	/* RDMA WRITE with immediate. */
	fill(s, 3000);
	post_recv(b, 104, 0, 0);
	ibv_wr_start(x);
	x->wr_id = 7;
	ibv_wr_rdma_write_imm(x, B.mr->rkey, (uintptr_t)r + 50000, htonl(0x12345678));
	ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)s, 3000);
	ret = ibv_wr_complete(x);
	result(!ret &&
	       completes(7, IBV_WC_RDMA_WRITE, 104, IBV_WC_RECV_RDMA_WITH_IMM, ANY_LEN, &rwc) &&
	       (rwc.wc_flags & IBV_WC_WITH_IMM) && rwc.imm_data == htonl(0x12345678) &&
	       !memcmp(s, r + 50000, 3000),
	       "wr_rdma_write_imm: data lands, the receiver gets the immediate");

	/* RDMA READ into two SGEs. */
	{
		struct ibv_sge l[2] = { { (uintptr_t)s + 3, 60000, A.mr->lkey },
					{ (uintptr_t)s + 100003, 40000, A.mr->lkey } };

		fill(r, 200000);
		memset(s, 0, 200000);
		ibv_wr_start(x);
		x->wr_id = 8;
		ibv_wr_rdma_read(x, B.mr->rkey, (uintptr_t)r + 5);
		ibv_wr_set_sge_list(x, 2, l);
		ret = ibv_wr_complete(x);
		result(!ret && completes(8, IBV_WC_RDMA_READ, 0, -1, 0, NULL) &&
		       !memcmp(s + 3, r + 5, 60000) && !memcmp(s + 100003, r + 60005, 40000),
		       "wr_rdma_read + wr_set_sge_list: 100000 bytes into two SGEs");
	}

	/* Atomics on a remote word. */
	{
		uint64_t *word = (uint64_t *)(r + 4096), *old = (uint64_t *)(s + 8);

		*word = 41;
		ibv_wr_start(x);
		x->wr_id = 9;
		ibv_wr_atomic_fetch_add(x, B.mr->rkey, (uintptr_t)word, 1000);
		ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)old, 8);
		ret = ibv_wr_complete(x);
		result(!ret && completes(9, IBV_WC_FETCH_ADD, 0, -1, 0, NULL) && *old == 41 &&
		       *word == 1041, "wr_atomic_fetch_add: returns 41, leaves 1041");
		ibv_wr_start(x);
		x->wr_id = 10;
		ibv_wr_atomic_cmp_swp(x, B.mr->rkey, (uintptr_t)word, 1041, 7);
		ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)old, 8);
		ret = ibv_wr_complete(x);
		result(!ret && completes(10, IBV_WC_COMP_SWAP, 0, -1, 0, NULL) && *old == 1041 &&
		       *word == 7, "wr_atomic_cmp_swp that matches swaps");
		ibv_wr_start(x);
		x->wr_id = 11;
		ibv_wr_atomic_cmp_swp(x, B.mr->rkey, (uintptr_t)word, 1041, 99);
		ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)old, 8);
		ret = ibv_wr_complete(x);
		result(!ret && completes(11, IBV_WC_COMP_SWAP, 0, -1, 0, NULL) && *old == 7 &&
		       *word == 7, "wr_atomic_cmp_swp that does not match leaves the word");

		/* The 8 bytes as they lie in memory, from an unaligned source. */
		static const unsigned char bytes[9] = { 0, 1, 2, 3, 4, 5, 6, 7, 8 };

		word[1] = 0xabababababababab;
		ibv_wr_start(x);
		x->wr_id = 12;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(x, B.mr->rkey, (uintptr_t)word, bytes + 1);
		ret = ibv_wr_complete(x);
		result(!ret && completes(12, IBV_WC_ATOMIC_WRITE, 0, -1, 0, NULL) &&
		       !memcmp(word, bytes + 1, 8) && word[1] == 0xabababababababab,
		       "wr_atomic_write: the 8 bytes, and nothing after them");
	}

	/* Six work requests in one batch; only some signaled. */
	{
		uint64_t *word = (uint64_t *)(r + 900000), *old = (uint64_t *)(s + 900000);
		struct ibv_wc wc[8];
		uint64_t want_ids[] = { 21, 23, 24, 26 };
		enum ibv_wc_opcode want_ops[] = { IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
						  IBV_WC_FETCH_ADD };
		int n, ok = 1;

		fill(s, 400000);
		fill(r + 600000, 4000);
		*word = 5;
		post_recv(b, 120, 0, 100000);
		post_recv(b, 121, 100000, 100000);
		ibv_wr_start(x);
		x->wr_id = 21;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)s, 9000);
		x->wr_id = 22;
		x->wr_flags = 0;
		ibv_wr_send_imm(x, htonl(77));
		ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)s + 10000, 10);
		x->wr_id = 23;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(x, B.mr->rkey, (uintptr_t)r + 300000);
		ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)s + 20000, 65536);
		x->wr_id = 24;
		x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
		ibv_wr_rdma_read(x, B.mr->rkey, (uintptr_t)r + 600000);
		ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)s + 500000, 4000);
		x->wr_id = 25;
		x->wr_flags = 0;
		ibv_wr_rdma_write(x, B.mr->rkey, (uintptr_t)r + 400000);
		ibv_wr_set_inline_data(x, s + 100, 64);
		x->wr_id = 26;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_fetch_add(x, B.mr->rkey, (uintptr_t)word, 10);
		ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)old, 8);
		ret = ibv_wr_complete(x);
		n = ret ? 0 : poll_n(A.cq, wc, 4, 2000);
		for (int i = 0; i < n; i++)
			ok &= wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id == want_ids[i] &&
			      wc[i].opcode == want_ops[i];
		ok &= n == 4 && poll_n(A.cq, wc, 1, 20) == 0; /* nothing for the unsignaled */
		struct ibv_wc rw[2];
		int rn = poll_n(B.cq, rw, 2, 2000);

		ok &= rn == 2 && rw[0].wr_id == 120 && rw[0].byte_len == 9000 &&
		      rw[1].wr_id == 121 && rw[1].byte_len == 10 &&
		      (rw[1].wc_flags & IBV_WC_WITH_IMM) && rw[1].imm_data == htonl(77);
		ok &= !memcmp(s, r, 9000) && !memcmp(s + 10000, r + 100000, 10) &&
		      !memcmp(s + 20000, r + 300000, 65536) && !memcmp(s + 500000, r + 600000,
								       4000) &&
		      !memcmp(s + 100, r + 400000, 64) && *old == 5 && *word == 15;
		result(!ret && ok,
		       "one batch of 6 (SEND, SEND_IMM, WRITE, READ, inline WRITE, FETCH_ADD), 4 signaled: 4 CQEs in order, all data right (%d/%d CQEs)",
		       n, rn);
	}

	/* wr_abort discards; the next batch's send is the one that arrives. */
	{
		char src[64];

		post_recv(b, 130, 0, BUF / 2);
		ibv_wr_start(x);
		for (int i = 0; i < 3; i++) {
			x->wr_id = 31 + i;
			x->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_send(x);
			ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)s, 1000);
		}
		ibv_wr_abort(x);
		int q = quiet(100);

		fill(src, sizeof(src));
		ibv_wr_start(x);
		x->wr_id = 34;
		ibv_wr_send(x);
		ibv_wr_set_inline_data(x, src, 50);
		ret = ibv_wr_complete(x);
		result(q && !ret && completes(34, IBV_WC_SEND, 130, IBV_WC_RECV, 50, &rwc) &&
		       !memcmp(src, r, 50) && quiet(20),
		       "wr_abort posts nothing; the next send is the first to arrive");
	}

	/* Errors reported by wr_complete; nothing of the batch is posted. */
	{
		char big[2048];

		memset(big, 7, sizeof(big));

		post_recv(b, 140, 0, BUF / 2);
		ibv_wr_start(x);
		x->wr_id = 41;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)s, 10);
		x->wr_id = 42;
		ibv_wr_send(x);
		ibv_wr_set_inline_data(x, big, max_inline + 1);
		ret = ibv_wr_complete(x);
		result(ret == EINVAL && quiet(100),
		       "inline above max_inline_data: wr_complete EINVAL (%d), the batch not posted",
		       ret);

		ibv_wr_start(x);
		x->wr_id = 43;
		ibv_wr_rdma_read(x, B.mr->rkey, (uintptr_t)r);
		ibv_wr_set_inline_data(x, big, 8);
		ret = ibv_wr_complete(x);
		result(ret == EINVAL && quiet(50), "inline data on an RDMA READ: EINVAL (%d)", ret);

		ibv_wr_start(x);
		x->wr_id = 44;
		ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)s, 10);
		ret = ibv_wr_complete(x);
		result(ret == EINVAL && quiet(50), "a setter before any builder: EINVAL (%d)", ret);

		/* More work requests than the SQ holds. */
		ibv_wr_start(x);
		for (int i = 0; i < 4096; i++) {
			x->wr_id = 1000 + i;
			x->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_rdma_write(x, B.mr->rkey, (uintptr_t)r);
			ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)s, 8);
		}
		ret = ibv_wr_complete(x);
		result(ret == ENOMEM && quiet(100),
		       "4096 work requests on a 64-deep SQ: ENOMEM (%d), nothing posted", ret);

		/* The QP still works: the receive posted above gets this send. */
		fill(s, 10);
		ibv_wr_start(x);
		x->wr_id = 45;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)s, 10);
		ret = ibv_wr_complete(x);
		result(!ret && completes(45, IBV_WC_SEND, 140, IBV_WC_RECV, 10, &rwc) &&
		       !memcmp(s, r, 10), "after the errors the QP works: the next send arrives");
	}

	/* ibv_post_send and batches interleave. */
	{
		struct ibv_sge sge = { (uintptr_t)s, 777, A.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 50, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE,
					 .send_flags = IBV_SEND_SIGNALED,
					  .wr.rdma = { (uintptr_t)r + 1000, B.mr->rkey } }, *bad;

		fill(s, 2000);
		ret = ibv_post_send(a, &wr, &bad);
		ibv_wr_start(x);
		x->wr_id = 51;
		ibv_wr_rdma_write(x, B.mr->rkey, (uintptr_t)r + 5000);
		ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)s + 1000, 999);
		ret |= ibv_wr_complete(x);
		result(!ret && completes(50, IBV_WC_RDMA_WRITE, 0, -1, 0, NULL) &&
		       completes(51, IBV_WC_RDMA_WRITE, 0, -1, 0, NULL) &&
		       !memcmp(s, r + 1000, 777) && !memcmp(s + 1000, r + 5000, 999),
		       "ibv_post_send then a wr batch on the same QP");
	}
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
}

/* IB_UVERBS_DEVICE_ATOMIC_WRITE, which Debian 12's uapi headers do not have yet. */
#define DEVICE_ATOMIC_WRITE _BITULL(40)

/*
 * ATOMIC WRITEs the responder refuses, each on a fresh pair (the error ends the QP), the
 * target untouched; the capability bit; and ibv_post_send, which has no field for the 8 bytes.
 */
static void atomic_write_tests(void)
{
	struct ibv_device_attr_ex dx = {};
	uint64_t *word = (uint64_t *)(B.buf + 8192);
	char *ro_buf = B.buf + BUF / 2;
	struct ibv_mr *ro = ibv_reg_mr(B.pd, ro_buf, 4096, IBV_ACCESS_REMOTE_READ);
	static const uint64_t v = 0x0102030405060708;
	struct {
		const char *what;
		uint32_t rkey;
		uint64_t addr;
		enum ibv_wc_status want;
	} bad[] = {
		{ "to an address not 8-byte aligned", B.mr->rkey, (uintptr_t)word + 4,
		  IBV_WC_REM_INV_REQ_ERR },
		{ "under the rkey of an MR without remote write", ro ? ro->rkey : 0,
		  (uintptr_t)ro_buf, IBV_WC_REM_ACCESS_ERR },
		{ "just past the MR's end", B.mr->rkey, (uintptr_t)B.buf + BUF,
		  IBV_WC_REM_ACCESS_ERR },
	};
	struct ibv_qp *a, *b;
	struct ibv_wc wc;

	result(!ibv_query_device_ex(A.ctx, NULL, &dx) &&
	       (dx.device_cap_flags_ex & DEVICE_ATOMIC_WRITE),
	       "query_device_ex: the ATOMIC_WRITE capability");
	for (unsigned int i = 0; i < ARRAY_SIZE(bad); i++) {
		struct ibv_qp_ex *x;
		int ret, got;

		new_pair(IBV_QPT_RC, ALL_OPS, &a, &b);
		x = ibv_qp_to_qp_ex(a);
		*word = 0x5555;
		memset(ro_buf, 0x66, 4096);
		ibv_wr_start(x);
		x->wr_id = 40 + i;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(x, bad[i].rkey, bad[i].addr, &v);
		ret = ibv_wr_complete(x);
		got = ret ? 0 : poll_n(A.cq, &wc, 1, 2000);
		result(got == 1 && wc.wr_id == 40 + i && wc.status == bad[i].want &&
		       *word == 0x5555 && ro_buf[0] == 0x66 && ro_buf[4095] == 0x66,
		       "wr_atomic_write %s: %s, nothing written", bad[i].what,
		       got ? ibv_wc_status_str(wc.status) : "no completion");
		ibv_destroy_qp(a);
		ibv_destroy_qp(b);
		poll_n(B.cq, &wc, 1, 10);
	}
	if (ro)
		ibv_dereg_mr(ro);

	new_pair(IBV_QPT_RC, ALL_OPS, &a, &b);
	struct ibv_send_wr wr = { .wr_id = 50, .opcode = IBV_WR_ATOMIC_WRITE,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { (uintptr_t)word, B.mr->rkey } }, *bad_wr;

	result(ibv_post_send(a, &wr, &bad_wr) == EOPNOTSUPP && quiet(50),
	       "ibv_post_send with IBV_WR_ATOMIC_WRITE: EOPNOTSUPP, nothing posted");
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
}

static void refused_tests(void)
{
	struct { enum ibv_qp_type type; uint64_t ops; const char *what; } bad[] = {
		/* Memory windows are for connected QPs. */
		{ IBV_QPT_UD, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_LOCAL_INV, "UD with LOCAL_INV" },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_BIND_MW, "UD with BIND_MW" },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_SEND_WITH_INV, "UD with SEND_WITH_INV" },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ, "UC with RDMA_READ" },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_ATOMIC_WRITE, "UC with ATOMIC_WRITE" },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE, "UD with RDMA_WRITE" },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_TSO, "UD with TSO" },
	};

	for (unsigned int i = 0; i < ARRAY_SIZE(bad); i++) {
		errno = 0;
		struct ibv_qp *qp = create_ex(&A, bad[i].type, bad[i].ops, 16);

		result(!qp && errno == EOPNOTSUPP,
		       "send_ops_flags %s: create fails with EOPNOTSUPP (%s)",
		       bad[i].what, strerror(errno));
		if (qp)
			ibv_destroy_qp(qp);
	}

	/* Without SEND_OPS_FLAGS a QP from ibv_create_qp_ex has no WR API. */
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = A.cq, .recv_cq = A.cq, .qp_type = IBV_QPT_RC, .pd = A.pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp_ex(A.ctx, &ia);

	result(qp && !ibv_qp_to_qp_ex(qp), "a QP created without SEND_OPS_FLAGS has no ibv_qp_ex");
	if (qp)
		ibv_destroy_qp(qp);

	/* Creation flags: none set is taken (as rxe takes it), any flag is refused. */
	ia.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qp = ibv_create_qp_ex(A.ctx, &ia);
	result(!!qp, "IBV_QP_INIT_ATTR_CREATE_FLAGS without a flag: created");
	if (qp)
		ibv_destroy_qp(qp);
	ia.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	errno = 0;
	qp = ibv_create_qp_ex(A.ctx, &ia);
	result(!qp && errno == EOPNOTSUPP, "IBV_QP_CREATE_SCATTER_FCS: EOPNOTSUPP (%s)",
	       strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
}

static void uc_tests(void)
{
	uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		       IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *x;
	struct ibv_wc rwc;
	int ret;

	new_pair(IBV_QPT_UC, ops, &a, &b);
	x = ibv_qp_to_qp_ex(a);
	fill(A.buf, 8000);
	post_recv(b, 200, 0, BUF / 2);
	post_recv(b, 201, 0, 0);
	ibv_wr_start(x);
	x->wr_id = 60;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)A.buf, 4000);
	x->wr_id = 61;
	ibv_wr_rdma_write_imm(x, B.mr->rkey, (uintptr_t)B.buf + 10000, htonl(5));
	ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)A.buf + 4000, 4000);
	ret = ibv_wr_complete(x);
	int ok = !ret && completes(60, IBV_WC_SEND, 200, IBV_WC_RECV, 4000, &rwc) &&
		 !memcmp(A.buf, B.buf, 4000);

	result(ok && completes(61, IBV_WC_RDMA_WRITE, 201, IBV_WC_RECV_RDMA_WITH_IMM, ANY_LEN,
			       &rwc) &&
	       rwc.imm_data == htonl(5) && !memcmp(A.buf + 4000, B.buf + 10000, 4000),
	       "UC: wr_send and wr_rdma_write_imm in one batch");

	/* UC has no NAKs: a write the responder refuses is dropped, the requester goes on. */
	memset(B.buf + 20000, 0x33, 100);
	ibv_wr_start(x);
	x->wr_id = 62;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, B.mr->rkey ^ 0x100, (uintptr_t)B.buf + 20000);
	ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)A.buf, 100);
	x->wr_id = 63;
	ibv_wr_rdma_write(x, B.mr->rkey, (uintptr_t)B.buf + 30000);
	ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)A.buf, 100);
	ret = ibv_wr_complete(x);
	ok = !ret && completes(62, IBV_WC_RDMA_WRITE, 0, -1, 0, NULL);
	result(ok && B.buf[20000] == 0x33 && B.buf[20099] == 0x33,
	       "UC: an RDMA WRITE with a bad rkey completes successfully and writes nothing");
	result(ok && completes(63, IBV_WC_RDMA_WRITE, 0, -1, 0, NULL) &&
	       !memcmp(A.buf, B.buf + 30000, 100),
	       "UC: the QP goes on: the next write lands");
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
}

/* UD QP to RTS. */
static int ud_ready(struct ibv_qp *qp)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };

	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR };
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE))
		return -1;
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS };
	return ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static void ud_tests(void)
{
	const char *d1 = "UD: wr_send + wr_set_ud_addr + wr_set_sge arrives (after the GRH)";
	const char *d2 = "UD: wr_send_imm + wr_set_ud_addr + inline data arrives";
	const char *d3 = "UD: a send without wr_set_ud_addr: wr_complete EINVAL";
	uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	struct ibv_qp *a = create_ex(&A, IBV_QPT_UD, ops, 16);
	struct ibv_qp *b = create_ex(&B, IBV_QPT_UD, ops, 16);
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .dgid = B.gid, .sgid_index = 1, .hop_limit = 1 } };
	struct ibv_ah *ah = ibv_create_ah(A.pd, &aa);
	struct ibv_qp_ex *x;
	struct ibv_wc swc, rwc;
	char why[128];
	int ret, n;

	if (!a || !b || !ah || ud_ready(a) || ud_ready(b)) {
		snprintf(why, sizeof(why), "no UD QP or AH on srdma (%s)", strerror(errno));
		skip(d1, why), skip(d2, why), skip(d3, why);
		goto out;
	}
	x = ibv_qp_to_qp_ex(a);

	/* The provider's own check, independent of the kernel's UD path. */
	ibv_wr_start(x);
	x->wr_id = 79;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)A.buf, 10);
	ret = ibv_wr_complete(x);
	result(ret == EINVAL && quiet(50), "%s (%d)", d3, ret);

	fill(A.buf, 1000);
	memset(B.buf, 0, 2000);
	post_recv(b, 300, 0, GRH + 1000);
	ibv_wr_start(x);
	x->wr_id = 80;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, b->qp_num, QKEY);
	ibv_wr_set_sge(x, A.mr->lkey, (uintptr_t)A.buf, 1000);
	ret = ibv_wr_complete(x);
	n = ret ? 0 : poll_n(A.cq, &swc, 1, 2000);
	if (ret || n != 1 || swc.status != IBV_WC_SUCCESS) {
		snprintf(why, sizeof(why),
			 "UD send not executed by the kernel (ret %d, %d CQE, status %d)",
			 ret, n, n ? swc.status : -1);
		skip(d1, why);
		skip(d2, why);
		goto out;
	}
	n = poll_n(B.cq, &rwc, 1, 2000);
	result(n == 1 && rwc.status == IBV_WC_SUCCESS && rwc.wr_id == 300 &&
	       rwc.byte_len == GRH + 1000 && rwc.src_qp == a->qp_num &&
	       !memcmp(A.buf, B.buf + GRH, 1000), "%s", d1);

	{
		char src[100];

		fill(src, sizeof(src));
		post_recv(b, 301, 0, GRH + 1000);
		ibv_wr_start(x);
		x->wr_id = 81;
		ibv_wr_send_imm(x, htonl(0xabc));
		ibv_wr_set_ud_addr(x, ah, b->qp_num, QKEY);
		ibv_wr_set_inline_data(x, src, sizeof(src));
		ret = ibv_wr_complete(x);
		result(!ret && completes(81, IBV_WC_SEND, 301, IBV_WC_RECV, GRH + sizeof(src),
					 &rwc) &&
		       (rwc.wc_flags & IBV_WC_WITH_IMM) && rwc.imm_data == htonl(0xabc) &&
		       !memcmp(src, B.buf + GRH, sizeof(src)), "%s", d2);
	}
out:
	if (ah)
		ibv_destroy_ah(ah);
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
}

int main(int argc, char **argv)
{
	ksft_print_header();
	srand(4);
	open_side(&A, argc > 1 ? argv[1] : "srdma_a");
	open_side(&B, argc > 2 ? argv[2] : "srdma_b");
	rc_tests();
	atomic_write_tests();
	refused_tests();
	uc_tests();
	ud_tests();
	tap_done();
}

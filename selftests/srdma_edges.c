// SPDX-License-Identifier: GPL-2.0-only
/*
 * The data path at its edges, between QP a on DEV_A and QP b on DEV_B:
 * - messages far larger than any kernel buffer (8 MiB and 64 MiB SEND, RDMA WRITE and READ,
 *   random bytes compared), which must neither fail nor make the kernel warn;
 * - a QP destroyed while its head WQE waits for an RNR retry: once ibv_destroy_qp returns,
 *   nothing of that QP may run, so a receive posted afterwards at its peer stays empty.
 * Prints TAP.
 *   srdma_edges DEV_A DEV_B
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srdma_tap.h"

#define BIG (64u << 20)
#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	unsigned char *buf;
	union ibv_gid gid;
	int gidx;
};

static int find_gid(struct side *s)
{
	static const unsigned char v4[12] = { [10] = 0xff, [11] = 0xff };

	for (int i = 0; i < 16; i++)
		if (!ibv_query_gid(s->ctx, 1, i, &s->gid) && !memcmp(s->gid.raw, v4, sizeof(v4)))
			return i;
	return -1;
}

static void open_side(struct side *s, const char *name)
{
	s->ctx = open_dev(name);
	s->pd = s->ctx ? ibv_alloc_pd(s->ctx) : NULL;
	s->cq = s->ctx ? ibv_create_cq(s->ctx, 64, NULL, NULL, 0) : NULL;
	s->buf = aligned_alloc(4096, BIG);
	s->mr = s->pd && s->buf ? ibv_reg_mr(s->pd, s->buf, BIG, ACCESS) : NULL;
	s->gidx = s->ctx ? find_gid(s) : -1;
	if (!s->cq || !s->mr || s->gidx < 0) {
		printf("Bail out! cannot set up %s (%s)\n", name, strerror(errno));
		exit(1);
	}
}

static struct ibv_qp *new_qp(struct side *s)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(s->pd, &ia);
}

static int connect_qp(struct ibv_qp *qp, struct side *s, uint32_t dqpn, union ibv_gid *gid,
		      int rnr_retry)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						     IBV_ACCESS_REMOTE_READ };

	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS))
		return -1;
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				   .dest_qp_num = dqpn, .max_dest_rd_atomic = 1,
				   .min_rnr_timer = 12, /* 0.64 ms */
				   .ah_attr = { .is_global = 1, .port_num = 1,
						.grh = { .dgid = *gid, .sgid_index = s->gidx,
							 .hop_limit = 1 } } };
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 1,
				   .rnr_retry = rnr_retry, .max_rd_atomic = 1 };
	return ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int post(struct ibv_qp *qp, enum ibv_wr_opcode op, struct side *s, uint32_t len,
		struct side *peer)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf, .length = len, .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = (uintptr_t)peer->buf,
					       .rkey = peer->mr->rkey } }, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static int post_recv(struct ibv_qp *qp, struct side *s, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf, .length = len, .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* The next completion on cq within ms milliseconds: its status, or -1. */
static int next_wc(struct ibv_cq *cq, int ms, struct ibv_wc *wc)
{
	for (int i = 0; i < ms; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n < 0 ? -2 : (int)wc->status;
		usleep(1000);
	}
	return -1;
}

/* Fills p with n pseudo-random bytes (xorshift64: fast enough under emulation). */
static void fill(unsigned char *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull | 1;

	for (size_t i = 0; i + 8 <= n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
}

/* Moves len bytes from `from`'s buffer to `to`'s by op and compares them. */
static void big(struct side *A, struct side *B, struct ibv_qp *a, struct ibv_qp *b,
		enum ibv_wr_opcode op, const char *name, uint32_t len)
{
	/* READ moves B's bytes to A; SEND and WRITE move A's to B. */
	struct side *from = op == IBV_WR_RDMA_READ ? B : A, *to = op == IBV_WR_RDMA_READ ? A : B;
	struct ibv_wc wc;
	int st, rst = IBV_WC_SUCCESS;

	fill(from->buf, len, len + op);
	memset(to->buf, 0, len);
	if (op == IBV_WR_SEND && post_recv(b, B, len)) {
		result(0, "%s of %u MiB: post the receive", name, len >> 20);
		return;
	}
	if (post(a, op, A, len, B)) {
		result(0, "%s of %u MiB: post", name, len >> 20);
		return;
	}
	st = next_wc(A->cq, 60000, &wc);
	if (op == IBV_WR_SEND)
		rst = next_wc(B->cq, 10000, &wc) == IBV_WC_SUCCESS && wc.byte_len == len ?
		      IBV_WC_SUCCESS : -1;
	result(st == IBV_WC_SUCCESS && rst == IBV_WC_SUCCESS && !memcmp(from->buf, to->buf, len),
	       "%s of %u MiB arrives whole (status %d, bytes %s)", name, len >> 20, st,
	       memcmp(from->buf, to->buf, len) ? "differ" : "equal");
}

int main(int argc, char **argv)
{
	struct side A, B;
	struct ibv_qp *a, *b;
	struct ibv_wc wc;
	int st;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DEV_A DEV_B\n", argv[0]);
		return 2;
	}
	printf("TAP version 13\n");
	open_side(&A, argv[1]);
	open_side(&B, argv[2]);
	a = new_qp(&A);
	b = new_qp(&B);
	if (!a || !b || connect_qp(a, &A, b->qp_num, &B.gid, 0) ||
	    connect_qp(b, &B, a->qp_num, &A.gid, 0)) {
		printf("Bail out! cannot connect (%s)\n", strerror(errno));
		return 1;
	}
	for (uint32_t len = 8u << 20; len <= BIG; len *= 8) {
		big(&A, &B, a, b, IBV_WR_SEND, "SEND", len);
		big(&A, &B, a, b, IBV_WR_RDMA_WRITE, "RDMA WRITE", len);
		big(&A, &B, a, b, IBV_WR_RDMA_READ, "RDMA READ", len);
	}
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);

	/* a's SEND finds no receive at b and waits for RNR retries (7: forever); destroying a
	 * must end them. */
	a = new_qp(&A);
	b = new_qp(&B);
	if (!a || !b || connect_qp(a, &A, b->qp_num, &B.gid, 7) ||
	    connect_qp(b, &B, a->qp_num, &A.gid, 0)) {
		printf("Bail out! cannot connect (%s)\n", strerror(errno));
		return 1;
	}
	memset(A.buf, 0x42, 64);
	memset(B.buf, 0, 64);
	post(a, IBV_WR_SEND, &A, 64, &B);
	usleep(20000);
	result(next_wc(A.cq, 1, &wc) == -1, "an RNR-refused SEND keeps waiting for a receive");
	result(!ibv_destroy_qp(a), "ibv_destroy_qp with the RNR retry pending");
	post_recv(b, &B, 64);
	st = next_wc(B.cq, 300, &wc);
	result(st == -1 && B.buf[0] == 0,
	       "after destroy nothing of the QP runs: its peer's new receive stays empty (%d)", st);
	result(next_wc(A.cq, 1, &wc) == -1, "no completion of the destroyed QP appears");
	ibv_destroy_qp(b);
	printf("1..%d\n", test_num);
	return failures ? 1 : 0;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * Moving data through srdma between two RC QPs of one device: random payloads compared byte
 * for byte for many sizes, through the SGE path and the inline path, multi-SGE and unaligned
 * buffers, RDMA WRITE with and without immediate, and the error completions of bad keys,
 * missing receives and short receive buffers. Prints TAP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srdma_tap.h"

#define BUF (2 << 20)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *smr, *rmr;
static char *sbuf, *rbuf;
static union ibv_gid gid;
static unsigned int max_inline;
/* The responder resources connect_pair gives each QP. */
static uint8_t dest_rd_atomic = 1;

static int connect_pair(struct ibv_qp *a, struct ibv_qp *b)
{
	struct ibv_qp *qs[2] = { a, b };

	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1,
					  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
							     IBV_ACCESS_REMOTE_READ |
							     IBV_ACCESS_REMOTE_ATOMIC };

		if (ibv_modify_qp(qs[i], &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						IBV_QP_ACCESS_FLAGS))
			return -1;
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
					   .dest_qp_num = qs[1 - i]->qp_num,
					   .max_dest_rd_atomic = dest_rd_atomic,
					   .min_rnr_timer = 1,
					   .ah_attr = { .is_global = 1, .port_num = 1,
							.grh = { .dgid = gid, .sgid_index = 1,
								 .hop_limit = 1 } } };
		if (ibv_modify_qp(qs[i], &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
			return -1;
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 1, .retry_cnt = 1,
					   .rnr_retry = 0, .max_rd_atomic = 1 };
		if (ibv_modify_qp(qs[i], &qa, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
						IBV_QP_MAX_QP_RD_ATOMIC))
			return -1;
	}
	return 0;
}

static void new_pair(struct ibv_qp **a, struct ibv_qp **b)
{
	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 4, .max_recv_sge = 4,
						.max_inline_data = 1024 } };

	*a = ibv_create_qp(pd, &ia);
	max_inline = ia.cap.max_inline_data;
	*b = ibv_create_qp(pd, &ia);
	if (!*a || !*b || connect_pair(*a, *b)) {
		printf("Bail out! cannot set up a QP pair\n");
		exit(1);
	}
}

/* Polls until n completions arrived (or a second passed); returns how many. */
static int poll(struct ibv_wc *wc, int n)
{
	int got = 0;

	for (int t = 0; t < 1000 && got < n; t++) {
		got += ibv_poll_cq(cq, n - got, wc + got);
		if (got < n)
			usleep(1000);
	}
	return got;
}

/* The state of qp as the kernel has it, or -1. */
static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;

	return ibv_query_qp(qp, &qa, IBV_QP_STATE, &ia) ? -1 : (int)qa.qp_state;
}

static void fill(char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = rand();
}

static struct ibv_wc *find(struct ibv_wc *wc, int n, uint64_t wr_id)
{
	for (int i = 0; i < n; i++)
		if (wc[i].wr_id == wr_id)
			return &wc[i];
	return NULL;
}

/* SEND of len bytes at sbuf+soff into rbuf+roff, SGE or inline; checks CQEs and bytes. */
static void send_one(struct ibv_qp *a, struct ibv_qp *b, size_t len, size_t soff, size_t roff,
		     int inl)
{
	struct ibv_sge rs = { (uintptr_t)rbuf + roff, BUF / 2, rmr->lkey };
	struct ibv_sge ss = { (uintptr_t)sbuf + soff, len, smr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = &rs, .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = { .wr_id = 1, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0) },
			   *bsw;
	struct ibv_wc wc[2], *r, *s;

	fill(sbuf + soff, len);
	memset(rbuf + roff, 0, len + 1);
	ibv_post_recv(b, &rwr, &brw);
	int ret = ibv_post_send(a, &swr, &bsw);
	int n = ret ? 0 : poll(wc, 2);

	r = find(wc, n, 2);
	s = find(wc, n, 1);
	result(!ret && r && s && r->status == IBV_WC_SUCCESS && s->status == IBV_WC_SUCCESS &&
	       r->opcode == IBV_WC_RECV && s->opcode == IBV_WC_SEND && r->byte_len == len &&
	       r->qp_num == b->qp_num && r->src_qp == a->qp_num &&
	       !memcmp(sbuf + soff, rbuf + roff, len) && rbuf[roff + len] == 0,
	       "%s SEND of %zu bytes (offsets %zu/%zu) arrives intact", inl ? "inline" : "SGE", len,
	       soff, roff);
}

int main(int argc, char **argv)
{
	struct ibv_qp *a, *b;
	struct ibv_wc wc[8];
	int n;

	ksft_print_header();
	srand(1);
	ctx = open_dev(argc > 1 ? argv[1] : "srdma0");
	if (!ctx) {
		printf("Bail out! no device\n");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	sbuf = aligned_alloc(4096, BUF);
	rbuf = aligned_alloc(4096, BUF);
	smr = ibv_reg_mr(pd, sbuf, BUF, IBV_ACCESS_LOCAL_WRITE);
	rmr = ibv_reg_mr(pd, rbuf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	ibv_query_gid(ctx, 1, 1, &gid);
	new_pair(&a, &b);

	size_t sizes[] = { 0, 1, 63, 64,
			  0 /* max_inline */, 0 /* +1 */, 4095, 4096, 65537, 1 << 20 };
	sizes[4] = max_inline;
	sizes[5] = max_inline + 1;
	for (unsigned int i = 0; i < ARRAY_SIZE(sizes); i++)
		send_one(a, b, sizes[i], 0, 0, 0);
	for (size_t len = 0; len <= max_inline; len += max_inline / 4 ? max_inline / 4 : 1)
		send_one(a, b, len, 0, 0, 1);
	send_one(a, b, 10000, 4093, 8191, 0);
	send_one(a, b, 300000, 17, 3, 0);

	{
		struct ibv_sge ss = { (uintptr_t)sbuf, max_inline + 1, smr->lkey };
		struct ibv_send_wr swr = { .wr_id = 3, .sg_list = &ss, .num_sge = 1,
					   .opcode = IBV_WR_SEND,
					   .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE },
	 *bsw;

		result(ibv_post_send(a, &swr, &bsw) == EINVAL && bsw == &swr,
		       "inline above max_inline_data (%u): EINVAL, bad_wr set", max_inline);
	}

	/* Three SGEs on each side, unaligned, of different lengths. */
	{
		struct ibv_sge ss[3] = { { (uintptr_t)sbuf + 1, 100, smr->lkey },
					 { (uintptr_t)sbuf + 5000, 5000, smr->lkey },
					 { (uintptr_t)sbuf + 20001, 1, smr->lkey } };
		struct ibv_sge rs[3] = { { (uintptr_t)rbuf + 7, 3000, rmr->lkey },
					 { (uintptr_t)rbuf + 9000, 2000, rmr->lkey },
					 { (uintptr_t)rbuf + 30000, 5000, rmr->lkey } };
		struct ibv_recv_wr rwr = { .wr_id = 5, .sg_list = rs, .num_sge = 3 }, *brw;
		struct ibv_send_wr swr = { .wr_id = 4, .sg_list = ss, .num_sge = 3,
					   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bsw;
		char want[5101], got[5101];

		fill(sbuf, 30000);
		memcpy(want, sbuf + 1, 100);
		memcpy(want + 100, sbuf + 5000, 5000);
		memcpy(want + 5100, sbuf + 20001, 1);
		ibv_post_recv(b, &rwr, &brw);
		ibv_post_send(a, &swr, &bsw);
		n = poll(wc, 2);
		memcpy(got, rbuf + 7, 3000);
		memcpy(got + 3000, rbuf + 9000, 2000);
		memcpy(got + 5000, rbuf + 30000, 101);
		result(n == 2 && wc[0].status == 0 && wc[1].status == 0 && !memcmp(want, got, 5101),
		       "3 SGEs gathered, 3 SGEs scattered, unaligned");
	}

	/* RDMA WRITE, then RDMA WRITE with immediate. */
	{
		struct ibv_sge ss = { (uintptr_t)sbuf, 70000, smr->lkey };
		struct ibv_send_wr swr = { .wr_id = 6, .sg_list = &ss, .num_sge = 1,
					   .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED,
					   .wr.rdma = { (uintptr_t)rbuf + 100, rmr->rkey } }, *bsw;
		struct ibv_recv_wr rwr = { .wr_id = 8 }, *brw;

		fill(sbuf, 70000);
		ibv_post_send(a, &swr, &bsw);
		n = poll(wc, 1);
		result(n == 1 && wc[0].status == 0 && wc[0].opcode == IBV_WC_RDMA_WRITE &&
		       !memcmp(sbuf, rbuf + 100, 70000), "RDMA WRITE of 70000 bytes lands");
		swr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		swr.imm_data = htonl(0x12345678);
		swr.wr_id = 7;
		ibv_post_recv(b, &rwr, &brw);
		ibv_post_send(a, &swr, &bsw);
		n = poll(wc, 2);
		struct ibv_wc *r = find(wc, n, 8);

		result(n == 2 && r && r->status == 0 && r->opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		       (r->wc_flags & IBV_WC_WITH_IMM) && r->imm_data == htonl(0x12345678),
		       "RDMA WRITE with immediate: the receiver gets the immediate");
	}

	/* RDMA READ into two local SGEs; atomics on a remote 8-byte word. */
	{
		struct ibv_sge ls[2] = { { (uintptr_t)sbuf + 3, 60000, smr->lkey },
					 { (uintptr_t)sbuf + 100003, 40000, smr->lkey } };
		struct ibv_send_wr swr = { .wr_id = 20, .sg_list = ls, .num_sge = 2,
					   .opcode = IBV_WR_RDMA_READ,
					  .send_flags = IBV_SEND_SIGNALED,
					   .wr.rdma = { (uintptr_t)rbuf + 5, rmr->rkey } }, *bsw;
		uint64_t *word = (uint64_t *)(rbuf + 4096);

		fill(rbuf, 200000);
		ibv_post_send(a, &swr, &bsw);
		n = poll(wc, 1);
		result(n == 1 && wc[0].status == 0 && wc[0].opcode == IBV_WC_RDMA_READ &&
		       !memcmp(sbuf + 3, rbuf + 5, 60000) && !memcmp(sbuf + 100003, rbuf + 60005,
								     40000),
		       "RDMA READ of 100000 bytes into two SGEs");

		*word = 41;
		struct ibv_sge as = { (uintptr_t)sbuf, 8, smr->lkey };
		struct ibv_send_wr awr = { .wr_id = 21, .sg_list = &as, .num_sge = 1,
					   .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					   .send_flags = IBV_SEND_SIGNALED,
					   .wr.atomic = { (uintptr_t)word, 1000, 0, rmr->rkey } };

		ibv_post_send(a, &awr, &bsw);
		n = poll(wc, 1);
		result(n == 1 && wc[0].status == 0 && wc[0].opcode == IBV_WC_FETCH_ADD &&
		       *(uint64_t *)sbuf == 41 && *word == 1041,
		       "FETCH_AND_ADD: returns 41, leaves 1041");
		awr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		awr.wr.atomic.compare_add = 1041;
		awr.wr.atomic.swap = 7;
		ibv_post_send(a, &awr, &bsw);
		n = poll(wc, 1);
		result(n == 1 && wc[0].status == 0 && wc[0].opcode == IBV_WC_COMP_SWAP &&
		       *(uint64_t *)sbuf == 1041 && *word == 7, "CMP_AND_SWP that matches swaps");
		ibv_post_send(a, &awr, &bsw);
		n = poll(wc, 1);
		result(n == 1 && wc[0].status == 0 && *(uint64_t *)sbuf == 7 && *word == 7,
		       "CMP_AND_SWP that does not match leaves the word");
	}

	/* Errors: each moves the QP to the error state; a fresh pair follows. */
	{
		struct ibv_sge ss = { (uintptr_t)sbuf, 64, smr->lkey + 256 };
		struct ibv_send_wr swr = { .wr_id = 10, .sg_list = &ss, .num_sge = 1,
					   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bsw;

		ibv_post_send(a, &swr, &bsw);
		n = poll(wc, 1);
		result(n == 1 && wc[0].status == IBV_WC_LOC_PROT_ERR, "bad lkey: LOC_PROT_ERR (%d)",
		       n ? wc[0].status : -1);
		new_pair(&a, &b);

		ss.lkey = smr->lkey;
		ss.addr = (uintptr_t)sbuf + BUF - 10;
		ss.length = 64;
		ibv_post_send(a, &swr, &bsw);
		n = poll(wc, 1);
		result(n == 1 && wc[0].status == IBV_WC_LOC_PROT_ERR,
		       "SGE beyond the end of its MR: LOC_PROT_ERR (%d)", n ? wc[0].status : -1);
		new_pair(&a, &b);

		ss.addr = (uintptr_t)sbuf;
		swr.opcode = IBV_WR_RDMA_WRITE;
		swr.wr.rdma.remote_addr = (uintptr_t)rbuf;
		swr.wr.rdma.rkey = smr->rkey; /* no remote write right */
		ibv_post_send(a, &swr, &bsw);
		n = poll(wc, 1);
		result(n == 1 && wc[0].status == IBV_WC_REM_ACCESS_ERR,
		       "RDMA WRITE to an MR without remote write: REM_ACCESS_ERR (%d)",
		       n ? wc[0].status : -1);
		/* As on the wire: a peer may not go on guessing keys over the same connection. */
		result(qp_state(b) == IBV_QPS_ERR,
		       "the responder that NAKed it is in the error state (%d)", qp_state(b));
		new_pair(&a, &b);

		/* The responder QP's access flags decide as well as the MR's. */
		struct ibv_qp_attr acc = { .qp_access_flags = IBV_ACCESS_REMOTE_READ };

		memset(rbuf, 0x5a, 64);
		swr.wr.rdma.rkey = rmr->rkey;
		n = ibv_modify_qp(b, &acc, IBV_QP_ACCESS_FLAGS);
		result(!n, "RTS to RTS: the responder's access flags lose remote write (%d)", n);
		ibv_post_send(a, &swr, &bsw);
		n = poll(wc, 1);
		result(n == 1 && wc[0].status == IBV_WC_REM_ACCESS_ERR && rbuf[0] == 0x5a &&
		       rbuf[63] == 0x5a,
		       "RDMA WRITE to a QP without IBV_ACCESS_REMOTE_WRITE: REM_ACCESS_ERR, nothing written (%d)",
		       n ? wc[0].status : -1);
		result(qp_state(b) == IBV_QPS_ERR, "and the responder is in the error state (%d)",
		       qp_state(b));

		/* A QP with no responder resources takes no READ, whatever its access flags. */
		dest_rd_atomic = 0;
		new_pair(&a, &b);
		dest_rd_atomic = 1;
		swr.opcode = IBV_WR_RDMA_READ;
		ibv_post_send(a, &swr, &bsw);
		n = poll(wc, 1);
		result(n == 1 && wc[0].status == IBV_WC_REM_INV_REQ_ERR &&
		       qp_state(b) == IBV_QPS_ERR,
		       "RDMA READ from a QP with max_dest_rd_atomic 0: REM_INV_REQ_ERR, the responder in the error state (%d, %d)",
		       n ? wc[0].status : -1, qp_state(b));
		swr.opcode = IBV_WR_RDMA_WRITE;
		new_pair(&a, &b);

		/* A responder in the error state drops requests: the RC requester gives up. */
		struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };

		ibv_modify_qp(b, &err, IBV_QP_STATE);
		ibv_post_send(a, &swr, &bsw);
		n = poll(wc, 1);
		result(n == 1 && wc[0].status == IBV_WC_RETRY_EXC_ERR && rbuf[0] == 0x5a,
		       "RDMA WRITE to a QP in the error state: RETRY_EXC_ERR, nothing written (%d)",
		       n ? wc[0].status : -1);
		new_pair(&a, &b);

		swr.opcode = IBV_WR_SEND;
		ibv_post_send(a, &swr, &bsw);
		n = poll(wc, 1);
		result(n == 1 && wc[0].status == IBV_WC_RNR_RETRY_EXC_ERR,
		       "SEND with no receive posted (rnr_retry 0): RNR_RETRY_EXC_ERR (%d)",
		       n ? wc[0].status : -1);
		new_pair(&a, &b);

		struct ibv_sge rs = { (uintptr_t)rbuf, 10, rmr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 11, .sg_list = &rs, .num_sge = 1 }, *brw;

		ibv_post_recv(b, &rwr, &brw);
		ibv_post_send(a, &swr, &bsw);
		n = poll(wc, 2);
		struct ibv_wc *r = find(wc, n, 11), *s = find(wc, n, 10);

		result(r && s && r->status == IBV_WC_LOC_LEN_ERR &&
		       s->status == IBV_WC_REM_INV_REQ_ERR,
		       "64 bytes into a 10-byte receive: LOC_LEN_ERR and REM_INV_REQ_ERR");

		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qia;

		result(!ibv_query_qp(a, &qa, IBV_QP_STATE, &qia) && qa.qp_state == IBV_QPS_ERR &&
		       !ibv_query_qp(b, &qa, IBV_QP_STATE, &qia) && qa.qp_state == IBV_QPS_ERR,
		       "both QPs are in the error state");
		swr.wr_id = 12;
		ss.length = 8;
		n = ibv_post_send(a, &swr, &bsw);
		int got = n ? 0 : poll(wc, 1);

		result(!n && got == 1 && wc[0].wr_id == 12 && wc[0].status == IBV_WC_WR_FLUSH_ERR,
		       "a send posted in the error state completes flushed");

		/* Moving a QP to ERR flushes its posted receives. */
		new_pair(&a, &b);
		for (int i = 0; i < 3; i++) {
			rwr.wr_id = 30 + i;
			ibv_post_recv(b, &rwr, &brw);
		}
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR };
		ibv_modify_qp(b, &qa, IBV_QP_STATE);
		got = poll(wc, 3);
		result(got == 3 && wc[0].status == IBV_WC_WR_FLUSH_ERR && wc[0].wr_id == 30 &&
		       wc[2].status == IBV_WC_WR_FLUSH_ERR && wc[2].wr_id == 32,
		       "ERR flushes 3 posted receives with WR_FLUSH_ERR, in order");
	}

	tap_done();
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The null MR (ibv_alloc_null_mr) between QPs of two srdma devices: a SEND or RDMA WRITE whose
 * data comes from it carries zeros; a receive, RDMA READ or atomic result that goes to it is
 * discarded; it mixes with real SGEs in one work request; its key is no rkey and no
 * window binds to it; and allocating one costs no syscall (timed against ibv_reg_mr of one
 * page). Prints TAP.
 *   srdma_null_mr DEV_A DEV_B
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "srdma_side.h"

#define LEN (64 * 1024)
#define ROUNDS 1000

static struct side A, B;
static struct ibv_qp *qa, *qb;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* An RC QP of side s that takes three SGEs per work request. */
static struct ibv_qp *qp_of(struct side *s)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 3, .max_recv_sge = 1 },
	};

	return ibv_create_qp(s->pd, &ia);
}

/* A fresh connected RC pair (an error ends a QP). */
static void new_pair(void)
{
	struct conn ca, cb;

	if (qa)
		ibv_destroy_qp(qa);
	if (qb)
		ibv_destroy_qp(qb);
	qa = qp_of(&A);
	qb = qp_of(&B);
	ca = (struct conn){ .sgidx = A.gidx };
	cb = (struct conn){ .sgidx = B.gidx };
	if (!qa || !qb || connect_qp(qa, qb->qp_num, &B.gid, ca) ||
	    connect_qp(qb, qa->qp_num, &A.gid, cb)) {
		printf("Bail out! cannot connect two QPs (%s)\n", strerror(errno));
		exit(1);
	}
}

/* Posts one signaled WR of opcode op with the SGEs sg[0..n) from qa, to raddr under rkey. */
static int post_sges(enum ibv_wr_opcode op, struct ibv_sge *sg, int n, uint64_t raddr,
		     uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = sg, .num_sge = n, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = raddr, .rkey = rkey } }, *bad;

	return ibv_post_send(qa, &wr, &bad);
}

static int all(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	struct ibv_mr *null, *mr;
	struct ibv_wc wc;
	int ok;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DEV_A DEV_B\n", argv[0]);
		return 2;
	}
	alarm(120);
	open_side(&A, argv[1], 2 * LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
						 IBV_ACCESS_MW_BIND);
	open_side(&B, argv[2], 2 * LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	ksft_print_header();

	null = ibv_alloc_null_mr(A.pd);
	result(null && null->lkey && null->length == SIZE_MAX && !null->addr,
	       "ibv_alloc_null_mr: an lkey, SIZE_MAX bytes, no address");
	if (!null) {
		printf("Bail out! no null MR (%s)\n", strerror(errno));
		return 1;
	}
	new_pair();

	/* A SEND from the null MR: zeros arrive. */
	struct ibv_sge s_null = { .addr = 0x1234, .length = LEN, .lkey = null->lkey };

	memset(B.buf, 0xaa, LEN + 1);
	ok = !post_recv_one(qb, &B, LEN) && !post_sges(IBV_WR_SEND, &s_null, 1, 0, 0) &&
	     next_wc(A.cq, 5000, &wc) == IBV_WC_SUCCESS && next_wc(B.cq, 5000, &wc) == 0 &&
	     wc.byte_len == LEN;
	result(ok && all(B.buf, LEN, 0) && B.buf[LEN] == 0xaa,
	       "SEND of 64 KiB from the null MR: 64 KiB of zeros arrive");

	/* Real, null, real in one SEND. */
	struct ibv_sge mix[3] = {
		{ (uintptr_t)A.buf, 100, A.mr->lkey },
		{ 0, 5000, null->lkey },
		{ (uintptr_t)A.buf + 200, 100, A.mr->lkey },
	};

	memset(A.buf, 0x11, 300);
	memset(B.buf, 0xaa, LEN);
	ok = !post_recv_one(qb, &B, LEN) && !post_sges(IBV_WR_SEND, mix, 3, 0, 0) &&
	     next_wc(A.cq, 5000, &wc) == IBV_WC_SUCCESS && next_wc(B.cq, 5000, &wc) == 0 &&
	     wc.byte_len == 5200;
	result(ok && all(B.buf, 100, 0x11) && all(B.buf + 100, 5000, 0) &&
	       all(B.buf + 5100, 100, 0x11) && B.buf[5200] == 0xaa,
	       "SEND of a real, a null and a real SGE: the real bytes around 5000 zeros");

	/* An RDMA WRITE from the null MR. */
	memset(B.buf, 0xaa, LEN);
	ok = !post_sges(IBV_WR_RDMA_WRITE, &s_null, 1, (uintptr_t)B.buf + 8, B.mr->rkey) &&
	     next_wc(A.cq, 5000, &wc) == IBV_WC_SUCCESS;
	result(ok && B.buf[7] == 0xaa && all(B.buf + 8, LEN - 8, 0),
	       "RDMA WRITE from the null MR: zeros written");

	/* An RDMA READ into the null MR: done, nothing of A changes. */
	memset(A.buf, 0x22, 2 * LEN);
	memset(B.buf, 0x33, LEN);
	ok = !post_sges(IBV_WR_RDMA_READ, &s_null, 1, (uintptr_t)B.buf, B.mr->rkey) &&
	     next_wc(A.cq, 5000, &wc) == IBV_WC_SUCCESS;
	result(ok && all(A.buf, 2 * LEN, 0x22), "RDMA READ into the null MR: completes, discarded");

	/* A receive into the null MR, and a fetch-and-add whose result goes to it. */
	struct ibv_sge r_null = { .addr = 0, .length = LEN, .lkey = null->lkey };
	struct ibv_recv_wr rw = { .wr_id = 9, .sg_list = &r_null, .num_sge = 1 }, *rbad;
	struct ibv_sge s_real = { (uintptr_t)A.buf, 1000, A.mr->lkey };

	ok = !ibv_post_recv(qa, &rw, &rbad);
	/* B sends to A. */
	struct ibv_sge bs = { (uintptr_t)B.buf, 1000, B.mr->lkey };
	struct ibv_send_wr bw = { .wr_id = 10, .sg_list = &bs, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bbad;

	ok = ok && !ibv_post_send(qb, &bw, &bbad) && next_wc(B.cq, 5000, &wc) == 0 &&
	     next_wc(A.cq, 5000, &wc) == 0 && wc.wr_id == 9 && wc.byte_len == 1000;
	result(ok && all(A.buf, 2 * LEN, 0x22),
	       "a receive into the null MR: 1000 bytes, discarded");

	uint64_t *word = (uint64_t *)(B.buf + 4096);
	struct ibv_send_wr fa = { .wr_id = 11, .sg_list = &s_null, .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.atomic = { .remote_addr = (uintptr_t)word, .compare_add = 5,
						 .rkey = B.mr->rkey } }, *fbad;

	s_null.length = 8;
	*word = 10;
	int st = ibv_post_send(qa, &fa, &fbad) ? -3 : next_wc(A.cq, 5000, &wc);

	result(st == IBV_WC_SUCCESS && *word == 15 && all(A.buf, 2 * LEN, 0x22),
	       "fetch-and-add into the null MR: the remote word changes, the result is discarded (%s, word %llu)",
	       st >= 0 ? ibv_wc_status_str(st) : "no completion",
	       (unsigned long long)*word);

	/* Its key as an rkey: refused; B's QP ends in error, so a new pair follows. */
	ok = !post_sges(IBV_WR_RDMA_WRITE, &s_real, 1, 0x1000, null->lkey) &&
	     next_wc(A.cq, 5000, &wc) >= 0;
	result(ok && wc.status == IBV_WC_REM_ACCESS_ERR,
	       "the null MR's key as an rkey: %s",
	       ok ? ibv_wc_status_str(wc.status) : "no completion");
	new_pair();

	/* No window binds to it. */
	struct ibv_mw *mw = ibv_alloc_mw(A.pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind bind = { .wr_id = 12, .send_flags = IBV_SEND_SIGNALED,
				    .bind_info = { .mr = null, .addr = 0, .length = 4096,
						   .mw_access_flags = IBV_ACCESS_REMOTE_WRITE } };

	ok = mw && ibv_bind_mw(qa, mw, &bind) == 0 && next_wc(A.cq, 5000, &wc) >= 0;
	result(ok && wc.status == IBV_WC_MW_BIND_ERR, "a window bound to the null MR: %s",
	       ok ? ibv_wc_status_str(wc.status) : "not posted");
	if (mw)
		ibv_dealloc_mw(mw);
	result(!ibv_dereg_mr(null), "ibv_dereg_mr of the null MR");

	/* What it costs: no syscall, against registering one page. */
	double t0 = now();

	ok = 1;
	for (int i = 0; i < ROUNDS; i++) {
		struct ibv_mr *m = ibv_alloc_null_mr(A.pd);

		ok &= m && !ibv_dereg_mr(m);
	}
	double t_null = now() - t0;

	t0 = now();
	for (int i = 0; i < ROUNDS; i++) {
		mr = ibv_reg_mr(A.pd, A.buf, 4096, IBV_ACCESS_LOCAL_WRITE);
		ok &= mr && !ibv_dereg_mr(mr);
	}
	double t_reg = now() - t0;

	result(ok && t_null < t_reg,
	       "a null MR costs less than registering one page (%.2f us against %.2f us, %d of each)",
	       t_null * 1e6 / ROUNDS, t_reg * 1e6 / ROUNDS, ROUNDS);

	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	tap_done();
}

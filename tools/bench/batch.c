// SPDX-License-Identifier: GPL-2.0-only
/*
 * Message rate by the way WRITEs are posted: one ibv_post_send() per work request, lists of
 * work requests per ibv_post_send(), and the extended API's batches (ibv_wr_start(), a
 * ibv_wr_rdma_write() and ibv_wr_set_sge() per work request, ibv_wr_complete()).
 *
 * perftest cannot measure the last on soft devices: it takes the extended API only for
 * devices it knows by vendor ID, and otherwise ibv_post_send() (`ib_write_bw -l` posts its
 * lists with it).
 *
 *   batch [-q] DEV_A DEV_B GID_INDEX
 * One process, one RC QP on each device, connected to each other over RoCEv2 GID GID_INDEX;
 * A streams 64-byte RDMA WRITEs into B's buffer, DEPTH of them uncompleted at most, for SECS
 * seconds (a tenth of that with -q) after a warm-up of the same length, in each mode:
 *   post1   ibv_post_send() of one work request, each signalled
 *   list32  ibv_post_send() of a list of 32, the last signalled
 *   wr1     ibv_wr_start(), one WRITE, ibv_wr_complete(), each signalled
 *   wr32    ibv_wr_start(), 32 WRITEs, ibv_wr_complete(), the last signalled
 * and prints "rate MODE MPPS" for each, or "skip MODE REASON" where the device has no extended
 * API (ibv_create_qp_ex() refuses send_ops_flags).
 */
#include <stdint.h>

#include "rc_pair.h"

#define SIZE 64
#define DEPTH 128
#define BATCH 32
#define SECS 2.0

enum mode { POST1, LIST32, WR1, WR32 };

static const char *const mode_name[] = { "post1", "list32", "wr1", "wr32" };

/* The QP of s; with `ex`, one that takes the extended API for RDMA WRITEs. */
static int create_qp(struct side *s, int ex)
{
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_RC, .send_cq = s->cq, .recv_cq = s->cq, .pd = s->pd,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD,
	};

	if (ex) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
	}
	s->qp = ibv_create_qp_ex(s->ctx, &ia);
	return s->qp ? 0 : -1;
}

/* Posts n WRITEs of a to b in mode m, the last signalled (each, in the single modes). */
static void post(struct side *a, struct side *b, enum mode m, int n)
{
	struct ibv_sge sge[BATCH];
	struct ibv_send_wr wr[BATCH], *bad;
	struct ibv_qp_ex *qx;

	if (m == POST1 || m == LIST32) {
		for (int i = 0; i < n; i++) {
			sge[i] = (struct ibv_sge){ (uintptr_t)a->buf, SIZE, a->mr->lkey };
			wr[i] = (struct ibv_send_wr){
				.sg_list = &sge[i], .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				.send_flags = i == n - 1 ? IBV_SEND_SIGNALED : 0,
				.next = i == n - 1 ? NULL : &wr[i + 1],
				.wr.rdma = { (uintptr_t)b->buf, b->mr->rkey },
			};
		}
		if (ibv_post_send(a->qp, wr, &bad))
			die("ibv_post_send");
		return;
	}
	qx = ibv_qp_to_qp_ex(a->qp);
	ibv_wr_start(qx);
	for (int i = 0; i < n; i++) {
		qx->wr_id = i;
		qx->wr_flags = i == n - 1 ? IBV_SEND_SIGNALED : 0;
		ibv_wr_rdma_write(qx, b->mr->rkey, (uintptr_t)b->buf);
		ibv_wr_set_sge(qx, a->mr->lkey, (uintptr_t)a->buf, SIZE);
	}
	if (ibv_wr_complete(qx))
		die("ibv_wr_complete");
}

/* The WRITEs per second that mode m moves in secs. */
static double stream(struct side *a, struct side *b, enum mode m, double secs)
{
	int n = m == LIST32 || m == WR32 ? BATCH : 1;
	long posted = 0, done = 0;
	double t0 = now(), t;

	do {
		while (posted - done + n <= DEPTH) {
			post(a, b, m, n);
			posted += n;
		}
		reap(a, 1);
		done += n;
		t = now() - t0;
	} while (t < secs);
	/* What is still in flight completes before the next mode starts. */
	reap(a, (posted - done) / n);
	return done / t;
}

int main(int argc, char **argv)
{
	struct side a = { 0 }, b = { 0 };
	double secs = SECS;
	int arg = 1, ex;

	if (argc > 1 && !strcmp(argv[1], "-q")) {
		secs /= 10;
		arg++;
	}
	if (argc - arg != 3) {
		fprintf(stderr, "usage: batch [-q] DEV_A DEV_B GID_INDEX\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	prog = "batch";
	gid_index = atoi(argv[arg + 2]);
	open_side(&a, argv[arg], 2 * DEPTH, 4096);
	open_side(&b, argv[arg + 1], 2 * DEPTH, 4096);
	ex = !create_qp(&a, 1) && !create_qp(&b, 1);
	if (!ex) {
		if (a.qp)
			ibv_destroy_qp(a.qp);
		if (create_qp(&a, 0) || create_qp(&b, 0))
			die("create_qp");
	}
	connect_qp(&a, &b);
	connect_qp(&b, &a);
	for (enum mode m = POST1; m <= WR32; m++) {
		if ((m == WR1 || m == WR32) && !ex) {
			printf("skip %s no extended API (ibv_create_qp_ex with send_ops_flags)\n",
			       mode_name[m]);
			continue;
		}
		stream(&a, &b, m, secs);
		printf("rate %s %.6f\n", mode_name[m], stream(&a, &b, m, secs) / 1e6);
	}
	return 0;
}

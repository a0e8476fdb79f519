// SPDX-License-Identifier: GPL-2.0-only
/*
 * The extended CQ (ibv_create_cq_ex) of the srdma provider, between QPs of two srdma devices:
 * the wc_flags and creation flags it takes and refuses, every field ibv_wc_read_* returns
 * compared with what was sent, completion timestamps against the clocks read around the
 * traffic (CLOCK_MONOTONIC, and CLOCK_REALTIME for the wall-clock reading), ibv_query_rt_values_ex,
 * the lock given back by an empty ibv_start_poll, ibv_poll_cq on the same CQ, consumed slots
 * given back by ibv_end_poll (many times the CQ's size passes through it), and an error
 * completion. Prints TAP.
 *   srdma_cq_ex DEV_A DEV_B
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "srdma_side.h"

#define LEN 4096
#define DEPTH 16
#define ROUNDS 8
/*
 * How far a wall-clock reading may stray from CLOCK_REALTIME read around it: the two clocks
 * are read one after the other when converting.
 */
#define WALL_SLACK_NS 1000000ull

#define ALL_WC (IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

static struct side A, B;

static uint64_t now_ns(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static struct ibv_cq_ex *cq_ex(struct ibv_context *ctx, int cqe, uint64_t wc_flags)
{
	struct ibv_cq_init_attr_ex a = { .cqe = cqe, .wc_flags = wc_flags };

	return ibv_create_cq_ex(ctx, &a);
}

/* The errno of creating an extended CQ with these attributes (0: it was created). */
static int cq_ex_errno(uint64_t wc_flags, uint32_t comp_mask, uint32_t flags)
{
	struct ibv_cq_init_attr_ex a = { .cqe = 8, .wc_flags = wc_flags, .comp_mask = comp_mask,
					 .flags = flags };
	struct ibv_cq_ex *cq;

	errno = 0;
	cq = ibv_create_cq_ex(A.ctx, &a);
	if (!cq)
		return errno ? errno : -1;
	ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	return 0;
}

static struct ibv_qp *qp_on(struct side *s, struct ibv_cq_ex *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = ibv_cq_ex_to_cq(cq), .recv_cq = ibv_cq_ex_to_cq(cq),
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	return ibv_create_qp(s->pd, &ia);
}

/* Waits up to 5 s for a completion; returns what ibv_start_poll last returned. */
static int start_poll_wait(struct ibv_cq_ex *cq)
{
	struct ibv_poll_cq_attr pa = {};
	int ret = ENOENT;

	for (int i = 0; i < 5000 && ret == ENOENT; i++) {
		ret = ibv_start_poll(cq, &pa);
		if (ret == ENOENT)
			usleep(1000);
	}
	return ret;
}

/* What one polled completion said. */
struct got {
	uint64_t wr_id, ts, wall;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len, imm, qp_num, src_qp, wc_flags, slid;
	uint8_t sl, dlid_path_bits;
};

static void read_cur(struct ibv_cq_ex *cq, struct got *g)
{
	g->wr_id = cq->wr_id;
	g->status = cq->status;
	g->opcode = ibv_wc_read_opcode(cq);
	g->byte_len = ibv_wc_read_byte_len(cq);
	g->imm = ibv_wc_read_imm_data(cq);
	g->qp_num = ibv_wc_read_qp_num(cq);
	g->src_qp = ibv_wc_read_src_qp(cq);
	g->wc_flags = ibv_wc_read_wc_flags(cq);
	g->slid = ibv_wc_read_slid(cq);
	g->sl = ibv_wc_read_sl(cq);
	g->dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
	g->ts = ibv_wc_read_completion_ts(cq);
	g->wall = ibv_wc_read_completion_wallclock_ns(cq);
}

/*
 * Polls n completions in one ibv_start_poll .. ibv_end_poll (waiting for the first, then for
 * each next one); returns how many it got.
 */
static int poll_n(struct ibv_cq_ex *cq, struct got *g, int n)
{
	int got = 0, ret = start_poll_wait(cq);

	if (ret)
		return 0;
	read_cur(cq, &g[got++]);
	while (got < n) {
		for (int i = 0; i < 5000; i++) {
			ret = ibv_next_poll(cq);
			if (ret != ENOENT)
				break;
			usleep(1000);
		}
		if (ret)
			break;
		read_cur(cq, &g[got++]);
	}
	ibv_end_poll(cq);
	return got;
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex dx = {};
	struct ibv_values_ex vals = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	struct ibv_poll_cq_attr pa = {};
	struct ibv_cq_ex *cqa, *cqb;
	struct ibv_qp *qa, *qb;
	struct conn ca, cb;
	struct got g[DEPTH];
	struct ibv_wc wc;
	uint64_t t0, t1, t2, w0, w1, r0, r1;
	int ok, n;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DEV_A DEV_B\n", argv[0]);
		return 2;
	}
	/* A poll that kept the CQ's lock would hang the next one: end the run instead. */
	alarm(120);
	open_side(&A, argv[1], LEN, IBV_ACCESS_LOCAL_WRITE);
	open_side(&B, argv[2], LEN, IBV_ACCESS_LOCAL_WRITE);
	ksft_print_header();

	ok = !ibv_query_device_ex(A.ctx, NULL, &dx);
	result(ok && dx.completion_timestamp_mask == UINT64_MAX && dx.hca_core_clock == 1000000,
	       "query_device_ex: 64-bit completion timestamps at 1 GHz (mask %#llx, %llu kHz)",
	       (unsigned long long)dx.completion_timestamp_mask,
	       (unsigned long long)dx.hca_core_clock);

	result(cq_ex_errno(ALL_WC, 0, 0) == 0, "create_cq_ex: standard fields and timestamps");
	result(cq_ex_errno(IBV_WC_EX_WITH_CVLAN, 0, 0) == EOPNOTSUPP,
	       "create_cq_ex: IBV_WC_EX_WITH_CVLAN refused (EOPNOTSUPP)");
	result(cq_ex_errno(IBV_WC_EX_WITH_FLOW_TAG, 0, 0) == EOPNOTSUPP,
	       "create_cq_ex: IBV_WC_EX_WITH_FLOW_TAG refused (EOPNOTSUPP)");
	result(cq_ex_errno(0, IBV_CQ_INIT_ATTR_MASK_FLAGS, IBV_CREATE_CQ_ATTR_SINGLE_THREADED) == 0,
	       "create_cq_ex: IBV_CREATE_CQ_ATTR_SINGLE_THREADED taken");
	result(cq_ex_errno(0, IBV_CQ_INIT_ATTR_MASK_FLAGS, IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN) ==
		       EOPNOTSUPP,
	       "create_cq_ex: IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN refused (EOPNOTSUPP)");
	result(cq_ex_errno(0, IBV_CQ_INIT_ATTR_MASK_PD, 0) == EOPNOTSUPP,
	       "create_cq_ex: a parent domain refused (EOPNOTSUPP)");

	r0 = now_ns(CLOCK_MONOTONIC);
	ok = !ibv_query_rt_values_ex(A.ctx, &vals);
	r1 = now_ns(CLOCK_MONOTONIC);
	result(ok && vals.comp_mask == IBV_VALUES_MASK_RAW_CLOCK && vals.raw_clock.tv_sec == 0 &&
	       (uint64_t)vals.raw_clock.tv_nsec >= r0 &&
	       (uint64_t)vals.raw_clock.tv_nsec <= r1,
	       "query_rt_values_ex: the raw clock is CLOCK_MONOTONIC in ns");

	cqa = cq_ex(A.ctx, DEPTH, ALL_WC);
	cqb = cq_ex(B.ctx, DEPTH, ALL_WC);
	qa = cqa ? qp_on(&A, cqa) : NULL;
	qb = cqb ? qp_on(&B, cqb) : NULL;
	ca = (struct conn){ .sgidx = A.gidx, .rnr_retry = 7 };
	cb = (struct conn){ .sgidx = B.gidx, .rnr_retry = 7 };
	if (!qa || !qb || connect_qp(qa, qb->qp_num, &B.gid, ca) ||
	    connect_qp(qb, qa->qp_num, &A.gid, cb)) {
		printf("Bail out! cannot connect the QPs (%s)\n", strerror(errno));
		return 1;
	}

	ok = ibv_start_poll(cqb, &pa) == ENOENT;
	/* Hangs (and the alarm ends the run) if the empty start kept the lock. */
	ok = ok && ibv_poll_cq(ibv_cq_ex_to_cq(cqb), 1, &wc) == 0;
	result(ok, "start_poll on an empty CQ: ENOENT, and the CQ is not left locked");

	/*
	 * Rounds of DEPTH SEND_WITH_IMMs: each round's receive CQEs in one poll. ROUNDS * DEPTH
	 * completions pass through CQs of DEPTH entries: end_poll must give the slots back.
	 */
	int fields_ok = 1, ts_ok = 1, wall_ok = 1, bytes_ok = 1, sends_ok = 1, all = 1;
	uint64_t last_ts = 0;

	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < DEPTH; i++) {
			struct ibv_sge sge = { .addr = (uintptr_t)B.buf + i * 128, .length = 128,
					       .lkey = B.mr->lkey };
			struct ibv_recv_wr rw = { .wr_id = 1000 + i, .sg_list = &sge,
						 .num_sge = 1 },
					   *bad;

			all &= !ibv_post_recv(qb, &rw, &bad);
		}
		t0 = now_ns(CLOCK_MONOTONIC);
		w0 = now_ns(CLOCK_REALTIME);
		for (int i = 0; i < DEPTH; i++) {
			struct ibv_sge sge = { .addr = (uintptr_t)A.buf + i * 128, .length = 1 + i,
					       .lkey = A.mr->lkey };
			struct ibv_send_wr sw = { .wr_id = 2000 + i, .sg_list = &sge, .num_sge = 1,
						  .opcode = IBV_WR_SEND_WITH_IMM,
						  .send_flags = IBV_SEND_SIGNALED,
						  .imm_data = htonl(0x5000 + r * DEPTH + i) },
					   *bad;

			memset(A.buf + i * 128, 'a' + (r + i) % 26, 1 + i);
			all &= !ibv_post_send(qa, &sw, &bad);
		}
		n = poll_n(cqb, g, DEPTH);
		t1 = now_ns(CLOCK_MONOTONIC);
		w1 = now_ns(CLOCK_REALTIME);
		all &= n == DEPTH;
		for (int i = 0; i < n; i++) {
			fields_ok &= g[i].status == IBV_WC_SUCCESS && g[i].wr_id == 1000u + i &&
				     g[i].opcode == IBV_WC_RECV && g[i].byte_len == 1u + i &&
				     (g[i].wc_flags & IBV_WC_WITH_IMM) &&
				     g[i].imm == htonl(0x5000 + r * DEPTH + i) &&
				     g[i].qp_num == qb->qp_num && g[i].src_qp == qa->qp_num &&
				     g[i].slid == 0 && g[i].sl == 0 && g[i].dlid_path_bits == 0;
			ts_ok &= g[i].ts >= t0 && g[i].ts <= t1 && g[i].ts >= last_ts;
			last_ts = g[i].ts;
			wall_ok &= g[i].wall + WALL_SLACK_NS >= w0 &&
					     g[i].wall <= w1 + WALL_SLACK_NS;
			for (int b = 0; b <= i; b++)
				bytes_ok &= B.buf[i * 128 + b] == 'a' + (r + i) % 26;
		}
		n = poll_n(cqa, g, DEPTH);
		/* A send may complete after its message was received and polled. */
		t2 = now_ns(CLOCK_MONOTONIC);
		all &= n == DEPTH;
		for (int i = 0; i < n; i++)
			sends_ok &= g[i].status == IBV_WC_SUCCESS && g[i].wr_id == 2000u + i &&
				    g[i].opcode == IBV_WC_SEND && g[i].qp_num == qa->qp_num &&
				    g[i].ts >= t0 && g[i].ts <= t2;
	}
	result(all, "%d rounds of %d completions through CQs of %d entries, each round in one poll",
	       ROUNDS, DEPTH, DEPTH);
	result(fields_ok,
	       "receive completions: wr_id, opcode, byte_len, imm, qp_num, src_qp, flags");
	result(bytes_ok, "receive completions: the payloads arrived");
	result(sends_ok, "send completions: wr_id, opcode, qp_num, timestamp");
	result(ts_ok,
	       "completion timestamps lie between CLOCK_MONOTONIC before and after, in order");
	result(wall_ok, "wall-clock timestamps lie between CLOCK_REALTIME before and after");

	/* ibv_poll_cq on an extended CQ. */
	struct ibv_sge sge = { .addr = (uintptr_t)A.buf, .length = 8, .lkey = A.mr->lkey };
	struct ibv_send_wr sw = { .wr_id = 77, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	post_recv_one(qb, &B, 128);
	ok = !ibv_post_send(qa, &sw, &bad);
	ok = ok && next_wc(ibv_cq_ex_to_cq(cqa), 5000, &wc) == IBV_WC_SUCCESS && wc.wr_id == 77 &&
	     wc.opcode == IBV_WC_SEND;
	ok = ok && next_wc(ibv_cq_ex_to_cq(cqb), 5000, &wc) == IBV_WC_SUCCESS && wc.wr_id == 2 &&
	     wc.byte_len == 8;
	result(ok, "ibv_poll_cq takes the completions of an extended CQ");

	/* An error completion: an lkey that names nothing. */
	sge.lkey = A.mr->lkey ^ 0x80000000u;
	sw.wr_id = 78;
	ok = !ibv_post_send(qa, &sw, &bad) && poll_n(cqa, g, 1) == 1;
	result(ok && g[0].wr_id == 78 && g[0].status == IBV_WC_LOC_PROT_ERR,
	       "an error completion: status %s in the CQ's status field",
	       ok ? ibv_wc_status_str(g[0].status) : "none");

	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	result(!ibv_destroy_cq(ibv_cq_ex_to_cq(cqa)) && !ibv_destroy_cq(ibv_cq_ex_to_cq(cqb)),
	       "destroy the extended CQs");
	tap_done();
}

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What tools/bench/inline.c and batch.c share: one process, an RC QP on each of two devices,
 * connected to each other over the RoCEv2 GID at gid_index, the QPs' completions on one CQ per
 * side, and a registered buffer per side that the peer may write.
 */
#ifndef SRDMA_BENCH_RC_PAIR_H
#define SRDMA_BENCH_RC_PAIR_H

#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
	union ibv_gid gid;
};

static const char *prog;
static int gid_index;

static void die(const char *what)
{
	fprintf(stderr, "%s: %s failed\n", prog, what);
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Opens device `name` for s with a CQ of cqe entries and a buffer of size bytes; the QP is
 * the program's to create.
 */
static void open_side(struct side *s, const char *name, int cqe, size_t size)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			s->ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!s->ctx)
		die(name);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, cqe, NULL, NULL, 0);
	s->buf = aligned_alloc(4096, size);
	if (!s->pd || !s->cq || !s->buf)
		die("pd/cq/buffer");
	memset(s->buf, 0x5a, size);
	s->mr = ibv_reg_mr(s->pd, s->buf, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!s->mr || ibv_query_gid(s->ctx, 1, gid_index, &s->gid))
		die("reg_mr/query_gid");
}

static void connect_qp(struct side *s, struct side *peer)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	if (ibv_modify_qp(s->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_ACCESS_FLAGS))
		die("modify_qp INIT");
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				   .dest_qp_num = peer->qp->qp_num, .max_dest_rd_atomic = 1,
				   .min_rnr_timer = 1,
				   .ah_attr = { .is_global = 1, .port_num = 1,
						.grh = { .dgid = peer->gid, .sgid_index = gid_index,
							 .hop_limit = 64 } } };
	if (ibv_modify_qp(s->qp, &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify_qp RTR");
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				   .rnr_retry = 7, .max_rd_atomic = 1 };
	if (ibv_modify_qp(s->qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify_qp RTS");
}

/* Waits for n completions on s's CQ; every one must be a success. */
static void reap(struct side *s, int n)
{
	struct ibv_wc wc[16];

	while (n > 0) {
		int got = ibv_poll_cq(s->cq, n < 16 ? n : 16, wc);

		if (got < 0)
			die("poll_cq");
		for (int i = 0; i < got; i++)
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "%s: completion error %s\n", prog,
					ibv_wc_status_str(wc[i].status));
				exit(1);
			}
		n -= got;
	}
}

#endif

// SPDX-License-Identifier: GPL-2.0-only
/*
 * Posting work in each QP state: sends are taken from RTS on (the error state flushes them),
 * receives from INIT on; earlier states refuse them with EINVAL, as rxe and mlx5 do, for
 * ibv_post_send, ibv_post_recv and the ibv_wr_* API alike. Prints TAP.
 *
 *   srdma_states DEVICE
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "srdma_tap.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static char buf[4096];
static union ibv_gid gid;
static int gidx = -1;

static const char *const names[] = {
	[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
	[IBV_QPS_RTS] = "RTS", [IBV_QPS_SQD] = "SQD", [IBV_QPS_ERR] = "ERR",
};

/* Moves qp (RC, connected to itself) to state, through the states before it. */
static int move(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr qa;
	int mask;

	switch (state) {
	case IBV_QPS_INIT:
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1 };
		mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		break;
	case IBV_QPS_RTR:
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
					   .dest_qp_num = qp->qp_num, .max_dest_rd_atomic = 1,
					   .min_rnr_timer = 1,
					   .ah_attr = { .is_global = 1, .port_num = 1,
							.grh = { .dgid = gid, .sgid_index = gidx,
								 .hop_limit = 1 } } };
		mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		break;
	case IBV_QPS_RTS:
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 1,
					   .rnr_retry = 1, .max_rd_atomic = 1 };
		mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		break;
	case IBV_QPS_ERR:
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR };
		mask = IBV_QP_STATE;
		break;
	default:
		return 0;
	}
	return ibv_modify_qp(qp, &qa, mask);
}

static int post_recv(struct ibv_qp *qp)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int post_send(struct ibv_qp *qp)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static int wr_send(struct ibv_qp *qp)
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);

	ibv_wr_start(qpx);
	qpx->wr_id = 3;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)buf, 8);
	return ibv_wr_complete(qpx);
}

/* Polls for n completions for up to a second; returns how many came. */
static int reap(int n)
{
	struct ibv_wc wc[8];
	int got = 0;

	for (int i = 0; i < 1000 && got < n; i++) {
		int r = ibv_poll_cq(cq, 8, wc);

		if (r < 0)
			break;
		got += r;
		if (got < n)
			usleep(1000);
	}
	return got;
}

int main(int argc, char **argv)
{
	static const enum ibv_qp_state order[] = {
		IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_ERR,
	};
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_RC, .comp_mask = IBV_QP_INIT_ATTR_PD |
						   IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp;

	ksft_print_header();
	ctx = open_dev(argc > 1 ? argv[1] : "srdma0");
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = ctx ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	for (int i = 0; ctx && i < 16 && gidx < 0; i++)
		if (!ibv_query_gid(ctx, 1, i, &gid) && gid.raw[10] == 0xff && gid.raw[11] == 0xff)
			gidx = i;
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.pd = pd;
	qp = mr && gidx >= 0 ? ibv_create_qp_ex(ctx, &ia) : NULL;
	if (!qp) {
		printf("Bail out! cannot set up a QP (%s)\n", strerror(errno));
		return 1;
	}
	for (unsigned int i = 0; i < ARRAY_SIZE(order); i++) {
		enum ibv_qp_state s = order[i];
		int send_ok = s == IBV_QPS_RTS || s == IBV_QPS_ERR, recv_ok = s != IBV_QPS_RESET;
		int r;

		if (move(qp, s)) {
			result(0, "%s: the QP gets there (%s)", names[s], strerror(errno));
			continue;
		}
		r = post_recv(qp);
		result(recv_ok ? r == 0 : r == EINVAL, "%s: ibv_post_recv %s (%d)", names[s],
		       recv_ok ? "is taken" : "fails with EINVAL", r);
		r = post_send(qp);
		result(send_ok ? r == 0 : r == EINVAL, "%s: ibv_post_send %s (%d)", names[s],
		       send_ok ? "is taken" : "fails with EINVAL", r);
		r = wr_send(qp);
		result(send_ok ? r == 0 : r == EINVAL, "%s: ibv_wr_complete %s (%d)", names[s],
		       send_ok ? "is taken" : "fails with EINVAL", r);
	}
	/*
	 * What was taken completes: in RTS two SENDs into two of the QP's own receives, in ERR
	 * the rest flushed: 4 receives and 4 sends, 8 completions.
	 */
	result(reap(8) == 8, "every WR taken completes (8), none of the refused ones");
	result(reap(1) == 0, "and nothing more");
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	tap_done();
}

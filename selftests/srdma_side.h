/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the two-device test programs share: one side's device, PD, CQ and buffer, and RC/UC
 * connections between QPs of two sides.
 */
#ifndef SRDMA_SIDE_H
#define SRDMA_SIDE_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srdma_tap.h"

/* One side: a device with a PD, a CQ and one registered buffer. */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	unsigned char *buf;
	union ibv_gid gid;
	int gidx;
};

/* The index of the first IPv4-mapped GID of port 1 after index `after`, or -1. */
static inline int next_v4_gid(struct side *s, int after, union ibv_gid *gid)
{
	static const unsigned char v4[12] = { [10] = 0xff, [11] = 0xff };

	for (int i = after + 1; i < 16; i++)
		if (!ibv_query_gid(s->ctx, 1, i, gid) && !memcmp(gid->raw, v4, sizeof(v4)))
			return i;
	return -1;
}

/*
 * Opens side s on device name with a buffer of len bytes registered with access; bails out
 * of the test if it cannot.
 */
static inline void open_side(struct side *s, const char *name, size_t len, int access)
{
	s->ctx = open_dev(name);
	s->pd = s->ctx ? ibv_alloc_pd(s->ctx) : NULL;
	s->cq = s->ctx ? ibv_create_cq(s->ctx, 64, NULL, NULL, 0) : NULL;
	s->buf = aligned_alloc(4096, len);
	s->mr = s->pd && s->buf ? ibv_reg_mr(s->pd, s->buf, len, access) : NULL;
	s->gidx = s->ctx ? next_v4_gid(s, -1, &s->gid) : -1;
	if (!s->cq || !s->mr || s->gidx < 0) {
		printf("Bail out! cannot set up %s (%s)\n", name, strerror(errno));
		exit(1);
	}
}

/* An RC or UC QP of side s on its CQ. */
static inline struct ibv_qp *side_qp(struct side *s, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = type,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(s->pd, &ia);
}

/* How connect_qp sets up a connection. */
struct conn {
	int sgidx;		/* the GID index to send from */
	uint32_t sq_psn, rq_psn;
	int rnr_retry;
};

/* Brings qp from any state to RTS, connected to dqpn at gid as c says. */
static inline int connect_qp(struct ibv_qp *qp, uint32_t dqpn, union ibv_gid *gid,
			     struct conn c)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RESET };
	int rc = qp->qp_type == IBV_QPT_RC;

	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE))
		return -1;
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1,
				   .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						      (rc ? IBV_ACCESS_REMOTE_READ |
							    IBV_ACCESS_REMOTE_ATOMIC : 0) };
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS))
		return -1;
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				   .dest_qp_num = dqpn, .rq_psn = c.rq_psn, .max_dest_rd_atomic = 1,
				   .min_rnr_timer = 12, /* 0.64 ms */
				   .ah_attr = { .is_global = 1, .port_num = 1,
						.grh = { .dgid = *gid, .sgid_index = c.sgidx,
							 .hop_limit = 1 } } };
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN | (rc ? IBV_QP_MAX_DEST_RD_ATOMIC |
						   IBV_QP_MIN_RNR_TIMER : 0)))
		return -1;
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = c.sq_psn, .timeout = 14,
				   .retry_cnt = 1, .rnr_retry = c.rnr_retry, .max_rd_atomic = 1 };
	return ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN |
				      (rc ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					    IBV_QP_MAX_QP_RD_ATOMIC : 0));
}

/*
 * Posts one signaled WR of opcode op with one SGE (lkey, addr, len); RDMA and atomics go to
 * raddr under rkey.
 */
static inline int post_one(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t lkey,
			   uint64_t addr, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = raddr, .rkey = rkey } }, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/* Posts one receive of len bytes of s's buffer. */
static inline int post_recv_one(struct ibv_qp *qp, struct side *s, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf, .length = len, .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/*
 * The next completion on cq within ms milliseconds: its status (the completion in *wc), -1
 * if none came, -2 if polling failed.
 */
static inline int next_wc(struct ibv_cq *cq, int ms, struct ibv_wc *wc)
{
	for (int i = 0; i < ms; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n < 0 ? -2 : (int)wc->status;
		usleep(1000);
	}
	return -1;
}

#endif

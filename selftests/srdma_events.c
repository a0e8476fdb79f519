// SPDX-License-Identifier: GPL-2.0-only
/*
 * Events of srdma between two RC QPs of one device: completion events through a completion
 * channel (next and solicited-only arming, arming again), the SRQ limit event, the CQ
 * error event of an overrun CQ, and receiver-not-ready retries, kept to the RNR timer's
 * resolution. Prints TAP.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "srdma_tap.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char buf[1 << 16];
static union ibv_gid gid;

static int connect_pair_rnr(struct ibv_qp *a, struct ibv_qp *b, int rnr_retry, int rnr_timer)
{
	struct ibv_qp *qs[2] = { a, b };

	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

		if (ibv_modify_qp(qs[i], &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						IBV_QP_ACCESS_FLAGS))
			return -1;
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
					   .dest_qp_num = qs[1 - i]->qp_num,
					  .max_dest_rd_atomic = 1,
					   .min_rnr_timer = rnr_timer,
					   .ah_attr = { .is_global = 1, .port_num = 1,
							.grh = { .dgid = gid, .sgid_index = 1,
								 .hop_limit = 1 } } };
		if (ibv_modify_qp(qs[i], &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
			return -1;
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 1, .retry_cnt = 1,
					   .rnr_retry = rnr_retry, .max_rd_atomic = 1 };
		if (ibv_modify_qp(qs[i], &qa, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
						IBV_QP_MAX_QP_RD_ATOMIC))
			return -1;
	}
	return 0;
}

static int connect_pair(struct ibv_qp *a, struct ibv_qp *b)
{
	return connect_pair_rnr(a, b, 0, 1);
}

static struct ibv_qp *new_qp(struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = { .send_cq = scq, .recv_cq = rcq, .srq = srq,
				       .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 64, .max_recv_wr = 64,
						.max_send_sge = 1, .max_recv_sge = 1 } };

	return ibv_create_qp(pd, &ia);
}

static int post_recv(struct ibv_qp *qp, struct ibv_srq *srq, uint64_t id)
{
	struct ibv_sge s = { (uintptr_t)buf + 32768, 64, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;

	return srq ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(qp, &wr, &bad);
}

static int post_send(struct ibv_qp *qp, int flags)
{
	struct ibv_sge s = { (uintptr_t)buf, 16, mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &s, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = flags }, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/* Whether fd becomes readable within ms milliseconds. */
static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

static int drain(struct ibv_cq *cq)
{
	struct ibv_wc wc[16];
	int n, total = 0;

	for (int t = 0; t < 200; t++) {
		while ((n = ibv_poll_cq(cq, 16, wc)) > 0)
			total += n;
		usleep(1000);
	}
	return total;
}

static void completion_events(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *rcq = ch ? ibv_create_cq(ctx, 64, NULL, ch, 0) : NULL;
	struct ibv_qp *a, *b;
	struct ibv_cq *evcq;
	void *evctx;

	result(ch && scq && rcq, "completion channel and a CQ on it");
	if (!ch || !scq || !rcq)
		return;
	a = new_qp(scq, rcq, NULL);
	b = new_qp(scq, rcq, NULL);
	if (!a || !b || connect_pair(a, b)) {
		result(0, "QP pair for events");
		return;
	}
	/* Not armed: a completion raises no event. */
	post_recv(b, NULL, 1);
	post_send(a, 0);
	result(!readable(ch->fd, 300), "no event while the CQ is not armed");
	result(drain(rcq) == 1, "the receive completed");

	result(ibv_req_notify_cq(rcq, 0) == 0, "ibv_req_notify_cq (next)");
	post_recv(b, NULL, 2);
	post_send(a, 0);
	result(readable(ch->fd, 2000), "armed: the completion raises an event");
	result(ibv_get_cq_event(ch, &evcq, &evctx) == 0 && evcq == rcq,
	       "ibv_get_cq_event names the CQ");
	ibv_ack_cq_events(rcq, 1);
	result(drain(rcq) == 1, "the receive completed");
	post_recv(b, NULL, 3);
	post_send(a, 0);
	result(!readable(ch->fd, 300), "one event per arming");
	drain(rcq);

	result(ibv_req_notify_cq(rcq, 1) == 0, "ibv_req_notify_cq (solicited only)");
	post_recv(b, NULL, 4);
	post_send(a, 0);
	result(!readable(ch->fd, 300), "solicited only: an unsolicited message raises no event");
	drain(rcq);
	post_recv(b, NULL, 5);
	post_send(a, IBV_SEND_SOLICITED);
	result(readable(ch->fd, 2000), "solicited only: a solicited message raises the event");
	if (ibv_get_cq_event(ch, &evcq, &evctx) == 0)
		ibv_ack_cq_events(evcq, 1);
	drain(rcq);
	drain(scq);

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(rcq);
	ibv_destroy_cq(scq);
	ibv_destroy_comp_channel(ch);
}

/* Waits up to two seconds for an async event of type ev; returns 1 if it came. */
static int async_event(enum ibv_event_type ev)
{
	struct ibv_async_event e;

	while (readable(ctx->async_fd, 2000)) {
		if (ibv_get_async_event(ctx, &e))
			return 0;
		ibv_ack_async_event(&e);
		if (e.event_type == ev)
			return 1;
	}
	return 0;
}

static void srq_limit(void)
{
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_srq *srq = ibv_create_srq(pd, &sia);
	struct ibv_srq_attr sa = { .srq_limit = 4 };
	struct ibv_qp *a, *b;

	a = cq && srq ? new_qp(cq, cq, NULL) : NULL;
	b = a ? new_qp(cq, cq, srq) : NULL;
	if (!b || connect_pair(a, b)) {
		result(0, "SRQ and QPs for the limit event");
		return;
	}
	for (int i = 0; i < 8; i++)
		post_recv(NULL, srq, 100 + i);
	result(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == 0, "arm the SRQ limit at 4");
	for (int i = 0; i < 4; i++)
		post_send(a, 0);
	result(!async_event(IBV_EVENT_SRQ_LIMIT_REACHED), "4 of 8 WQEs left: no limit event");
	post_send(a, 0);
	result(async_event(IBV_EVENT_SRQ_LIMIT_REACHED), "3 left: IBV_EVENT_SRQ_LIMIT_REACHED");
	result(ibv_query_srq(srq, &sa) == 0 && sa.srq_limit == 0, "the limit is disarmed");
	post_send(a, 0);
	result(!async_event(IBV_EVENT_SRQ_LIMIT_REACHED), "disarmed: no second event");
	drain(cq);
	{
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

		result(ibv_modify_qp(b, &qa, IBV_QP_STATE) == 0 &&
		       async_event(IBV_EVENT_QP_LAST_WQE_REACHED),
		       "the QP on the SRQ moved to the error state: IBV_EVENT_QP_LAST_WQE_REACHED");
	}
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_srq(srq);
	ibv_destroy_cq(cq);
}

/*
 * Overruns a receive CQ by lost completions. srdma's CQ ring is a power of two that holds one
 * CQE more than the cqe it reports.
 */
static void cq_overrun(int lost)
{
	struct ibv_cq *scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 2, NULL, NULL, 0);
	int n = rcq ? rcq->cqe + 1 + lost : 0;
	struct ibv_qp *a, *b;

	a = scq && rcq ? new_qp(scq, rcq, NULL) : NULL;
	b = a ? new_qp(scq, rcq, NULL) : NULL;
	if (!b || connect_pair(a, b)) {
		result(0, "QPs for the overrun");
		return;
	}
	for (int i = 0; i < n; i++) {
		post_recv(b, NULL, i);
		post_send(a, 0);
	}
	result(async_event(IBV_EVENT_CQ_ERR), "%d receives into a CQ of %d: IBV_EVENT_CQ_ERR", n,
	       rcq->cqe);
	drain(scq);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(rcq);
	ibv_destroy_cq(scq);
}

/* Polls cq for one completion for up to ms milliseconds. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	for (int t = 0; t <= ms; t++) {
		if (ibv_poll_cq(cq, 1, wc) == 1)
			return 1;
		usleep(1000);
	}
	return 0;
}

static void test_rnr_retry(void)
{
	struct ibv_cq *scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *a, *b, *c, *d;
	struct ibv_wc wc;
	int got;

	/* rnr_retry 7 retries without end: the send waits for the receive posted later. */
	a = scq && rcq ? new_qp(scq, rcq, NULL) : NULL;
	b = a ? new_qp(scq, rcq, NULL) : NULL;
	if (!b || connect_pair_rnr(a, b, 7, 12)) {
		result(0, "QPs for RNR retries");
		return;
	}
	post_send(a, IBV_SEND_SIGNALED);
	result(!poll_one(scq, &wc, 200), "rnr_retry 7: no completion while no receive is posted");
	post_recv(b, NULL, 42);
	got = poll_one(scq, &wc, 5000);
	result(got && wc.status == IBV_WC_SUCCESS,
	       "rnr_retry 7: the send succeeds once a receive is posted (status %d)",
	       got ? (int)wc.status : -1);
	result(poll_one(rcq, &wc, 1000) && wc.status == IBV_WC_SUCCESS && wc.wr_id == 42,
	       "rnr_retry 7: and the receive completes");

	/* rnr_retry 2 with a 10.24 ms timer: two retries, then RNR_RETRY_EXC_ERR. */
	c = new_qp(scq, rcq, NULL);
	d = c ? new_qp(scq, rcq, NULL) : NULL;
	if (!d || connect_pair_rnr(c, d, 2, 20)) {
		result(0, "QPs for RNR retries");
		return;
	}
	post_send(c, IBV_SEND_SIGNALED);
	result(!ibv_poll_cq(scq, 1, &wc), "rnr_retry 2: the refusal is not final at once");
	got = poll_one(scq, &wc, 5000);
	result(got && wc.status == IBV_WC_RNR_RETRY_EXC_ERR,
	       "rnr_retry 2: RNR_RETRY_EXC_ERR after the retries (status %d)",
	       got ? (int)wc.status : -1);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_qp(c);
	ibv_destroy_qp(d);
	ibv_destroy_cq(rcq);
	ibv_destroy_cq(scq);
}

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/*
 * Six retries of a send that meets an empty receive queue, the responder's RNR timer set by
 * code: how long the send took to fail with RNR_RETRY_EXC_ERR (ns), or -1.
 */
static long long rnr_retries_took(struct ibv_cq *scq, struct ibv_cq *rcq, int retries, int code)
{
	struct ibv_qp *a = new_qp(scq, rcq, NULL);
	struct ibv_qp *b = a ? new_qp(scq, rcq, NULL) : NULL;
	long long t0, took = -1;
	struct ibv_wc wc;
	int got = 0;

	if (b && !connect_pair_rnr(a, b, retries, code)) {
		t0 = now_ns();
		if (!post_send(a, IBV_SEND_SIGNALED))
			while (!got && now_ns() - t0 < 5000000000LL)
				got = ibv_poll_cq(scq, 1, &wc);
		if (got == 1 && wc.status == IBV_WC_RNR_RETRY_EXC_ERR)
			took = now_ns() - t0;
	}
	if (b)
		ibv_destroy_qp(b);
	if (a)
		ibv_destroy_qp(a);
	return took;
}

/*
 * A responder's 240 us RNR timer (code 9) makes each retry wait that long and not much more:
 * never less (IBA 9.7.5.2.8), and not until a jiffy passed (up to 4 ms at HZ=250, 2 ms on
 * average, whatever the timer). What a retry costs besides its wait (the timer firing, the
 * engine's worker waking, its pass over the queue) depends on how fast this machine is today,
 * so each round also measures it with a 10 us timer (code 1), which an engine pass outlasts,
 * and the comparison is of the difference within a round (the two runs meet the same load):
 * the wait that the 240 us timer adds.
 */
static void rnr_timer_resolution(void)
{
	enum { ROUNDS = 15, RETRIES = 6, TIMER_CODE = 9, SHORT_CODE = 1, TIMER_NS = 240000,
	       SLACK_NS = 1000000 };
	struct ibv_cq *scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *rcq = scq ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	long long took[ROUNDS], base[ROUNDS], added[ROUNDS], more;
	int ok = !!rcq, r;

	for (r = 0; r < ROUNDS && ok; r++) {
		took[r] = rnr_retries_took(scq, rcq, RETRIES, TIMER_CODE);
		base[r] = rnr_retries_took(scq, rcq, RETRIES, SHORT_CODE);
		ok = took[r] >= 0 && base[r] >= 0;
		added[r] = (took[r] - base[r]) / RETRIES;
	}
	result(ok, "rnr_retry %d, 240 us and 10 us timers: RNR_RETRY_EXC_ERR after the retries",
	       RETRIES);
	qsort(took, r, sizeof(took[0]), cmp_ll);
	qsort(base, r, sizeof(base[0]), cmp_ll);
	qsort(added, r, sizeof(added[0]), cmp_ll);
	result(ok && took[0] >= (long long)RETRIES * TIMER_NS,
	       "rnr_retry %d with a 240 us timer: no retry comes early (fastest %lld us for %d retries)",
	       RETRIES, r ? took[0] / 1000 : -1, RETRIES);
	more = r ? added[r / 2] : -1;
	result(ok && more < TIMER_NS + SLACK_NS,
	       "rnr_retry %d with a 240 us timer: each retry waits under 1 ms more than with a 10 us one, not a jiffy (median %lld us more; %lld and %lld us per retry)",
	       RETRIES, more / 1000, r ? took[r / 2] / RETRIES / 1000 : -1,
	       r ? base[r / 2] / RETRIES / 1000 : -1);
	if (rcq)
		ibv_destroy_cq(rcq);
	if (scq)
		ibv_destroy_cq(scq);
}

int main(int argc, char **argv)
{
	ksft_print_header();
	ctx = open_dev(argc > 1 ? argv[1] : "srdma0");
	if (!ctx) {
		printf("Bail out! no device\n");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	ibv_query_gid(ctx, 1, 1, &gid);
	if (argc > 3 && !strcmp(argv[2], "overrun")) {
		/*
		 * Only the overrun, losing argv[3] completions (srdma_security.sh reads the
		 * log).
		 */
		cq_overrun(atoi(argv[3]));
	} else {
		completion_events();
		srq_limit();
		cq_overrun(1);
		test_rnr_retry();
		rnr_timer_resolution();
	}
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	tap_done();
}

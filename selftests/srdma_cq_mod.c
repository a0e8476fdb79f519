// SPDX-License-Identifier: GPL-2.0-only
/*
 * CQ moderation (ibv_modify_cq): completion events coalesced by count and by period. An RC
 * QP of device A sends to one of device B, whose CQ has a completion channel; the receiver
 * re-arms after every event, as an event-driven consumer does, and the events per
 * completion fall as the count rises. The `cq_events` hardware counter of B moves by the
 * events delivered, exactly. Prints TAP.
 *
 * Usage: srdma_cq_mod DEV_A DEV_B
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <time.h>

#include "srdma_side.h"

#define MSGS 64
#define LEN 8

static struct side a, b;
static struct ibv_comp_channel *ch;
static struct ibv_cq *rcq;
static struct ibv_qp *qa, *qb;
static const char *dev_b;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* B's cq_events counter; sysfs serves values up to a lifespan (10 ms) old. */
static long long read_cq_events(void)
{
	usleep(30000);
	return port_counter(dev_b, "cq_events");
}

static int moderate(uint16_t count, uint16_t period)
{
	struct ibv_modify_cq_attr attr = {
		.attr_mask = IBV_CQ_ATTR_MODERATE,
		.moderate = { .cq_count = count, .cq_period = period },
	};

	return ibv_modify_cq(rcq, &attr);
}

/*
 * Whether a completion event is waiting within ms milliseconds; takes and acknowledges it
 * and arms the CQ again. -1 if the channel failed.
 */
static int take_event(int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *cq_ctx;
	int n = poll(&pfd, 1, ms);

	if (n <= 0)
		return n;
	if (ibv_get_cq_event(ch, &cq, &cq_ctx) || cq != rcq)
		return -1;
	ibv_ack_cq_events(cq, 1);
	return ibv_req_notify_cq(rcq, 0) ? -1 : 1;
}

/*
 * Sends one message from A to B and waits for its completion at A: by then B's completion
 * is written and its event, if any, raised (the responder answers after it delivers).
 */
static int send_one(void)
{
	struct ibv_wc wc;

	if (post_recv_one(qb, &b, LEN) ||
	    post_one(qa, IBV_WR_SEND, a.mr->lkey, (uintptr_t)a.buf, LEN, 0, 0))
		return -1;
	return next_wc(a.cq, 5000, &wc) == IBV_WC_SUCCESS ? 0 : -1;
}

/*
 * Sends n messages from A to B in one post (one kick) and waits for their completions at A:
 * B's completions arrive within one system call, well inside a moderation period.
 */
static int send_batch(int n)
{
	struct ibv_sge sge = { .addr = (uintptr_t)a.buf, .length = LEN, .lkey = a.mr->lkey };
	struct ibv_send_wr wr[4], *bad;
	struct ibv_wc wc;

	if (n > 4)
		return -1;
	for (int i = 0; i < n; i++) {
		if (post_recv_one(qb, &b, LEN))
			return -1;
		wr[i] = (struct ibv_send_wr){ .wr_id = i, .sg_list = &sge, .num_sge = 1,
					      .opcode = IBV_WR_SEND,
					     .send_flags = IBV_SEND_SIGNALED,
					      .next = i + 1 < n ? &wr[i + 1] : NULL };
	}
	if (ibv_post_send(qa, wr, &bad))
		return -1;
	for (int i = 0; i < n; i++)
		if (next_wc(a.cq, 5000, &wc) != IBV_WC_SUCCESS)
			return -1;
	return 0;
}

/* Takes every completion B's CQ holds; returns how many succeeded, -1 on any other. */
static int drain(void)
{
	struct ibv_wc wc;
	int n = 0, got;

	while ((got = ibv_poll_cq(rcq, 1, &wc)) == 1) {
		if (wc.status != IBV_WC_SUCCESS)
			return -1;
		n++;
	}
	return got < 0 ? -1 : n;
}

/*
 * MSGS messages, one at a time, with the receiver taking each event as it comes; returns
 * the events taken, -1 on a failure.
 */
static int events_for(uint16_t count, uint16_t period)
{
	int events = 0;

	if (moderate(count, period) || ibv_req_notify_cq(rcq, 0))
		return -1;
	for (int i = 0; i < MSGS; i++) {
		int e;

		if (send_one())
			return -1;
		e = take_event(0);
		if (e < 0)
			return -1;
		events += e;
		if (drain() != 1)
			return -1;
	}
	/* Leave nothing armed or waiting for the next case. */
	while (take_event(0) > 0)
		events++;
	return events;
}

int main(int argc, char **argv)
{
	static const uint16_t counts[] = { 0, 1, 2, 4, 16, 64 };
	struct ibv_device_attr_ex dx;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = MSGS, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct conn c = { .sgidx = 0 };
	long long before, after;
	double t0, dt;
	int prev = MSGS + 1, ev;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DEV_A DEV_B\n", argv[0]);
		return 2;
	}
	dev_b = argv[2];
	ksft_set_plan(27);
	open_side(&a, argv[1], 4096, IBV_ACCESS_LOCAL_WRITE);
	open_side(&b, argv[2], 4096, IBV_ACCESS_LOCAL_WRITE);
	ch = ibv_create_comp_channel(b.ctx);
	rcq = ch ? ibv_create_cq(b.ctx, 256, NULL, ch, 0) : NULL;
	qa = side_qp(&a, IBV_QPT_RC);
	ia.send_cq = rcq;
	ia.recv_cq = rcq;
	qb = rcq ? ibv_create_qp(b.pd, &ia) : NULL;
	c.sgidx = a.gidx;
	if (!qa || !qb || connect_qp(qa, qb->qp_num, &b.gid, c)) {
		printf("Bail out! cannot connect (%s)\n", strerror(errno));
		return 1;
	}
	c.sgidx = b.gidx;
	if (connect_qp(qb, qa->qp_num, &a.gid, c)) {
		printf("Bail out! cannot connect (%s)\n", strerror(errno));
		return 1;
	}

	result(!ibv_query_device_ex(b.ctx, NULL, &dx) && dx.cq_mod_caps.max_cq_count == 65535 &&
	       dx.cq_mod_caps.max_cq_period == 65535,
	       "ibv_query_device_ex: cq_mod_caps max_cq_count 65535, max_cq_period 65535 µs");

	/* By count: MSGS completions, one event per `count` of them. */
	for (unsigned int i = 0; i < ARRAY_SIZE(counts); i++) {
		int k = counts[i], want = k > 1 ? MSGS / k : MSGS;

		before = read_cq_events();
		ev = events_for(k, 0);
		after = read_cq_events();
		result(ev == want, "count %d: %d events for %d completions (got %d)", k, want, MSGS,
		       ev);
		result(after - before == want, "count %d: cq_events moved by %d (moved %lld)", k,
		       want, after - before);
		if (i > 1)
			result(ev < prev, "count %d: fewer events per completion than count %d", k,
			       counts[i - 1]);
		prev = ev;
	}

	/*
	 * By period: a count never reached, so the event waits out the period after the first
	 * completion.
	 */
	ev = moderate(1000, 65000) || ibv_req_notify_cq(rcq, 0) ? -1 : 0;
	t0 = now_ms();
	if (!ev)
		ev = send_one() ? -1 : take_event(0);
	result(ev == 0, "period 65 ms: no event right after the completion (got %d)", ev);
	ev = take_event(3000);
	dt = now_ms() - t0;
	result(ev == 1 && dt >= 64, "period 65 ms: the event came %.0f ms after the post", dt);
	result(drain() == 1, "period 65 ms: the completion is in the CQ");

	/* Count and period together: the count ends the wait first. */
	ev = moderate(4, 65000) || ibv_req_notify_cq(rcq, 0) ? -1 : 0;
	if (!ev)
		ev = send_batch(3) ? -1 : take_event(0);
	result(ev == 0, "count 4, period 65 ms: no event after 3 completions (got %d)", ev);
	t0 = now_ms();
	ev = send_one() ? -1 : take_event(0);
	dt = now_ms() - t0;
	result(ev == 1 && dt < 65, "count 4, period 65 ms: the 4th raised it at once (%.0f ms)",
	       dt);
	result(take_event(150) == 0,
	       "count 4, period 65 ms: the period then raises no second event");
	result(drain() == 4, "count 4, period 65 ms: the 4 completions are in the CQ");

	/* Bad requests. */
	{
		struct ibv_modify_cq_attr attr = { .attr_mask = 0 };

		result(ibv_modify_cq(rcq, &attr) == EINVAL,
		       "ibv_modify_cq with no attribute: EINVAL");
	}

	/*
	 * A CQ destroyed while its period runs: the timer goes with it (the kernel log stays
	 * clean, which the suite checks).
	 */
	moderate(1000, 50000);
	ibv_req_notify_cq(rcq, 0);
	result(!send_one(), "a completion waiting out its period");
	ibv_destroy_qp(qb);
	drain();
	result(!ibv_destroy_cq(rcq), "its CQ destroyed before the period ended");
	usleep(100000);
	ibv_destroy_qp(qa);
	ibv_destroy_comp_channel(ch);
	ksft_finished();
}

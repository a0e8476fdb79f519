// SPDX-License-Identifier: GPL-2.0-only
/*
 * The data path at its edges, between QP a on DEV_A and QP b on DEV_B:
 * - messages far larger than any kernel buffer (8 MiB and 64 MiB SEND, RDMA WRITE and READ,
 *   random bytes compared), which must neither fail nor make the kernel warn;
 * - a QP destroyed while its head WQE waits for an RNR retry: once ibv_destroy_qp returns,
 *   nothing of that QP may run, so a receive posted afterwards at its peer stays empty;
 * - the destination a connected QP's requests found: connected anew, the QP reaches its new
 *   destination and no longer the old one; a destination destroyed is reached no more, and
 *   its memory (the rings the kernel shares with the process) is freed at once, not kept by
 *   the QP that last reached it;
 * - a QP destroyed while SENDs stream into it: no receive completion of it may be written once
 *   ibv_destroy_qp returns (the order inside the kernel read from srdma's tracepoints);
 * - a QP moved to the error state while SENDs stream into it: its receives complete once each,
 *   in order, the flushed ones last;
 * - an MR deregistered while an RDMA WRITE copies into it: once ibv_dereg_mr returns, nothing
 *   more is written to its memory, which the process may be using for something else;
 * - a datagram longer than the receive WQE it would take is dropped, as rxe drops it: the UD QP
 *   stays usable and the WQE takes the next datagram (anyone who can send a packet to the
 *   device could otherwise fail its QP1 and with it the CM);
 * - one ibv_post_send of 2 GiB of SENDs (four of eight 64 MiB SGEs): a task on the same CPU
 *   still runs while the kernel copies (the copy gives way when the scheduler asks, even on a
 *   kernel without preemption), and the call returns once a bounded part is done, the rest
 *   going on in the device's worker.
 * Prints TAP.
 *   srdma_edges DEV_A DEV_B
 * With a third argument, `poller`, only this, for devices in doorbell mode "poll":
 * - a process that keeps rewriting the SQ consumer index of its QP's doorbell record (the
 *   kernel's field, in a page the process may write) does not keep the device's poller from
 *   going to sleep.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srdma_side.h"

#define BIG (64u << 20)
#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

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
	if (op == IBV_WR_SEND && post_recv_one(b, B, len)) {
		result(0, "%s of %u MiB: post the receive", name, len >> 20);
		return;
	}
	if (post_one(a, op, A->mr->lkey, (uintptr_t)A->buf, len, (uintptr_t)B->buf,
		     B->mr->rkey)) {
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

/*
 * A SEND of 64 bytes from a (A's buffer filled with v) to the QPs of B that have a receive
 * posted; returns a's completion status and the QP number of the receive completion at B in
 * *qpn (0 if none came).
 */
static int send_to(struct side *A, struct side *B, struct ibv_qp *a, unsigned char v,
		   uint32_t *qpn)
{
	struct ibv_wc wc;
	int st;

	memset(A->buf, v, 64);
	*qpn = 0;
	if (post_one(a, IBV_WR_SEND, A->mr->lkey, (uintptr_t)A->buf, 64, 0, 0))
		return -2;
	st = next_wc(A->cq, 2000, &wc);
	if (next_wc(B->cq, 300, &wc) == IBV_WC_SUCCESS && B->buf[0] == v)
		*qpn = wc.qp_num;
	return st;
}

/*
 * The bytes of the memory the kernel shares with processes (rings, doorbell records), as
 * /proc/vmallocinfo lists it by its allocator; -1 if it cannot tell.
 */
static long shared_bytes(void)
{
	FILE *f = fopen("/proc/vmallocinfo", "r");
	char line[512];
	long total = 0, n;
	int seen = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "SharedPages") || sscanf(line, "%*s %ld", &n) != 1)
			continue;
		total += n;
		seen = 1;
	}
	fclose(f);
	return seen ? total : -1;
}

/* Where a connected QP's requests go when its destination changes or goes. */
static void destinations(struct side *A, struct side *B)
{
	struct ibv_qp *a = side_qp(A, IBV_QPT_RC), *b = side_qp(B, IBV_QPT_RC);
	struct ibv_qp *b2 = side_qp(B, IBV_QPT_RC);
	struct conn ca = { A->gidx }, cb = { B->gidx };
	struct ibv_wc wc;
	long before, after;
	uint32_t got;
	int st;

	if (!a || !b || !b2 || connect_qp(a, b->qp_num, &B->gid, ca) ||
	    connect_qp(b, a->qp_num, &A->gid, cb) || connect_qp(b2, a->qp_num, &A->gid, cb)) {
		printf("Bail out! cannot connect (%s)\n", strerror(errno));
		exit(1);
	}
	post_recv_one(b, B, 64);
	st = send_to(A, B, a, 0x11, &got);
	result(st == IBV_WC_SUCCESS && got == b->qp_num, "a SEND of a reaches b (status %d)", st);

	/* a connected anew, to b2; b and b2 both wait for a message. */
	if (connect_qp(a, b2->qp_num, &B->gid, ca)) {
		printf("Bail out! cannot connect again (%s)\n", strerror(errno));
		exit(1);
	}
	post_recv_one(b, B, 64);
	post_recv_one(b2, B, 64);
	st = send_to(A, B, a, 0x22, &got);
	result(st == IBV_WC_SUCCESS && got == b2->qp_num,
	       "connected anew, a's SEND reaches its new destination (status %d, QP %u)", st, got);
	result(next_wc(B->cq, 100, &wc) == -1, "and not the old one, which keeps its receive");

	/*
	 * b2 goes while a, which reached it last, stays idle: b2's rings are freed with it (a
	 * process could otherwise keep memory of other processes' destroyed QPs alive).
	 */
	before = shared_bytes();
	ibv_destroy_qp(b2);
	after = shared_bytes();
	result(before > 0 && after < before,
	       "the destroyed destination's rings are freed at once (shared memory %ld -> %ld bytes)",
	       before, after);

	/* a's next request finds no one, and nothing of B changes. */
	memset(B->buf, 0, 64);
	memset(A->buf, 0x33, 64);
	post_one(a, IBV_WR_RDMA_WRITE, A->mr->lkey, (uintptr_t)A->buf, 64, (uintptr_t)B->buf,
		 B->mr->rkey);
	st = next_wc(A->cq, 2000, &wc);
	result(st == IBV_WC_RETRY_EXC_ERR && B->buf[0] == 0,
	       "its destination destroyed, a's RDMA WRITE fails with RETRY_EXC_ERR and writes nothing (%d)",
	       st);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
}

#define TRACEFS "/sys/kernel/tracing"
#define STREAM_ROUNDS 48
#define STREAM_RECVS 1024
#define STREAM_SQ 64
#define STREAM_LIST 16

/* Writes s to the tracefs file name: 0, or -1 if it cannot. */
static int tracefs_write(const char *name, const char *s)
{
	char path[256];
	int fd, ok;

	snprintf(path, sizeof(path), TRACEFS "/%s", name);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

/*
 * How many srdma_cqe events the trace has after the srdma_qp_destroy event (-1: it has none);
 * the events are filtered to one QP.
 */
static long cqes_after_destroy(void)
{
	FILE *f = fopen(TRACEFS "/trace", "r");
	char line[512];
	long late = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "srdma_qp_destroy:"))
			late = 0;
		else if (late >= 0 && strstr(line, "srdma_cqe:"))
			late++;
	}
	fclose(f);
	return late;
}

/* A stream of 8-byte SENDs on QP a, in lists, until a WQE fails or stop is set. */
struct stream {
	struct side *A;
	struct ibv_qp *a;
	struct ibv_cq *cq;
	int stop;
	int status;	/* the first failed completion's */
};

static void *stream_sends(void *arg)
{
	struct stream *s = arg;
	struct ibv_sge sge = { .addr = (uintptr_t)s->A->buf, .length = 8, .lkey = s->A->mr->lkey };
	struct ibv_send_wr wr[STREAM_LIST], *bad;
	struct ibv_wc wc[STREAM_LIST];
	int out = 0;

	for (int i = 0; i < STREAM_LIST; i++)
		wr[i] = (struct ibv_send_wr){ .wr_id = i, .sg_list = &sge, .num_sge = 1,
					      .opcode = IBV_WR_SEND,
					      .send_flags = IBV_SEND_SIGNALED,
					      .next = i + 1 < STREAM_LIST ? &wr[i + 1] : NULL };
	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		int n;

		if (out + STREAM_LIST <= STREAM_SQ && !ibv_post_send(s->a, wr, &bad))
			out += STREAM_LIST;
		n = ibv_poll_cq(s->cq, STREAM_LIST, wc);
		for (int i = 0; i < n; i++) {
			out--;
			if (wc[i].status != IBV_WC_SUCCESS) {
				s->status = wc[i].status;
				return NULL;
			}
		}
		if (n < 0) {
			s->status = -2;
			return NULL;
		}
	}
	return NULL;
}

/* The clock tracefs stamps events with, into clock (empty if it cannot tell). */
static void read_trace_clock(char *clock, size_t len)
{
	FILE *f = fopen(TRACEFS "/trace_clock", "r");
	char line[512] = "";
	char *p, *q;

	clock[0] = 0;
	if (!f)
		return;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	p = strchr(line, '[');
	q = p ? strchr(p, ']') : NULL;
	if (q)
		snprintf(clock, len, "%.*s", (int)(q - p - 1), p + 1);
}

/* An RC QP of side s on CQ cq, with send and receive queues of sq and rq WQEs. */
static struct ibv_qp *stream_qp(struct side *s, struct ibv_cq *cq, uint32_t sq, uint32_t rq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = sq, .max_recv_wr = rq, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	return cq ? ibv_create_qp(s->pd, &ia) : NULL;
}

/*
 * A stream between two sides: QP a of A sends into QP b of B, which has STREAM_RECVS receives
 * posted (wr_id their index), each on a CQ of its own.
 */
struct pair {
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
	struct stream s;
	pthread_t t;
};

/* Sets p up between A and B, connected, the receives posted; bails out if it cannot. */
static void pair_up(struct side *A, struct side *B, struct pair *p)
{
	struct ibv_sge sge = { .addr = (uintptr_t)B->buf, .length = 64, .lkey = B->mr->lkey };
	struct ibv_recv_wr rw = { .sg_list = &sge, .num_sge = 1 }, *bad;

	p->cqa = ibv_create_cq(A->ctx, 2 * STREAM_SQ, NULL, NULL, 0);
	p->cqb = ibv_create_cq(B->ctx, STREAM_RECVS + 16, NULL, NULL, 0);
	p->a = stream_qp(A, p->cqa, STREAM_SQ, 1);
	p->b = p->a ? stream_qp(B, p->cqb, 1, STREAM_RECVS) : NULL;
	p->s = (struct stream){ .A = A, .a = p->a, .cq = p->cqa };
	if (!p->b || connect_qp(p->a, p->b->qp_num, &B->gid, (struct conn){ A->gidx }) ||
	    connect_qp(p->b, p->a->qp_num, &A->gid, (struct conn){ B->gidx })) {
		printf("Bail out! cannot connect (%s)\n", strerror(errno));
		exit(1);
	}
	for (int i = 0; i < STREAM_RECVS; i++) {
		rw.wr_id = i;
		if (ibv_post_recv(p->b, &rw, &bad)) {
			printf("Bail out! cannot post receives (%s)\n", strerror(errno));
			exit(1);
		}
	}
}

/* Starts a's SENDs; bails out if it cannot. */
static void pair_stream(struct pair *p)
{
	if (pthread_create(&p->t, NULL, stream_sends, &p->s)) {
		printf("Bail out! cannot start the sender\n");
		exit(1);
	}
}

/* Stops a's SENDs. */
static void pair_stop(struct pair *p)
{
	__atomic_store_n(&p->s.stop, 1, __ATOMIC_RELAXED);
	pthread_join(p->t, NULL);
}

/* Frees what is left of p (b, unless NULL: destroyed already). */
static void pair_free(struct pair *p)
{
	ibv_destroy_qp(p->a);
	if (p->b)
		ibv_destroy_qp(p->b);
	ibv_destroy_cq(p->cqa);
	ibv_destroy_cq(p->cqb);
}

/* Traces srdma_cqe and srdma_qp_destroy of QP qpn alone, from an empty trace: 0 or -1. */
static int trace_qp(uint32_t qpn)
{
	char filter[64];

	snprintf(filter, sizeof(filter), "qpn == %u", qpn);
	return tracefs_write("events/srdma/srdma_cqe/filter", filter) ||
	       tracefs_write("events/srdma/srdma_qp_destroy/filter", filter) ||
	       tracefs_write("trace", "") ||
	       tracefs_write("events/srdma/srdma_cqe/enable", "1") ||
	       tracefs_write("events/srdma/srdma_qp_destroy/enable", "1") ? -1 : 0;
}

/*
 * One round of destroy_receiving: b destroyed after `after` of its receives completed.
 * Returns the CQEs of b traced after its destroy (-1: no destroy traced); *raced is set when
 * the stream was still under way (a's SEND found b gone).
 */
static long destroy_round(struct side *A, struct side *B, int after, int *raced)
{
	struct ibv_wc wc[16];
	struct pair p;
	int got = 0;
	long late;

	pair_up(A, B, &p);
	if (trace_qp(p.b->qp_num)) {
		printf("Bail out! cannot set up tracefs (%s)\n", strerror(errno));
		exit(1);
	}
	pair_stream(&p);
	for (int i = 0; got < after && i < 1000000; i++) {
		int n = ibv_poll_cq(p.cqb, 16, wc);

		got += n > 0 ? n : 0;
	}
	ibv_destroy_qp(p.b);
	p.b = NULL;
	pair_stop(&p);
	tracefs_write("events/srdma/srdma_cqe/enable", "0");
	tracefs_write("events/srdma/srdma_qp_destroy/enable", "0");
	late = cqes_after_destroy();
	*raced = p.s.status == IBV_WC_RETRY_EXC_ERR;
	pair_free(&p);
	return late;
}

/*
 * b is destroyed while a's SENDs stream into its receives: once ibv_destroy_qp has returned,
 * no receive completion of b may be written (a process that freed what its wr_ids name would
 * be handed them). The moment lies inside the kernel, so the srdma:srdma_qp_destroy event,
 * fired when destroy is done with the QP, and the srdma:srdma_cqe events of b (tracefs, one
 * clock for all CPUs) tell the order. Each round destroys b after a different number of
 * receives.
 */
static void destroy_receiving(struct side *A, struct side *B)
{
	long late = 0, no_event = 0, raced = 0;
	char clock[64];

	read_trace_clock(clock, sizeof(clock));
	if (!clock[0] || access(TRACEFS "/events/srdma/srdma_qp_destroy/enable", W_OK) ||
	    tracefs_write("trace_clock", "global")) {
		ksft_test_result_skip("a QP destroyed while receiving: no srdma events\n");
		return;
	}
	for (int r = 0; r < STREAM_ROUNDS; r++) {
		int mid;
		long n = destroy_round(A, B, 8 + r * 16, &mid);

		if (n < 0)
			no_event++;
		else
			late += n;
		raced += mid;
	}
	tracefs_write("events/srdma/srdma_cqe/filter", "0");
	tracefs_write("events/srdma/srdma_qp_destroy/filter", "0");
	tracefs_write("trace", "");
	tracefs_write("trace_clock", clock);
	result(no_event == 0, "destroyed while receiving: each of %d destroys traced (%ld not)",
	       STREAM_ROUNDS, no_event);
	result(late == 0,
	       "no receive CQE written after destroy (%ld in %d rounds, %ld destroyed mid-stream)",
	       late, STREAM_ROUNDS, raced);
}

/*
 * One round of error_receiving: b moved to the error state after `after` of its receives
 * completed. Returns how many of b's receive completions break the rules: each of its
 * receives completes once, in the order they were posted, and none successfully after one
 * was flushed.
 */
static int error_round(struct side *A, struct side *B, int after)
{
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	static struct ibv_wc wc[STREAM_RECVS + 32];
	int got = 0, wrong = 0, flushed = 0;
	struct pair p;

	pair_up(A, B, &p);
	pair_stream(&p);
	for (int i = 0; got < after && i < 1000000; i++) {
		int n = ibv_poll_cq(p.cqb, 16, wc + got);

		got += n > 0 ? n : 0;
	}
	if (ibv_modify_qp(p.b, &err, IBV_QP_STATE)) {
		printf("Bail out! cannot move the QP to the error state (%s)\n", strerror(errno));
		exit(1);
	}
	pair_stop(&p);
	for (int idle = 0; idle < 200 && got < STREAM_RECVS + 16; idle++) {
		int n = ibv_poll_cq(p.cqb, 16, wc + got);

		if (n > 0) {
			got += n;
			idle = 0;
		} else {
			usleep(1000);
		}
	}
	for (int i = 0; i < got; i++) {
		int bad = wc[i].wr_id != (uint64_t)i ||
			  (flushed && wc[i].status == IBV_WC_SUCCESS);

		if (bad && !wrong)
			ksft_print_msg("completion %d of %d: wr_id %llu, status %d\n", i, got,
				       (unsigned long long)wc[i].wr_id, wc[i].status);
		wrong += bad;
		flushed |= wc[i].status != IBV_WC_SUCCESS;
	}
	wrong += abs(got - STREAM_RECVS);
	pair_free(&p);
	return wrong;
}

/*
 * b is moved to the error state while a's SENDs stream into its receives: a delivery under
 * way finishes before the flush, or not at all (its receive is flushed with the rest).
 */
static void error_receiving(struct side *A, struct side *B)
{
	int wrong = 0, rounds = 0;

	for (int r = 0; r < STREAM_ROUNDS; r++) {
		int n = error_round(A, B, 8 + r * 16);

		wrong += n;
		rounds += n > 0;
	}
	result(wrong == 0,
	       "moved to the error state while receiving: every receive completes once, in order, none successfully after a flush (%d wrong in %d of %d rounds)",
	       wrong, rounds, STREAM_ROUNDS);
}

#define UD_QKEY 0x11111111

/* Brings UD QP qp to RTS with Q_Key UD_QKEY. */
static int ud_ready(struct ibv_qp *qp)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = UD_QKEY };

	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	qa.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE))
		return -1;
	qa.qp_state = IBV_QPS_RTS;
	return ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* Sends len bytes of A's buffer, all v, from UD QP a through ah to QP qpn; a's status. */
static int ud_send(struct side *A, struct ibv_qp *a, struct ibv_ah *ah, uint32_t qpn,
		   unsigned char v, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)A->buf, .length = len, .lkey = A->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
				  .wr.ud = { .ah = ah, .remote_qpn = qpn,
					     .remote_qkey = UD_QKEY } }, *bad;
	struct ibv_wc wc;

	memset(A->buf, v, len);
	if (ibv_post_send(a, &wr, &bad))
		return -2;
	return next_wc(A->cq, 2000, &wc);
}

/*
 * UD QP b has one receive of 40 + 64 bytes (GRH area and payload): a datagram of 512 bytes
 * does not fit and is dropped, and b stays in RTS with its receive still posted, which the
 * next datagram of 64 bytes fills.
 */
static void datagram_too_long(struct side *A, struct side *B)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .dgid = B->gid, .sgid_index = A->gidx,
					   .hop_limit = 1 } };
	struct ibv_qp_attr qa;
	struct ibv_qp *a, *b;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	int st, state;

	ia.send_cq = A->cq;
	ia.recv_cq = A->cq;
	a = ibv_create_qp(A->pd, &ia);
	ia.send_cq = B->cq;
	ia.recv_cq = B->cq;
	b = ibv_create_qp(B->pd, &ia);
	ah = ibv_create_ah(A->pd, &aa);
	if (!a || !b || !ah || ud_ready(a) || ud_ready(b) || post_recv_one(b, B, 40 + 64)) {
		printf("Bail out! cannot set up the UD QPs (%s)\n", strerror(errno));
		exit(1);
	}
	memset(B->buf, 0, 40 + 512);
	st = ud_send(A, a, ah, b->qp_num, 0x71, 512);
	result(st == IBV_WC_SUCCESS, "a UD datagram of 512 bytes is sent (%d)", st);
	st = next_wc(B->cq, 300, &wc);
	state = ibv_query_qp(b, &qa, IBV_QP_STATE, &ia) ? -1 : (int)qa.qp_state;
	result(st == -1 && state == IBV_QPS_RTS && B->buf[40] == 0,
	       "into a receive of 64 bytes it is dropped: no completion (%d), QP in RTS (%d)", st,
	       state);
	st = ud_send(A, a, ah, b->qp_num, 0x72, 64);
	st = st == IBV_WC_SUCCESS ? next_wc(B->cq, 2000, &wc) : -3;
	result(st == IBV_WC_SUCCESS && wc.byte_len == 40 + 64 && wc.wr_id == 2 &&
	       B->buf[40] == 0x72 && B->buf[40 + 63] == 0x72,
	       "the receive takes the next datagram, of 64 bytes (%d, %u bytes)", st,
	       st == IBV_WC_SUCCESS ? wc.byte_len : 0);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_ah(ah);
}

/* A 64 MiB RDMA WRITE of a's, posted from a thread of its own. */
struct big_write {
	struct side *A;
	struct ibv_qp *a;
	uint32_t rkey;
	void *to;
	int status;
};

static void *big_write(void *arg)
{
	struct big_write *w = arg;
	struct ibv_wc wc;

	if (post_one(w->a, IBV_WR_RDMA_WRITE, w->A->mr->lkey, (uintptr_t)w->A->buf, BIG,
		     (uintptr_t)w->to, w->rkey))
		w->status = -2;
	else
		w->status = next_wc(w->A->cq, 60000, &wc);
	return NULL;
}

/*
 * b's buffer gets a second MR, which a's RDMA WRITE of 64 MiB targets; as soon as the first
 * bytes have landed the MR is deregistered. The copy moves front to back, so a last page still
 * clear when ibv_dereg_mr returns shows the copy was under way then: it must stay clear.
 */
static void dereg_under_write(struct side *A, struct side *B)
{
	struct big_write w = { .A = A, .to = B->buf };
	unsigned char *last = B->buf + BIG - 4096;
	int rounds = 0, under_way = 0, late = 0;
	struct ibv_wc wc;

	while (rounds < 8 && !under_way) {
		struct ibv_mr *mr = ibv_reg_mr(B->pd, B->buf, BIG, ACCESS);
		struct ibv_qp *a = side_qp(A, IBV_QPT_RC), *b = side_qp(B, IBV_QPT_RC);
		struct conn ca = { A->gidx }, cb = { B->gidx };
		pthread_t t;
		int clear;

		if (!mr || !a || !b || connect_qp(a, b->qp_num, &B->gid, ca) ||
		    connect_qp(b, a->qp_num, &A->gid, cb)) {
			printf("Bail out! cannot set up the MR and QPs (%s)\n", strerror(errno));
			exit(1);
		}
		rounds++;
		memset(A->buf, 0xa5, BIG);
		memset(B->buf, 0, BIG);
		w.a = a;
		w.rkey = mr->rkey;
		if (pthread_create(&t, NULL, big_write, &w)) {
			printf("Bail out! cannot start the writer\n");
			exit(1);
		}
		while (!__atomic_load_n(B->buf, __ATOMIC_RELAXED))
			;
		ibv_dereg_mr(mr);
		clear = !last[0] && !memcmp(last, last + 1, 4095);
		pthread_join(t, NULL);
		if (clear) {
			under_way = 1;
			late = last[0] || memcmp(last, last + 1, 4095);
		}
		ibv_destroy_qp(a);
		ibv_destroy_qp(b);
	}
	/* What the failed connections left in the CQs is not the next test's. */
	while (ibv_poll_cq(A->cq, 1, &wc) > 0 || ibv_poll_cq(B->cq, 1, &wc) > 0)
		;
	result(under_way, "an MR deregistered while a 64 MiB RDMA WRITE copied into it (%d rounds)",
	       rounds);
	result(under_way && !late && w.status != IBV_WC_SUCCESS,
	       "nothing is written after ibv_dereg_mr returns (last page %s, WRITE status %d)",
	       late ? "written" : "clear", w.status);
}

/* A QP's doorbell record: struct srdma_qp_db of include/uapi/rdma/srdma-abi.h. */
struct srdma_qp_db {
	uint32_t sq_pi, rq_pi, sq_ci, rq_ci;
};

/* The doorbell record of the QP that has posted n WQEs, all taken, and received none. */
static struct srdma_qp_db *find_qp_db(uint32_t n)
{
	FILE *f = fopen("/proc/self/maps", "r");
	struct srdma_qp_db *found = NULL;
	unsigned long lo, hi;
	char line[512];
	int seen = 0;

	while (f && fgets(line, sizeof(line), f)) {
		if (!strstr(line, "/dev/infiniband/uverbs") ||
		    sscanf(line, "%lx-%lx", &lo, &hi) != 2 || !strstr(line, "rw"))
			continue;
		for (unsigned long p = lo; p + sizeof(*found) <= hi; p += sizeof(*found)) {
			struct srdma_qp_db *db = (struct srdma_qp_db *)p;

			if (db->sq_pi == n && db->sq_ci == n && !db->rq_pi && !db->rq_ci) {
				found = db;
				seen++;
			}
		}
	}
	if (f)
		fclose(f);
	return seen == 1 ? found : NULL;
}

/*
 * Stores an SQ consumer index one behind the producer index in *db until *stop is set: one
 * WQE seemingly not taken, which leaves the process room to post.
 */
struct rewriter {
	struct srdma_qp_db *db;
	int stop;
};

static void *rewrite_sq_ci(void *arg)
{
	struct rewriter *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED))
		__atomic_store_n(&r->db->sq_ci,
				 __atomic_load_n(&r->db->sq_pi, __ATOMIC_RELAXED) - 1,
				 __ATOMIC_RELAXED);
	return NULL;
}

#define POLLER_WQES 37

/*
 * a has posted POLLER_WQES RDMA WRITEs, so its doorbell record can be told from the others by
 * its indices. A thread keeps storing the SQ consumer index one behind the producer index; one
 * more WRITE wakes the poller, which must still go to sleep once the queue is idle.
 */
static void poller_naps(struct side *A, struct side *B)
{
	struct ibv_qp *a = side_qp(A, IBV_QPT_RC), *b = side_qp(B, IBV_QPT_RC);
	struct rewriter r = { 0 };
	long long before, after;
	struct ibv_wc wc;
	pthread_t t;
	int st = 0;

	if (!a || !b || connect_qp(a, b->qp_num, &B->gid, (struct conn){ A->gidx }) ||
	    connect_qp(b, a->qp_num, &A->gid, (struct conn){ B->gidx })) {
		printf("Bail out! cannot connect (%s)\n", strerror(errno));
		exit(1);
	}
	for (int i = 0; i < POLLER_WQES && !st; i++) {
		st = post_one(a, IBV_WR_RDMA_WRITE, A->mr->lkey, (uintptr_t)A->buf, 8,
			      (uintptr_t)B->buf, B->mr->rkey);
		st = st ? -2 : next_wc(A->cq, 2000, &wc);
	}
	r.db = find_qp_db(POLLER_WQES);
	result(!st && r.db, "a's %d WRITEs complete and its doorbell record is found (%d)",
	       POLLER_WQES, st);
	if (st || !r.db)
		return;
	if (pthread_create(&t, NULL, rewrite_sq_ci, &r)) {
		printf("Bail out! cannot start the rewriter\n");
		exit(1);
	}
	before = port_counter(ibv_get_device_name(A->ctx->device), "poller_sleeps");
	st = post_one(a, IBV_WR_RDMA_WRITE, A->mr->lkey, (uintptr_t)A->buf, 8,
		      (uintptr_t)B->buf, B->mr->rkey);
	st = st ? -2 : next_wc(A->cq, 2000, &wc);
	sleep(1);
	after = port_counter(ibv_get_device_name(A->ctx->device), "poller_sleeps");
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	result(st == IBV_WC_SUCCESS && before >= 0 && after > before,
	       "with its SQ consumer index rewritten, the poller still goes to sleep (WRITE %d, poller_sleeps %lld -> %lld)",
	       st, before, after);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
}

#define PIECES 8
#define MESSAGES 4

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Binds the calling thread to the CPUs of set. */
static int pin(cpu_set_t *set)
{
	return pthread_setaffinity_np(pthread_self(), sizeof(*set), set);
}

/* A task that wants the CPU every millisecond, and the longest it went without it. */
struct ticker {
	cpu_set_t *cpu;
	int stop;
	double worst;
};

static void *tick(void *arg)
{
	struct ticker *t = arg;
	double last, now;

	if (pin(t->cpu))
		return NULL;
	last = now_ms();
	while (!__atomic_load_n(&t->stop, __ATOMIC_RELAXED)) {
		usleep(1000);
		now = now_ms();
		if (now - last > t->worst)
			t->worst = now - last;
		last = now;
	}
	return NULL;
}

/*
 * Four SENDs of 512 MiB each (eight SGEs over A's 64 MiB buffer) into four receives of eight
 * SGEs over B's, posted with one ibv_post_send on CPU 0 while the ticker wants CPU 0 too. The
 * copy must give the CPU up when the scheduler asks (the test kernel does not preempt the
 * kernel), and the post must return before all of it is done.
 */
static void fair_share(struct side *A, struct side *B)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = MESSAGES, .max_recv_wr = MESSAGES,
			 .max_send_sge = PIECES, .max_recv_sge = PIECES },
	};
	struct ibv_sge sa[PIECES], sb[PIECES];
	struct ibv_send_wr s[MESSAGES], *bad_s;
	struct ibv_recv_wr r[MESSAGES], *bad_r;
	cpu_set_t cpu0, all;
	struct ticker t = { .cpu = &cpu0 };
	struct ibv_qp *a, *b;
	int sent = 0, received = 0, rc;
	double t0, t1, t2;
	struct ibv_wc wc;
	pthread_t th;

	ia.send_cq = A->cq;
	ia.recv_cq = A->cq;
	a = ibv_create_qp(A->pd, &ia);
	ia.send_cq = B->cq;
	ia.recv_cq = B->cq;
	b = ibv_create_qp(B->pd, &ia);
	if (!a || !b || connect_qp(a, b->qp_num, &B->gid, (struct conn){ A->gidx }) ||
	    connect_qp(b, a->qp_num, &A->gid, (struct conn){ B->gidx })) {
		printf("Bail out! cannot connect (%s)\n", strerror(errno));
		exit(1);
	}
	for (int i = 0; i < PIECES; i++) {
		sa[i] = (struct ibv_sge){ (uintptr_t)A->buf, BIG, A->mr->lkey };
		sb[i] = (struct ibv_sge){ (uintptr_t)B->buf, BIG, B->mr->lkey };
	}
	for (int i = 0; i < MESSAGES; i++) {
		r[i] = (struct ibv_recv_wr){ .wr_id = i, .sg_list = sb, .num_sge = PIECES,
					     .next = i + 1 < MESSAGES ? &r[i + 1] : NULL };
		s[i] = (struct ibv_send_wr){ .wr_id = i, .sg_list = sa, .num_sge = PIECES,
					     .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
					     .next = i + 1 < MESSAGES ? &s[i + 1] : NULL };
	}
	if (ibv_post_recv(b, r, &bad_r)) {
		printf("Bail out! cannot post the receives (%s)\n", strerror(errno));
		exit(1);
	}
	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	if (pthread_getaffinity_np(pthread_self(), sizeof(all), &all) || pin(&cpu0) ||
	    pthread_create(&th, NULL, tick, &t)) {
		printf("Bail out! cannot share CPU 0 with a second thread\n");
		exit(1);
	}
	usleep(50000);
	t0 = now_ms();
	rc = ibv_post_send(a, s, &bad_s);
	t1 = now_ms();
	while (!rc && sent < MESSAGES && next_wc(A->cq, 60000, &wc) == IBV_WC_SUCCESS)
		sent++;
	t2 = now_ms();
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	pin(&all);
	while (received < MESSAGES && next_wc(B->cq, 2000, &wc) == IBV_WC_SUCCESS &&
	       wc.byte_len == PIECES * BIG)
		received++;
	result(!rc && sent == MESSAGES && received == MESSAGES,
	       "%d SENDs of %u MiB in one post arrive (%d sent, %d received, %.0f ms)", MESSAGES,
	       PIECES * (BIG >> 20), sent, received, t2 - t0);
	result(t.worst > 0 && t.worst < 100,
	       "a task on the same CPU runs while the kernel copies (it waited at most %.1f ms)",
	       t.worst);
	result(t1 - t0 < (t2 - t0) / 2,
	       "ibv_post_send returns before the copy is done (%.0f ms of %.0f ms)", t1 - t0,
	       t2 - t0);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
}

int main(int argc, char **argv)
{
	struct side A, B;
	struct ibv_qp *a, *b;
	struct conn ca, cb;
	struct ibv_wc wc;
	int st;

	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "poller"))) {
		fprintf(stderr, "usage: %s DEV_A DEV_B [poller]\n", argv[0]);
		return 2;
	}
	ksft_print_header();
	if (argc == 4) {
		open_side(&A, argv[1], 1 << 20, ACCESS);
		open_side(&B, argv[2], 1 << 20, ACCESS);
		poller_naps(&A, &B);
		tap_done();
	}
	open_side(&A, argv[1], BIG, ACCESS);
	open_side(&B, argv[2], BIG, ACCESS);
	a = side_qp(&A, IBV_QPT_RC);
	b = side_qp(&B, IBV_QPT_RC);
	if (!a || !b || connect_qp(a, b->qp_num, &B.gid, (struct conn){ A.gidx }) ||
	    connect_qp(b, a->qp_num, &A.gid, (struct conn){ B.gidx })) {
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

	/*
	 * a's SEND finds no receive at b and waits for RNR retries (7: forever); destroying a
	 * must end them.
	 */
	a = side_qp(&A, IBV_QPT_RC);
	b = side_qp(&B, IBV_QPT_RC);
	ca = (struct conn){ A.gidx, .rnr_retry = 7 };
	cb = (struct conn){ B.gidx };
	if (!a || !b || connect_qp(a, b->qp_num, &B.gid, ca) ||
	    connect_qp(b, a->qp_num, &A.gid, cb)) {
		printf("Bail out! cannot connect (%s)\n", strerror(errno));
		return 1;
	}
	memset(A.buf, 0x42, 64);
	memset(B.buf, 0, 64);
	post_one(a, IBV_WR_SEND, A.mr->lkey, (uintptr_t)A.buf, 64, 0, 0);
	usleep(20000);
	result(next_wc(A.cq, 1, &wc) == -1, "an RNR-refused SEND keeps waiting for a receive");
	result(!ibv_destroy_qp(a), "ibv_destroy_qp with the RNR retry pending");
	post_recv_one(b, &B, 64);
	st = next_wc(B.cq, 300, &wc);
	result(st == -1 && B.buf[0] == 0,
	       "after destroy nothing of the QP runs: its peer's new receive stays empty (%d)", st);
	result(next_wc(A.cq, 1, &wc) == -1, "no completion of the destroyed QP appears");
	ibv_destroy_qp(b);

	destinations(&A, &B);
	dereg_under_write(&A, &B);
	destroy_receiving(&A, &B);
	error_receiving(&A, &B);
	datagram_too_long(&A, &B);
	fair_share(&A, &B);
	tap_done();
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * srdma and another RoCEv2 device (rxe) on one wire, driven from one process: an RC QP on each,
 * connected through the network, so that a test can steer both ends. Prints TAP.
 *  - messages of 1 MiB and 8 MiB: SEND, RDMA WRITE and RDMA READ in both directions, random
 *    bytes compared;
 *  - a WQE posted while srdma's completer sends an 8 MiB message returns at once, and
 *    completes after it;
 *  - RDMA WRITEs each posted as the one before completed, and RDMA WRITEs posted by four
 *    threads at once on one QP: each completes, in the order its thread posted it;
 *  - an RDMA WRITE on a second QP completes while the first QP sends 8 MiB;
 *  - a QP reused after RESET while its first connection still had a WQE in flight: the second
 *    connection runs from a clean start, and nothing of the first comes back;
 *  - a QP destroyed with 128 MiB of RDMA WRITEs queued and in flight: destroy returns, nothing
 *    of the destroyed QP completes, and the devices go on talking;
 *  - a QP destroyed while the peer's SENDs or RDMA WRITEs stream into it: its packets are
 *    dropped, so the peer is never NAKed, and no receive of it completes;
 *  - RDMA ATOMIC WRITEs (ibv_wr_atomic_write) both ways: 64 in one batch, more than the
 *    responder resources of the connection, each landing whole, and one to an unaligned
 *    address refused;
 *  - inline SENDs and RDMA WRITEs both ways, a batch of each, their source buffer overwritten
 *    as soon as they are posted: what arrives, retransmissions included, is what was posted;
 *  - SENDs to a QP without receives: srdma waits out each RNR NAK's timer, also when a NAK
 *    for the PSN sequence follows it, and the SENDs land once receives are posted;
 *  - an RDMA WRITE with immediate data of four packets from the peer to an srdma QP without
 *    receives: srdma NAKs its last packet RNR and takes it when it comes again, once a
 *    receive is posted.
 *
 *   srdma_wire SRDMA_DEV SRDMA_GID_INDEX PEER_DEV PEER_GID_INDEX [lossy [rxe] | longread]
 *
 * With "longread" it only reads 4 MiB from the peer (path MTU 1024: 4096 responses), for a
 * link that loses a few of them: each loss costs the rest of the READ again.
 *
 * With "lossy" (a link that loses, duplicates, reorders or corrupts packets) it sends only
 * 256 KiB of each opcode each way, the inline batches, and the batches of ATOMIC WRITEs
 * (whose duplicates the responders answer without writing again): both QPs stay until both
 * ends have completed, so that an acknowledgment lost at the end is sent again, where a
 * program that exits at its last completion leaves its peer retrying into nothing. "rxe" says
 * the peer is rxe, whose requester (Linux 6.12, req_retry()) sends a retried ATOMIC WRITE with
 * a RETH virtual address of 0, which any responder refuses: its lossy batch is skipped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "srdma_tap.h"

#define BIG (8 << 20)
/* Each end's buffer: what it sends or exposes, then where it receives (and a guard byte). */
#define BUF (2 * BIG + 4096)
/* A QP number the peer device does not have: its packets vanish there. */
#define NO_QPN 0xfffff0
/* Seconds a message may take: the debug and KASAN kernels are slow. */
#define WAIT_S 240
/* Rounds of destroy_receiving(), and how long each waits for the peer to give up. */
#define DESTROY_ROUNDS 4
#define DESTROY_WAIT_S 10

struct end {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *buf;
	union ibv_gid gid;
	int gidx;
};

static struct end ends[2];

static int open_end(struct end *e, const char *name, int gidx)
{
	e->name = name;
	e->gidx = gidx;
	e->ctx = open_dev(name);
	if (!e->ctx)
		return -1;
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 256, NULL, NULL, 0);
	e->buf = aligned_alloc(4096, BUF);
	if (!e->pd || !e->cq || !e->buf || ibv_query_gid(e->ctx, 1, gidx, &e->gid))
		return -1;
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						       IBV_ACCESS_REMOTE_READ);
	return e->mr ? 0 : -1;
}

static struct ibv_qp *rc_qp(struct end *e)
{
	struct ibv_qp_init_attr ia = { .send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 64, .max_recv_wr = 64,
						.max_send_sge = 1, .max_recv_sge = 1 } };

	return ibv_create_qp(e->pd, &ia);
}

/*
 * Connects qp of end e to QP dest_qpn at peer's GID, receiving from rq_psn and sending from
 * sq_psn; timeout is the local ACK timeout exponent.
 */
static int connect_qp(struct ibv_qp *qp, struct end *e, struct end *peer, uint32_t dest_qpn,
		      uint32_t rq_psn, uint32_t sq_psn, uint8_t timeout)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS))
		return -1;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				  .dest_qp_num = dest_qpn, .rq_psn = rq_psn,
				  .max_dest_rd_atomic = 4, .min_rnr_timer = 1,
				  .ah_attr = { .is_global = 1, .port_num = 1,
					       .grh = { .dgid = peer->gid, .sgid_index = e->gidx,
							.hop_limit = 64 } } };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				      IBV_QP_MIN_RNR_TIMER))
		return -1;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = timeout, .retry_cnt = 7,
				  .rnr_retry = 7, .sq_psn = sq_psn, .max_rd_atomic = 4 };
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					 IBV_QP_MAX_QP_RD_ATOMIC);
}

/*
 * An RC QP on r (*s) and one on d (*p), connected to each other: *s receives from rq_psn and
 * sends from sq_psn, *p the other way round. On failure neither is left (both NULL), and errno
 * is that of the step that failed.
 */
static int rc_pair(struct end *r, struct end *d, uint32_t rq_psn, uint32_t sq_psn,
		   struct ibv_qp **s, struct ibv_qp **p)
{
	int err;

	*s = rc_qp(r);
	*p = rc_qp(d);
	if (*s && *p && !connect_qp(*s, r, d, (*p)->qp_num, rq_psn, sq_psn, 14) &&
	    !connect_qp(*p, d, r, (*s)->qp_num, sq_psn, rq_psn, 14))
		return 0;
	err = errno;
	if (*s)
		ibv_destroy_qp(*s);
	if (*p)
		ibv_destroy_qp(*p);
	*s = *p = NULL;
	errno = err;
	return -1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The first completion wait_wc() counted as another, for the diagnostics. */
static struct ibv_wc first_other;

/*
 * Polls e's CQ for the completion of wr_id, for up to secs seconds; every other completion
 * seen on the way counts in *others. Returns 1 and the completion in *wc if it came.
 */
static int wait_wc(struct end *e, uint64_t wr_id, double secs, struct ibv_wc *wc, int *others)
{
	double end = now() + secs;

	while (now() < end) {
		int n = ibv_poll_cq(e->cq, 1, wc);

		if (n < 0)
			return 0;
		if (n == 0) {
			usleep(200);
			continue;
		}
		if (wc->wr_id == wr_id)
			return 1;
		if (others && !(*others)++)
			first_other = *wc;
	}
	return 0;
}

static void fill(char *p, size_t n)
{
	for (size_t i = 0; i < n; i += sizeof(int)) {
		int r = rand();

		memcpy(p + i, &r, n - i < sizeof(r) ? n - i : sizeof(r));
	}
}

static int post_recv(struct ibv_qp *qp, struct end *e, uint64_t wr_id, char *at, size_t len)
{
	struct ibv_sge s = { (uintptr_t)at, len, e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int post_send(struct ibv_qp *qp, struct end *e, enum ibv_wr_opcode op, uint64_t wr_id,
		     char *at, size_t len, uint64_t raddr, uint32_t rkey, unsigned int flags)
{
	struct ibv_sge s = { (uintptr_t)at, len, e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1, .opcode = op,
				  .send_flags = flags,
				  .wr.rdma = { .remote_addr = raddr, .rkey = rkey } },
			   *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/*
 * One message of len bytes of opcode op from requester r (QP rq) to responder d (QP dq):
 * SEND into a receive, WRITE into d's receive half, or READ of d's first half into r's
 * receive half. The bytes are compared where they land.
 */
static void transfer(struct end *r, struct ibv_qp *rq, struct end *d, struct ibv_qp *dq,
		     enum ibv_wr_opcode op, size_t len)
{
	const char *what = op == IBV_WR_SEND ? "SEND" : op == IBV_WR_RDMA_WRITE ? "WRITE" : "READ";
	char *src = op == IBV_WR_RDMA_READ ? d->buf : r->buf;
	char *dst = op == IBV_WR_RDMA_READ ? r->buf + BIG : d->buf + BIG;
	struct ibv_wc swc = {}, rwc = {};
	int ok, got_r = 1;
	double t0 = now();

	fill(src, len);
	memset(dst, 0, len + 1);
	ok = !(op == IBV_WR_SEND && post_recv(dq, d, 2, d->buf + BIG, len));
	ok = ok && !post_send(rq, r, op, 1, op == IBV_WR_RDMA_READ ? r->buf + BIG : r->buf, len,
			      (uintptr_t)(op == IBV_WR_RDMA_READ ? d->buf : d->buf + BIG),
			      d->mr->rkey, IBV_SEND_SIGNALED);
	ok = ok && wait_wc(r, 1, WAIT_S, &swc, NULL) && swc.status == IBV_WC_SUCCESS;
	if (ok && op == IBV_WR_SEND) {
		got_r = wait_wc(d, 2, WAIT_S, &rwc, NULL) && rwc.status == IBV_WC_SUCCESS &&
			rwc.byte_len == len;
		ok = got_r;
	}
	ok = ok && !memcmp(src, dst, len) && dst[len] == 0;
	result(ok, "%s of %zu KiB, %s -> %s: the bytes arrived intact (%.1f s)", what, len >> 10,
	       op == IBV_WR_RDMA_READ ? d->name : r->name,
	       op == IBV_WR_RDMA_READ ? r->name : d->name, now() - t0);
	if (!ok)
		printf("# requester status %s, receive %s (status %s, %u bytes)\n",
		       ibv_wc_status_str(swc.status), got_r ? "seen" : "missing",
		       ibv_wc_status_str(rwc.status), rwc.byte_len);
}

/* A message of each length in lens[0..n) each way, each opcode. */
static void test_messages(const size_t *lens, unsigned int n)
{
	enum ibv_wr_opcode ops[] = { IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ };
	struct ibv_qp *s, *p;

	if (rc_pair(&ends[0], &ends[1], 100, 200, &s, &p)) {
		result(0, "messages: an RC QP on each device, connected");
		return;
	}
	for (unsigned int l = 0; l < n; l++)
		for (unsigned int o = 0; o < 3; o++) {
			transfer(&ends[0], s, &ends[1], p, ops[o], lens[l]);
			transfer(&ends[1], p, &ends[0], s, ops[o], lens[l]);
		}
	ibv_destroy_qp(s);
	ibv_destroy_qp(p);
}

/*
 * Posts, in one call from r's QP s, an RDMA WRITE of 1 MiB (wr_id 1), which fills the window,
 * and one of 8 MiB (wr_id 2) behind it, both into d's receive half, and waits for the first to
 * complete: the 8 MiB are then under way, sent by the engine as acknowledgments come back.
 */
static int post_long(struct ibv_qp *s, struct end *r, struct end *d)
{
	struct ibv_sge sa = { (uintptr_t)r->buf, 1 << 20, r->mr->lkey };
	struct ibv_sge sb = { (uintptr_t)r->buf, BIG, r->mr->lkey };
	struct ibv_send_wr b = { .wr_id = 2, .sg_list = &sb, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { (uintptr_t)(d->buf + BIG), d->mr->rkey } };
	struct ibv_send_wr a = b, *bad;
	struct ibv_wc wc = {};

	a.wr_id = 1;
	a.sg_list = &sa;
	a.next = &b;
	return !ibv_post_send(s, &a, &bad) && wait_wc(r, 1, WAIT_S, &wc, NULL) &&
	       wc.status == IBV_WC_SUCCESS;
}

/*
 * A WQE posted while another context works through the send queue: srdma's completer sends an
 * 8 MiB RDMA WRITE, queued behind a 1 MiB one that filled the window, once the first is
 * acknowledged. A 1-byte WRITE posted meanwhile returns at once, not when the 8 MiB are out,
 * and completes after them.
 */
static void post_while_sending(void)
{
	struct end *r = &ends[0], *d = &ends[1];
	struct ibv_qp *s, *p;
	struct ibv_wc wc = {};
	double t0, posted = 0, rest = 0;
	int ok;

	if (rc_pair(r, d, 100, 200, &s, &p)) {
		result(0, "post while sending: an RC QP on each device, connected");
		return;
	}
	ok = post_long(s, r, d);
	t0 = now();
	ok = ok && !post_send(s, r, IBV_WR_RDMA_WRITE, 3, r->buf, 1, (uintptr_t)(d->buf + BIG),
			      d->mr->rkey, IBV_SEND_SIGNALED);
	posted = now() - t0;
	ok = ok && wait_wc(r, 2, WAIT_S, &wc, NULL) && wc.status == IBV_WC_SUCCESS;
	rest = now() - t0;
	ok = ok && wait_wc(r, 3, WAIT_S, &wc, NULL) && wc.status == IBV_WC_SUCCESS;
	result(ok && posted < rest / 4,
	       "a WRITE posted while srdma's completer sends 8 MiB returns at once (%.3f s of %.2f s) and completes",
	       posted, rest);
	ibv_destroy_qp(s);
	ibv_destroy_qp(p);
}

/* The WRITEs of post_after_completion(). */
#define CHAIN_N 3000

/*
 * RDMA WRITEs from r to d, each posted as soon as the one before completes: the receive thread
 * that wrote that completion may still be running the send queue, so the post finds it held
 * and leaves its WQE to that thread. None may be left behind: with nothing else in flight, no
 * timer would ever send it.
 */
static void post_after_completion(struct end *r, struct end *d)
{
	struct ibv_qp *s, *p;
	double slowest = 0;
	int done = 0, ok = 1;

	if (rc_pair(r, d, 500, 600, &s, &p)) {
		result(0, "post after completion: an RC QP on each device, connected");
		return;
	}
	for (int i = 0; ok && i < CHAIN_N; i++) {
		double t0 = now(), end = t0 + 5;
		struct ibv_wc wc = {};
		int n = 0;

		r->buf[0] = (char)i;
		ok = !post_send(s, r, IBV_WR_RDMA_WRITE, i, r->buf, 1, (uintptr_t)(d->buf + BIG),
				d->mr->rkey, IBV_SEND_SIGNALED);
		while (ok && (n = ibv_poll_cq(r->cq, 1, &wc)) == 0 && now() < end)
			;
		ok = ok && n == 1 && wc.wr_id == (uint64_t)i && wc.status == IBV_WC_SUCCESS;
		done += ok;
		if (now() - t0 > slowest)
			slowest = now() - t0;
	}
	result(ok && done == CHAIN_N && d->buf[BIG] == (char)(CHAIN_N - 1),
	       "%d WRITEs, %s -> %s, each posted as the one before completed: %d completed, the last landed (slowest %.3f s)",
	       CHAIN_N, r->name, d->name, done, slowest);
	ibv_destroy_qp(s);
	ibv_destroy_qp(p);
}

/* The threads of posted_from_threads(), the WRITEs each posts and how many it keeps out. */
#define POSTERS 4
#define POSTER_N 500
#define POSTER_OUT 8

struct poster {
	pthread_t t;
	struct ibv_qp *qp;
	struct end *r, *d;
	int id;
	/* Completions of the thread's WRITEs, counted by the polling thread. */
	int done;
	/* Set by the polling thread when it gives up. */
	int stop;
	int failed;
};

/* Posts POSTER_N one-byte WRITEs, at most POSTER_OUT of them uncompleted at a time. */
static void *poster(void *arg)
{
	struct poster *p = arg;

	for (int i = 0; i < POSTER_N; i++) {
		while (i - __atomic_load_n(&p->done, __ATOMIC_ACQUIRE) >= POSTER_OUT) {
			if (__atomic_load_n(&p->stop, __ATOMIC_RELAXED)) {
				p->failed = 1;
				return NULL;
			}
		}
		if (post_send(p->qp, p->r, IBV_WR_RDMA_WRITE, (uint64_t)p->id << 32 | i,
			      p->r->buf + p->id, 1, (uintptr_t)(p->d->buf + BIG + p->id),
			      p->d->mr->rkey, IBV_SEND_SIGNALED)) {
			p->failed = 1;
			return NULL;
		}
	}
	return NULL;
}

/*
 * RDMA WRITEs from r to d posted by POSTERS threads at once on one QP, while this thread polls
 * the completions: the threads' posts interleave in the send queue, and their doorbells may
 * find it held by the receive thread that runs it for each acknowledgment. None may be left
 * behind: a thread whose WQEs stop completing stops posting, and with nothing else in flight
 * no timer would send them. Each thread's completions come in the order it posted.
 */
static void posted_from_threads(struct end *r, struct end *d)
{
	struct poster p[POSTERS] = {};
	struct ibv_qp *s, *q;
	double last, stall = 0;
	int started = 0, total = 0, bad = 0, landed = 1;

	if (rc_pair(r, d, 700, 800, &s, &q)) {
		result(0, "posted from threads: an RC QP on each device, connected");
		return;
	}
	for (int i = 0; i < POSTERS; i++) {
		r->buf[i] = (char)(0x40 + i);
		d->buf[BIG + i] = 0;
		p[i] = (struct poster){ .qp = s, .r = r, .d = d, .id = i };
		started += !pthread_create(&p[i].t, NULL, poster, &p[i]);
		if (started <= i)
			break;
	}
	last = now();
	while (started == POSTERS && total < POSTERS * POSTER_N && now() - last < 5) {
		struct ibv_wc wc;
		unsigned int id;

		if (ibv_poll_cq(r->cq, 1, &wc) != 1)
			continue;
		if (now() - last > stall)
			stall = now() - last;
		last = now();
		id = wc.wr_id >> 32;
		if (wc.status != IBV_WC_SUCCESS || id >= POSTERS ||
		    (uint32_t)wc.wr_id != (uint32_t)p[id].done) {
			bad++;
			break;
		}
		__atomic_store_n(&p[id].done, p[id].done + 1, __ATOMIC_RELEASE);
		total++;
	}
	for (int i = 0; i < POSTERS; i++)
		__atomic_store_n(&p[i].stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < started; i++) {
		pthread_join(p[i].t, NULL);
		bad += p[i].failed;
		landed &= d->buf[BIG + i] == (char)(0x40 + i);
	}
	result(started == POSTERS && total == POSTERS * POSTER_N && !bad && landed,
	       "%d WRITEs, %s -> %s, posted by %d threads at once on one QP: %d completed in each thread's order, all landed (longest wait %.3f s)",
	       POSTERS * POSTER_N, r->name, d->name, POSTERS, total, stall);
	ibv_destroy_qp(s);
	ibv_destroy_qp(q);
}

/*
 * A long message and another QP's short one from the same device: the long one leaves as
 * the window of unacknowledged packets allows, so the device goes on taking other QPs'
 * packets (an acknowledgment here) while it sends.
 */
static void short_beside_long(void)
{
	struct end *r = &ends[0], *d = &ends[1];
	struct ibv_qp *s, *p, *s2, *p2;
	struct ibv_wc wc = {};
	double t0, end, small = 0, big = 0;
	int ok, bad_wc = 0;

	if (rc_pair(r, d, 100, 200, &s, &p) || rc_pair(r, d, 300, 400, &s2, &p2)) {
		result(0, "short beside long: two RC QPs on each device, connected");
		if (s) {
			ibv_destroy_qp(s);
			ibv_destroy_qp(p);
		}
		return;
	}
	ok = post_long(s, r, d);
	t0 = now();
	ok = ok && !post_send(s2, r, IBV_WR_RDMA_WRITE, 3, r->buf, 1, (uintptr_t)(d->buf + BIG),
			      d->mr->rkey, IBV_SEND_SIGNALED);
	end = t0 + WAIT_S;
	while (ok && (!small || !big) && now() < end) {
		if (ibv_poll_cq(r->cq, 1, &wc) != 1)
			continue;
		bad_wc += wc.status != IBV_WC_SUCCESS;
		if (wc.wr_id == 3)
			small = now() - t0;
		else if (wc.wr_id == 2)
			big = now() - t0;
	}
	result(ok && small && big && !bad_wc && small < big / 4,
	       "a WRITE on a second QP completes while the first sends 8 MiB (%.3f s of %.2f s)",
	       small, big);
	ibv_destroy_qp(s);
	ibv_destroy_qp(p);
	ibv_destroy_qp(s2);
	ibv_destroy_qp(p2);
}

/* The inline batches: messages of each batch, and the slot each takes in a buffer. */
#define INL_N 32
#define INL_MAX 256

/*
 * A batch of INL_N inline messages of opcode op (SEND or RDMA WRITE), of 1 to INL_MAX bytes,
 * from requester r (QP rq) to responder d (QP dq). Each source is overwritten once it is
 * posted, as inline allows: the device must send what the WQE holds, also when it sends it
 * again after a loss.
 */
static void inline_batch(struct end *r, struct ibv_qp *rq, struct end *d, struct ibv_qp *dq,
			 enum ibv_wr_opcode op)
{
	const char *what = op == IBV_WR_SEND ? "SEND" : "WRITE";
	char *want = malloc(INL_N * INL_MAX), *dst = d->buf + BIG;
	int sent = 0, recvd = 0, bad = 0, ok = !!want;
	double end = now() + WAIT_S;

	memset(dst, 0, INL_N * INL_MAX);
	for (int i = 0; ok && i < INL_N; i++) {
		size_t len = 1 + (i * 37) % INL_MAX;
		char *src = r->buf + i * INL_MAX;

		fill(src, len);
		memcpy(want + i * INL_MAX, src, len);
		if (op == IBV_WR_SEND)
			ok = !post_recv(dq, d, 100 + i, dst + i * INL_MAX, INL_MAX);
		ok = ok && !post_send(rq, r, op, i, src, len, (uintptr_t)(dst + i * INL_MAX),
				      d->mr->rkey, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
		memset(src, 0xa5, len);
	}
	while (ok && (sent < INL_N || (op == IBV_WR_SEND && recvd < INL_N)) && now() < end) {
		struct ibv_wc wc;

		if (ibv_poll_cq(r->cq, 1, &wc) == 1 && wc.qp_num == rq->qp_num) {
			sent++;
			bad += wc.status != IBV_WC_SUCCESS;
		}
		if (op == IBV_WR_SEND && ibv_poll_cq(d->cq, 1, &wc) == 1 &&
		    wc.qp_num == dq->qp_num) {
			recvd++;
			bad += wc.status != IBV_WC_SUCCESS ||
			       wc.byte_len != 1 + (wc.wr_id - 100) * 37 % INL_MAX;
		}
	}
	for (int i = 0; ok && i < INL_N; i++)
		bad += !!memcmp(dst + i * INL_MAX, want + i * INL_MAX, 1 + (i * 37) % INL_MAX);
	result(ok && sent == INL_N && (op != IBV_WR_SEND || recvd == INL_N) && !bad,
	       "%d inline %ss, %s -> %s: what was posted arrived, the source reused at once",
	       INL_N, what, r->name, d->name);
	if (!ok || bad)
		printf("# posted %s, %d of %d sent, %d received, %d bad\n", ok ? "all" : "not all",
		       sent, INL_N, recvd, bad);
	free(want);
}

/* The inline batches each way, on QPs that take INL_MAX bytes inline. */
static void inline_messages(void)
{
	struct ibv_qp *q[2];

	for (int i = 0; i < 2; i++) {
		struct ibv_qp_init_attr ia = { .send_cq = ends[i].cq, .recv_cq = ends[i].cq,
					       .qp_type = IBV_QPT_RC,
					       .cap = { .max_send_wr = 64, .max_recv_wr = 64,
							.max_send_sge = 1, .max_recv_sge = 1,
							.max_inline_data = INL_MAX } };

		q[i] = ibv_create_qp(ends[i].pd, &ia);
	}
	if (!q[0] || !q[1] ||
	    connect_qp(q[0], &ends[0], &ends[1], q[1]->qp_num, 300, 400, 14) ||
	    connect_qp(q[1], &ends[1], &ends[0], q[0]->qp_num, 400, 300, 14)) {
		result(0, "inline: an RC QP on each device taking %d bytes inline, connected",
		       INL_MAX);
		return;
	}
	for (int op = 0; op < 2; op++)
		for (int i = 0; i < 2; i++)
			inline_batch(&ends[i], q[i], &ends[!i], q[!i],
				     op ? IBV_WR_RDMA_WRITE : IBV_WR_SEND);
	ibv_destroy_qp(q[0]);
	ibv_destroy_qp(q[1]);
}

/*
 * An srdma QP sends to a QP number the peer does not have (the packets vanish, the WQE stays
 * in flight), is reset, and is connected again to a real QP of the peer with other PSNs: the
 * new SEND arrives, completes under its own wr_id, and the first WQE never completes.
 */
static void reuse_after_reset(void)
{
	struct end *s = &ends[0], *p = &ends[1];
	struct ibv_qp *sq = rc_qp(s), *pq = rc_qp(p);
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;
	int others = 0, ok;

	/* timeout 18: about a second before the first retransmission. */
	if (!sq || !pq || connect_qp(sq, s, p, NO_QPN, 0, 0x123456, 18)) {
		result(0, "reset: an srdma QP connected to a QP number nobody has");
		return;
	}
	fill(s->buf, 4096);
	ok = !post_send(sq, s, IBV_WR_SEND, 10, s->buf, 4096, 0, 0, IBV_SEND_SIGNALED);
	usleep(200 * 1000);
	ok = ok && !ibv_modify_qp(sq, &reset, IBV_QP_STATE);
	result(ok, "reset: a QP with a SEND in flight to nowhere moves to RESET");
	ok = !connect_qp(sq, s, p, pq->qp_num, 0x777, 0x10, 14) &&
	     !connect_qp(pq, p, s, sq->qp_num, 0x10, 0x777, 14);
	result(ok, "reset: the same QP connected again, to a real peer QP, other PSNs");
	if (!ok)
		return;
	fill(s->buf, 3000);
	memset(p->buf + BIG, 0, 3001);
	ok = !post_recv(pq, p, 21, p->buf + BIG, 4096) &&
	     !post_send(sq, s, IBV_WR_SEND, 11, s->buf, 3000, 0, 0, IBV_SEND_SIGNALED);
	ok = ok && wait_wc(s, 11, 30, &wc, &others) && wc.status == IBV_WC_SUCCESS;
	result(ok, "reset: the second connection's SEND completes (status %s)",
	       ok ? "success" : ibv_wc_status_str(wc.status));
	ok = wait_wc(p, 21, 30, &wc, NULL) && wc.status == IBV_WC_SUCCESS && wc.byte_len == 3000 &&
	     !memcmp(s->buf, p->buf + BIG, 3000) && p->buf[BIG + 3000] == 0;
	result(ok, "reset: the peer received exactly the second SEND's bytes");
	/* Past the first connection's retransmission timeout: nothing of it may appear. */
	sleep(2);
	while (ibv_poll_cq(s->cq, 1, &wc) > 0)
		others++;
	result(others == 0, "reset: the WQE of the first connection never completed (%d seen)",
	       others);
	ibv_destroy_qp(sq);
	ibv_destroy_qp(pq);
}

/*
 * An srdma QP destroyed with 128 MiB of RDMA WRITEs queued and in flight (only the last one
 * signaled, so that no completion can be due before the destroy): destroy returns, nothing of
 * the QP completes afterwards, and the peer's device still talks to a new srdma QP.
 */
static void destroy_in_flight(void)
{
	struct end *s = &ends[0], *p = &ends[1];
	struct ibv_qp *sq, *pq;
	struct ibv_wc wc;
	int ok = 1, n = 0;

	if (rc_pair(s, p, 1, 2, &sq, &pq)) {
		result(0, "destroy: an RC QP on each device, connected");
		return;
	}
	for (int i = 0; i < 16 && ok; i++)
		ok = !post_send(sq, s, IBV_WR_RDMA_WRITE, 30 + i, s->buf, BIG,
				(uintptr_t)p->buf + BIG, p->mr->rkey,
				i == 15 ? IBV_SEND_SIGNALED : 0);
	usleep(50 * 1000);
	ok = ok && !ibv_destroy_qp(sq);
	result(ok, "destroy: an srdma QP with 128 MiB of WRITEs in flight is destroyed");
	usleep(500 * 1000);
	while (ibv_poll_cq(s->cq, 1, &wc) > 0)
		n++;
	result(n == 0, "destroy: no completion of the destroyed QP appears (%d)", n);
	ibv_destroy_qp(pq);
	if (rc_pair(s, p, 5, 6, &sq, &pq)) {
		result(0, "destroy: a new pair connected afterwards");
		return;
	}
	transfer(s, sq, p, pq, IBV_WR_RDMA_WRITE, 1 << 20);
	ibv_destroy_qp(sq);
	ibv_destroy_qp(pq);
}

/*
 * The srdma end's QP destroyed while the peer's SENDs or RDMA WRITEs of 256 KiB (every other
 * round) stream into it: the packets of the message under way that arrive as the QP goes are
 * dropped as for a QP that is not there, so the peer is never NAKed for a message the
 * destroyed QP no longer holds, and no receive of the destroyed QP completes afterwards as
 * flushed. The peer's requester then runs out of retries: srdma's within DESTROY_WAIT_S,
 * while rxe's (Linux 6.12) completed nothing more in 240 s on the debug kernel, so only the
 * peer's silence is checked. Several rounds, the destroy at a different point of a message
 * each.
 */
static void destroy_receiving(void)
{
	struct end *s = &ends[0], *p = &ends[1];
	int ok = 1, rounds = 0, flushed = 0, peer_retried = 0;
	enum ibv_wc_status peer = IBV_WC_SUCCESS;
	const size_t len = 256 << 10;

	for (int r = 0; r < DESTROY_ROUNDS && ok; r++) {
		struct ibv_qp *sq = rc_qp(s), *pq = rc_qp(p);
		struct ibv_wc wc;
		double end;
		int write = r % 2;

		if (!sq || !pq || connect_qp(sq, s, p, pq->qp_num, 20, 21, 14) ||
		    connect_qp(pq, p, s, sq->qp_num, 21, 20, 8)) {
			result(0, "destroy receiving: an RC QP on each device, connected");
			return;
		}
		for (int i = 0; i < 16 && ok && !write; i++)
			ok = !post_recv(sq, s, 100 + i, s->buf + BIG, len);
		for (int i = 0; i < 16 && ok; i++)
			ok = !post_send(pq, p, write ? IBV_WR_RDMA_WRITE : IBV_WR_SEND, 200 + i,
					p->buf, len, (uintptr_t)s->buf + BIG, s->mr->rkey,
					IBV_SEND_SIGNALED);
		/* The first message landed: the second is under way. */
		if (write)
			ok = ok && wait_wc(p, 200, WAIT_S, &wc, NULL) &&
			     wc.status == IBV_WC_SUCCESS;
		else
			ok = ok && wait_wc(s, 100, WAIT_S, &wc, NULL) &&
			     wc.status == IBV_WC_SUCCESS;
		usleep(r / 2 * 2000);
		while (ok && ibv_poll_cq(s->cq, 1, &wc) > 0)
			;
		ok = ok && !ibv_destroy_qp(sq);
		rounds += ok;
		/* The peer's first failure ends its queue: every WQE after it is flushed. */
		end = now() + DESTROY_WAIT_S;
		while (ok && now() < end) {
			if (ibv_poll_cq(p->cq, 1, &wc) < 1) {
				usleep(1000);
				continue;
			}
			if (wc.status == IBV_WC_SUCCESS)
				continue;
			peer_retried += wc.status == IBV_WC_RETRY_EXC_ERR;
			if (wc.status != IBV_WC_RETRY_EXC_ERR) {
				peer = wc.status;
				printf("# round %d (%s): %s\n", r, write ? "WRITE" : "SEND",
				       ibv_wc_status_str(wc.status));
			}
			break;
		}
		/* A message that landed between the last poll and the destroy may show. */
		while (ibv_poll_cq(s->cq, 1, &wc) > 0)
			flushed += wc.status != IBV_WC_SUCCESS;
		ibv_destroy_qp(pq);
		while (ibv_poll_cq(p->cq, 1, &wc) > 0)
			;
	}
	result(ok && rounds == DESTROY_ROUNDS && !flushed,
	       "destroy receiving: %d srdma QPs destroyed in the middle of a SEND or WRITE, none of their receives flushed afterwards (%d)",
	       rounds, flushed);
	result(ok && peer == IBV_WC_SUCCESS,
	       "destroy receiving: %s was never NAKed (%s); it ran out of retries in %d of %d rounds",
	       p->name, peer == IBV_WC_SUCCESS ? "no other error" : ibv_wc_status_str(peer),
	       peer_retried, rounds);
}

/* An RC QP of end e with the work-request API for ATOMIC WRITE. */
static struct ibv_qp *atomic_write_qp(struct end *e)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC, .pd = e->pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE,
		.cap = { .max_send_wr = 64, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	return ibv_create_qp_ex(e->ctx, &ia);
}

#define AW_BATCH 64

/*
 * d writes AW_BATCH words into r's buffer with ATOMIC WRITEs in one batch (the last one
 * signaled): each word lands as its 8 bytes; then, unless the link is lossy (where a lost NAK
 * makes a retry that the failed responder never answers), one to an unaligned address, which r
 * refuses.
 */
static void atomic_writes(struct end *d, struct ibv_qp *dq, struct end *r, int lossy)
{
	uint64_t *words = (uint64_t *)(r->buf + BIG), vals[AW_BATCH];
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(dq);
	struct ibv_wc wc = { .status = IBV_WC_GENERAL_ERR };
	int ok, done, others = 0, whole = 0;
	char why[128] = "";

	memset(words, 0, (AW_BATCH + 1) * sizeof(*words));
	ibv_wr_start(x);
	for (int i = 0; i < AW_BATCH; i++) {
		vals[i] = 0x0101010101010101ull * (i + 1) ^ (uint64_t)rand() << 16;
		x->wr_id = 300 + i;
		x->wr_flags = i == AW_BATCH - 1 ? IBV_SEND_SIGNALED : 0;
		ibv_wr_atomic_write(x, r->mr->rkey, (uintptr_t)&words[i], &vals[i]);
	}
	done = !ibv_wr_complete(x) && wait_wc(d, 300 + AW_BATCH - 1, WAIT_S, &wc, &others);
	ok = done && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_ATOMIC_WRITE && !others;
	while (whole < AW_BATCH && words[whole] == vals[whole])
		whole++;
	ok = ok && whole == AW_BATCH && words[AW_BATCH] == 0;
	if (others)
		snprintf(why, sizeof(why), "; %d other completions, the first %s for wr_id %llu",
			 others, ibv_wc_status_str(first_other.status),
			 (unsigned long long)first_other.wr_id);
	result(ok,
	       "%s -> %s: %d ATOMIC WRITEs in one batch, each word whole (%s, the first %d words whole%s)",
	       d->name, r->name, AW_BATCH,
	       done ? ibv_wc_status_str(wc.status) : "no completion", whole, why);
	if (lossy)
		return;

	ibv_wr_start(x);
	x->wr_id = 400;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(x, r->mr->rkey, (uintptr_t)&words[0] + 4, &vals[0]);
	ok = !ibv_wr_complete(x) && wait_wc(d, 400, WAIT_S, &wc, NULL);
	result(ok && wc.status == IBV_WC_REM_INV_REQ_ERR && words[1] == vals[1],
	       "%s -> %s: an ATOMIC WRITE to an unaligned address: %s", d->name, r->name,
	       ok ? ibv_wc_status_str(wc.status) : "no completion");
}

static void atomic_write_both_ways(int lossy, int peer_rxe)
{
	for (int dir = 0; dir < 2; dir++) {
		struct end *d = &ends[dir], *r = &ends[!dir];
		struct ibv_qp *dq, *rq;

		if (lossy && peer_rxe && dir == 1) {
			result(1,
			       "%s -> %s: %d ATOMIC WRITEs in one batch # SKIP rxe retries an ATOMIC WRITE with RETH VA 0",
			       d->name, r->name, AW_BATCH);
			continue;
		}
		dq = atomic_write_qp(d);
		rq = atomic_write_qp(r);

		if (!dq || !rq || connect_qp(dq, d, r, rq->qp_num, 500, 600, 14) ||
		    connect_qp(rq, r, d, dq->qp_num, 600, 500, 14)) {
			result(0, "%s -> %s: QPs for ATOMIC WRITE (%s)", d->name, r->name,
			       strerror(errno));
			continue;
		}
		atomic_writes(d, dq, r, lossy);
		ibv_destroy_qp(dq);
		ibv_destroy_qp(rq);
	}
}

/* The RNR test: SENDs in flight, the peer's RNR timer (IBA code 22: 20.48 ms), how long. */
#define RNR_N 16
#define RNR_TIMER 22
#define RNR_TIMER_MS 20.48
#define RNR_WAIT_MS 400

/*
 * srdma SENDs a batch to a peer QP with no receive posted. The peer answers the first SEND
 * with an RNR NAK and, as rxe's and srdma's responders do, the next one in flight with a NAK
 * for the PSN sequence that names the same PSN. The requester sends again when the RNR timer
 * has run out, whichever of the two NAKs came last: sending again at once on the sequence NAK
 * draws the next RNR NAK a round trip later, a storm that takes the CPU the receiver needs to
 * post its receives. Once they are posted, every SEND lands, in order.
 */
static void rnr_waits(void)
{
	struct end *r = &ends[0], *d = &ends[1];
	struct ibv_qp_attr a = { .min_rnr_timer = RNR_TIMER };
	struct ibv_qp *s, *p;
	char *src = r->buf, *dst = d->buf + BIG;
	int ok, sent = 0, recvd = 0, bad = 0;
	long long rnr0, rnrs;
	double t0, waited, end;

	if (rc_pair(r, d, 700, 800, &s, &p)) {
		result(0, "RNR: an RC QP on each device, connected (%s)", strerror(errno));
		return;
	}
	if (ibv_modify_qp(p, &a, IBV_QP_MIN_RNR_TIMER)) {
		result(0, "RNR: the peer's RNR timer set (%s)", strerror(errno));
		goto out;
	}
	fill(src, RNR_N * 64);
	memset(dst, 0, RNR_N * 64);
	rnr0 = port_counter(r->name, "rcvd_rnr_err");
	t0 = now();
	ok = rnr0 >= 0;
	for (int i = 0; ok && i < RNR_N; i++)
		ok = !post_send(s, r, IBV_WR_SEND, 500 + i, src + i * 64, 64, 0, 0,
				IBV_SEND_SIGNALED);
	usleep(RNR_WAIT_MS * 1000);
	rnrs = port_counter(r->name, "rcvd_rnr_err") - rnr0;
	waited = (now() - t0) * 1000;
	/* Each wait is the timer and a scheduling delay: no more than one NAK per timer. */
	result(ok && rnrs >= 1 && rnrs <= waited / RNR_TIMER_MS + 1,
	       "%s -> %s: %d SENDs to a QP without receives, the peer's RNR timer %.2f ms: %lld RNR NAKs in %.0f ms",
	       r->name, d->name, RNR_N, RNR_TIMER_MS, rnrs, waited);
	for (int i = 0; ok && i < RNR_N; i++)
		ok = !post_recv(p, d, 600 + i, dst + i * 64, 64);
	end = now() + WAIT_S;
	while (ok && (sent < RNR_N || recvd < RNR_N) && now() < end) {
		struct ibv_wc wc;

		if (ibv_poll_cq(r->cq, 1, &wc) == 1 && wc.qp_num == s->qp_num)
			bad += wc.wr_id != 500u + sent++ || wc.status != IBV_WC_SUCCESS;
		if (ibv_poll_cq(d->cq, 1, &wc) == 1 && wc.qp_num == p->qp_num)
			bad += wc.wr_id != 600u + recvd++ || wc.status != IBV_WC_SUCCESS ||
			       wc.byte_len != 64;
	}
	bad += !!memcmp(src, dst, RNR_N * 64);
	result(ok && sent == RNR_N && recvd == RNR_N && !bad,
	       "%s -> %s: once receives are posted, the %d SENDs land in order (%d sent, %d received, %d bad)",
	       r->name, d->name, RNR_N, sent, recvd, bad);
out:
	ibv_destroy_qp(s);
	ibv_destroy_qp(p);
}

/*
 * The peer's RDMA WRITE with immediate data of len bytes (4 KiB: four packets at the path MTU
 * of 1024; 0: one packet) reaches an srdma QP with no receive for the immediate: the last
 * packet is refused RNR, the message under way stays as it was before that packet, and the
 * same packet sent again after the RNR timer completes it once a receive is posted.
 */
static void rnr_write_imm(unsigned int len)
{
	struct end *r = &ends[1], *d = &ends[0];
	struct ibv_qp_attr a = { .min_rnr_timer = RNR_TIMER };
	struct ibv_qp *s, *p;
	struct ibv_sge sge = { (uintptr_t)r->buf, len, r->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 700, .sg_list = &sge, .num_sge = len ? 1 : 0,
				  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(0x5eed),
				  .wr.rdma = { .remote_addr = (uintptr_t)d->buf + BIG,
					       .rkey = d->mr->rkey } }, *bad;
	struct ibv_wc ws = { 0 }, wr_ = { 0 };
	int sent, recvd;

	if (rc_pair(r, d, 900, 1000, &s, &p)) {
		result(0, "RNR: an RC QP on each device, connected (%s)", strerror(errno));
		return;
	}
	if (ibv_modify_qp(p, &a, IBV_QP_MIN_RNR_TIMER)) {
		result(0, "RNR: the peer's RNR timer set (%s)", strerror(errno));
		goto out;
	}
	fill(r->buf, 4096);
	memset(d->buf + BIG, 0, 4096);
	sent = !ibv_post_send(s, &wr, &bad);
	usleep(RNR_WAIT_MS * 1000);
	sent = sent && !post_recv(p, d, 701, d->buf + BIG + 8192, 64);
	sent = sent && wait_wc(r, 700, WAIT_S, &ws, NULL);
	recvd = wait_wc(d, 701, WAIT_S, &wr_, NULL);
	result(sent && ws.status == IBV_WC_SUCCESS && recvd && wr_.status == IBV_WC_SUCCESS &&
	       wr_.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wr_.imm_data == htonl(0x5eed) &&
	       wr_.byte_len == len && !memcmp(r->buf, d->buf + BIG, len),
	       "%s -> %s: an RDMA WRITE with immediate of %u bytes waits out the RNR NAK of its last packet and lands (WRITE %d, receive %d, %u bytes)",
	       r->name, d->name, len, sent ? (int)ws.status : -1, recvd ? (int)wr_.status : -1,
	       wr_.byte_len);
out:
	ibv_destroy_qp(s);
	ibv_destroy_qp(p);
}

/*
 * srdma READs a long message from the peer: over a link that loses some of the responses, the
 * peer goes on sending the rest of them before it answers the READ asked again from the gap.
 * Not in srdma_wire.sh yet: with `netem loss 0.1%` on the peer's side it passes on its own,
 * but failed once (RETRY_EXC_ERR after 114 s) after the suite's other lossy tests.
 */
static void long_read(void)
{
	struct ibv_qp *s, *p;

	if (rc_pair(&ends[0], &ends[1], 100, 200, &s, &p)) {
		result(0, "long READ: an RC QP on each device, connected");
		return;
	}
	transfer(&ends[0], s, &ends[1], p, IBV_WR_RDMA_READ, BIG / 2);
	ibv_destroy_qp(s);
	ibv_destroy_qp(p);
}

int main(int argc, char **argv)
{
	ksft_print_header();
	if (argc == 6 && !strcmp(argv[5], "longread")) {
		if (open_end(&ends[0], argv[1], atoi(argv[2])) ||
		    open_end(&ends[1], argv[3], atoi(argv[4]))) {
			printf("Bail out! cannot open %s and %s\n", argv[1], argv[3]);
			return 1;
		}
		long_read();
		tap_done();
	}
	if (argc != 5 && !(argc == 6 && !strcmp(argv[5], "lossy")) &&
	    !(argc == 7 && !strcmp(argv[5], "lossy") && !strcmp(argv[6], "rxe"))) {
		fputs("Bail out! usage: srdma_wire SRDMA_DEV GID_INDEX ", stdout);
		puts("PEER_DEV GID_INDEX [lossy [rxe] | longread]");
		return 1;
	}
	srand(7);
	if (open_end(&ends[0], argv[1], atoi(argv[2])) ||
	    open_end(&ends[1], argv[3], atoi(argv[4]))) {
		printf("Bail out! cannot open %s and %s\n", argv[1], argv[3]);
		return 1;
	}
	if (argc >= 6) {
		static const size_t lossy[] = { 256 << 10 };

		test_messages(lossy, 1);
		inline_messages();
		atomic_write_both_ways(1, argc == 7);
		tap_done();
	}
	static const size_t large[] = { 1 << 20, BIG };

	test_messages(large, 2);
	post_while_sending();
	post_after_completion(&ends[0], &ends[1]);
	post_after_completion(&ends[1], &ends[0]);
	posted_from_threads(&ends[0], &ends[1]);
	posted_from_threads(&ends[1], &ends[0]);
	short_beside_long();
	inline_messages();
	reuse_after_reset();
	destroy_in_flight();
	destroy_receiving();
	atomic_write_both_ways(0, 0);
	rnr_waits();
	rnr_write_imm(4096);
	rnr_write_imm(0);
	tap_done();
}

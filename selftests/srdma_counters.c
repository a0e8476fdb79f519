// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hardware counters of srdma, exactly: known work between QPs of two devices (A sends, B
 * receives), then the change of every counter (as `rdma statistic` reads them) is compared with
 * what the work must have added, all other counters unchanged. Covers the inline and SGE
 * paths, the error classes, RNR, garbage in the rings, counts of destroyed QPs, and threads and
 * processes counting at once. Prints TAP. Usage: srdma_counters DEV_A DEV_B
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "srdma_tap.h"

static const char * const names[] = {
	"sent_pkts", "rcvd_pkts", "rdma_sends", "rdma_recvs", "out_of_buffer", "rcvd_rnr_err",
	"send_rnr_err", "retry_exceeded_err", "retry_rnr_exceeded_err", "inline_posts",
	"inline_bytes", "sge_posts", "sge_bytes", "inline_refused", "doorbells", "kicks",
	"poller_wakeups", "poller_sleeps", "completions", "err_local_prot", "err_remote_access",
	"err_length", "err_flush", "cq_overflows", "ring_errors",
};

#define NCNT (ARRAY_SIZE(names))

struct snap { unsigned long long v[2][NCNT]; };

static const char *devname[2];
static struct ibv_context *ctx[2];
static struct ibv_pd *pd[2];
static struct ibv_cq *cq[2];
static struct ibv_mr *mr[2];
static char *buf[2];
static union ibv_gid gid[2];
#define BUF (1024 * 1024)

/*
 * Reads every counter of both devices through netlink (`rdma statistic`), which asks the
 * driver each time; sysfs would serve values up to a lifespan (10 ms of jiffies) old.
 */
static void snapshot(struct snap *s)
{
	char cmd[128], out[8192], *tok, *save;
	size_t len;

	for (int d = 0; d < 2; d++) {
		FILE *f;

		memset(s->v[d], 0xff, sizeof(s->v[d]));
		snprintf(cmd, sizeof(cmd), "rdma statistic show link %s/1", devname[d]);
		f = popen(cmd, "r");
		len = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
		if (f)
			pclose(f);
		out[len] = 0;
		/* "link DEV/1 NAME VALUE NAME VALUE ..." */
		for (tok = strtok_r(out, "\n ", &save); tok; tok = strtok_r(NULL, "\n ", &save))
			for (unsigned int i = 0; i < NCNT; i++)
				if (!strcmp(tok, names[i])) {
					char *v = strtok_r(NULL, "\n ", &save);

					if (v)
						s->v[d][i] = strtoull(v, NULL, 10);
					break;
				}
		for (unsigned int i = 0; i < NCNT; i++)
			if (s->v[d][i] == ~0ULL)
				printf("# %s: no counter %s in: %s\n", devname[d], names[i], cmd);
	}
}

/*
 * Checks that from `before` to now, counter NAME of device D moved by exactly the given delta
 * (a list of "D:NAME=DELTA" strings ended by NULL) and every other counter stayed.
 */
static void expect(const struct snap *before, const char *what, ...)
{
	long long want[2][NCNT] = { { 0 } };
	struct snap now;
	va_list ap;
	const char *e;
	int ok = 1;

	va_start(ap, what);
	while ((e = va_arg(ap, const char *))) {
		int d = e[0] - 'A';
		const char *eq = strchr(e, '=');
		unsigned int i;

		for (i = 0; i < NCNT; i++)
			if (strlen(names[i]) == (size_t)(eq - e - 2) && !strncmp(e + 2, names[i],
										 eq - e - 2))
				break;
		if (i == NCNT || d < 0 || d > 1) {
			printf("# bad expectation %s\n", e);
			ok = 0;
			continue;
		}
		want[d][i] = atoll(eq + 1);
	}
	va_end(ap);
	snapshot(&now);
	for (int d = 0; d < 2; d++)
		for (unsigned int i = 0; i < NCNT; i++) {
			long long got = now.v[d][i] - before->v[d][i];

			if (got != want[d][i]) {
				printf("# %s %s: +%lld, expected +%lld\n", devname[d], names[i],
				       got,
				       want[d][i]);
				ok = 0;
			}
		}
	result(ok, "%s", what);
}

static int to_rts(struct ibv_qp *q, uint32_t dqpn, const union ibv_gid *dgid)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	if (ibv_modify_qp(q, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS))
		return -1;
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				   .dest_qp_num = dqpn, .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
				   .ah_attr = { .is_global = 1, .port_num = 1,
						.grh = { .dgid = *dgid, .sgid_index = 1,
							 .hop_limit = 1 } } };
	if (ibv_modify_qp(q, &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				      IBV_QP_MIN_RNR_TIMER))
		return -1;
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 1, .retry_cnt = 1,
				   .rnr_retry = 0, .max_rd_atomic = 1 };
	return ibv_modify_qp(q, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					 IBV_QP_MAX_QP_RD_ATOMIC);
}

struct pair { struct ibv_qp *a, *b; struct ibv_cq *cqa, *cqb; };

/* An RC QP on A connected to one on B, with the given CQs. */
static int new_pair(struct pair *p, struct ibv_cq *cqa, struct ibv_cq *cqb)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 2, .max_recv_sge = 2,
						.max_inline_data = 128 } };

	p->cqa = cqa;
	p->cqb = cqb;
	ia.send_cq = cqa;
	ia.recv_cq = cqa;
	p->a = ibv_create_qp(pd[0], &ia);
	ia.send_cq = cqb;
	ia.recv_cq = cqb;
	p->b = ibv_create_qp(pd[1], &ia);
	if (!p->a || !p->b || to_rts(p->a, p->b->qp_num, &gid[1]) ||
	    to_rts(p->b, p->a->qp_num, &gid[0]))
		return -1;
	return 0;
}

static void free_pair(struct pair *p)
{
	ibv_destroy_qp(p->a);
	ibv_destroy_qp(p->b);
}

/* Polls cq until n completions arrived (or a second passed); returns how many. */
static int poll_n(struct ibv_cq *c, struct ibv_wc *wc, int n)
{
	int got = 0;

	for (int t = 0; t < 1000 && got < n; t++) {
		int r = ibv_poll_cq(c, n - got, wc + got);

		got += r > 0 ? r : 0;
		if (got < n)
			usleep(1000);
	}
	return got;
}

static int post_recv(struct ibv_qp *q, int d, uint64_t wr_id, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)buf[d] + BUF / 2, len, mr[d]->lkey };
	struct ibv_recv_wr w = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 }, *bad;

	return ibv_post_recv(q, &w, &bad);
}

static int post_send(struct ibv_qp *q, uint64_t wr_id, uint32_t len, int flags, uint32_t lkey)
{
	struct ibv_sge s = { (uintptr_t)buf[0], len, lkey };
	struct ibv_send_wr w = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1,
				 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED | flags },
			   *bad;

	return ibv_post_send(q, &w, &bad);
}

/* n SENDs of len bytes from a to b, each received; returns whether all completed well. */
static int sends(struct pair *p, int n, uint32_t len, int flags)
{
	struct ibv_wc wc[2];
	int ok = 1;

	for (int i = 0; i < n; i++) {
		ok &= !post_recv(p->b, 1, i, len);
		ok &= !post_send(p->a, i, len, flags, mr[0]->lkey);
		ok &= poll_n(p->cqa, wc, 1) == 1 && wc[0].status == IBV_WC_SUCCESS;
		ok &= poll_n(p->cqb, wc, 1) == 1 && wc[0].status == IBV_WC_SUCCESS &&
		      wc[0].byte_len == len;
	}
	return ok;
}

/* The uverbs mappings of this process: rings and doorbell pages. */
static struct { char *addr; size_t len; } maps[128];
static int nmaps;

static void find_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo, hi;

	nmaps = 0;
	while (f && fgets(line, sizeof(line), f) && nmaps < 128)
		if (strstr(line, "/dev/infiniband/uverbs") && sscanf(line, "%lx-%lx", &lo,
								     &hi) == 2) {
			maps[nmaps].addr = (char *)lo;
			maps[nmaps].len = hi - lo;
			nmaps++;
		}
	if (f)
		fclose(f);
}

/* Finds the 16-byte-aligned words w[0..n) in a uverbs mapping. */
static uint32_t *find_words(const uint32_t *w, int n)
{
	for (int m = 0; m < nmaps; m++)
		for (size_t off = 0; off + 4 * n <= maps[m].len; off += 16)
			if (!memcmp(maps[m].addr + off, w, 4 * n))
				return (uint32_t *)(maps[m].addr + off);
	return NULL;
}

/* The empty post_send command of uverbs: the doorbell kick, without the provider. */
static int kick(struct ibv_qp *q)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} req = { { IB_USER_VERBS_CMD_POST_SEND, sizeof(req) / 4,
		    sizeof(struct ib_uverbs_post_send_resp) / 4 } };
	struct ib_uverbs_post_send_resp resp;

	req.cmd.response = (uintptr_t)&resp;
	req.cmd.qp_handle = q->handle;
	req.cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
	return write(q->context->cmd_fd, &req, sizeof(req)) == sizeof(req) ? 0 : -errno;
}

/*
 * srdma's doorbell method (SRDMA_IB_METHOD_QP_DOORBELL of include/uapi/rdma/srdma-abi.h, whose
 * one attribute is the QP's handle), an ioctl on fd; nattrs 0 leaves the handle out.
 */
static int doorbell(int fd, uint32_t handle, int nattrs)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attr;
	} req = {
		.hdr = { .length = sizeof(req), .object_id = UVERBS_OBJECT_QP,
			 .method_id = 1U << UVERBS_ID_NS_SHIFT, .num_attrs = nattrs,
			 .driver_id = 21 /* RDMA_DRIVER_SRDMA, newer than these headers */ },
		.attr = { .attr_id = 1U << UVERBS_ID_NS_SHIFT, .flags = UVERBS_ATTR_F_MANDATORY,
			  .data = handle },
	};

	return ioctl(fd, RDMA_VERBS_IOCTL, &req) ? -errno : 0;
}

struct worker { int sends, len; int ok; };

static void *work(void *arg)
{
	struct worker *w = arg;
	struct ibv_cq *ca = ibv_create_cq(ctx[0], 32, NULL, NULL, 0);
	struct ibv_cq *cb = ibv_create_cq(ctx[1], 32, NULL, NULL, 0);
	struct pair p;

	w->ok = ca && cb && !new_pair(&p, ca, cb) && sends(&p, w->sends, w->len, 0);
	free_pair(&p);
	ibv_destroy_cq(ca);
	ibv_destroy_cq(cb);
	return NULL;
}

static int setup(void)
{
	for (int d = 0; d < 2; d++) {
		ctx[d] = open_dev(devname[d]);
		if (!ctx[d])
			return -1;
		pd[d] = ibv_alloc_pd(ctx[d]);
		cq[d] = ibv_create_cq(ctx[d], 64, NULL, NULL, 0);
		buf[d] = aligned_alloc(4096, BUF);
		mr[d] = ibv_reg_mr(pd[d], buf[d], BUF, IBV_ACCESS_LOCAL_WRITE |
							  IBV_ACCESS_REMOTE_WRITE);
		if (!pd[d] || !cq[d] || !mr[d] || ibv_query_gid(ctx[d], 1, 1, &gid[d]))
			return -1;
		memset(buf[d], 0x5a, BUF);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct snap s;
	struct pair p;
	struct ibv_wc wc[4];
	int n;

	ksft_print_header();
	if (argc < 3) {
		printf("Bail out! usage: srdma_counters DEV_A DEV_B\n");
		return 1;
	}
	devname[0] = argv[1];
	devname[1] = argv[2];
	if (setup() || new_pair(&p, cq[0], cq[1])) {
		printf("Bail out! cannot set up the devices and a QP pair\n");
		return 1;
	}

	snapshot(&s);
	n = sends(&p, 10, 32, IBV_SEND_INLINE);
	expect(&s, "10 inline SENDs of 32 bytes: inline +10/+320, SGE unchanged",
	       "A:inline_posts=10", "A:inline_bytes=320", "A:sent_pkts=10", "A:rdma_sends=10",
	       "A:kicks=10", "A:doorbells=10", "A:completions=10", "B:rcvd_pkts=10",
	       "B:rdma_recvs=10", "B:completions=10", NULL);
	result(n, "the inline SENDs completed");

	snapshot(&s);
	n = sends(&p, 7, 1000, 0);
	expect(&s, "7 SGE SENDs of 1000 bytes: SGE +7/+7000, inline unchanged",
	       "A:sge_posts=7", "A:sge_bytes=7000", "A:sent_pkts=7", "A:rdma_sends=7",
	       "A:kicks=7", "A:doorbells=7", "A:completions=7", "B:rcvd_pkts=7",
	       "B:rdma_recvs=7", "B:completions=7", NULL);
	result(n, "the SGE SENDs completed");

	snapshot(&s);
	free_pair(&p);
	expect(&s, "destroying the QPs keeps what they counted", NULL);

	/* A bad lkey: one local protection error. */
	new_pair(&p, cq[0], cq[1]);
	snapshot(&s);
	post_send(p.a, 1, 64, 0, mr[0]->lkey + 256);
	n = poll_n(cq[0], wc, 1);
	expect(&s, "a bad lkey: err_local_prot +1", "A:err_local_prot=1", "A:completions=1",
	       "A:kicks=1", "A:doorbells=1", NULL);
	result(n == 1 && wc[0].status == IBV_WC_LOC_PROT_ERR, "and it completed LOC_PROT_ERR");

	/* The QP is in the error state now: the next send is flushed. */
	snapshot(&s);
	post_send(p.a, 2, 8, 0, mr[0]->lkey);
	n = poll_n(cq[0], wc, 1);
	expect(&s, "a send in the error state: err_flush +1", "A:err_flush=1", "A:completions=1",
	       "A:kicks=1", NULL);
	result(n == 1 && wc[0].status == IBV_WC_WR_FLUSH_ERR, "and it completed WR_FLUSH_ERR");
	free_pair(&p);

	/* An empty RQ on an RC responder (rnr_retry 0). */
	new_pair(&p, cq[0], cq[1]);
	snapshot(&s);
	post_send(p.a, 3, 16, 0, mr[0]->lkey);
	n = poll_n(cq[0], wc, 1);
	expect(&s, "a SEND to an empty RQ: RNR counted on both sides", "A:sent_pkts=1",
	       "A:sge_posts=1", "A:sge_bytes=16", "A:rcvd_rnr_err=1",
	       "A:retry_rnr_exceeded_err=1", "A:completions=1", "A:kicks=1", "A:doorbells=1",
	       "B:rcvd_pkts=1", "B:out_of_buffer=1", "B:send_rnr_err=1", NULL);
	result(n == 1 && wc[0].status == IBV_WC_RNR_RETRY_EXC_ERR,
	       "and it completed RNR_RETRY_EXC_ERR");
	free_pair(&p);

	/* RDMA WRITE with an rkey that grants no remote write. */
	new_pair(&p, cq[0], cq[1]);
	snapshot(&s);
	{
		struct ibv_sge sg = { (uintptr_t)buf[0], 64, mr[0]->lkey };
		struct ibv_send_wr w = { .wr_id = 4, .sg_list = &sg, .num_sge = 1,
					 .opcode = IBV_WR_RDMA_WRITE,
					 .send_flags = IBV_SEND_SIGNALED,
					 .wr.rdma = { (uintptr_t)buf[1],
						     mr[1]->rkey + 256 } }, *bad;

		ibv_post_send(p.a, &w, &bad);
	}
	n = poll_n(cq[0], wc, 1);
	expect(&s, "RDMA WRITE with a bad rkey: err_remote_access +1", "A:err_remote_access=1",
	       "A:sent_pkts=1", "A:sge_posts=1", "A:sge_bytes=64", "A:completions=1", "A:kicks=1",
	       "A:doorbells=1", "B:rcvd_pkts=1", NULL);
	result(n == 1 && wc[0].status == IBV_WC_REM_ACCESS_ERR, "and it completed REM_ACCESS_ERR");
	free_pair(&p);

	/* 64 bytes into a 10-byte receive buffer. */
	new_pair(&p, cq[0], cq[1]);
	snapshot(&s);
	post_recv(p.b, 1, 5, 10);
	post_send(p.a, 5, 64, 0, mr[0]->lkey);
	n = poll_n(cq[0], wc, 1) + poll_n(cq[1], wc + 1, 1);
	expect(&s, "a receive too short: err_length +1 at the receiver", "A:sent_pkts=1",
	       "A:sge_posts=1", "A:sge_bytes=64", "A:completions=1", "A:kicks=1", "A:doorbells=1",
	       "B:rcvd_pkts=1", "B:err_length=1", "B:completions=1", NULL);
	result(n == 2 && wc[1].status == IBV_WC_LOC_LEN_ERR, "and it completed LOC_LEN_ERR");
	free_pair(&p);

	/* Garbage in the SQ ring: an unknown opcode, then a producer index beyond the ring. */
	new_pair(&p, cq[0], cq[1]);
	{
		const uint64_t magic = 0x5eed00c0ffee0000ULL;
		uint32_t pattern[4] = { 7, 5, 7, 0 }, *db;
		struct ibv_send_wr w = { .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		char *slot0 = NULL, *slot1 = NULL;

		for (int i = 0; i < 5; i++)
			post_recv(p.a, 0, 100 + i, 16);
		for (int i = 0; i < 7; i++) {
			post_recv(p.b, 1, 200 + i, 16);
			w.wr_id = magic + i;
			ibv_post_send(p.a, &w, &bad);
			poll_n(cq[0], wc, 1);
			poll_n(cq[1], wc, 1);
		}
		find_maps();
		/* SQ WQEs start with wr_id, opcode SEND, flags SIGNALED (CQEs have a 0 there). */
		for (int m = 0; m < nmaps && !slot1; m++) {
			slot0 = NULL;
			for (size_t off = 0; off + 16 <= maps[m].len; off += 64) {
				char *at = maps[m].addr + off;
				uint64_t v;

				memcpy(&v, at, 8);
				if (at[8] != IBV_WR_SEND || at[9] != 1)
					continue;
				if (v == magic)
					slot0 = at;
				if (v == magic + 1 && slot0) {
					slot1 = at;
					break;
				}
			}
		}
		db = find_words(pattern, 4);
		if (!slot0 || !slot1 || !db) {
			result(0, "found the SQ ring (%p, %p) and doorbell record (%p)", slot0,
			       slot1,
			       db);
			result(0, "garbage opcode (skipped)");
			result(0, "garbage producer index (skipped)");
		} else {
			char *wqe = slot0 + 7 * (slot1 - slot0);
			int ret;

			result(1, "found the SQ ring (WQE size %td) and doorbell record",
			       slot1 - slot0);
			snapshot(&s);
			memset(wqe, 0, 32);
			memcpy(wqe, &magic, 8);
			wqe[8] = 0xee; /* no such opcode */
			wqe[9] = 1; /* signaled */
			__atomic_store_n(&db[0], 8, __ATOMIC_RELEASE);
			ret = kick(p.a);
			n = poll_n(cq[0], wc, 1);
			/* The QP enters the error state: its 5 posted receives are flushed. */
			expect(&s, "a WQE with an unknown opcode: ring_errors +1",
			       "A:ring_errors=1",
			       "A:kicks=1", "A:doorbells=1", "A:completions=6", "A:err_flush=5",
			       NULL);
			result(!ret && n == 1 && wc[0].status == IBV_WC_LOC_QP_OP_ERR,
			       "and it completed LOC_QP_OP_ERR (kick %d)", ret);

			/*
			 * Back to RTS: indices from 0, then a producer index far beyond the
			 * ring.
			 */
			struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RESET };

			poll_n(cq[0], wc, 4);
			if (ibv_modify_qp(p.a, &qa, IBV_QP_STATE) || to_rts(p.a, p.b->qp_num,
									    &gid[1]))
				printf("# cannot bring the QP back to RTS: %s\n", strerror(errno));
			snapshot(&s);
			__atomic_store_n(&db[0], 1000, __ATOMIC_RELEASE);
			ret = kick(p.a);
			expect(&s, "an SQ producer index beyond the ring: ring_errors +1",
			       "A:ring_errors=1", "A:kicks=1", NULL);
			result(ret == -EINVAL, "and the kick failed with EINVAL (%d)", ret);
		}
		/* Flushes of the receives posted above are counted; not checked here. */
		free_pair(&p);
		poll_n(cq[0], wc, 4);
		poll_n(cq[1], wc, 4);
	}

	/*
	 * The doorbell method, as the provider kicks: it reaches the QP its handle names in the
	 * caller's context and nothing else.
	 */
	new_pair(&p, cq[0], cq[1]);
	{
		struct ibv_context *other = open_dev(devname[0]);
		uint32_t handle = p.a->handle;
		int ret;

		snapshot(&s);
		ret = doorbell(ctx[0]->cmd_fd, handle, 1);
		expect(&s, "the doorbell method on a QP: one kick, no doorbell (an empty SQ)",
		       "A:kicks=1", "A:doorbells=0", NULL);
		result(!ret, "and it returned 0 (%d)", ret);
		snapshot(&s);
		ret = doorbell(ctx[0]->cmd_fd, cq[0]->handle, 1);
		result(ret == -EINVAL, "the doorbell method on a CQ's handle: EINVAL (%d)", ret);
		ret = doorbell(ctx[0]->cmd_fd, handle, 0);
		result(ret == -EINVAL, "the doorbell method without a handle: EINVAL (%d)", ret);
		ret = other ? doorbell(other->cmd_fd, handle, 1) : -1;
		result(ret == -ENOENT,
		       "the doorbell method in another context, with this QP's handle: ENOENT (%d)",
		       ret);
		ret = doorbell(ctx[0]->cmd_fd, 0x7fffffff, 1);
		result(ret == -ENOENT, "the doorbell method on a handle never given: ENOENT (%d)",
		       ret);
		free_pair(&p);
		ret = doorbell(ctx[0]->cmd_fd, handle, 1);
		result(ret == -ENOENT, "the doorbell method on a destroyed QP: ENOENT (%d)", ret);
		expect(&s, "and none of them kicked", "A:kicks=0", "B:kicks=0", NULL);
		if (other)
			ibv_close_device(other);
	}

	/* Threads and processes counting at once, with known totals. */
	{
		enum { THREADS = 4, PROCS = 2, SENDS = 150, LEN = 100 };
		struct worker w[THREADS];
		pthread_t t[THREADS];
		pid_t pid[PROCS];
		int ok = 1, status;

		snapshot(&s);
		for (int i = 0; i < PROCS; i++) {
			pid[i] = fork();
			if (pid[i] == 0) {
				struct worker cw = { SENDS, LEN, 0 };

				/* A process of its own: its own contexts. */
				if (setup())
					_exit(2);
				work(&cw);
				_exit(cw.ok ? 0 : 1);
			}
		}
		for (int i = 0; i < THREADS; i++) {
			w[i] = (struct worker){ SENDS, LEN, 0 };
			pthread_create(&t[i], NULL, work, &w[i]);
		}
		for (int i = 0; i < THREADS; i++) {
			pthread_join(t[i], NULL);
			ok &= w[i].ok;
		}
		for (int i = 0; i < PROCS; i++)
			ok &= waitpid(pid[i], &status, 0) == pid[i] && WIFEXITED(status) &&
			      !WEXITSTATUS(status);
		result(ok, "%d threads and %d processes did %d SENDs of %d bytes each", THREADS,
		       PROCS, SENDS, LEN);

		char e[10][64];
		const int total = (THREADS + PROCS) * SENDS;

		snprintf(e[0], 64, "A:sge_posts=%d", total);
		snprintf(e[1], 64, "A:sge_bytes=%d", total * LEN);
		snprintf(e[2], 64, "A:sent_pkts=%d", total);
		snprintf(e[3], 64, "A:rdma_sends=%d", total);
		snprintf(e[4], 64, "A:kicks=%d", total);
		snprintf(e[5], 64, "A:doorbells=%d", total);
		snprintf(e[6], 64, "A:completions=%d", total);
		snprintf(e[7], 64, "B:rcvd_pkts=%d", total);
		snprintf(e[8], 64, "B:rdma_recvs=%d", total);
		snprintf(e[9], 64, "B:completions=%d", total);
		expect(&s, "concurrent totals: no increment lost", e[0], e[1], e[2], e[3], e[4],
		       e[5],
		       e[6], e[7], e[8], e[9], NULL);
	}

	tap_done();
}

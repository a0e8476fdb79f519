// SPDX-License-Identifier: GPL-2.0-only
/*
 * Every allocation on every create path fails once: for each verb that creates an object
 * (context, PD, CQ, QP, SRQ, MR, MW, AH), the N-th kernel allocation of the call is made to
 * fail (/proc/thread-self/fail-nth, with failslab and fail_page_alloc set up by the caller),
 * for N = 1, 2, ... until a call sees no injected failure. Each failed call must fail cleanly
 * (or succeed without the allocation) and every object made must be destroyable; the caller
 * checks kmemleak and the kernel log afterwards. Prints TAP.
 *   srdma_faults DEVICE
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srdma_tap.h"

/* Calls with more allocation sites than this are not covered to the end (none has). */
#define MAX_NTH 500

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static char buf[8192];
static union ibv_gid gid;
static const char *dev;
static int nth_fd;

enum kind { CTX, PD, CQ, QP, SRQ, MR, MW, AH, KINDS };
static const char *const names[KINDS] = { "context", "PD", "CQ", "RC QP", "SRQ", "MR", "MW",
					   "AH" };

static void *create(enum kind k)
{
	struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { 64, 64, 2, 2, 64 } };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 2 } };
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .dgid = gid, .sgid_index = 1, .hop_limit = 1 } };

	switch (k) {
	case CTX: return open_dev(dev);
	case PD: return ibv_alloc_pd(ctx);
	case CQ: return ibv_create_cq(ctx, 256, NULL, NULL, 0);
	case QP: return ibv_create_qp(pd, &qa);
	case SRQ: return ibv_create_srq(pd, &sa);
	case MR: return ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	case MW: return ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	case AH: return ibv_create_ah(pd, &aa);
	default: return NULL;
	}
}

static int destroy(enum kind k, void *o)
{
	switch (k) {
	case CTX: return ibv_close_device(o);
	case PD: return ibv_dealloc_pd(o);
	case CQ: return ibv_destroy_cq(o);
	case QP: return ibv_destroy_qp(o);
	case SRQ: return ibv_destroy_srq(o);
	case MR: return ibv_dereg_mr(o);
	case MW: return ibv_dealloc_mw(o);
	case AH: return ibv_destroy_ah(o);
	default: return -1;
	}
}

/* Makes the n-th fault point of this thread fail (0: none). */
static void arm_nth(int n)
{
	char s[16];
	int len = snprintf(s, sizeof(s), "%d", n);

	if (pwrite(nth_fd, s, len, 0) != len && n)
		printf("# cannot arm fail-nth %d: %s\n", n, strerror(errno));
}

/* Whether the armed failure was injected (the file then reads 0). */
static int injected(void)
{
	char s[16] = "";

	return pread(nth_fd, s, sizeof(s) - 1, 0) > 0 && atoi(s) == 0;
}

static void faults(enum kind k)
{
	int n, failed = 0, bad = 0, done = 0;

	for (n = 1; n <= MAX_NTH && !done; n++) {
		void *o;
		int hit;

		arm_nth(n);
		errno = 0;
		o = create(k);
		hit = injected();
		arm_nth(0);
		if (o && destroy(k, o))
			bad++;
		if (!hit) {
			/* Past the last allocation site: the call must succeed. */
			bad += !o;
			done = 1;
		} else if (!o) {
			failed++;
		}
	}
	result(done && !bad,
	       "%s: %d allocation sites, each failed once: %d calls failed cleanly, %d objects could not be destroyed or the last call failed",
	       names[k], n - 2,
	       failed, bad);
}

int main(int argc, char **argv)
{
	ksft_print_header();
	dev = argc > 1 ? argv[1] : "srdma0";
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (nth_fd < 0)
		ksft_exit_skip("no /proc/thread-self/fail-nth (CONFIG_FAULT_INJECTION)\n");
	ctx = open_dev(dev);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = ctx ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (!pd || !cq || ibv_query_gid(ctx, 1, 1, &gid)) {
		printf("Bail out! cannot set up %s\n", dev);
		return 1;
	}
	for (enum kind k = CTX; k < KINDS; k++)
		faults(k);
	result(!ibv_destroy_cq(cq) && !ibv_dealloc_pd(pd) && !ibv_close_device(ctx),
	       "the objects made before the faults are destroyed");
	tap_done();
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The object limits srdma advertises are the limits it enforces: for each kind (PD, CQ, QP,
 * SRQ, MR, MW, AH) this process creates objects until creation fails, which must happen with
 * ENOMEM once the device holds as many as ibv_query_device says (the kernel's own objects,
 * ib_mad's PD, CQ, QP and MR, count too), and a place freed is a place to create again.
 * The kinds are filled two at a time, in two threads.
 * With "rings MAX", run inside a memory cgroup whose limit is far below MAX CQs of 65536
 * entries (2 MiB of ring each): ring memory is charged to the process's cgroup, so creation
 * fails with ENOMEM before MAX. Prints TAP.
 *   srdma_limits DEVICE
 *   srdma_limits DEVICE rings MAX
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srdma_tap.h"

/* Objects the kernel may hold on the device besides ours (ib_mad: PD, CQ, QP1, DMA MR). */
#define KERNEL_SLACK 4

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static char buf[4096];
static union ibv_gid gid;

enum kind { PD, CQ, QP, SRQ, MR, MW, AH, KINDS };
static const char *const names[KINDS] = { "PD", "CQ", "QP", "SRQ", "MR", "MW", "AH" };

static void *create(enum kind k)
{
	struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
				       .cap = { 1, 1, 1, 1, 0 } };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1, .max_sge = 1 } };
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .dgid = gid, .sgid_index = 1, .hop_limit = 1 } };

	switch (k) {
	case PD: return ibv_alloc_pd(ctx);
	case CQ: return ibv_create_cq(ctx, 1, NULL, NULL, 0);
	case QP: return ibv_create_qp(pd, &qa);
	case SRQ: return ibv_create_srq(pd, &sa);
	case MR: return ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	case MW: return ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	case AH: return ibv_create_ah(pd, &aa);
	default: return NULL;
	}
}

static int destroy(enum kind k, void *o)
{
	switch (k) {
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

/* What limit() found for one kind, printed in kind order once every kind is done. */
struct verdict {
	int max, n, err, freed, again, left;
};

static struct verdict verdicts[KINDS];
static int maxes[KINDS];

static void limit(enum kind k)
{
	struct verdict *v = &verdicts[k];
	int max = maxes[k];
	void **objs = calloc(max + 1, sizeof(*objs));

	v->max = max;
	v->freed = 1;
	while (objs && v->n <= max) {
		errno = 0;
		objs[v->n] = create(k);
		if (!objs[v->n]) {
			v->err = errno;
			break;
		}
		v->n++;
	}
	/* One place freed is one place to use again. */
	if (v->n > 0) {
		v->freed = !destroy(k, objs[v->n - 1]);
		objs[v->n - 1] = create(k);
		v->again = !!objs[v->n - 1];
		if (!v->again)
			v->n--;
	}
	for (int i = 0; i < v->n; i++)
		v->left += destroy(k, objs[i]) != 0;
	free(objs);
}

static void report(enum kind k)
{
	const struct verdict *v = &verdicts[k];

	result(v->n <= v->max && v->n >= v->max - KERNEL_SLACK && v->err == ENOMEM,
	       "%s: %d created of max %d, then %s (errno %d)", names[k], v->n, v->max,
	       strerror(v->err), v->err);
	result(v->freed && v->again, "%s: after one is destroyed, one more can be created",
	       names[k]);
	result(!v->left, "%s: all %d destroyed (%d failed)", names[k], v->n, v->left);
}

/*
 * The kinds run in two threads, each kind's limits apart from the others': filling a device
 * takes minutes on the debug kernel, and the kernel paths of two kinds run side by side.
 */
static const enum kind group[2][KINDS] = {
	{ CQ, QP, KINDS },
	{ PD, SRQ, MR, MW, AH, KINDS },
};

static void *run_group(void *arg)
{
	for (const enum kind *k = arg; *k != KINDS; k++)
		limit(*k);
	return NULL;
}

/* Creates up to max CQs with 2 MiB rings; the cgroup's limit must stop it before. */
static int rings(int max)
{
	struct ibv_cq **cqs = calloc(max, sizeof(*cqs));
	int n = 0, err = 0;

	while (cqs && n < max) {
		errno = 0;
		cqs[n] = ibv_create_cq(ctx, 65535, NULL, NULL, 0);
		if (!cqs[n]) {
			err = errno;
			break;
		}
		n++;
	}
	result(n < max && err == ENOMEM,
	       "ring memory counts against the memory cgroup: %d CQs of 2 MiB, then %s", n,
	       strerror(err));
	for (int i = 0; i < n; i++)
		ibv_destroy_cq(cqs[i]);
	free(cqs);
	tap_done();
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex a = {};
	pthread_t other;

	ksft_print_header();
	ctx = open_dev(argc > 1 ? argv[1] : "srdma0");
	if (!ctx || ibv_query_device_ex(ctx, NULL, &a) || ibv_query_gid(ctx, 1, 1, &gid)) {
		printf("Bail out! cannot open or query the device\n");
		return 1;
	}
	if (argc == 4 && !strcmp(argv[2], "rings"))
		return rings(atoi(argv[3]));
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	if (!pd || !cq) {
		printf("Bail out! cannot create a PD and a CQ\n");
		return 1;
	}
	/* Our own PD and CQ take a place each. */
	maxes[PD] = a.orig_attr.max_pd - 1;
	maxes[CQ] = a.orig_attr.max_cq - 1;
	maxes[QP] = a.orig_attr.max_qp;
	maxes[SRQ] = a.orig_attr.max_srq;
	maxes[MR] = a.orig_attr.max_mr;
	maxes[MW] = a.orig_attr.max_mw;
	maxes[AH] = a.orig_attr.max_ah;
	if (pthread_create(&other, NULL, run_group, (void *)group[1])) {
		printf("Bail out! cannot start a thread\n");
		return 1;
	}
	run_group((void *)group[0]);
	pthread_join(other, NULL);
	for (enum kind k = 0; k < KINDS; k++)
		report(k);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	tap_done();
}

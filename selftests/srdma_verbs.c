// SPDX-License-Identifier: GPL-2.0-only
/*
 * Verbs objects on srdma through libibverbs and the srdma provider: device attributes, user
 * contexts, PDs and CQs, with the errors bad requests must get. Prints TAP.
 *
 *   srdma_verbs DEVICE            run the tests
 *   srdma_verbs DEVICE hold N     open N contexts with a PD and a CQ each, print "ready", sleep
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int test_num, failures;

static void result(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d ", ok ? "" : "not ", ++test_num);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		failures++;
	fflush(stdout);
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

static int hold(const char *name, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_context *ctx = open_dev(name);

		if (!ctx || !ibv_alloc_pd(ctx) || !ibv_create_cq(ctx, 16, NULL, NULL, 0)) {
			perror("hold");
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex attr = {};
	struct ibv_port_attr port = {};
	struct ibv_context *ctx;
	struct ibv_pd *pd, *pds[64];
	struct ibv_cq *cq;
	int n, ok;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DEVICE [hold N]\n", argv[0]);
		return 2;
	}
	if (argc == 4 && !strcmp(argv[2], "hold"))
		return hold(argv[1], atoi(argv[3]));

	printf("TAP version 13\n");
	ctx = open_dev(argv[1]);
	result(ctx != NULL, "ibv_open_device(%s) through the srdma provider", argv[1]);
	if (!ctx) {
		printf("1..%d\n", test_num);
		return 1;
	}

	result(!ibv_query_device_ex(ctx, NULL, &attr), "ibv_query_device_ex");
	result(attr.orig_attr.max_qp == 16384 && attr.orig_attr.max_cqe == 65536 &&
	       attr.orig_attr.max_sge == 32 && attr.orig_attr.max_pd == 16384,
	       "device caps: max_qp %d max_cqe %d max_sge %d max_pd %d", attr.orig_attr.max_qp,
	       attr.orig_attr.max_cqe, attr.orig_attr.max_sge, attr.orig_attr.max_pd);
	result(attr.orig_attr.vendor_id == 0xffffff && attr.orig_attr.phys_port_cnt == 1,
	       "vendor 0x%x, %d port", attr.orig_attr.vendor_id, attr.orig_attr.phys_port_cnt);
	result(!ibv_query_port(ctx, 1, &port) && port.state == IBV_PORT_ACTIVE &&
	       port.link_layer == IBV_LINK_LAYER_ETHERNET, "port 1 active, Ethernet");
	errno = 0;
	result(ibv_query_port(ctx, 2, &port) && errno != 0, "query of port 2 fails");

	/* Protection domains. */
	pd = ibv_alloc_pd(ctx);
	result(pd != NULL, "ibv_alloc_pd");
	result(pd && !ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	for (n = 0, ok = 1; n < 64 && ok; n++)
		ok = (pds[n] = ibv_alloc_pd(ctx)) != NULL;
	result(ok, "64 PDs in one context");
	while (n--)
		if (pds[n])
			ok &= !ibv_dealloc_pd(pds[n]);
	result(ok, "64 PDs freed");

	/* Completion queues. */
	cq = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	result(cq && cq->cqe >= 1, "CQ of 1 entry (got %d)", cq ? cq->cqe : -1);
	result(cq && !ibv_destroy_cq(cq), "destroy it");
	cq = ibv_create_cq(ctx, 100, NULL, NULL, 0);
	result(cq && cq->cqe >= 100 && cq->cqe < 256, "CQ of 100 entries (got %d)", cq ? cq->cqe : -1);
	result(cq && !ibv_destroy_cq(cq), "destroy it");
	cq = ibv_create_cq(ctx, 65536, NULL, NULL, 0);
	result(cq && cq->cqe >= 65536, "CQ of max_cqe (65536) entries");
	result(cq && !ibv_destroy_cq(cq), "destroy it");
	errno = 0;
	cq = ibv_create_cq(ctx, 65537, NULL, NULL, 0);
	result(!cq && errno == EINVAL, "CQ above max_cqe: EINVAL (errno %d)", errno);
	errno = 0;
	cq = ibv_create_cq(ctx, 0, NULL, NULL, 0);
	result(!cq && errno == EINVAL, "CQ of 0 entries: EINVAL (errno %d)", errno);
	errno = 0;
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 5);
	result(!cq && errno == EINVAL, "CQ on a completion vector that does not exist: EINVAL");
	{
		struct ibv_cq *cqs[300];
		for (n = 0, ok = 1; n < 300 && ok; n++)
			ok = (cqs[n] = ibv_create_cq(ctx, 8, NULL, NULL, 0)) != NULL;
		result(ok, "300 CQs (doorbell records over several pages)");
		while (n--)
			if (cqs[n])
				ok &= !ibv_destroy_cq(cqs[n]);
		result(ok, "300 CQs destroyed");
	}

	/* mmap of what the kernel never published. */
	{
		long pg = sysconf(_SC_PAGESIZE);
		void *p;

		cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd, 0x7fff000L * pg);
		result(p == MAP_FAILED && errno == EINVAL, "mmap at an unpublished offset: EINVAL");
		p = mmap(NULL, 64 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd, 0);
		result(p == MAP_FAILED && errno == EINVAL, "mmap of a published offset with the wrong size: EINVAL");
		if (cq)
			ibv_destroy_cq(cq);
	}

	result(!ibv_close_device(ctx), "ibv_close_device");
	printf("1..%d\n", test_num);
	return failures ? 1 : 0;
}

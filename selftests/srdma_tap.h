/* SPDX-License-Identifier: GPL-2.0-only */
/* What the srdma test programs share: TAP lines and opening a device by name. */
#ifndef SRDMA_TAP_H
#define SRDMA_TAP_H

#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int test_num, failures;

/* Prints one TAP result line. */
static inline void result(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d ", ok ? "" : "not ", ++test_num);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		failures++;
}

/* Opens the RDMA device called name, or returns NULL. */
static inline struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	if (!list)
		return NULL;
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

#endif

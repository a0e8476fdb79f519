/* SPDX-License-Identifier: GPL-2.0-only */
/* What the srdma test programs share: results in kselftest's TAP, opening a device by name. */
#ifndef SRDMA_TAP_H
#define SRDMA_TAP_H

#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../../kselftest.h"

/* One result: a check that passed if ok, described by a printf format (no newline). */
static inline __printf(2, 3) void result(int ok, const char *fmt, ...)
{
	char desc[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	ksft_test_result(ok, "%s\n", desc);
	fflush(stdout);
}

/* Ends the program: the plan is the results printed; exits with kselftest's verdict. */
static inline __noreturn void tap_done(void)
{
	ksft_set_plan(ksft_test_num());
	ksft_finished();
}

/* The hw_counter name of port 1 of RDMA device dev, or -1. */
static inline long long port_counter(const char *dev, const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
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

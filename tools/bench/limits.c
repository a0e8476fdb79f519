// SPDX-License-Identifier: GPL-2.0-only
/*
 * The limits a software RDMA device on this machine cannot beat, measured the way perftest
 * reports its figures so that the two can be divided:
 *   memcpy bandwidth for each message size (MB/s as perftest counts it: 2^20 bytes per second),
 *   the round trip of one cache line between two threads on two CPUs (a shared-memory
 *   ping-pong: the cheapest possible "message" between two cores).
 *
 *   limits [-q] SIZE...
 * Prints one line per figure:
 *   memcpy SIZE MBPS
 *   pingpong RTT_TYPICAL_US RTT_AVG_US RTT_P99_US RTT_P999_US
 * -q measures for less time (the quick run).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double min_secs = 0.3;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * Copies SIZE bytes between two buffers until min_secs passed. The buffers rotate through a
 * working set of at least 8 MiB so that large sizes are not served from the cache only, as
 * an RDMA device copying between registered buffers would not be either.
 */
static double memcpy_mbps(size_t size)
{
	size_t nbuf = size >= (8 << 20) ? 1 : (8 << 20) / size;
	char *src, *dst;
	uint64_t n = 0;
	double t0, t;

	if (nbuf > 64)
		nbuf = 64;	/* small sizes: stay in the cache, as the device's rings do */
	src = malloc(size * nbuf);
	dst = malloc(size * nbuf);
	if (!src || !dst)
		return 0;
	memset(src, 1, size * nbuf);
	memset(dst, 2, size * nbuf);
	t0 = now();
	do {
		for (int i = 0; i < 64; i++, n++) {
			size_t k = n % nbuf;

			memcpy(dst + k * size, src + k * size, size);
			/* Keeps the compiler from dropping or merging the copies. */
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
		t = now() - t0;
	} while (t < min_secs);
	free(src);
	free(dst);
	return (double)n * size / t / 0x100000;
}

/* The ping-pong: one cache line, written in turn by two threads. */
static _Atomic uint64_t line __attribute__((aligned(64)));
static int iters;

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* Best effort: with one CPU the two threads still alternate, only slower. */
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *ponger(void *arg)
{
	(void)arg;
	pin(1);
	for (uint64_t i = 0; i < (uint64_t)iters; i++) {
		while (atomic_load_explicit(&line, memory_order_acquire) != 2 * i + 1)
			;
		atomic_store_explicit(&line, 2 * i + 2, memory_order_release);
	}
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void pingpong(void)
{
	double *rtt = calloc(iters, sizeof(*rtt)), sum = 0;
	pthread_t t;

	if (!rtt || pthread_create(&t, NULL, ponger, NULL)) {
		printf("pingpong n/a\n");
		return;
	}
	pin(0);
	for (uint64_t i = 0; i < (uint64_t)iters; i++) {
		double t0 = now();

		atomic_store_explicit(&line, 2 * i + 1, memory_order_release);
		while (atomic_load_explicit(&line, memory_order_acquire) != 2 * i + 2)
			;
		rtt[i] = (now() - t0) * 1e6;
		sum += rtt[i];
	}
	pthread_join(t, NULL);
	qsort(rtt, iters, sizeof(*rtt), cmp_double);
	/* perftest's "typical" is the median; its percentiles index the sorted samples. */
	printf("pingpong %.3f %.3f %.3f %.3f\n", rtt[iters / 2], sum / iters,
	       rtt[(int)(iters * 0.99)], rtt[(int)(iters * 0.999)]);
	free(rtt);
}

int main(int argc, char **argv)
{
	int first = 1;

	iters = 200000;
	if (argc > 1 && !strcmp(argv[1], "-q")) {
		min_secs = 0.05;
		iters = 20000;
		first = 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = first; i < argc; i++) {
		size_t size = strtoul(argv[i], NULL, 0);

		if (size)
			printf("memcpy %zu %.2f\n", size, memcpy_mbps(size));
	}
	pingpong();
	return 0;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The limits a software RDMA device on this machine cannot beat, measured the way perftest
 * reports its figures so that the two can be divided:
 *   copy bandwidth for each message size (MB/s as perftest counts it: 2^20 bytes per second)
 *   between one source and one destination buffer of the size, the working set of a perftest
 *   run, which posts every work request on the same buffer: glibc's memcpy, a plain
 *   word-by-word copy (glibc picks a routine by size and CPU feature, and the one it picks can
 *   be pathological under emulation), the kernel's own copy between two user buffers
 *   (process_vm_writev into this process, which also pins the pages on every call), and on
 *   x86-64 `rep movsb`, the instruction the kernel's copies use on CPUs with fast string moves;
 *   a device can copy no faster than the fastest of them;
 *   the round trip of one cache line between two threads on two CPUs (a shared-memory
 *   ping-pong: the cheapest possible "message" between two cores);
 *   a null system call (the least a doorbell that enters the kernel costs);
 *   the same ping-pong with a null system call before each answer: the floor of a doorbell
 *   ping-pong (a system call and a cache-line transfer per one-way trip), measured as a chain.
 *
 *   limits [-q] SIZE...
 * Prints one line per figure:
 *   memcpy SIZE MBPS
 *   copy SIZE MBPS
 *   kcopy SIZE MBPS
 *   movsb SIZE MBPS                    (x86-64 only)
 *   pingpong RTT_TYPICAL_US RTT_AVG_US RTT_P99_US RTT_P999_US
 *   syscall TYPICAL_US
 *   sysping RTT_TYPICAL_US RTT_AVG_US RTT_P99_US RTT_P999_US
 *   jitter CPU PER_SECOND TYPICAL_US P99_US
 *                                      (how often a thread spinning on CPU is interrupted for
 *                                      10 µs or more, e.g. by the timer tick, and for how long)
 *   stalls SECONDS COUNT LONGEST_MS TOTAL_MS
 *                                      (the times the whole VM stopped while a thread on each
 *                                      of the first two CPUs read the clock: a gap of 5 ms or
 *                                      more that both threads saw at once is the host's, not
 *                                      the guest scheduler's)
 *   tsc MEASURED_MHZ STATED_MHZ        (x86-64 only, first: the TSC's rate against
 *                                      CLOCK_MONOTONIC over a second, and /proc/cpuinfo's
 *                                      "cpu MHz", which perftest times itself by)
 * On x86-64 every figure is timed with the TSC, as perftest times its own.
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
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double min_secs = 0.3;

static double monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#ifdef __x86_64__
#include <x86intrin.h>

/* TSC ticks per second, measured against CLOCK_MONOTONIC when the program starts. */
static double tsc_hz;

/*
 * Seconds, from the TSC as perftest reads it: one instruction, where a clock_gettime can be a
 * trap into the hypervisor (a guest whose clocksource is the HPET).
 */
static double now(void)
{
	return __rdtsc() / tsc_hz;
}

/* Measures tsc_hz over a second; prints it with /proc/cpuinfo's "cpu MHz" (perftest's). */
static void tsc_rate(void)
{
	double t0 = monotonic(), t1, stated = 0;
	uint64_t c0 = __rdtsc(), c1;
	char line[256];
	FILE *f;

	do {
		t1 = monotonic();
		c1 = __rdtsc();
	} while (t1 - t0 < 1);
	tsc_hz = (c1 - c0) / (t1 - t0);
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f) && sscanf(line, "cpu MHz : %lf", &stated) != 1)
		;
	if (f)
		fclose(f);
	printf("tsc %.1f %.1f\n", tsc_hz / 1e6, stated);
}
#else
static double now(void)
{
	return monotonic();
}
#endif

enum copier { GLIBC, WORDS, KERNEL, MOVSB };

/* process_vm_writev failed (a kernel without CONFIG_CROSS_MEMORY_ATTACH). */
static int kcopy_failed;

/* A copy the compiler must not turn back into a call of memcpy. */
__attribute__((optimize("no-tree-loop-distribute-patterns")))
static void copy_words(char *dst, const char *src, size_t size)
{
	uint64_t *d = (uint64_t *)dst;
	const uint64_t *s = (const uint64_t *)src;
	size_t n = size / 8;

	for (size_t i = 0; i + 4 <= n; i += 4) {
		d[i] = s[i];
		d[i + 1] = s[i + 1];
		d[i + 2] = s[i + 2];
		d[i + 3] = s[i + 3];
	}
	for (size_t i = n & ~(size_t)3; i < n; i++)
		d[i] = s[i];
	for (size_t i = n * 8; i < size; i++)
		dst[i] = src[i];
}

#ifdef __x86_64__
static void copy_movsb(char *dst, const char *src, size_t size)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(size) : : "memory");
}
#endif

static void copy(enum copier how, char *dst, char *src, size_t size)
{
	struct iovec local = { src, size }, remote = { dst, size };

	switch (how) {
	case GLIBC:
		memcpy(dst, src, size);
		break;
	case WORDS:
		copy_words(dst, src, size);
		break;
	case KERNEL:
		if (process_vm_writev(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)size)
			kcopy_failed = 1;
		break;
	case MOVSB:
#ifdef __x86_64__
		copy_movsb(dst, src, size);
#endif
		break;
	}
}

/* Copies SIZE bytes from one buffer to another until min_secs passed. */
static double copy_mbps(enum copier how, size_t size)
{
	char *src = malloc(size), *dst = malloc(size);
	uint64_t n = 0;
	double t0, t = 1;

	if (!src || !dst)
		return 0;
	memset(src, 1, size);
	memset(dst, 2, size);
	t0 = now();
	do {
		if (how == KERNEL && kcopy_failed)
			break;
		for (int i = 0; i < 64; i++, n++) {
			copy(how, dst, src, size);
			/* Keeps the compiler from dropping or merging the copies. */
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
		t = now() - t0;
	} while (t < min_secs);
	free(src);
	free(dst);
	return (double)n * size / t / 0x100000;
}

/*
 * The ping-pong: one cache line, written in turn by two threads; with `enter`, each makes a
 * null system call before it writes.
 */
static _Atomic uint64_t line __attribute__((aligned(64)));
static int iters;
static int enter;

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
		if (enter)
			syscall(SYS_getppid);
		atomic_store_explicit(&line, 2 * i + 2, memory_order_release);
	}
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void pingpong(const char *name)
{
	double *rtt = calloc(iters, sizeof(*rtt)), sum = 0;
	pthread_t t;

	if (!rtt || pthread_create(&t, NULL, ponger, NULL)) {
		printf("%s n/a\n", name);
		return;
	}
	pin(0);
	for (uint64_t i = 0; i < (uint64_t)iters; i++) {
		double t0 = now();

		if (enter)
			syscall(SYS_getppid);
		atomic_store_explicit(&line, 2 * i + 1, memory_order_release);
		while (atomic_load_explicit(&line, memory_order_acquire) != 2 * i + 2)
			;
		rtt[i] = (now() - t0) * 1e6;
		sum += rtt[i];
	}
	pthread_join(t, NULL);
	qsort(rtt, iters, sizeof(*rtt), cmp_double);
	/* perftest's "typical" is the median; its percentiles index the sorted samples. */
	printf("%s %.3f %.3f %.3f %.3f\n", name, rtt[iters / 2], sum / iters,
	       rtt[(int)(iters * 0.99)], rtt[(int)(iters * 0.999)]);
	free(rtt);
}

/* The typical time of a system call that does nothing (getppid), in batches of 1000. */
static void null_syscall(void)
{
	double batch[101];

	for (int b = 0; b < 101; b++) {
		double t0 = now();

		for (int i = 0; i < 1000; i++)
			syscall(SYS_getppid);
		batch[b] = (now() - t0) * 1e6 / 1000;
	}
	qsort(batch, 101, sizeof(batch[0]), cmp_double);
	printf("syscall %.3f\n", batch[50]);
}

/* A gap between two clock reads of a spinning thread: an interruption, and a stall. */
#define JITTER_SECS 10e-6
#define GAP_SECS 0.005
#define MAX_GAPS 4096
#define MAX_JITTER 200000

struct gaps {
	int cpu, n, jn;
	double secs, start[MAX_GAPS], end[MAX_GAPS], jitter[MAX_JITTER];
};

/* Spins on one CPU for `secs`, noting the gaps between successive clock reads. */
static void *watch(void *arg)
{
	struct gaps *g = arg;
	double t0, last, t;

	pin(g->cpu);
	t0 = last = now();
	while ((t = now()) - t0 < g->secs) {
		if (t - last >= JITTER_SECS && t - last < GAP_SECS && g->jn < MAX_JITTER)
			g->jitter[g->jn++] = (t - last) * 1e6;
		if (t - last >= GAP_SECS && g->n < MAX_GAPS) {
			g->start[g->n] = last;
			g->end[g->n++] = t;
		}
		last = t;
	}
	return NULL;
}

/*
 * What keeps a spinning thread from running: a thread on CPU 0 and one on CPU 1 read the clock
 * for `secs`. Prints, for each, how often and for how long it was interrupted (short gaps);
 * then the stalls of the whole VM, where both saw a long gap at the same time and so neither
 * vCPU ran (a host that stops the VM, e.g. for a CPU quota): their number, the longest and
 * their sum.
 */
static void watch_both(double secs)
{
	static struct gaps g[2];
	double longest = 0, total = 0;
	pthread_t t;
	int count = 0;

	for (int i = 0; i < 2; i++) {
		g[i].cpu = i;
		g[i].n = 0;
		g[i].jn = 0;
		g[i].secs = secs;
	}
	if (pthread_create(&t, NULL, watch, &g[1])) {
		printf("stalls n/a\n");
		return;
	}
	watch(&g[0]);
	pthread_join(t, NULL);
	for (int i = 0; i < 2; i++) {
		qsort(g[i].jitter, g[i].jn, sizeof(g[i].jitter[0]), cmp_double);
		printf("jitter %d %.1f %.1f %.1f\n", i, g[i].jn / secs,
		       g[i].jn ? g[i].jitter[g[i].jn / 2] : 0,
		       g[i].jn ? g[i].jitter[(int)(g[i].jn * 0.99)] : 0);
	}
	for (int i = 0; i < g[0].n; i++) {
		double both = 0;

		for (int j = 0; j < g[1].n; j++) {
			double from = g[0].start[i] > g[1].start[j] ? g[0].start[i] : g[1].start[j];
			double to = g[0].end[i] < g[1].end[j] ? g[0].end[i] : g[1].end[j];

			if (to - from > both)
				both = to - from;
		}
		if (both >= GAP_SECS) {
			count++;
			total += both;
			if (both > longest)
				longest = both;
		}
	}
	printf("stalls %.1f %d %.1f %.1f\n", secs, count, longest * 1e3, total * 1e3);
}

int main(int argc, char **argv)
{
	double stall_secs = 5;
	int first = 1;

	iters = 200000;
	if (argc > 1 && !strcmp(argv[1], "-q")) {
		min_secs = 0.05;
		stall_secs = 1;
		iters = 20000;
		first = 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
#ifdef __x86_64__
	tsc_rate();
#endif
	for (int i = first; i < argc; i++) {
		size_t size = strtoul(argv[i], NULL, 0);

		if (!size)
			continue;
		printf("memcpy %zu %.2f\n", size, copy_mbps(GLIBC, size));
		printf("copy %zu %.2f\n", size, copy_mbps(WORDS, size));
		if (!kcopy_failed) {
			double mbps = copy_mbps(KERNEL, size);

			if (!kcopy_failed)
				printf("kcopy %zu %.2f\n", size, mbps);
		}
#ifdef __x86_64__
		printf("movsb %zu %.2f\n", size, copy_mbps(MOVSB, size));
#endif
	}
	pingpong("pingpong");
	null_syscall();
	enter = 1;
	atomic_store(&line, 0);
	pingpong("sysping");
	watch_both(stall_secs);
	return 0;
}

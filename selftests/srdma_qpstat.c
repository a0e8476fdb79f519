// SPDX-License-Identifier: GPL-2.0-only
/*
 * RC QP pairs from device A to device B that move known traffic on command, for
 * srdma_counters.sh to bind, unbind and destroy with `rdma statistic qp` while it compares
 * the figures. Commands, one per line on standard input:
 *   pair        connects a new pair; answers "pair I QPN_A QPN_B"
 *   send I N    N SENDs of 64 bytes over pair I, each completed at both ends; answers "sent I N"
 *   destroy I   destroys pair I; answers "destroyed I"
 * Any failure answers "error ..." and ends the program with status 1; the end of input ends
 * it with status 0.
 *
 * Usage: srdma_qpstat DEV_A DEV_B
 */
#include <errno.h>
#include <stdint.h>

#include "srdma_side.h"

#define PAIRS 8
#define LEN 64

static struct side a, b;
static struct ibv_qp *qa[PAIRS], *qb[PAIRS];

static void fail(const char *what)
{
	printf("error %s (%s)\n", what, strerror(errno));
	exit(1);
}

static void make_pair(int i)
{
	struct conn c = { .sgidx = a.gidx };

	qa[i] = side_qp(&a, IBV_QPT_RC);
	qb[i] = side_qp(&b, IBV_QPT_RC);
	if (!qa[i] || !qb[i] || connect_qp(qa[i], qb[i]->qp_num, &b.gid, c))
		fail("connecting a pair");
	c.sgidx = b.gidx;
	if (connect_qp(qb[i], qa[i]->qp_num, &a.gid, c))
		fail("connecting a pair");
	printf("pair %d %u %u\n", i, qa[i]->qp_num, qb[i]->qp_num);
}

static void send_n(int i, long n)
{
	struct ibv_wc wc;

	for (long k = 0; k < n; k++) {
		if (post_recv_one(qb[i], &b, LEN) ||
		    post_one(qa[i], IBV_WR_SEND, a.mr->lkey, (uintptr_t)a.buf, LEN, 0, 0))
			fail("posting");
		if (next_wc(a.cq, 5000, &wc) != IBV_WC_SUCCESS ||
		    next_wc(b.cq, 5000, &wc) != IBV_WC_SUCCESS)
			fail("completing a SEND");
	}
	printf("sent %d %ld\n", i, n);
}

int main(int argc, char **argv)
{
	char line[128], cmd[16];
	int next = 0, i;
	long n;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DEV_A DEV_B\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	open_side(&a, argv[1], 4096, IBV_ACCESS_LOCAL_WRITE);
	open_side(&b, argv[2], 4096, IBV_ACCESS_LOCAL_WRITE);
	while (fgets(line, sizeof(line), stdin)) {
		int got = sscanf(line, "%15s %d %ld", cmd, &i, &n);

		if (got == 1 && !strcmp(cmd, "pair") && next < PAIRS) {
			make_pair(next++);
		} else if (got == 3 && !strcmp(cmd, "send") && i >= 0 && i < next && qa[i]) {
			send_n(i, n);
		} else if (got == 2 && !strcmp(cmd, "destroy") && i >= 0 && i < next && qa[i]) {
			if (ibv_destroy_qp(qa[i]) || ibv_destroy_qp(qb[i]))
				fail("destroying a pair");
			qa[i] = NULL;
			qb[i] = NULL;
			printf("destroyed %d\n", i);
		} else {
			errno = EINVAL;
			fail(line);
		}
	}
	return 0;
}

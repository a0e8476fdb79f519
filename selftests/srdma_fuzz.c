// SPDX-License-Identifier: GPL-2.0-only
/*
 * Ring fuzzer: writes random bytes into every srdma ring and doorbell page this process has
 * mapped, while posting and polling through them, for a bounded number of rounds. A second
 * process keeps an MR with a known pattern in its own PD; it must come through untouched.
 * The kernel log is checked by the test runner. Prints TAP.
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "srdma_tap.h"

#define MAPS 64

static struct { char *addr; size_t len; } maps[MAPS];
static int nmaps;

/* The uverbs mappings of this process: the rings and doorbell pages. */
static void find_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo, hi;

	nmaps = 0;
	while (f && fgets(line, sizeof(line), f) && nmaps < MAPS)
		if (strstr(line, "/dev/infiniband/uverbs") && sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			maps[nmaps].addr = (char *)lo;
			maps[nmaps].len = hi - lo;
			nmaps++;
		}
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "srdma0";
	int rounds = argc > 2 ? atoi(argv[2]) : 3000;
	int to_child[2], to_parent[2], status;
	char c = 0;
	pid_t child;

	printf("TAP version 13\n");
	if (pipe(to_child) || pipe(to_parent))
		return 1;
	child = fork();
	if (child == 0) {
		/* The bystander: an MR of its own, checked at the end. */
		struct ibv_context *ctx = open_dev(dev);
		struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
		size_t len = 1 << 20;
		unsigned char *buf = malloc(len);

		for (size_t i = 0; i < len; i++)
			buf[i] = i * 7 + 3;
		if (!pd || !ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
							IBV_ACCESS_REMOTE_READ))
			_exit(2);
		write(to_parent[1], &c, 1);
		read(to_child[0], &c, 1);
		for (size_t i = 0; i < len; i++)
			if (buf[i] != (unsigned char)(i * 7 + 3))
				_exit(1);
		_exit(0);
	}
	read(to_parent[0], &c, 1);

	struct ibv_context *ctx = open_dev(dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { 16, 16, 2, 2, 64 } };
	struct ibv_qp *qp[2] = { ibv_create_qp(pd, &ia), ibv_create_qp(pd, &ia) };
	char *buf = calloc(1, 65536);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 65536, IBV_ACCESS_LOCAL_WRITE);
	union ibv_gid gid;
	struct ibv_wc wc[16];

	ibv_query_gid(ctx, 1, 1, &gid);
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

		ibv_modify_qp(qp[i], &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS);
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
					   .dest_qp_num = qp[1 - i]->qp_num, .max_dest_rd_atomic = 1,
					   .ah_attr = { .is_global = 1, .port_num = 1,
							.grh = { .dgid = gid, .sgid_index = 1 } } };
		ibv_modify_qp(qp[i], &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .max_rd_atomic = 1 };
		ibv_modify_qp(qp[i], &qa, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	}
	find_maps();
	printf("# %d uverbs mappings to fuzz\n", nmaps);
	srand(getpid());
	for (int r = 0; r < rounds; r++) {
		struct ibv_sge sge = { (uintptr_t)buf + rand() % 60000, rand() % 4096, mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = r, .sg_list = &sge, .num_sge = 1 }, *brw;
		struct ibv_send_wr swr = { .wr_id = r, .sg_list = &sge, .num_sge = 1,
					   .opcode = rand() % 7, .send_flags = IBV_SEND_SIGNALED,
					   .wr.rdma = { (uintptr_t)buf, mr->rkey } }, *bsw;
		int k = rand() % (nmaps ? nmaps : 1);

		/* Garbage: a few random words somewhere in one mapping. */
		for (int w = 0; nmaps && w < 1 + rand() % 8; w++) {
			size_t off = (rand() % maps[k].len) & ~3UL;
			*(unsigned int *)(maps[k].addr + off) = rand() ^ (rand() << 16);
		}
		ibv_post_recv(qp[r & 1], &rwr, &brw);
		ibv_post_send(qp[(r + 1) & 1], &swr, &bsw);
		ibv_poll_cq(cq, 16, wc);
		if (r % 500 == 499) {
			/* Start over with the QPs in RESET, so the fuzzing reaches fresh state too. */
			struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RESET };

			ibv_modify_qp(qp[r & 1], &qa, IBV_QP_STATE);
		}
	}
	result(1, "%d rounds of garbage in the rings and doorbells, posting and polling", rounds);
	int ok = !ibv_destroy_qp(qp[0]);

	ok &= !ibv_destroy_qp(qp[1]);
	ok &= !ibv_destroy_cq(cq);
	ok &= !ibv_dereg_mr(mr);
	ok &= !ibv_dealloc_pd(pd);
	ok &= !ibv_close_device(ctx);
	result(ok, "every object destroyed after the fuzzing");

	write(to_child[1], &c, 1);
	waitpid(child, &status, 0);
	result(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "the other process's MR is untouched (status %d)", status);
	printf("1..%d\n", test_num);
	return failures;
}

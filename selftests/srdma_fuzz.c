// SPDX-License-Identifier: GPL-2.0-only
/*
 * Ring fuzzer: two fuzzing processes each write random bytes into every srdma ring and
 * doorbell page they have mapped, from the posting thread between posts and from a racing
 * thread at any moment (while kicks are in flight), for a bounded number of rounds. Their work
 * requests aim at a bystander process too: its MR's keys, its QP's number (their QPs connect
 * to it). The bystander's memory and receive queue must come through untouched, and the
 * kernel log clean (checked by the test runner). Prints TAP.
 *   srdma_fuzz DEVICE [ROUNDS]
 */
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
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
		if (strstr(line, "/dev/infiniband/uverbs") && sscanf(line, "%lx-%lx", &lo,
								     &hi) == 2) {
			maps[nmaps].addr = (char *)lo;
			maps[nmaps].len = hi - lo;
			nmaps++;
		}
	if (f)
		fclose(f);
}

/* What the fuzzers aim at in the bystander. */
struct target {
	uint32_t lkey, rkey, qpn;
	uint64_t addr;
};

static atomic_int racing;

/* The racing writer: garbage at random places of the mappings until told to stop. */
static void *race(void *arg)
{
	unsigned int seed = (uintptr_t)arg;

	while (atomic_load(&racing)) {
		int k = rand_r(&seed) % nmaps;
		size_t off = (rand_r(&seed) % maps[k].len) & ~3UL;

		__atomic_store_n((unsigned int *)(maps[k].addr + off),
				 rand_r(&seed) ^ (rand_r(&seed) << 16), __ATOMIC_RELAXED);
	}
	return NULL;
}

static void to_rts(struct ibv_qp *qp, uint32_t dqpn, union ibv_gid *gid)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						     IBV_ACCESS_REMOTE_READ };

	ibv_modify_qp(qp, &qa,
		      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				   .dest_qp_num = dqpn, .max_dest_rd_atomic = 1,
				   .ah_attr = { .is_global = 1, .port_num = 1,
						.grh = { .dgid = *gid, .sgid_index = 1 } } };
	ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .max_rd_atomic = 1 };
	ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* One fuzzing process: exits 0 if every object it made could be destroyed afterwards. */
static int fuzz(const char *dev, int rounds, const struct target *t)
{
	struct ibv_context *ctx = open_dev(dev);
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = ctx ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { 16, 16, 2, 2, 64 } };
	struct ibv_qp *qp[3];
	char *buf = calloc(1, 65536);
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, 65536, IBV_ACCESS_LOCAL_WRITE) : NULL;
	union ibv_gid gid;
	struct ibv_wc wc[16];
	pthread_t racer;

	if (!cq || !mr)
		return 2;
	for (int i = 0; i < 3; i++)
		qp[i] = ibv_create_qp(pd, &ia);
	if (!qp[0] || !qp[1] || !qp[2])
		return 2;
	ibv_query_gid(ctx, 1, 1, &gid);
	/* Two QPs connected to each other, one to the bystander's QP. */
	to_rts(qp[0], qp[1]->qp_num, &gid);
	to_rts(qp[1], qp[0]->qp_num, &gid);
	to_rts(qp[2], t->qpn, &gid);
	find_maps();
	if (!nmaps)
		return 3;
	srand(getpid());
	atomic_store(&racing, 1);
	if (pthread_create(&racer, NULL, race, (void *)(uintptr_t)getpid()))
		return 4;
	for (int r = 0; r < rounds; r++) {
		/* Some SGEs and remote keys are the bystander's. */
		uint32_t lkey = rand() % 8 ? mr->lkey : t->lkey;
		struct ibv_sge sge = { (uintptr_t)buf + rand() % 60000, rand() % 4096, lkey };
		struct ibv_recv_wr rwr = { .wr_id = r, .sg_list = &sge, .num_sge = 1 }, *brw;
		struct ibv_send_wr swr = { .wr_id = r, .sg_list = &sge, .num_sge = 1,
					   .opcode = rand() % 7, .send_flags = IBV_SEND_SIGNALED,
					   .wr.rdma = { rand() % 2 ? (uintptr_t)buf : t->addr,
							rand() % 2 ? mr->rkey : t->rkey } }, *bsw;
		int k = rand() % nmaps;

		/* Garbage between posts too: a few random words somewhere in one mapping. */
		for (int w = 0; w < 1 + rand() % 8; w++) {
			size_t off = (rand() % maps[k].len) & ~3UL;

			__atomic_store_n((unsigned int *)(maps[k].addr + off),
					 rand() ^ (rand() << 16), __ATOMIC_RELAXED);
		}
		ibv_post_recv(qp[r % 3], &rwr, &brw);
		ibv_post_send(qp[(r + 1) % 3], &swr, &bsw);
		ibv_poll_cq(cq, 16, wc);
		if (r % 500 == 499) {
			/*
			 * Start over with a QP in RESET and back in RTS, so the fuzzing reaches
			 * fresh state too.
			 */
			struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RESET };
			int i = r % 3;

			ibv_modify_qp(qp[i], &qa, IBV_QP_STATE);
			to_rts(qp[i], i == 2 ? t->qpn : qp[1 - i]->qp_num, &gid);
		}
	}
	atomic_store(&racing, 0);
	pthread_join(racer, NULL);
	int ok = 1;

	for (int i = 0; i < 3; i++)
		ok &= !ibv_destroy_qp(qp[i]);
	ok &= !ibv_destroy_cq(cq);
	ok &= !ibv_dereg_mr(mr);
	ok &= !ibv_dealloc_pd(pd);
	ok &= !ibv_close_device(ctx);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "srdma0";
	int rounds = argc > 2 ? atoi(argv[2]) : 3000;
	int to_child[2], to_parent[2], status, fstatus[2];
	struct target t;
	pid_t child, fuzzer[2];
	char c = 0;

	ksft_print_header();
	fflush(stdout);
	if (pipe(to_child) || pipe(to_parent))
		return 1;
	child = fork();
	if (child == 0) {
		/*
		 * The bystander: an MR and a QP of its own, with receives posted, checked at
		 * the end.
		 */
		struct ibv_context *ctx = open_dev(dev);
		struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
		struct ibv_cq *cq = ctx ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
		struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					       .cap = { 16, 16, 1, 1, 0 } };
		struct ibv_qp *qp = pd && cq ? ibv_create_qp(pd, &ia) : NULL;
		size_t len = 1 << 20;
		unsigned char *buf = malloc(len);
		struct ibv_mr *mr;
		struct ibv_wc wc;
		union ibv_gid gid;

		for (size_t i = 0; i < len; i++)
			buf[i] = i * 7 + 3;
		mr = pd ? ibv_reg_mr(pd, buf, len,
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						   IBV_ACCESS_REMOTE_READ) : NULL;
		if (!mr || !qp || ibv_query_gid(ctx, 1, 1, &gid))
			_exit(2);
		/* Connected to a QP number no fuzzer has: its own. */
		to_rts(qp, qp->qp_num, &gid);
		for (int i = 0; i < 8; i++) {
			struct ibv_sge sge = { (uintptr_t)buf + 4096 * i, 4096, mr->lkey };
			struct ibv_recv_wr rwr = { .wr_id = i, .sg_list = &sge,
						  .num_sge = 1 }, *bad;

			ibv_post_recv(qp, &rwr, &bad);
		}
		t = (struct target){ mr->lkey, mr->rkey, qp->qp_num, (uintptr_t)buf };
		write(to_parent[1], &t, sizeof(t));
		read(to_child[0], &c, 1);
		for (size_t i = 0; i < len; i++)
			if (buf[i] != (unsigned char)(i * 7 + 3))
				_exit(1);
		_exit(ibv_poll_cq(cq, 1, &wc) == 0 ? 0 : 3);
	}
	if (read(to_parent[0], &t, sizeof(t)) != sizeof(t)) {
		printf("Bail out! the bystander did not start\n");
		return 1;
	}
	printf("# fuzzing at the bystander's lkey 0x%x, rkey 0x%x, QPN %u\n", t.lkey, t.rkey,
	       t.qpn);
	fflush(stdout);
	for (int f = 0; f < 2; f++) {
		fuzzer[f] = fork();
		if (fuzzer[f] == 0)
			_exit(fuzz(dev, rounds, &t));
	}
	for (int f = 0; f < 2; f++) {
		waitpid(fuzzer[f], &fstatus[f], 0);
		result(WIFEXITED(fstatus[f]) && WEXITSTATUS(fstatus[f]) == 0,
		       "fuzzer %d: %d rounds of garbage in the rings and doorbells, racing writer, posting and polling, then every object destroyed (status 0x%x)",
		       f, rounds,
		       fstatus[f]);
	}
	write(to_child[1], &c, 1);
	waitpid(child, &status, 0);
	result(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "the bystander's MR is untouched and its QP received nothing (status 0x%x)", status);
	tap_done();
}

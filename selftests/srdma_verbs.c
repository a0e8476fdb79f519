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

#include "srdma_tap.h"

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type type,
			      struct ibv_qp_cap cap)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = cq, .recv_cq = cq, .cap = cap, .qp_type = type,
	};
	return ibv_create_qp(pd, &attr);
}

static const struct ibv_qp_cap small_cap = {
	.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1,
};

static int hold(const char *name, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_context *ctx = open_dev(name);
		struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
		struct ibv_cq *cq = ctx ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;

		static char buf[4096];

		if (!pd || !cq || !make_qp(pd, cq, IBV_QPT_RC, small_cap) ||
		    !ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE)) {
			perror("hold");
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}

/* Run with RLIMIT_MEMLOCK at 64 KiB and without CAP_IPC_LOCK. */
static int memlock(const char *name)
{
	struct ibv_context *ctx = open_dev(name);
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	size_t big = 1 << 20, small = 16 << 10;
	char *mem = aligned_alloc(4096, big);
	struct ibv_mr *mr;

	ksft_print_header();
	errno = 0;
	mr = pd ? ibv_reg_mr(pd, mem, big, IBV_ACCESS_LOCAL_WRITE) : NULL;
	result(!mr && errno == ENOMEM,
	       "MR of 1 MiB beyond RLIMIT_MEMLOCK of 64 KiB: ENOMEM (errno %d)", errno);
	mr = pd ? ibv_reg_mr(pd, mem, small, IBV_ACCESS_LOCAL_WRITE) : NULL;
	result(!!mr, "MR of 16 KiB within the limit");
	result(mr && !ibv_dereg_mr(mr), "dereg it");
	tap_done();
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
	if (argc == 3 && !strcmp(argv[2], "memlock"))
		return memlock(argv[1]);

	ksft_print_header();
	ctx = open_dev(argv[1]);
	result(!!ctx, "ibv_open_device(%s) through the srdma provider", argv[1]);
	if (!ctx)
		tap_done();

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
	result(!!pd, "ibv_alloc_pd");
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
	result(cq && cq->cqe >= 100 && cq->cqe < 256, "CQ of 100 entries (got %d)",
	       cq ? cq->cqe : -1);
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

	/* Resizing. */
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	ok = cq && !ibv_resize_cq(cq, 1000);
	result(ok && cq->cqe >= 1000, "resize CQ 16 -> 1000 (got %d)", cq ? cq->cqe : -1);
	ok = cq && !ibv_resize_cq(cq, 4);
	result(ok && cq->cqe >= 4 && cq->cqe < 16, "resize CQ down to 4 (got %d)",
	       cq ? cq->cqe : -1);
	result(cq && ibv_resize_cq(cq, 65537) == EINVAL, "resize above max_cqe: EINVAL");
	result(cq && ibv_resize_cq(cq, 0) == EINVAL, "resize to 0: EINVAL");
	result(cq && !ibv_destroy_cq(cq), "destroy the resized CQ");

	/* mmap of what the kernel never published. */
	{
		long pg = sysconf(_SC_PAGESIZE);
		void *p;

		cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
			 0x7fff000L * pg);
		result(p == MAP_FAILED && errno == EINVAL, "mmap at an unpublished offset: EINVAL");
		p = mmap(NULL, 64 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd, 0);
		result(p == MAP_FAILED && errno == EINVAL,
		       "mmap of a published offset with the wrong size: EINVAL");
		if (cq)
			ibv_destroy_cq(cq);
	}

	/* Queue pairs. */
	{
		struct ibv_qp_cap big = { .max_send_wr = 100, .max_recv_wr = 50, .max_send_sge = 4,
					  .max_recv_sge = 3, .max_inline_data = 100 };
		struct ibv_qp_attr qa, got;
		struct ibv_qp_init_attr init;
		union ibv_gid gid;
		struct ibv_qp *rc, *uc, *ud, *bad;
		struct ibv_qp_init_attr ia;

		pd = ibv_alloc_pd(ctx);
		cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
		ia = (struct ibv_qp_init_attr){ .send_cq = cq, .recv_cq = cq, .cap = big,
						.qp_type = IBV_QPT_RC };
		rc = ibv_create_qp(pd, &ia);
		result(rc && rc->qp_num >= 16 && rc->qp_num <= 0xffffff, "RC QP created, qpn %u",
		       rc ? rc->qp_num : 0);
		result(rc && ia.cap.max_send_wr >= 100 && ia.cap.max_recv_wr >= 50 &&
		       ia.cap.max_send_sge >= 4 && ia.cap.max_recv_sge >= 3 &&
		       ia.cap.max_inline_data >= 100,
		       "RC caps at least as asked: wr %u/%u sge %u/%u inline %u",
		       ia.cap.max_send_wr,
		       ia.cap.max_recv_wr, ia.cap.max_send_sge, ia.cap.max_recv_sge,
		       ia.cap.max_inline_data);
		uc = make_qp(pd, cq, IBV_QPT_UC, small_cap);
		ud = make_qp(pd, cq, IBV_QPT_UD, small_cap);
		result(uc && ud && uc->qp_num != rc->qp_num && ud->qp_num != uc->qp_num,
		       "UC and UD QPs with their own numbers");

		/* RC: RESET -> INIT -> RTR -> RTS -> SQD -> RTS -> ERR -> RESET */
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1,
					   .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
							      IBV_ACCESS_REMOTE_READ };
		result(rc && !ibv_modify_qp(rc, &qa,
					    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						  IBV_QP_ACCESS_FLAGS), "RC RESET->INIT");
		result(rc && !ibv_query_qp(rc, &got, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, &init) &&
		       got.qp_state == IBV_QPS_INIT &&
		       got.qp_access_flags == (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) &&
		       init.cap.max_send_wr == ia.cap.max_send_wr,
		       "query: INIT, access flags, caps");
		ibv_query_gid(ctx, 1, 1, &gid);
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
					   .dest_qp_num = uc->qp_num, .rq_psn = 0x123456,
					   .max_dest_rd_atomic = 4, .min_rnr_timer = 12,
					   .ah_attr = { .is_global = 1, .port_num = 1,
							.grh = { .dgid = gid, .sgid_index = 1,
								 .hop_limit = 64 } } };
		result(rc && !ibv_modify_qp(rc, &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
		       "RC INIT->RTR (GID index 1)");
		memset(&got, 0, sizeof(got));
		result(rc && !ibv_query_qp(rc, &got, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN,
					   &init) &&
		       got.qp_state == IBV_QPS_RTR && got.dest_qp_num == uc->qp_num &&
		       got.rq_psn == 0x123456 && got.path_mtu == IBV_MTU_1024 &&
		       got.max_dest_rd_atomic == 4 && got.min_rnr_timer == 12 &&
		       got.ah_attr.grh.sgid_index == 1 && got.ah_attr.grh.hop_limit == 64 &&
		       !memcmp(&got.ah_attr.grh.dgid, &gid, sizeof(gid)),
		       "query: RTR with the path, PSN and limits set");
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
					   .rnr_retry = 7, .sq_psn = 0x654321, .max_rd_atomic = 4 };
		result(rc && !ibv_modify_qp(rc, &qa,
					    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
						  IBV_QP_MAX_QP_RD_ATOMIC), "RC RTR->RTS");
		result(rc && !ibv_query_qp(rc, &got, IBV_QP_STATE, &init) &&
		       got.qp_state == IBV_QPS_RTS &&
		       got.timeout == 14 && got.retry_cnt == 7 && got.rnr_retry == 7 &&
		       got.sq_psn == 0x654321 && got.max_rd_atomic == 4,
		       "query: RTS with timers set");
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_SQD };
		result(rc && !ibv_modify_qp(rc, &qa, IBV_QP_STATE), "RC RTS->SQD");
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS };
		result(rc && !ibv_modify_qp(rc, &qa, IBV_QP_STATE), "RC SQD->RTS");
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR };
		result(rc && !ibv_modify_qp(rc, &qa, IBV_QP_STATE), "RC RTS->ERR");
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET };
		result(rc && !ibv_modify_qp(rc, &qa, IBV_QP_STATE), "RC ERR->RESET");
		result(rc && !ibv_query_qp(rc, &got, IBV_QP_STATE, &init) &&
		       got.qp_state == IBV_QPS_RESET && got.dest_qp_num == 0,
		       "query: RESET, attributes cleared");

		/* Bad transitions and attributes. */
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS };
		result(rc && ibv_modify_qp(rc, &qa, IBV_QP_STATE) == EINVAL, "RESET->RTS: EINVAL");
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1 };
		result(rc && ibv_modify_qp(rc, &qa, IBV_QP_STATE | IBV_QP_PORT) == EINVAL,
		       "RESET->INIT without required attributes: EINVAL");
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 2 };
		result(rc && ibv_modify_qp(rc, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						 IBV_QP_ACCESS_FLAGS) == EINVAL,
		       "INIT on port 2: EINVAL");
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1,
					  .pkey_index = 3 };
		result(rc && ibv_modify_qp(rc, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						 IBV_QP_ACCESS_FLAGS) == EINVAL,
		       "P_Key index 3: EINVAL");
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1,
					   .qp_access_flags = 1 << 20 };
		result(rc && ibv_modify_qp(rc, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						 IBV_QP_ACCESS_FLAGS) == EINVAL,
		       "unknown access flag: EINVAL");
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 7 };
		result(rc && ibv_modify_qp(rc, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						 IBV_QP_ACCESS_FLAGS | IBV_QP_QKEY) == EINVAL,
		       "Q_Key on an RC QP: EINVAL");

		/* UC and UD through their states. */
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1 };
		ok = uc && !ibv_modify_qp(uc, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						 IBV_QP_ACCESS_FLAGS);
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_2048,
					   .dest_qp_num = rc->qp_num,
					   .ah_attr = { .is_global = 1, .port_num = 1,
							.grh = { .dgid = gid, .sgid_index = 1 } } };
		ok = ok && !ibv_modify_qp(uc, &qa, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 5 };
		ok = ok && !ibv_modify_qp(uc, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN);
		result(ok && !ibv_query_qp(uc, &got, IBV_QP_STATE, &init) &&
		       got.qp_state == IBV_QPS_RTS,
		       "UC RESET->INIT->RTR->RTS");
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1,
					  .qkey = 0x11111111 };
		ok = ud && !ibv_modify_qp(ud, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						 IBV_QP_QKEY);
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR };
		ok = ok && !ibv_modify_qp(ud, &qa, IBV_QP_STATE);
		qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 9 };
		ok = ok && !ibv_modify_qp(ud, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN);
		result(ok && !ibv_query_qp(ud, &got, IBV_QP_STATE | IBV_QP_QKEY, &init) &&
		       got.qp_state == IBV_QPS_RTS && got.qkey == 0x11111111,
		       "UD RESET->INIT->RTR->RTS with its Q_Key");

		/* Creation limits. */
		errno = 0;
		bad = make_qp(pd, cq, IBV_QPT_RC, (struct ibv_qp_cap){ .max_send_wr = 16385 });
		result(!bad && errno == EINVAL, "max_send_wr above max_qp_wr: EINVAL");
		errno = 0;
		bad = make_qp(pd, cq, IBV_QPT_RC,
			      (struct ibv_qp_cap){ .max_send_wr = 1, .max_send_sge = 33 });
		result(!bad && errno == EINVAL, "max_send_sge above max_sge: EINVAL");
		errno = 0;
		bad = make_qp(pd, cq, IBV_QPT_RC,
			      (struct ibv_qp_cap){ .max_send_wr = 1, .max_inline_data = 100000 });
		result(!bad && errno == EINVAL, "max_inline_data above the device's: EINVAL");
		errno = 0;
		bad = make_qp(pd, cq, IBV_QPT_RC,
			      (struct ibv_qp_cap){ .max_send_wr = 1, .max_inline_data = 1025 });
		result(!bad && errno == EINVAL, "max_inline_data 1025 (above 1 KiB): EINVAL");
		ia = (struct ibv_qp_init_attr){ .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
						.cap = { .max_send_wr = 1,
							.max_inline_data = 1024 } };
		bad = ibv_create_qp(pd, &ia);
		result(bad && ia.cap.max_inline_data == 1024, "max_inline_data 1024: taken (%u)",
		       ia.cap.max_inline_data);
		if (bad)
			ibv_destroy_qp(bad);

		result(rc && !ibv_destroy_qp(rc) && !ibv_destroy_qp(uc) && !ibv_destroy_qp(ud),
		       "destroy the QPs");
		result(!ibv_destroy_cq(cq) && !ibv_dealloc_pd(pd), "destroy their CQ and PD");
	}

	/* Memory regions. */
	{
		size_t len = 1 << 20;
		char *mem = malloc(len + 123);
		long pg = sysconf(_SC_PAGESIZE);
		void *hole;
		struct ibv_mr *mr, *mr2;

		pd = ibv_alloc_pd(ctx);
		mr = ibv_reg_mr(pd, mem + 123, len,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		result(mr && mr->lkey && mr->rkey && mr->addr == mem + 123 && mr->length == len,
		       "MR of 1 MiB at an unaligned address: lkey 0x%x rkey 0x%x",
		       mr ? mr->lkey : 0, mr ? mr->rkey : 0);
		mr2 = ibv_reg_mr(pd, mem, 4096, IBV_ACCESS_LOCAL_WRITE);
		result(mr2 && mr2->lkey != mr->lkey,
		       "a second MR over the same memory, its own key");
		result(mr && !ibv_dereg_mr(mr) && mr2 && !ibv_dereg_mr(mr2), "dereg both");
		hole = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			    0);
		munmap(hole, 4 * pg);
		errno = 0;
		mr = ibv_reg_mr(pd, hole, 4 * pg, IBV_ACCESS_LOCAL_WRITE);
		result(!mr && errno == EFAULT, "MR over unmapped memory: EFAULT (errno %d)", errno);
		errno = 0;
		mr = ibv_reg_mr(pd, mem, 0, IBV_ACCESS_LOCAL_WRITE);
		result(!mr && errno == EINVAL, "MR of 0 bytes: EINVAL (errno %d)", errno);
		errno = 0;
		mr = ibv_reg_mr(pd, mem, 4096, IBV_ACCESS_REMOTE_WRITE);
		result(!mr && errno == EINVAL,
		       "remote write without local write: EINVAL (errno %d)", errno);
		errno = 0;
		mr = ibv_reg_mr(pd, mem, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
		result(mr && !ibv_dereg_mr(mr), "MW_BIND access (memory windows) is accepted");
		errno = 0;
		mr = ibv_reg_mr(pd, mem, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
		result(!mr && errno == EOPNOTSUPP, "on-demand paging: EOPNOTSUPP (errno %d)",
		       errno);
		mr = ibv_reg_mr(pd, mem, 4096,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
		result(mr && !ibv_dereg_mr(mr), "relaxed ordering (an optional hint) is accepted");
		ibv_dealloc_pd(pd);
		free(mem);
	}

	/* Shared receive queues. */
	{
		struct ibv_srq_init_attr sia = { .attr = { .max_wr = 100, .max_sge = 2 } };
		struct ibv_srq_attr sa;
		struct ibv_srq *srq, *bad;
		struct ibv_qp_init_attr ia;
		struct ibv_qp *qp;

		pd = ibv_alloc_pd(ctx);
		cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		srq = ibv_create_srq(pd, &sia);
		result(srq && sia.attr.max_wr >= 100 && sia.attr.max_sge >= 2,
		       "SRQ of 100 WRs (got %u)", sia.attr.max_wr);
		result(srq && !ibv_query_srq(srq, &sa) && sa.max_wr == sia.attr.max_wr &&
		       sa.srq_limit == 0, "query SRQ: max_wr %u, limit 0", sa.max_wr);
		sa = (struct ibv_srq_attr){ .srq_limit = 10 };
		result(srq && !ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) && !ibv_query_srq(srq,
											 &sa) &&
		       sa.srq_limit == 10, "arm the SRQ limit at 10");
		sa = (struct ibv_srq_attr){ .srq_limit = 100000 };
		result(srq && ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == EINVAL,
		       "limit above max_wr: EINVAL");
		sa = (struct ibv_srq_attr){ .max_wr = 1000 };
		result(srq && ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR) == EOPNOTSUPP,
		       "resize: EOPNOTSUPP (not in device caps)");
		ia = (struct ibv_qp_init_attr){ .send_cq = cq, .recv_cq = cq, .srq = srq,
						.cap = small_cap, .qp_type = IBV_QPT_RC };
		qp = ibv_create_qp(pd, &ia);
		result(!!qp, "RC QP on the SRQ");
		result(qp && !ibv_destroy_qp(qp), "destroy that QP");
		errno = 0;
		bad = ibv_create_srq(pd, &(struct ibv_srq_init_attr){
			.attr = { .max_wr = 16385, .max_sge = 1 } });
		result(!bad && errno == EINVAL, "SRQ above max_srq_wr: EINVAL");
		errno = 0;
		bad = ibv_create_srq(pd, &(struct ibv_srq_init_attr){
			.attr = { .max_wr = 4, .max_sge = 33 } });
		result(!bad && errno == EINVAL, "SRQ above max_srq_sge: EINVAL");
		result(srq && !ibv_destroy_srq(srq), "destroy the SRQ");

		/* Address handles. */
		{
			union ibv_gid gid;
			struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
			struct ibv_ah *ah;

			ibv_query_gid(ctx, 1, 1, &gid);
			aa.grh.dgid = gid;
			aa.grh.sgid_index = 1;
			aa.grh.hop_limit = 1;
			ah = ibv_create_ah(pd, &aa);
			result(!!ah, "AH to GID index 1");
			result(ah && !ibv_destroy_ah(ah), "destroy the AH");
			aa.grh.sgid_index = 200;
			errno = 0;
			ah = ibv_create_ah(pd, &aa);
			result(!ah && errno != 0,
			       "AH with a source GID index beyond the table fails (errno %d)",
			       errno);
		}
		ibv_destroy_cq(cq);
		ibv_dealloc_pd(pd);
	}

	result(!ibv_close_device(ctx), "ibv_close_device");
	tap_done();
}

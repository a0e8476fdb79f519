// SPDX-License-Identifier: GPL-2.0-only
/*
 * Kernel callers of srdma: a module that, when loaded, creates and destroys every verbs object
 * on the device named by its "dev" parameter through the kernel verbs API (as a kernel ULP
 * would), and prints one KTAP line per check. Loading fails if any check fails.
 */
#include <linux/module.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *dev = "srdma0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device to test");

static int test_num, failures;

#define CHECK(cond, fmt, ...)                                                   \
	do {                                                                    \
		bool __ok = (cond);                                             \
		pr_info("%sok %d " fmt "\n", __ok ? "" : "not ", ++test_num,    \
			##__VA_ARGS__);                                         \
		if (!__ok)                                                      \
			failures++;                                             \
	} while (0)

static void run(struct ib_device *ibdev)
{
	struct ib_qp_init_attr qia = {};
	struct ib_srq_init_attr sia = {};
	struct ib_qp_attr qa = {}, got = {};
	struct rdma_ah_attr aa = {};
	struct ib_qp_init_attr init = {};
	const struct ib_gid_attr *sgid;
	union ib_gid dgid;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct ib_srq *srq;
	struct ib_ah *ah;
	int ret;

	pd = ib_alloc_pd(ibdev, 0);
	CHECK(!IS_ERR(pd), "ib_alloc_pd");
	if (IS_ERR(pd))
		return;
	CHECK(pd->local_dma_lkey != 0, "PD has a DMA lkey from get_dma_mr (0x%x)",
	      pd->local_dma_lkey);

	cq = ib_alloc_cq(ibdev, NULL, 64, 0, IB_POLL_DIRECT);
	CHECK(!IS_ERR(cq), "ib_alloc_cq");
	if (IS_ERR(cq))
		goto free_pd;
	CHECK(cq->cqe >= 64, "CQ has at least 64 entries (%d)", cq->cqe);

	qia.send_cq = cq;
	qia.recv_cq = cq;
	qia.qp_type = IB_QPT_RC;
	qia.sq_sig_type = IB_SIGNAL_REQ_WR;
	qia.cap = (struct ib_qp_cap){ .max_send_wr = 32, .max_recv_wr = 32,
				      .max_send_sge = 2, .max_recv_sge = 2,
				      .max_inline_data = 64 };
	qp = ib_create_qp(pd, &qia);
	CHECK(!IS_ERR(qp), "ib_create_qp (RC)");
	if (!IS_ERR(qp)) {
		CHECK(qp->qp_num >= 16, "QP number %u", qp->qp_num);
		qa.qp_state = IB_QPS_INIT;
		qa.port_num = 1;
		qa.qp_access_flags = IB_ACCESS_REMOTE_WRITE;
		ret = ib_modify_qp(qp, &qa, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
				   IB_QP_ACCESS_FLAGS);
		CHECK(!ret, "ib_modify_qp RESET->INIT (%d)", ret);
		ret = ib_query_qp(qp, &got, IB_QP_STATE, &init);
		CHECK(!ret && got.qp_state == IB_QPS_INIT && init.cap.max_send_wr >= 32,
		      "ib_query_qp: INIT, caps kept");
		qa.qp_state = IB_QPS_RTS;
		ret = ib_modify_qp(qp, &qa, IB_QP_STATE);
		CHECK(ret == -EINVAL, "INIT->RTS refused: %d", ret);
		CHECK(!ib_destroy_qp(qp), "ib_destroy_qp");
	}

	sia.attr.max_wr = 64;
	sia.attr.max_sge = 1;
	sia.srq_type = IB_SRQT_BASIC;
	srq = ib_create_srq(pd, &sia);
	CHECK(!IS_ERR(srq), "ib_create_srq");
	if (!IS_ERR(srq)) {
		ib_destroy_srq(srq);
		CHECK(true, "ib_destroy_srq");
	}

	sgid = rdma_get_gid_attr(ibdev, 1, 0);
	CHECK(!IS_ERR(sgid), "GID 0 of port 1");
	if (!IS_ERR(sgid)) {
		aa.type = RDMA_AH_ATTR_TYPE_ROCE;
		rdma_ah_set_port_num(&aa, 1);
		dgid = sgid->gid;
		rdma_ah_set_grh(&aa, &dgid, 0, 0, 1, 0);
		ah = rdma_create_ah(pd, &aa, RDMA_CREATE_AH_SLEEPABLE);
		CHECK(!IS_ERR(ah), "rdma_create_ah to our own GID");
		if (!IS_ERR(ah)) {
			rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
			CHECK(true, "rdma_destroy_ah");
		}
		rdma_put_gid_attr(sgid);
	}

	ib_free_cq(cq);
	CHECK(true, "ib_free_cq");
free_pd:
	ib_dealloc_pd(pd);
	CHECK(true, "ib_dealloc_pd");
}

static int __init srdma_kverbs_init(void)
{
	struct ib_device *ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);

	pr_info("TAP version 13\n");
	CHECK(ibdev != NULL, "device %s found", dev);
	if (ibdev) {
		run(ibdev);
		ib_device_put(ibdev);
	}
	pr_info("1..%d\n", test_num);
	return failures ? -EINVAL : 0;
}

static void __exit srdma_kverbs_exit(void)
{
}

module_init(srdma_kverbs_init);
module_exit(srdma_kverbs_exit);
MODULE_DESCRIPTION("srdma selftest: verbs objects from a kernel caller");
MODULE_LICENSE("GPL");

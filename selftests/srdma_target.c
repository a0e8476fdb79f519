// SPDX-License-Identifier: GPL-2.0-only
/*
 * An RC QP whose memory a forged peer reads and writes, and that reads from and sends to it
 * (srdma_forge.py's modes that take a TARGET_COMMAND). The QP exposes SIZE bytes, byte i being
 * (i * 7) & 0xff, for RDMA READ and WRITE; path MTU 1024, max_dest_rd_atomic 4.
 *
 * Prints "QPN PSN RKEY VA" (hex) on one line, reads the peer's "QPN PSN GID" (hex, the GID as
 * 32 digits), connects to it, then waits for a line (or the end of input) and prints the first
 * 16 bytes of the memory as "memory HEX" and the QP's state as "state N" (IBV_QPS_*), so that
 * the peer sees what it wrote and whether what it sent failed the QP.
 *
 * A line "read VA RKEY LEN [N [send]]" (hex) before that makes the QP the requester (timeout
 * 268 ms, retry_cnt 7, max_rd_atomic 4): it posts N READs (1 if not given, fewer than
 * MAX_SENDS) of LEN bytes each (N times LEN at most half of SIZE), the k-th from the peer's
 * memory at VA + k * LEN into its own at k * LEN, and with "send" a SEND of 64 bytes behind
 * them; waits for their completions (at most 60 s) and prints "read STATUS,STATUS,... BYTES",
 * each STATUS ibv_wc_status_str()'s ("none" for one that did not come), in the order they came,
 * and BYTES "intact" when the memory read holds the pattern above (the peer's memory holds it
 * too) or "wrong".
 *
 * A line "send N LEN" (N at most MAX_SENDS, LEN at most SIZE) posts N signaled SENDs of LEN
 * bytes at once, waits for their completions (at most 60 s) and prints them in the order they
 * came as "send STATUS,STATUS,...", each "WR:STATUS" (WR the index of the SEND, STATUS
 * ibv_wc_status_str()'s), "none" for those that did not come.
 *
 * A line "recv N" (N at most MAX_SENDS) posts N receives of 4 KiB each (wr_id 0 to N-1) and
 * prints "posted". A line "error" then moves the QP to the error state, if it is not there
 * already, and prints the receive completions that come within a second as
 * "recv WR:STATUS,..." ("recv -" for none): each posted receive must complete once.
 *
 *   srdma_target DEV GID_INDEX [srq] [uc|closed|nord]
 *
 * With "srq", the QP takes its receives from an SRQ, to which "recv N" posts. With "uc", the
 * QP is a UC QP (remote write access only, no READ or send command). With "closed", the QP
 * grants no remote access (the MR still does); with "nord", its max_dest_rd_atomic is 0: it
 * takes no READ or atomic.
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "srdma_tap.h"

#define SIZE (1024 * 1024)
#define MAX_SENDS 4

static int die(const char *what)
{
	fprintf(stderr, "srdma_target: %s failed\n", what);
	return 1;
}

/* Prints the completions of the send CQ of `qp` as they come, until there were `n` or `end`
 * passed: comma-separated, each "WR:STATUS" with `with_wr` and "STATUS" without (STATUS
 * ibv_wc_status_str()'s), "none" for each that did not come.
 */
static void print_completions(struct ibv_qp *qp, unsigned int n, time_t end, int with_wr)
{
	unsigned int done = 0;
	struct ibv_wc wc;

	while (done < n && time(NULL) < end) {
		if (ibv_poll_cq(qp->send_cq, 1, &wc) != 1)
			continue;
		if (with_wr)
			printf("%s%llu:", done ? "," : "", (unsigned long long)wc.wr_id);
		else if (done)
			printf(",");
		printf("%s", ibv_wc_status_str(wc.status));
		done++;
	}
	for (; done < n; done++)
		printf("%snone", done ? "," : "");
}

/* Reads the peer's memory into buf as "read VA RKEY LEN [N [send]]" in `line` says and prints
 * how it went.
 */
static int read_peer(struct ibv_qp *qp, struct ibv_mr *mr, unsigned char *buf, const char *line)
{
	unsigned long long va;
	unsigned int rkey, len, n = 1, wrs;
	char then[8] = "";
	time_t end = time(NULL) + 60;
	int intact = 1;

	if (sscanf(line, "read %llx %x %x %u %7s", &va, &rkey, &len, &n, then) < 3 || !n ||
	    n >= MAX_SENDS || len > SIZE / 2 / n)
		return die("reading the read command");
	wrs = n + !strcmp(then, "send");
	memset(buf, 0, (size_t)len * n);
	for (unsigned int k = 0; k < n; k++) {
		struct ibv_sge sge = { .addr = (uintptr_t)(buf + (size_t)k * len), .length = len,
				       .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = k, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_READ,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		wr.wr.rdma.remote_addr = va + (unsigned long long)k * len;
		wr.wr.rdma.rkey = rkey;
		if (ibv_post_send(qp, &wr, &bad))
			return die("posting a READ");
	}
	if (wrs > n) {
		struct ibv_sge sge = { .addr = (uintptr_t)(buf + SIZE / 2), .length = 64,
				       .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = n, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		if (ibv_post_send(qp, &wr, &bad))
			return die("posting the SEND");
	}
	printf("read ");
	print_completions(qp, wrs, end, 0);
	for (size_t i = 0; i < (size_t)len * n; i++)
		intact &= buf[i] == (unsigned char)(i * 7);
	printf(" %s\n", intact ? "intact" : "wrong");
	fflush(stdout);
	return 0;
}

/* Sends as "send N LEN" in `line` says and prints how the SENDs completed. */
static int send_peer(struct ibv_qp *qp, struct ibv_mr *mr, unsigned char *buf, const char *line)
{
	unsigned int n, len;
	time_t end = time(NULL) + 60;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (sscanf(line, "send %u %u", &n, &len) != 2 || !n || n > MAX_SENDS || len > SIZE)
		return die("reading the send command");
	sge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	for (unsigned int i = 0; i < n; i++) {
		wr.wr_id = i;
		if (ibv_post_send(qp, &wr, &bad))
			return die("posting a SEND");
	}
	printf("send ");
	print_completions(qp, n, end, 1);
	printf("\n");
	fflush(stdout);
	return 0;
}

/* Posts the receives "recv N" in `line` asks for, to the QP or to its SRQ. */
static int post_recvs(struct ibv_qp *qp, struct ibv_srq *srq, struct ibv_mr *mr,
		      unsigned char *buf, const char *line)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 4096, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	unsigned int n;

	if (sscanf(line, "recv %u", &n) != 1 || !n || n > MAX_SENDS)
		return die("reading the recv command");
	for (unsigned int i = 0; i < n; i++) {
		wr.wr_id = i;
		if (srq ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(qp, &wr, &bad))
			return die("posting a receive");
	}
	printf("posted\n");
	fflush(stdout);
	return 0;
}

/* Moves the QP to the error state and prints the receive completions that come. */
static int to_error(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct timespec end, now;
	struct ibv_wc wc;
	int seen = 0;

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return die("moving the QP to the error state");
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec++;
	printf("recv ");
	do {
		/* Nothing else is posted; a flushed completion's opcode is undefined. */
		if (ibv_poll_cq(qp->recv_cq, 1, &wc) == 1)
			printf("%s%llu:%s", seen++ ? "," : "", (unsigned long long)wc.wr_id,
			       ibv_wc_status_str(wc.status));
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < end.tv_sec ||
		 (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
	printf("%s\n", seen ? "" : "-");
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = MAX_SENDS, .max_recv_wr = MAX_SENDS,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_WRITE };
	char line[128], gid_hex[33];
	unsigned int qpn, psn;
	union ibv_gid gid;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_srq *srq = NULL;
	int use_srq = 0, uc = 0, bad_args = argc < 3 || argc > 5;
	uint8_t rd_atomic = 4;
	struct ibv_qp *qp;
	unsigned char *buf;

	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "srq") && i == 3)
			use_srq = 1;
		else if (!strcmp(argv[i], "uc"))
			uc = 1;
		else if (!strcmp(argv[i], "closed"))
			a.qp_access_flags = 0;
		else if (!strcmp(argv[i], "nord"))
			rd_atomic = 0;
		else
			bad_args = 1;
	}
	if (bad_args || (argc == 5 && !use_srq)) {
		fprintf(stderr, "usage: srdma_target DEV GID_INDEX [srq] [uc|closed|nord]\n");
		return 2;
	}
	if (uc) {
		ia.qp_type = IBV_QPT_UC;
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	}
	ctx = open_dev(argv[1]);
	if (!ctx)
		return die("opening the device");
	pd = ibv_alloc_pd(ctx);
	ia.send_cq = pd ? ibv_create_cq(ctx, 2 * MAX_SENDS, NULL, NULL, 0) : NULL;
	ia.recv_cq = ia.send_cq;
	if (use_srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = MAX_SENDS, .max_sge = 1 } };

		srq = pd ? ibv_create_srq(pd, &sa) : NULL;
		if (!srq)
			return die("creating the SRQ");
		ia.srq = srq;
	}
	buf = aligned_alloc(4096, SIZE);
	if (!ia.send_cq || !buf)
		return die("creating the PD, CQ and buffer");
	for (int i = 0; i < SIZE; i++)
		buf[i] = i * 7;
	mr = ibv_reg_mr(pd, buf, SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
					       IBV_ACCESS_REMOTE_WRITE);
	qp = mr ? ibv_create_qp(pd, &ia) : NULL;
	if (!qp)
		return die("registering the memory and creating the QP");
	printf("%x %x %x %llx\n", qp->qp_num, 0, mr->rkey, (unsigned long long)(uintptr_t)buf);
	fflush(stdout);

	if (!fgets(line, sizeof(line), stdin) ||
	    sscanf(line, "%x %x %32s", &qpn, &psn, gid_hex) != 3)
		return die("reading the peer");
	for (int i = 0; i < 16; i++) {
		unsigned int byte;

		if (sscanf(gid_hex + 2 * i, "%2x", &byte) != 1)
			return die("reading the peer's GID");
		gid.raw[i] = byte;
	}
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS))
		return die("INIT");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				  .dest_qp_num = qpn, .rq_psn = psn,
				  .max_dest_rd_atomic = rd_atomic,
				  .min_rnr_timer = 1,
				  .ah_attr = { .is_global = 1, .port_num = 1,
					       .grh = { .dgid = gid, .sgid_index = atoi(argv[2]),
							.hop_limit = 64 } } };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				      IBV_QP_RQ_PSN |
				      (uc ? 0 : IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)))
		return die("RTR");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 16, .retry_cnt = 7,
				  .rnr_retry = 7, .max_rd_atomic = 4 };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
				      (uc ? 0 : IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)))
		return die("RTS");
	printf("connected\n");
	fflush(stdout);

	do {
		if (!fgets(line, sizeof(line), stdin))
			line[0] = 0;
	} while ((!strncmp(line, "read ", 5) && !read_peer(qp, mr, buf, line)) ||
		 (!strncmp(line, "send ", 5) && !send_peer(qp, mr, buf, line)) ||
		 (!strncmp(line, "recv ", 5) && !post_recvs(qp, srq, mr, buf, line)) ||
		 (!strncmp(line, "error", 5) && !to_error(qp)));
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return die("query");
	printf("memory ");
	for (int i = 0; i < 16; i++)
		printf("%02x", buf[i]);
	printf("\nstate %d\n", a.qp_state);
	ibv_destroy_qp(qp);
	if (srq)
		ibv_destroy_srq(srq);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(ia.send_cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	return 0;
}

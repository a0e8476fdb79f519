// SPDX-License-Identifier: GPL-2.0-only
/*
 * Attacks on the trust boundary between processes, as a local user would make them.
 * The victim (this process) connects an RC QP v on DEV_B to its peer p on DEV_A and exposes
 * a buffer by rkey. A second process (this program again, "attacker" mode) knows everything a
 * guess could give it (v's QPN, the PSN v expects, the rkey and address of v's buffer) and
 * tries to inject SENDs, RDMA WRITEs and READs into v from a QP of its own on DEV_A, from a UC
 * QP, and to use kernel MRs' lkeys. Each attack must fail as it would against a real RC peer
 * (the attacker's WQE ends with RETRY_EXC_ERR, or LOC_PROT_ERR for a key it does not own), and
 * the victim must see nothing: no completion, buffer unchanged, still connected to p.
 * The same checks stop a misconfigured peer: a PSN v does not expect, a source GID v's
 * address vector does not name. Prints TAP.
 *   srdma_attack DEV_A DEV_B
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "srdma_side.h"

#define BUF 4096
#define PSN 0x3a5c1
#define ALL_REMOTE (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		    IBV_ACCESS_REMOTE_ATOMIC)

/* The status of the next completion on cq within 2 s, or -1 if none came. */
static int next_status(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	return next_wc(cq, 2000, &wc);
}

static void open_attack_side(struct side *s, const char *name)
{
	open_side(s, name, BUF, ALL_REMOTE);
	memset(s->buf, 0x5a, BUF);
}

/* Attacker mode: reports each attack as "RESULT DESCRIPTION" lines on stdout. */
static int run_attacker(const char *dev, uint32_t vqpn, const char *vgid, uint32_t rkey,
			uint64_t raddr)
{
	struct side s;
	union ibv_gid gid;
	struct ibv_qp *qp, *uc;
	int st, refused;

	/* Each line reaches the victim as it is printed, also if this process dies. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	open_attack_side(&s, dev);
	for (int i = 0; i < 16; i++)
		if (sscanf(vgid + 2 * i, "%2hhx", &gid.raw[i]) != 1)
			return 1;
	qp = side_qp(&s, IBV_QPT_RC);
	uc = side_qp(&s, IBV_QPT_UC);
	if (!qp || !uc)
		return 1;

	/* Every attack knows the PSN the victim expects: only the connection protects it. */
	static const struct {
		enum ibv_wr_opcode op;
		const char *what;
	} attacks[] = {
		{ IBV_WR_SEND, "a SEND into the victim's connected QP" },
		{ IBV_WR_RDMA_WRITE, "an RDMA WRITE with the victim's rkey" },
		{ IBV_WR_RDMA_READ, "an RDMA READ with the victim's rkey" },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, "an atomic with the victim's rkey" },
	};
	for (unsigned int i = 0; i < ARRAY_SIZE(attacks); i++) {
		if (connect_qp(qp, vqpn, &gid, (struct conn){ s.gidx, PSN }))
			return 1;
		memset(s.buf, 0x11, BUF);
		post_one(qp, attacks[i].op, s.mr->lkey, (uintptr_t)s.buf,
			 attacks[i].op == IBV_WR_ATOMIC_FETCH_AND_ADD ? 8 : 64, raddr, rkey);
		st = next_status(s.cq);
		printf("%d %s fails with RETRY_EXC_ERR (status %d)\n", st == IBV_WC_RETRY_EXC_ERR,
		       attacks[i].what, st);
		printf("%d %s brings the attacker nothing\n", s.buf[0] == 0x11 && s.buf[63] == 0x11,
		       attacks[i].what);
	}

	/* A UC QP aimed at the RC QP: UC never learns, but nothing may arrive. */
	if (connect_qp(uc, vqpn, &gid, (struct conn){ s.gidx, PSN }))
		return 1;
	post_one(uc, IBV_WR_SEND, s.mr->lkey, (uintptr_t)s.buf, 64, 0, 0);
	st = next_status(s.cq);
	printf("%d a UC SEND to an RC QP completes at the sender only (status %d)\n",
	       st == IBV_WC_SUCCESS, st);
	post_one(uc, IBV_WR_RDMA_WRITE, s.mr->lkey, (uintptr_t)s.buf, 64, raddr, rkey);
	st = next_status(s.cq);
	printf("%d a UC RDMA WRITE to an RC QP completes at the sender only (status %d)\n",
	       st == IBV_WC_SUCCESS, st);

	/*
	 * The lkeys of kernel MRs (ib_mad's DMA MR and any other): whatever the key byte, a
	 * user QP's SGE that names one fails before a byte moves.
	 */
	refused = 0;
	for (uint32_t key = 1 << 8; key < 4 << 8; key++) {
		if (connect_qp(qp, qp->qp_num, &s.gid, (struct conn){ s.gidx }))
			return 1;
		post_one(qp, IBV_WR_SEND, key, 0xffff888000100000ull, 64, 0, 0);
		st = next_status(s.cq);
		if (st == IBV_WC_LOC_PROT_ERR)
			refused++;
		else
			printf("# lkey 0x%x: status %d\n", key, st);
	}
	printf("%d 768 lkeys of other PDs (kernel MRs among them)", refused == 768);
	printf(" all fail with LOC_PROT_ERR (%d did)\n", refused);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct side A, B;
	struct ibv_qp *p, *v;
	char gid[33], rkey[16], raddr[24], vqpn[16];
	int fds[2], st;
	pid_t pid;
	FILE *in;
	char line[256];

	if (argc == 7 && !strcmp(argv[1], "attacker"))
		return run_attacker(argv[2], strtoul(argv[3], NULL, 0), argv[4],
				strtoul(argv[5], NULL, 0), strtoull(argv[6], NULL, 0));
	if (argc != 3) {
		fprintf(stderr, "usage: %s DEV_A DEV_B\n", argv[0]);
		return 2;
	}
	ksft_print_header();
	open_attack_side(&A, argv[1]);
	open_attack_side(&B, argv[2]);
	p = side_qp(&A, IBV_QPT_RC);
	v = side_qp(&B, IBV_QPT_RC);
	if (!p || !v || connect_qp(p, v->qp_num, &B.gid, (struct conn){ A.gidx, PSN, 0 }) ||
	    connect_qp(v, p->qp_num, &A.gid, (struct conn){ B.gidx, 0, PSN }) ||
	    post_recv_one(v, &B, BUF)) {
		printf("Bail out! cannot connect the victim (%s)\n", strerror(errno));
		return 1;
	}
	result(1, "victim v on %s connected to its peer p on %s, expecting PSN 0x%x", argv[2],
	       argv[1], PSN);

	/* The attacker: a second process with its own context on the peer's device. */
	for (int i = 0; i < 16; i++)
		sprintf(gid + 2 * i, "%02x", B.gid.raw[i]);
	snprintf(vqpn, sizeof(vqpn), "%u", v->qp_num);
	snprintf(rkey, sizeof(rkey), "0x%x", B.mr->rkey);
	snprintf(raddr, sizeof(raddr), "0x%llx", (unsigned long long)(uintptr_t)B.buf);
	if (pipe(fds))
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		execl("/proc/self/exe", argv[0], "attacker", argv[1], vqpn, gid, rkey, raddr,
		      (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	while (in && fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\n")] = 0;
		if (line[0] == '#')
			printf("%s\n", line);
		else
			result(line[0] == '1', "attacker: %s", line + 2);
	}
	waitpid(pid, &st, 0);
	result(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the attacker process ran all its attacks");

	/* The victim saw nothing, and its connection still works. */
	result(next_status(B.cq) == -1, "victim: no completion from any attack");
	st = 1;
	for (int i = 0; i < BUF; i++)
		st &= B.buf[i] == 0x5a;
	result(st, "victim: its buffer is unchanged");
	memset(A.buf, 0x77, 64);
	post_one(p, IBV_WR_SEND, A.mr->lkey, (uintptr_t)A.buf, 64, 0, 0);
	result(next_status(A.cq) == IBV_WC_SUCCESS && next_status(B.cq) == IBV_WC_SUCCESS &&
	       B.buf[0] == 0x77, "victim: its peer's SEND with the expected PSN still arrives");

	/*
	 * A peer that is connected but sends a PSN other than the expected one, or from a GID
	 * other than the one v's address vector names (DEV_A's second address), is dropped the
	 * same way.
	 */
	union ibv_gid other;
	int other_gidx = next_v4_gid(&A, A.gidx, &other);

	struct {
		int sgidx;
		uint32_t psn;
		const char *what;
	} wrong[] = {
		{ A.gidx, PSN + 5, "a PSN the responder does not expect" },
		{ other_gidx, PSN, "a source GID the responder's address vector does not name" },
	};
	for (int i = 0; i < 2; i++) {
		struct ibv_qp *p2 = side_qp(&A, IBV_QPT_RC), *v2 = side_qp(&B, IBV_QPT_RC);
		union ibv_gid g0;

		if (!p2 || !v2 || wrong[i].sgidx < 0 ||
		    ibv_query_gid(A.ctx, 1, wrong[i].sgidx, &g0) ||
		    connect_qp(p2, v2->qp_num, &B.gid,
			       (struct conn){ wrong[i].sgidx, wrong[i].psn }) ||
		    connect_qp(v2, p2->qp_num, &A.gid, (struct conn){ B.gidx, 0, PSN }) ||
		    post_recv_one(v2, &B, BUF)) {
			result(0, "set up a pair for %s", wrong[i].what);
			continue;
		}
		post_one(p2, IBV_WR_SEND, A.mr->lkey, (uintptr_t)A.buf, 64, 0, 0);
		st = next_status(A.cq);
		result(st == IBV_WC_RETRY_EXC_ERR && next_status(B.cq) == -1,
		       "%s: the sender gets RETRY_EXC_ERR (%d), the receiver nothing",
		       wrong[i].what,
		       st);
		ibv_destroy_qp(p2);
		ibv_destroy_qp(v2);
	}
	ibv_destroy_qp(p);
	ibv_destroy_qp(v);
	tap_done();
}

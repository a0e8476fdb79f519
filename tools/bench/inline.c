// SPDX-License-Identifier: GPL-2.0-only
/*
 * Inline against SGE sends: latency and bandwidth of the same messages posted with
 * IBV_SEND_INLINE (the payload copied into the WQE) and without (the payload named by an SGE
 * and read from the registered buffer by the device).
 *
 * perftest cannot measure this on soft devices: it turns -I off for every device it does not
 * know by vendor ID ("Device not recognized to implement inline feature"), rxe, siw and srdma
 * included.
 *
 *   inline [-q] DEV_A DEV_B GID_INDEX SIZE...
 * One process, one RC QP on each device, connected to each other over RoCEv2 GID GID_INDEX.
 * Prints one line per figure:
 *   max_inline N                       what the QP was granted (requested: 1024)
 *   lat MODE SIZE TYPICAL AVG P99 P999  SEND ping-pong, half the round trip in µs (as
 *                                       ib_send_lat); MODE is inline or sge
 *   bw MODE SIZE MBPS MPPS              RDMA WRITE stream, 64 in flight (as ib_write_bw)
 *   skip MODE SIZE REASON               sizes above max_inline have no inline mode
 * The ping-pong runs in one thread: A posts, B's receive is polled, B posts back. It compares
 * the two modes on one device; it is not a replacement for ib_send_lat's two processes.
 */
#include <stdint.h>

#include "rc_pair.h"

#define DEPTH 64
#define MAX_SIZE (1 << 20)

static unsigned int max_inline;

/* The QP of s, with the most inline data the device grants, up to srdma's 1024 bytes. */
static void create_qp(struct side *s)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC, .send_cq = s->cq, .recv_cq = s->cq,
				       .cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
						.max_send_sge = 1, .max_recv_sge = 1 } };

	for (unsigned int want = 1024;; want /= 2) {
		ia.cap.max_inline_data = want;
		s->qp = ibv_create_qp(s->pd, &ia);
		if (s->qp || !want)
			break;
	}
	if (!s->qp)
		die("create_qp");
	if (!max_inline || ia.cap.max_inline_data < max_inline)
		max_inline = ia.cap.max_inline_data;
}

/* Receives take any size: one stays posted on each side between the latency runs. */
static void post_recv(struct side *s)
{
	struct ibv_sge sge = { (uintptr_t)s->buf, MAX_SIZE, s->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(s->qp, &wr, &bad))
		die("post_recv");
}

static void post(struct side *s, struct side *peer, enum ibv_wr_opcode op, uint32_t size,
		 int inl)
{
	struct ibv_sge sge = { (uintptr_t)s->buf, size, s->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0) },
			   *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)peer->buf;
	wr.wr.rdma.rkey = peer->mr->rkey;
	if (ibv_post_send(s->qp, &wr, &bad))
		die("post_send");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void latency(struct side *a, struct side *b, uint32_t size, int inl, int iters)
{
	double *t = calloc(iters, sizeof(*t)), sum = 0;

	for (int i = 0; i < iters; i++) {
		double t0 = now();

		/* One send and one receive completion on each side per round trip. */
		post(a, b, IBV_WR_SEND, size, inl);
		reap(b, 1);
		post_recv(b);
		post(b, a, IBV_WR_SEND, size, inl);
		reap(a, 2);
		post_recv(a);
		reap(b, 1);
		t[i] = (now() - t0) * 1e6 / 2;
		sum += t[i];
	}
	qsort(t, iters, sizeof(*t), cmp_double);
	printf("lat %s %u %.2f %.2f %.2f %.2f\n", inl ? "inline" : "sge", size, t[iters / 2],
	       sum / iters, t[(int)(iters * 0.99)], t[(int)(iters * 0.999)]);
	free(t);
}

static void bandwidth(struct side *a, struct side *b, uint32_t size, int inl, int iters)
{
	int posted = 0, done = 0;
	double t0 = now(), t;

	while (done < iters) {
		while (posted < iters && posted - done < DEPTH) {
			post(a, b, IBV_WR_RDMA_WRITE, size, inl);
			posted++;
		}
		reap(a, 1);
		done++;
	}
	t = now() - t0;
	printf("bw %s %u %.2f %.6f\n", inl ? "inline" : "sge", size,
	       (double)size * iters / t / 0x100000, iters / t / 1e6);
}

int main(int argc, char **argv)
{
	struct side a = { 0 }, b = { 0 };
	int quick = 0, arg = 1;

	if (argc > 1 && !strcmp(argv[1], "-q")) {
		quick = 1;
		arg++;
	}
	if (argc - arg < 4) {
		fprintf(stderr, "usage: inline [-q] DEV_A DEV_B GID_INDEX SIZE...\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	prog = "inline";
	gid_index = atoi(argv[arg + 2]);
	open_side(&a, argv[arg], 4 * DEPTH, MAX_SIZE);
	open_side(&b, argv[arg + 1], 4 * DEPTH, MAX_SIZE);
	create_qp(&a);
	create_qp(&b);
	connect_qp(&a, &b);
	connect_qp(&b, &a);
	post_recv(&a);
	post_recv(&b);
	printf("max_inline %u\n", max_inline);
	for (int i = arg + 3; i < argc; i++) {
		uint32_t size = strtoul(argv[i], NULL, 0);

		if (!size || size > MAX_SIZE)
			continue;
		for (int inl = 0; inl < 2; inl++) {
			if (inl && size > max_inline) {
				printf("skip inline %u above max_inline_data %u\n", size, max_inline);
				continue;
			}
			latency(&a, &b, size, inl, quick ? 300 : 3000);
			bandwidth(&a, &b, size, inl, quick ? 2000 : 20000);
		}
	}
	return 0;
}

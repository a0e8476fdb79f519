/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tracepoints of srdma, the software RDMA device: what its send queues, completion queues and
 * wire transport do, for perf, trace-cmd and tracefs (events/srdma/). The Rust driver fires
 * each event through rust_do_trace_<event>(), defined in drivers/infiniband/sw/srdma/srdma_trace.c.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM srdma

#if !defined(_TRACE_SRDMA_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_SRDMA_H

#include <linux/tracepoint.h>

TRACE_EVENT(srdma_doorbell,
	TP_PROTO(u32 qpn, u32 sq_ci, u32 sq_pi),
	TP_ARGS(qpn, sq_ci, sq_pi),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, sq_ci)
		__field(u32, sq_pi)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->sq_ci = sq_ci;
		__entry->sq_pi = sq_pi;
	),
	TP_printk("qpn=%u sq_ci=%u sq_pi=%u", __entry->qpn, __entry->sq_ci, __entry->sq_pi)
);

TRACE_EVENT(srdma_wqe,
	TP_PROTO(u32 qpn, u32 opcode, u32 len, bool inl),
	TP_ARGS(qpn, opcode, len, inl),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, opcode)
		__field(u32, len)
		__field(bool, inl)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->opcode = opcode;
		__entry->len = len;
		__entry->inl = inl;
	),
	TP_printk("qpn=%u opcode=%u len=%u %s", __entry->qpn, __entry->opcode, __entry->len,
		  __entry->inl ? "inline" : "sge")
);

TRACE_EVENT(srdma_cqe,
	TP_PROTO(u32 cqn, u32 qpn, u32 opcode, u32 status, u32 byte_len),
	TP_ARGS(cqn, qpn, opcode, status, byte_len),
	TP_STRUCT__entry(
		__field(u32, cqn)
		__field(u32, qpn)
		__field(u32, opcode)
		__field(u32, status)
		__field(u32, byte_len)
	),
	TP_fast_assign(
		__entry->cqn = cqn;
		__entry->qpn = qpn;
		__entry->opcode = opcode;
		__entry->status = status;
		__entry->byte_len = byte_len;
	),
	TP_printk("cqn=%u qpn=%u opcode=%u status=%u byte_len=%u", __entry->cqn, __entry->qpn,
		  __entry->opcode, __entry->status, __entry->byte_len)
);

TRACE_EVENT(srdma_rnr_wait,
	TP_PROTO(u32 qpn, u32 retries_left, u64 wait_ns),
	TP_ARGS(qpn, retries_left, wait_ns),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, retries_left)
		__field(u64, wait_ns)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->retries_left = retries_left;
		__entry->wait_ns = wait_ns;
	),
	TP_printk("qpn=%u retries_left=%u wait_ns=%llu", __entry->qpn, __entry->retries_left,
		  __entry->wait_ns)
);

TRACE_EVENT(srdma_qp_state,
	TP_PROTO(u32 qpn, u32 from, u32 to),
	TP_ARGS(qpn, from, to),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, from)
		__field(u32, to)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->from = from;
		__entry->to = to;
	),
	TP_printk("qpn=%u %u->%u", __entry->qpn, __entry->from, __entry->to)
);

/* From here on nothing of QP qpn runs and no CQE of it is written. */
TRACE_EVENT(srdma_qp_destroy,
	TP_PROTO(u32 qpn),
	TP_ARGS(qpn),
	TP_STRUCT__entry(
		__field(u32, qpn)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
	),
	TP_printk("qpn=%u", __entry->qpn)
);

DECLARE_EVENT_CLASS(srdma_packet,
	TP_PROTO(u32 qpn, u32 opcode, u32 psn, u32 len),
	TP_ARGS(qpn, opcode, psn, len),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, opcode)
		__field(u32, psn)
		__field(u32, len)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->opcode = opcode;
		__entry->psn = psn;
		__entry->len = len;
	),
	TP_printk("qpn=%u opcode=0x%02x psn=%u len=%u", __entry->qpn, __entry->opcode,
		  __entry->psn, __entry->len)
);

/* A RoCEv2 packet handed to the IP layer; qpn is the destination QP. */
DEFINE_EVENT(srdma_packet, srdma_tx,
	TP_PROTO(u32 qpn, u32 opcode, u32 psn, u32 len),
	TP_ARGS(qpn, opcode, psn, len)
);

/* A RoCEv2 packet that passed every check, for QP qpn. */
DEFINE_EVENT(srdma_packet, srdma_rx,
	TP_PROTO(u32 qpn, u32 opcode, u32 psn, u32 len),
	TP_ARGS(qpn, opcode, psn, len)
);

TRACE_EVENT(srdma_drop,
	TP_PROTO(u32 reason),
	TP_ARGS(reason),
	TP_STRUCT__entry(
		__field(u32, reason)
	),
	TP_fast_assign(
		__entry->reason = reason;
	),
	TP_printk("reason=%s", __print_symbolic(__entry->reason,
		  { 0, "malformed" }, { 1, "icrc" }, { 2, "not_ours" }))
);

TRACE_EVENT(srdma_retransmit,
	TP_PROTO(u32 qpn, u32 psn, u32 cause),
	TP_ARGS(qpn, psn, cause),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, cause)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->psn = psn;
		__entry->cause = cause;
	),
	TP_printk("qpn=%u psn=%u cause=%s", __entry->qpn, __entry->psn,
		  __print_symbolic(__entry->cause,
		  { 0, "timeout" }, { 1, "nak_seq" }, { 2, "rnr" },
		  { 3, "implied_nak" }))
);

#endif /* _TRACE_SRDMA_H */

/* The driver's entry points, one per event (and whether it is on, where arguments cost). */
#ifndef _TRACE_SRDMA_RUST_H
#define _TRACE_SRDMA_RUST_H
void rust_do_trace_srdma_doorbell(u32 qpn, u32 sq_ci, u32 sq_pi);
void rust_do_trace_srdma_wqe(u32 qpn, u32 opcode, u32 len, bool inl);
bool rust_trace_srdma_wqe_enabled(void);
void rust_do_trace_srdma_cqe(u32 cqn, u32 qpn, u32 opcode, u32 status, u32 byte_len);
void rust_do_trace_srdma_rnr_wait(u32 qpn, u32 retries_left, u64 wait_ns);
void rust_do_trace_srdma_qp_state(u32 qpn, u32 from, u32 to);
void rust_do_trace_srdma_qp_destroy(u32 qpn);
void rust_do_trace_srdma_tx(u32 qpn, u32 opcode, u32 psn, u32 len);
void rust_do_trace_srdma_rx(u32 qpn, u32 opcode, u32 psn, u32 len);
void rust_do_trace_srdma_drop(u32 reason);
void rust_do_trace_srdma_retransmit(u32 qpn, u32 psn, u32 cause);
#endif

#include <trace/define_trace.h>

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The tracepoints of srdma (include/trace/events/srdma.h), instantiated in the module, and the
 * entry points through which its Rust code fires them (kernel::declare_trace!).
 */
#define CREATE_TRACE_POINTS
#include <trace/events/srdma.h>

void rust_do_trace_srdma_doorbell(u32 qpn, u32 sq_ci, u32 sq_pi)
{
	trace_srdma_doorbell(qpn, sq_ci, sq_pi);
}

void rust_do_trace_srdma_wqe(u32 qpn, u32 opcode, u32 len, bool inl)
{
	trace_srdma_wqe(qpn, opcode, len, inl);
}

bool rust_trace_srdma_wqe_enabled(void)
{
	return trace_srdma_wqe_enabled();
}

void rust_do_trace_srdma_cqe(u32 cqn, u32 qpn, u32 opcode, u32 status, u32 byte_len)
{
	trace_srdma_cqe(cqn, qpn, opcode, status, byte_len);
}

void rust_do_trace_srdma_rnr_wait(u32 qpn, u32 retries_left, u64 wait_ns)
{
	trace_srdma_rnr_wait(qpn, retries_left, wait_ns);
}

void rust_do_trace_srdma_qp_state(u32 qpn, u32 from, u32 to)
{
	trace_srdma_qp_state(qpn, from, to);
}

void rust_do_trace_srdma_qp_destroy(u32 qpn)
{
	trace_srdma_qp_destroy(qpn);
}

void rust_do_trace_srdma_tx(u32 qpn, u32 opcode, u32 psn, u32 len)
{
	trace_srdma_tx(qpn, opcode, psn, len);
}

void rust_do_trace_srdma_rx(u32 qpn, u32 opcode, u32 psn, u32 len)
{
	trace_srdma_rx(qpn, opcode, psn, len);
}

void rust_do_trace_srdma_drop(u32 reason)
{
	trace_srdma_drop(reason);
}

void rust_do_trace_srdma_retransmit(u32 qpn, u32 psn, u32 cause)
{
	trace_srdma_retransmit(qpn, psn, cause);
}

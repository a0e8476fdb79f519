// SPDX-License-Identifier: GPL-2.0-only

//! srdma's tracepoints (`include/trace/events/srdma.h`, events `srdma:*`): what its send
//! queues, completion queues and wire transport do, for `perf record -e 'srdma:*'`,
//! `trace-cmd` and tracefs.

kernel::declare_trace! {
    /// A run of QP `qpn`'s send queue for its doorbell (a kick, or a poller or worker pass),
    /// from consumer index `sq_ci` to producer index `sq_pi`.
    pub(crate) fn srdma_doorbell(qpn: u32, sq_ci: u32, sq_pi: u32);
    /// A send WQE taken: its opcode (`IBV_WR_*`), bytes, and whether they were inline.
    pub(crate) fn srdma_wqe(qpn: u32, opcode: u32, len: u32, inl: bool);
    /// Whether [`srdma_wqe`] is on (its length costs a look at the SGEs).
    pub(crate) fn srdma_wqe_enabled() -> bool;
    /// A CQE written to CQ `cqn`: its QP, opcode (`IBV_WC_*`), status (`IBV_WC_*`) and bytes.
    pub(crate) fn srdma_cqe(cqn: u32, qpn: u32, opcode: u32, status: u32, byte_len: u32);
    /// The head WQE of QP `qpn` was refused for want of a receive WQE: it is tried again in
    /// `wait_ns`, `retries_left` more times (7: forever).
    pub(crate) fn srdma_rnr_wait(qpn: u32, retries_left: u32, wait_ns: u64);
    /// QP `qpn` went from state `from` to `to` (`IBV_QPS_*`).
    pub(crate) fn srdma_qp_state(qpn: u32, from: u32, to: u32);
    /// QP `qpn` is destroyed: from here on nothing of it runs and no CQE of it is written.
    pub(crate) fn srdma_qp_destroy(qpn: u32);
    /// A RoCEv2 packet for QP `qpn` of the peer handed to the IP layer.
    pub(crate) fn srdma_tx(qpn: u32, opcode: u32, psn: u32, len: u32);
    /// A RoCEv2 packet for QP `qpn` that passed every check.
    pub(crate) fn srdma_rx(qpn: u32, opcode: u32, psn: u32, len: u32);
    /// A received packet dropped, for `reason` (`transport::roce::Dropped`).
    pub(crate) fn srdma_drop(reason: u32);
    /// QP `qpn` sends again from PSN `psn`, for `cause` ([`Resend`]).
    pub(crate) fn srdma_retransmit(qpn: u32, psn: u32, cause: u32);
}

/// Why the requester sends again, as [`srdma_retransmit`] records it (the header's names).
#[derive(Clone, Copy)]
pub(crate) enum Resend {
    Timeout = 0,
    NakSeq = 1,
    /// The responder's RNR wait ran out.
    Rnr = 2,
    /// A response to a later PSN showed that a READ's or atomic's response was lost.
    ImpliedNak = 3,
}

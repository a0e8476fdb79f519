// SPDX-License-Identifier: GPL-2.0-only

//! What a device says in the kernel log about what its users do wrong or lose: CQ overflow,
//! error completions, garbage in the rings. Operators grep for these lines as they do for
//! mlx5's, so each names the device and the QP; all lines of one device share the kernel's
//! default limit (10 per 5 seconds), so that no process floods the log and one device's flood
//! does not silence another's. The device is named as `rdma link add` named it.

use crate::{message::Nak, qp::QpShared};
use core::fmt;
use kernel::{prelude::*, ratelimit::Ratelimit, rdma::cq::WcStatus};

/// Logs `args` about the device whose limit is `limit`, if the limit allows.
pub(crate) fn warn(limit: &Ratelimit, args: fmt::Arguments<'_>) {
    if limit.allow() {
        pr_warn!("{}: {}\n", limit.name(), args);
    }
}

/// The work queue a line is about.
fn queue(send: bool) -> &'static str {
    if send {
        "SQ"
    } else {
        "RQ"
    }
}

/// A completion of `q` was lost: its CQ was full.
pub(crate) fn cq_overflow(q: &QpShared, send: bool) {
    warn(
        &q.log_limit,
        format_args!(
            "CQ overflow: the {} CQ of QP {} is full, a completion is lost",
            if send { "send" } else { "receive" },
            q.qpn
        ),
    );
}

/// `q` completed a WQE of its SQ (`send`) or RQ with the error `status` and entered the error
/// state.
pub(crate) fn error_completion(q: &QpShared, send: bool, status: WcStatus) {
    warn(
        &q.log_limit,
        format_args!(
            "QP {}: WC error: {} (status {}) on the {}; QP moved to the error state",
            q.qpn,
            status.msg(),
            status as u32,
            queue(send)
        ),
    );
}

/// The process wrote a producer index `pi` of `q`'s SQ (`send`) or RQ more than the ring
/// holds ahead of the consumer index `ci`.
pub(crate) fn bad_producer_index(q: &QpShared, send: bool, pi: u32, ci: u32, wqe_cnt: u32) {
    warn(
        &q.log_limit,
        format_args!(
            "QP {}: ring garbage: {} producer index {} is {} WQEs ahead of consumer index {}, more than the ring's {}; QP fatal error, moved to the error state",
            q.qpn,
            queue(send),
            pi,
            pi.wrapping_sub(ci),
            ci,
            wqe_cnt
        ),
    );
}

/// `q`, a responder, answered the request at `psn` with the NAK `nak` and entered the error
/// state.
pub(crate) fn nak(q: &QpShared, psn: u32, nak: Nak) {
    warn(
        &q.log_limit,
        format_args!(
            "QP {}: NAK ({}) for the request at PSN {:#x}; QP moved to the error state",
            q.qpn,
            match nak {
                Nak::Rnr(_) => "receiver not ready",
                Nak::InvalidRequest => "invalid request",
                Nak::RemoteAccess => "remote access error",
                Nak::RemoteOperational => "remote operational error",
            },
            psn
        ),
    );
}

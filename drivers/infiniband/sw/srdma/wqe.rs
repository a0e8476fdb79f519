// SPDX-License-Identifier: GPL-2.0-only

//! Work queue entries as the engine sees them: read out of a ring once, into private memory,
//! and checked there against what the queue was created for.
//!
//! A ring is memory its process writes at any time, so nothing here trusts what it read
//! before: each field is copied once and each index is bounded by the ring's geometry. An
//! inline payload is no field: nothing is decided on its bytes, so they stay in the ring and
//! move from there to their destination once ([`InlineBytes`]).

use crate::{
    counters::Counter,
    mr::resolve,
    params::MAX_MSG_SZ,
    payload::{InlineBytes, Segments, SpanList},
    qp::{QpShared, Ring},
    trace,
    wc::{self, WcStatus, WrOpcode},
};
use kernel::{
    prelude::*,
    rdma::{
        mr::Access,
        uapi::{
            srdma_rq_wqe_hdr, srdma_sge, srdma_wqe_bind, srdma_wqe_ctrl, srdma_wqe_remote,
            srdma_wqe_ud, SRDMA_RQ_WQE_HDR_SIZE, SRDMA_SGE_SIZE, SRDMA_SQ_WQE_HDR_SIZE,
            SRDMA_WQE_INLINE, SRDMA_WQE_SIGNALED, SRDMA_WQE_SOLICITED,
        },
    },
};

/// Where the remote, datagram or bind segment of an SQ WQE starts.
pub(crate) const SEG: usize = core::mem::size_of::<srdma_wqe_ctrl>();

/// The byte offset of slot `idx` (a free-running index) of `ring`.
pub(crate) fn slot_offset(ring: &Ring, idx: u32) -> usize {
    (idx & (ring.wqe_cnt - 1)) as usize * ring.wqe_size as usize
}

/// An SQ WQE: its control segment, read once; the segments behind it are read when needed.
#[derive(Clone)]
pub(crate) struct SendWqe {
    /// The byte offset of its slot in the SQ.
    off: usize,
    pub(crate) wr_id: u64,
    /// `None` for an opcode the QP may not post.
    pub(crate) opcode: Option<WrOpcode>,
    pub(crate) signaled: bool,
    pub(crate) solicited: bool,
    pub(crate) inline: bool,
    /// Immediate data, or the rkey a LOCAL_INV or SEND_WITH_INV names.
    pub(crate) imm_data: u32,
    num_sge: usize,
    inline_len: u32,
    /// The opcode byte as the ring holds it, for tracing.
    raw_opcode: u8,
}

impl SendWqe {
    /// Reads the WQE in slot `idx` of the SQ of `q`.
    pub(crate) fn read(q: &QpShared, idx: u32) -> Result<Self> {
        let off = slot_offset(&q.sq, idx);
        let ctrl: srdma_wqe_ctrl = q.sq.mem.read_obj(off)?;
        let flag = |f: u32| ctrl.flags & f as u8 != 0;
        Ok(Self {
            off,
            wr_id: ctrl.wr_id,
            opcode: wc::wqe_opcode(ctrl.opcode, q.handle.is_some()),
            signaled: q.sq_sig_all || flag(SRDMA_WQE_SIGNALED),
            solicited: flag(SRDMA_WQE_SOLICITED),
            inline: flag(SRDMA_WQE_INLINE),
            imm_data: ctrl.imm_data,
            num_sge: usize::from(ctrl.num_sge),
            inline_len: ctrl.inline_len,
            raw_opcode: ctrl.opcode,
        })
    }

    /// The remote segment of an RDMA or atomic WQE.
    pub(crate) fn remote(&self, q: &QpShared) -> Result<srdma_wqe_remote> {
        q.sq.mem.read_obj(self.off + SEG)
    }

    /// The datagram segment of a UD WQE.
    pub(crate) fn ud(&self, q: &QpShared) -> Result<srdma_wqe_ud> {
        q.sq.mem.read_obj(self.off + SEG)
    }

    /// The bind segment of a BIND_MW or REG_MR WQE.
    pub(crate) fn bind(&self, q: &QpShared) -> Result<srdma_wqe_bind> {
        q.sq.mem.read_obj(self.off + SEG)
    }

    /// The memory its SGEs name, with rights `need`; fails with the completion status if the
    /// WQE or a key is bad. Each SGE is checked before a byte moves.
    pub(crate) fn sges(
        &self,
        q: &QpShared,
        need: Access,
    ) -> core::result::Result<Segments, WcStatus> {
        let area = q.sq.wqe_size as usize - SRDMA_SQ_WQE_HDR_SIZE as usize;
        let body = self.off + SRDMA_SQ_WQE_HDR_SIZE as usize;
        let n = self.num_sge;
        if n > q.cap.max_send_sge as usize || n * SRDMA_SGE_SIZE as usize > area {
            q.counters.send.inc(Counter::RingErrors);
            return Err(WcStatus::LocLenErr);
        }
        let mut spans = SpanList::Empty;
        let mut total = 0u64;
        for i in 0..n {
            let sge: srdma_sge =
                q.sq.mem
                    .read_obj(body + i * SRDMA_SGE_SIZE as usize)
                    .map_err(|_| WcStatus::LocQpOpErr)?;
            total += u64::from(sge.length);
            if total > u64::from(MAX_MSG_SZ) {
                return Err(WcStatus::LocLenErr);
            }
            if sge.length == 0 {
                continue;
            }
            let local = q.sq.kernel_buf(self.off, i);
            let span = resolve(
                &q.keys,
                sge.lkey,
                &q.pd,
                need,
                sge.addr,
                u64::from(sge.length),
                local.as_ref(),
            )
            .ok_or(WcStatus::LocProtErr)?;
            spans.push(span).map_err(|_| WcStatus::LocQpOpErr)?;
        }
        Ok(Segments::Spans(spans))
    }

    /// Records the WQE in the `srdma_wqe` tracepoint, if it is on: its opcode and its bytes
    /// (the SGEs' lengths as the ring holds them, unchecked).
    pub(crate) fn trace(&self, q: &QpShared) {
        if !trace::srdma_wqe_enabled() {
            return;
        }
        let len = if self.inline {
            self.inline_len
        } else {
            let body = self.off + SRDMA_SQ_WQE_HDR_SIZE as usize;
            (0..self.num_sge.min(q.cap.max_send_sge as usize))
                .filter_map(|i| {
                    q.sq.mem
                        .read_obj::<srdma_sge>(body + i * SRDMA_SGE_SIZE as usize)
                        .ok()
                })
                .fold(0u32, |n, sge| n.saturating_add(sge.length))
        };
        trace::srdma_wqe(q.qpn, self.raw_opcode.into(), len, self.inline);
    }

    /// Its payload: the inline data where it lies in the ring, or the memory its SGEs name.
    pub(crate) fn gather(&self, q: &QpShared) -> core::result::Result<Segments, WcStatus> {
        if !self.inline {
            return self.sges(q, Access::empty());
        }
        let area = q.sq.wqe_size as usize - SRDMA_SQ_WQE_HDR_SIZE as usize;
        let len = self.inline_len as usize;
        if len > area || self.inline_len > q.cap.max_inline_data {
            q.counters.send.inc(Counter::RingErrors);
            return Err(WcStatus::LocLenErr);
        }
        let at = self.off + SRDMA_SQ_WQE_HDR_SIZE as usize;
        let bytes = InlineBytes::new(&q.sq.mem, at, len).ok_or(WcStatus::LocQpOpErr)?;
        Ok(Segments::Inline(bytes))
    }
}

/// Why a receive WQE cannot take a message.
pub(crate) struct BadRecv;

/// An RQ or SRQ WQE, read once.
pub(crate) struct RecvWqe {
    off: usize,
    pub(crate) wr_id: u64,
    num_sge: usize,
}

impl RecvWqe {
    /// Reads the WQE in slot `idx` of `ring`.
    pub(crate) fn read(ring: &Ring, idx: u32) -> core::result::Result<Self, BadRecv> {
        let off = slot_offset(ring, idx);
        let hdr: srdma_rq_wqe_hdr = ring.mem.read_obj(off).map_err(|_| BadRecv)?;
        Ok(Self {
            off,
            wr_id: hdr.wr_id,
            num_sge: hdr.num_sge as usize,
        })
    }

    /// Whether its SGEs hold fewer than `len` bytes; a WQE with more SGEs than the queue takes
    /// (`max_sge`) is left to [`RecvWqe::sink`] to refuse.
    pub(crate) fn too_short(&self, ring: &Ring, max_sge: u32, len: usize) -> bool {
        if self.num_sge > max_sge as usize {
            return false;
        }
        let body = self.off + SRDMA_RQ_WQE_HDR_SIZE as usize;
        let mut room = 0u64;
        for i in 0..self.num_sge {
            match ring
                .mem
                .read_obj::<srdma_sge>(body + i * SRDMA_SGE_SIZE as usize)
            {
                Ok(sge) => room += u64::from(sge.length),
                Err(_) => return false,
            }
        }
        room < len as u64
    }

    /// The memory its SGEs name for the first `len` bytes of a message (for all their bytes if
    /// `None`), in PD `q.pd` with the right to write it; each SGE is checked (as far as the
    /// message reaches into it) before a byte moves. `max_sge` is the most SGEs the queue was
    /// created for.
    pub(crate) fn sink(
        &self,
        q: &QpShared,
        ring: &Ring,
        max_sge: u32,
        len: Option<usize>,
    ) -> core::result::Result<Segments, BadRecv> {
        let n = self.num_sge;
        if n > max_sge as usize
            || SRDMA_RQ_WQE_HDR_SIZE as usize + n * SRDMA_SGE_SIZE as usize > ring.wqe_size as usize
        {
            q.counters.recv.inc(Counter::RingErrors);
            return Err(BadRecv);
        }
        let body = self.off + SRDMA_RQ_WQE_HDR_SIZE as usize;
        let mut left = len.unwrap_or(usize::MAX);
        let mut spans = SpanList::Empty;
        for i in 0..n {
            if left == 0 {
                break;
            }
            let sge: srdma_sge = ring
                .mem
                .read_obj(body + i * SRDMA_SGE_SIZE as usize)
                .map_err(|_| BadRecv)?;
            let take = (sge.length as usize).min(left);
            if take == 0 {
                continue;
            }
            let local = ring.kernel_buf(self.off, i);
            let span = resolve(
                &q.keys,
                sge.lkey,
                &q.pd,
                Access::LOCAL_WRITE,
                sge.addr,
                take as u64,
                local.as_ref(),
            )
            .ok_or(BadRecv)?;
            spans.push(span).map_err(|_| BadRecv)?;
            left -= take;
        }
        if len.is_some() && left != 0 {
            return Err(BadRecv);
        }
        Ok(Segments::Spans(spans))
    }
}

/// A producer index `pi` beyond the ring of `wqe_cnt` WQEs (the SQ's if `send`, else the
/// RQ's or SRQ's) whose consumer index is `ci` is garbage the process wrote: the QP enters the
/// error state.
pub(crate) fn bad_producer_index(q: &QpShared, send: bool, pi: u32, ci: u32, wqe_cnt: u32) {
    let counters = if send {
        &q.counters.send
    } else {
        &q.counters.recv
    };
    counters.inc(Counter::RingErrors);
    crate::log::bad_producer_index(q, send, pi, ci, wqe_cnt);
    q.enter_error();
}

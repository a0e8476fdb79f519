//! The encoder of send-queue WQEs (`struct srdma_sq_wqe_hdr` and its data area), shared by
//! `ibv_post_send`, `ibv_bind_mw` and the work-request API (`ibv_wr_*`): all fill a slot of the
//! mapped SQ segment by segment and write the control segment last.
#![allow(
    non_upper_case_globals,
    reason = "the verbs constants keep their C names"
)]

use crate::ah::SrdmaAh;
use crate::ffi::*;
use core::mem::size_of;
use libc::c_int;

/// Bytes of the WQE header (control and remote, datagram or bind segment).
pub(crate) const HDR: usize = SRDMA_SQ_WQE_HDR_SIZE as usize;
/// Bytes of one scatter/gather entry in the data area.
pub(crate) const SGE: usize = SRDMA_SGE_SIZE as usize;
/// Where the remote, datagram or bind segment starts.
const SEG: usize = size_of::<srdma_wqe_ctrl>();

/// Returns the srdma opcode of a verbs send opcode, if srdma executes it.
pub(crate) fn opcode(op: ibv_wr_opcode) -> Option<u8> {
    match op {
        ibv_wr_opcode_IBV_WR_SEND
        | ibv_wr_opcode_IBV_WR_SEND_WITH_IMM
        | ibv_wr_opcode_IBV_WR_RDMA_WRITE
        | ibv_wr_opcode_IBV_WR_RDMA_WRITE_WITH_IMM
        | ibv_wr_opcode_IBV_WR_RDMA_READ
        | ibv_wr_opcode_IBV_WR_ATOMIC_CMP_AND_SWP
        | ibv_wr_opcode_IBV_WR_ATOMIC_FETCH_AND_ADD
        | ibv_wr_opcode_IBV_WR_LOCAL_INV
        | ibv_wr_opcode_IBV_WR_BIND_MW
        | ibv_wr_opcode_IBV_WR_SEND_WITH_INV
        | ibv_wr_opcode_IBV_WR_ATOMIC_WRITE => Some(op as u8),
        _ => None,
    }
}

/// Whether `op` may be posted on a QP of `qp_type`. Memory windows belong to connections:
/// a datagram QP cannot bind, invalidate or send with invalidate (and its datagram segment
/// would take the place of the bind segment).
pub(crate) fn valid_on(op: ibv_wr_opcode, qp_type: ibv_qp_type) -> bool {
    qp_type != ibv_qp_type_IBV_QPT_UD
        || !matches!(
            op,
            ibv_wr_opcode_IBV_WR_LOCAL_INV
                | ibv_wr_opcode_IBV_WR_BIND_MW
                | ibv_wr_opcode_IBV_WR_SEND_WITH_INV
        )
}

/// Whether `op` moves data (SGEs or an inline payload); bind and local invalidate name
/// memory by its keys alone, so their SGEs, if any, are ignored.
pub(crate) fn has_data(op: ibv_wr_opcode) -> bool {
    !matches!(
        op,
        ibv_wr_opcode_IBV_WR_LOCAL_INV
            | ibv_wr_opcode_IBV_WR_BIND_MW
            | ibv_wr_opcode_IBV_WR_ATOMIC_WRITE
    )
}

/// Whether the payload of `op` may be inline: only data the requester sends.
pub(crate) fn may_inline(op: ibv_wr_opcode) -> bool {
    matches!(
        op,
        ibv_wr_opcode_IBV_WR_SEND
            | ibv_wr_opcode_IBV_WR_SEND_WITH_IMM
            | ibv_wr_opcode_IBV_WR_SEND_WITH_INV
            | ibv_wr_opcode_IBV_WR_RDMA_WRITE
            | ibv_wr_opcode_IBV_WR_RDMA_WRITE_WITH_IMM
    )
}

/// `ibv_inc_rkey` (an inline function of verbs.h, so not in the bindings): the same window
/// or region index, the next key byte.
pub(crate) fn inc_rkey(rkey: u32) -> u32 {
    (rkey & !0xff) | (rkey.wrapping_add(1) & 0xff)
}

/// Returns the bind segment that binds `mw` under the new rkey `rkey` as `info` describes,
/// for a QP of the context `ctx`.
///
/// `EINVAL` for what the kernel could not make sense of: no window, a window or region of
/// another context, a new rkey of another window (only the key byte is the consumer's to
/// choose), or a range without a region. Everything else (PDs, rights, the range within the
/// region, the window's type and state) is the kernel's to check when it executes the bind.
///
/// # Safety
///
/// `mw` must be null or a live memory window and `info.mr` null or a live memory region.
pub(crate) unsafe fn bind_segment(
    ctx: *mut ibv_context,
    mw: *mut ibv_mw,
    rkey: u32,
    info: &ibv_mw_bind_info,
) -> Result<srdma_wqe_bind, c_int> {
    if mw.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: A live window (caller guarantee).
    let mw = unsafe { &*mw };
    if mw.context != ctx || (mw.rkey ^ rkey) & !0xff != 0 {
        return Err(libc::EINVAL);
    }
    // Unbinding a type 1 window (length 0) names no region.
    let mr_lkey = if info.mr.is_null() {
        if info.length != 0 {
            return Err(libc::EINVAL);
        }
        0
    } else {
        // SAFETY: A live region (caller guarantee).
        let mr = unsafe { &*info.mr };
        if mr.context != ctx {
            return Err(libc::EINVAL);
        }
        mr.lkey
    };
    Ok(srdma_wqe_bind {
        addr: info.addr,
        length: info.length,
        mw_rkey: mw.rkey,
        new_rkey: rkey,
        mr_lkey,
        // The verbs access bits are the uverbs ones: passed on as they are.
        access: info.mw_access_flags,
    })
}

/// Returns the WQE flags (`SRDMA_WQE_*`) of verbs send flags; inline is the data's business.
pub(crate) fn wqe_flags(send_flags: u32) -> u8 {
    let mut flags = 0u8;
    if send_flags & ibv_send_flags_IBV_SEND_SIGNALED != 0 {
        flags |= SRDMA_WQE_SIGNALED as u8;
    }
    if send_flags & ibv_send_flags_IBV_SEND_SOLICITED != 0 {
        flags |= SRDMA_WQE_SOLICITED as u8;
    }
    if send_flags & ibv_send_flags_IBV_SEND_FENCE != 0 {
        flags |= SRDMA_WQE_FENCE as u8;
    }
    flags
}

/// Returns the datagram segment for a UD send to `remote_qpn` through the address handle `ah`.
///
/// # Safety
///
/// `ah` must be an address handle of this provider.
pub(crate) unsafe fn ud_segment(
    ah: *mut ibv_ah,
    remote_qpn: u32,
    remote_qkey: u32,
) -> srdma_wqe_ud {
    // SAFETY: `ah` is the first field of an `SrdmaAh` (caller guarantee).
    let attr = unsafe { &(*ah.cast::<SrdmaAh>()).attr };
    let grh = &attr.grh;
    srdma_wqe_ud {
        remote_qpn,
        remote_qkey,
        // SAFETY: The GID is 16 plain bytes whichever member is read.
        dgid: unsafe { grh.dgid.raw },
        sgid_index: grh.sgid_index,
        hop_limit: grh.hop_limit,
        traffic_class: grh.traffic_class,
        sl: attr.sl,
        flow_label: grh.flow_label,
    }
}

/// A WQE being written into an SQ slot. Segments go straight into the slot; the control
/// segment is kept here until [`SqWqe::finish`], so that a WQE is complete only at the end.
///
/// # Invariants
///
/// `base` points to a mapped SQ slot of `size >= HDR` bytes that nothing else writes or reads
/// while this value exists (the SQ lock is held and the slot lies beyond the producer index
/// the kernel has seen).
pub(crate) struct SqWqe {
    base: *mut u8,
    size: usize,
    ctrl: srdma_wqe_ctrl,
}

impl SqWqe {
    /// Starts a WQE of `opcode` (an srdma opcode, see [`opcode`]) without data.
    ///
    /// # Safety
    ///
    /// `base` must point to an SQ slot of `size` bytes (at least [`HDR`]) that the caller
    /// holds exclusively until the value is finished or dropped.
    pub(crate) unsafe fn new(
        base: *mut u8,
        size: usize,
        wr_id: u64,
        opcode: u8,
        flags: u8,
        imm_data: u32,
    ) -> Self {
        // INVARIANT: The caller guarantees the slot and that it is ours.
        Self {
            base,
            size,
            ctrl: srdma_wqe_ctrl {
                wr_id,
                opcode,
                flags,
                imm_data,
                ..Default::default()
            },
        }
    }

    /// Bytes of the data area.
    fn area(&self) -> usize {
        self.size - HDR
    }

    /// Writes the remote segment of an RDMA or atomic WQE.
    pub(crate) fn remote(&mut self, remote_addr: u64, rkey: u32, compare_add: u64, swap: u64) {
        let seg = srdma_wqe_remote {
            remote_addr,
            rkey,
            compare_add,
            swap,
            ..Default::default()
        };
        // SAFETY: The segment lies within the header of our slot (type invariant).
        unsafe {
            self.base
                .add(SEG)
                .cast::<srdma_wqe_remote>()
                .write_unaligned(seg)
        };
    }

    /// Writes the datagram segment of a UD WQE.
    pub(crate) fn ud(&mut self, seg: srdma_wqe_ud) {
        // SAFETY: The segment lies within the header of our slot (type invariant).
        unsafe {
            self.base
                .add(SEG)
                .cast::<srdma_wqe_ud>()
                .write_unaligned(seg)
        };
    }

    /// Writes the bind segment of a BIND_MW WQE.
    pub(crate) fn bind(&mut self, seg: srdma_wqe_bind) {
        // SAFETY: The segment lies within the header of our slot (type invariant).
        unsafe {
            self.base
                .add(SEG)
                .cast::<srdma_wqe_bind>()
                .write_unaligned(seg)
        };
    }

    /// Makes `sges` the data of the WQE; `EINVAL` if they do not fit the data area.
    pub(crate) fn sges(&mut self, sges: &[ibv_sge]) -> Result<(), c_int> {
        if sges.len() * SGE > self.area() {
            return Err(libc::EINVAL);
        }
        for (i, s) in sges.iter().enumerate() {
            let sge = srdma_sge {
                addr: s.addr,
                length: s.length,
                lkey: s.lkey,
            };
            // SAFETY: Within the data area of our slot (checked above, type invariant).
            unsafe {
                self.base
                    .add(HDR + i * SGE)
                    .cast::<srdma_sge>()
                    .write_unaligned(sge)
            };
        }
        self.ctrl.num_sge = sges.len() as u16;
        self.ctrl.inline_len = 0;
        self.ctrl.flags &= !(SRDMA_WQE_INLINE as u8);
        Ok(())
    }

    /// Copies the buffers `bufs` (address, length), concatenated, into the data area as the
    /// inline payload; `EINVAL` if it is longer than `max_inline` or the data area.
    ///
    /// # Safety
    ///
    /// Each buffer must be readable for its length.
    pub(crate) unsafe fn inline<I>(&mut self, bufs: I, max_inline: usize) -> Result<(), c_int>
    where
        I: Iterator<Item = (*const u8, usize)> + Clone,
    {
        let total = bufs
            .clone()
            .try_fold(0usize, |sum, (_, len)| sum.checked_add(len))
            .ok_or(libc::EINVAL)?;
        if total > max_inline || total > self.area() {
            return Err(libc::EINVAL);
        }
        let mut at = HDR;
        for (addr, len) in bufs {
            if len == 0 {
                continue;
            }
            // SAFETY: The source is readable (caller guarantee); the destination lies within
            // the data area of our slot (`total <= area`, type invariant).
            unsafe { core::ptr::copy_nonoverlapping(addr, self.base.add(at), len) };
            at += len;
        }
        self.ctrl.num_sge = 0;
        self.ctrl.inline_len = total as u32;
        self.ctrl.flags |= SRDMA_WQE_INLINE as u8;
        Ok(())
    }

    /// Completes the WQE: writes its control segment.
    pub(crate) fn finish(self) {
        // SAFETY: The control segment starts our slot (type invariant).
        unsafe {
            self.base
                .cast::<srdma_wqe_ctrl>()
                .write_unaligned(self.ctrl)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot() -> Vec<u8> {
        vec![0xa5; HDR + 8 * SGE]
    }

    fn ctrl_of(buf: &[u8]) -> srdma_wqe_ctrl {
        // SAFETY: The buffer holds at least a control segment.
        unsafe { buf.as_ptr().cast::<srdma_wqe_ctrl>().read_unaligned() }
    }

    #[test]
    fn sge_wqe() {
        let mut buf = slot();
        let op = opcode(ibv_wr_opcode_IBV_WR_RDMA_WRITE).unwrap();
        let flags = wqe_flags(ibv_send_flags_IBV_SEND_SIGNALED | ibv_send_flags_IBV_SEND_FENCE);
        // SAFETY: `buf` is a slot of the size given, ours alone.
        let mut w = unsafe { SqWqe::new(buf.as_mut_ptr(), buf.len(), 7, op, flags, 0) };
        w.remote(0x1000, 42, 0, 0);
        let sges = [ibv_sge {
            addr: 0x2000,
            length: 100,
            lkey: 5,
        }; 2];
        assert_eq!(w.sges(&sges), Ok(()));
        assert_eq!(w.sges(&[sges[0]; 9]), Err(libc::EINVAL));
        w.finish();
        let c = ctrl_of(&buf);
        assert_eq!((c.wr_id, c.opcode, c.num_sge, c.inline_len), (7, op, 2, 0));
        assert_eq!(
            c.flags,
            (SRDMA_WQE_SIGNALED | SRDMA_WQE_FENCE) as u8,
            "no inline flag"
        );
        // SAFETY: The remote segment and two SGEs lie within `buf`.
        let (r, s) = unsafe {
            (
                buf.as_ptr()
                    .add(SEG)
                    .cast::<srdma_wqe_remote>()
                    .read_unaligned(),
                buf.as_ptr()
                    .add(HDR + SGE)
                    .cast::<srdma_sge>()
                    .read_unaligned(),
            )
        };
        assert_eq!((r.remote_addr, r.rkey), (0x1000, 42));
        assert_eq!((s.addr, s.length, s.lkey), (0x2000, 100, 5));
    }

    #[test]
    fn inline_wqe() {
        let mut buf = slot();
        let (a, b) = ([1u8, 2, 3], [4u8; 70]);
        let bufs = [
            (a.as_ptr(), a.len()),
            (b.as_ptr(), 0),
            (b.as_ptr(), b.len()),
        ];
        // SAFETY: `buf` is a slot of the size given, ours alone.
        let mut w = unsafe { SqWqe::new(buf.as_mut_ptr(), buf.len(), 1, 0, 0, 9) };
        // SAFETY: The buffers are arrays of the lengths given.
        unsafe {
            assert_eq!(w.inline(bufs.iter().copied(), 72), Err(libc::EINVAL));
            assert_eq!(w.inline(bufs.iter().copied(), 73), Ok(()));
        }
        w.finish();
        let c = ctrl_of(&buf);
        assert_eq!((c.inline_len, c.num_sge, c.imm_data), (73, 0, 9));
        assert_eq!(c.flags, SRDMA_WQE_INLINE as u8);
        assert_eq!(&buf[HDR..HDR + 3], &a);
        assert_eq!(&buf[HDR + 3..HDR + 73], &b);
        assert_eq!(buf[HDR + 73], 0xa5, "nothing written past the payload");
    }

    #[test]
    fn opcodes() {
        assert_eq!(opcode(ibv_wr_opcode_IBV_WR_SEND), Some(2));
        assert_eq!(opcode(ibv_wr_opcode_IBV_WR_LOCAL_INV), Some(7));
        assert_eq!(opcode(ibv_wr_opcode_IBV_WR_BIND_MW), Some(8));
        assert_eq!(opcode(ibv_wr_opcode_IBV_WR_SEND_WITH_INV), Some(9));
        assert_eq!(opcode(ibv_wr_opcode_IBV_WR_TSO), None);
        assert!(may_inline(ibv_wr_opcode_IBV_WR_RDMA_WRITE_WITH_IMM));
        assert!(may_inline(ibv_wr_opcode_IBV_WR_SEND_WITH_INV));
        assert!(!may_inline(ibv_wr_opcode_IBV_WR_RDMA_READ));
        assert!(!may_inline(ibv_wr_opcode_IBV_WR_BIND_MW));
        assert!(!has_data(ibv_wr_opcode_IBV_WR_LOCAL_INV));
        assert!(has_data(ibv_wr_opcode_IBV_WR_SEND_WITH_INV));
        let (ud, uc) = (ibv_qp_type_IBV_QPT_UD, ibv_qp_type_IBV_QPT_UC);
        assert!(!valid_on(ibv_wr_opcode_IBV_WR_BIND_MW, ud));
        assert!(!valid_on(ibv_wr_opcode_IBV_WR_SEND_WITH_INV, ud));
        assert!(valid_on(ibv_wr_opcode_IBV_WR_SEND, ud));
        assert!(valid_on(ibv_wr_opcode_IBV_WR_LOCAL_INV, uc));
    }

    #[test]
    fn inc_rkey_wraps_the_key_byte() {
        assert_eq!(inc_rkey(0x0080_0012), 0x0080_0013);
        assert_eq!(inc_rkey(0x0080_00ff), 0x0080_0000);
        assert_eq!(inc_rkey(0xffff_ffff), 0xffff_ff00);
    }

    /// A context address for the objects of the bind tests; never dereferenced.
    fn fake_ctx(n: usize) -> *mut ibv_context {
        core::ptr::null_mut::<u8>().wrapping_add(n).cast()
    }

    #[test]
    fn bind_wqe() {
        let ctx = fake_ctx(0x1000);
        let mut mw = ibv_mw {
            context: ctx,
            rkey: 0x0080_0105,
            type_: ibv_mw_type_IBV_MW_TYPE_2,
            ..Default::default()
        };
        let mut mr = ibv_mr {
            context: ctx,
            lkey: 0x0000_0207,
            ..Default::default()
        };
        let access =
            ibv_access_flags_IBV_ACCESS_REMOTE_READ | ibv_access_flags_IBV_ACCESS_ZERO_BASED;
        let info = ibv_mw_bind_info {
            mr: &mut mr,
            addr: 0x7000_1000,
            length: 0x2000,
            mw_access_flags: access,
        };
        let new = inc_rkey(mw.rkey);
        // SAFETY: `mw` and `mr` are live.
        let seg = unsafe { bind_segment(ctx, &mut mw, new, &info) }.unwrap();
        let mut buf = slot();
        let op = opcode(ibv_wr_opcode_IBV_WR_BIND_MW).unwrap();
        let flags = wqe_flags(ibv_send_flags_IBV_SEND_SIGNALED);
        // SAFETY: `buf` is a slot of the size given, ours alone.
        let mut w = unsafe { SqWqe::new(buf.as_mut_ptr(), buf.len(), 3, op, flags, 0) };
        w.bind(seg);
        w.finish();
        let c = ctrl_of(&buf);
        assert_eq!((c.wr_id, c.opcode, c.num_sge, c.inline_len), (3, 8, 0, 0));
        assert_eq!((c.flags, c.imm_data), (SRDMA_WQE_SIGNALED as u8, 0));
        // The ABI puts the bind segment right after the control segment.
        assert_eq!(SEG, 32);
        // SAFETY: The bind segment lies within `buf`.
        let b = unsafe {
            buf.as_ptr()
                .add(32)
                .cast::<srdma_wqe_bind>()
                .read_unaligned()
        };
        assert_eq!((b.addr, b.length), (0x7000_1000, 0x2000));
        assert_eq!((b.mw_rkey, b.new_rkey), (0x0080_0105, 0x0080_0106));
        assert_eq!((b.mr_lkey, b.access), (0x207, access));
        assert_eq!(buf[HDR], 0xa5, "no data area");
    }

    #[test]
    fn bind_checks() {
        let ctx = fake_ctx(0x1000);
        let mut mw = ibv_mw {
            context: ctx,
            rkey: 0x0080_0105,
            ..Default::default()
        };
        let mut mr = ibv_mr {
            context: fake_ctx(0x2000),
            ..Default::default()
        };
        let unbind = ibv_mw_bind_info::default();
        // SAFETY: The windows and regions given are live or null.
        unsafe {
            let seg = bind_segment(ctx, &mut mw, 0x0080_0106, &unbind).unwrap();
            assert_eq!((seg.length, seg.mr_lkey), (0, 0));
            let no_mr = ibv_mw_bind_info {
                length: 1,
                ..Default::default()
            };
            let r = bind_segment(ctx, &mut mw, 0x0080_0106, &no_mr);
            assert_eq!(r.err(), Some(libc::EINVAL));
            let foreign_mr = ibv_mw_bind_info {
                mr: &mut mr,
                length: 1,
                ..Default::default()
            };
            let r = bind_segment(ctx, &mut mw, 0x0080_0106, &foreign_mr);
            assert_eq!(r.err(), Some(libc::EINVAL));
            let other_window = bind_segment(ctx, &mut mw, 0x0080_0206, &unbind);
            assert_eq!(other_window.err(), Some(libc::EINVAL));
            let foreign_mw = bind_segment(fake_ctx(0x3000), &mut mw, 0x0080_0106, &unbind);
            assert_eq!(foreign_mw.err(), Some(libc::EINVAL));
            let none = bind_segment(ctx, core::ptr::null_mut(), 0, &unbind);
            assert_eq!(none.err(), Some(libc::EINVAL));
        }
    }
}

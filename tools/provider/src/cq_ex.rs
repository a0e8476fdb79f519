//! The extended CQ (`ibv_create_cq_ex`, see `man ibv_create_cq_ex`): `ibv_start_poll` takes
//! the CQ's lock and the first CQE, `ibv_next_poll` the next ones, the `ibv_wc_read_*`
//! functions read fields of the CQE taken last, and `ibv_end_poll` gives the consumed slots
//! back to the kernel and the lock up.
//!
//! Completion timestamps count nanoseconds of the kernel's `CLOCK_MONOTONIC` (the device clock
//! runs at 1 GHz, `hca_core_clock` 1000000 kHz); the wall-clock reading adds the offset between
//! `CLOCK_REALTIME` and `CLOCK_MONOTONIC` at the time it is read.
#![allow(
    non_upper_case_globals,
    reason = "the verbs constants keep their C names"
)]

use crate::cq::SrdmaCq;
use crate::ffi::*;
use libc::c_int;

/// The fields srdma's CQEs carry. `IBV_WC_EX_WITH_SLID`, `_SL` and `_DLID_PATH_BITS` read 0 on
/// RoCE, as on every RoCE device.
const SUPPORTED_WC_FLAGS: u64 = (ibv_create_cq_wc_flags_IBV_WC_EX_WITH_BYTE_LEN
    | ibv_create_cq_wc_flags_IBV_WC_EX_WITH_IMM
    | ibv_create_cq_wc_flags_IBV_WC_EX_WITH_QP_NUM
    | ibv_create_cq_wc_flags_IBV_WC_EX_WITH_SRC_QP
    | ibv_create_cq_wc_flags_IBV_WC_EX_WITH_SLID
    | ibv_create_cq_wc_flags_IBV_WC_EX_WITH_SL
    | ibv_create_cq_wc_flags_IBV_WC_EX_WITH_DLID_PATH_BITS
    | ibv_create_cq_wc_flags_IBV_WC_EX_WITH_COMPLETION_TIMESTAMP
    | ibv_create_cq_wc_flags_IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
    as u64;

/// Checks the attributes of `ibv_create_cq_ex` against what srdma supports: no parent domain,
/// no overrun without an error, no fields srdma does not fill.
pub(crate) fn check_init_attr(attr: &ibv_cq_init_attr_ex) -> Result<(), c_int> {
    let flags_mask = ibv_cq_init_attr_mask_IBV_CQ_INIT_ATTR_MASK_FLAGS;
    if attr.comp_mask & !flags_mask != 0 {
        return Err(libc::EOPNOTSUPP);
    }
    // A single-threaded CQ may skip locking; srdma's lock costs nothing uncontended.
    let single = ibv_create_cq_attr_flags_IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
    if attr.comp_mask & flags_mask != 0 && attr.flags & !single != 0 {
        return Err(libc::EOPNOTSUPP);
    }
    if attr.wc_flags & !SUPPORTED_WC_FLAGS != 0 {
        return Err(libc::EOPNOTSUPP);
    }
    Ok(())
}

/// Fills the polling functions of `cq`: those of every extended CQ, and a reader for each
/// field `wc_flags` asks for (checked by [`check_init_attr`]).
pub(crate) fn install(cq: &mut ibv_cq_ex, wc_flags: u64) {
    let has = |flag: ibv_create_cq_wc_flags| wc_flags & flag as u64 != 0;
    cq.start_poll = Some(start_poll);
    cq.next_poll = Some(next_poll);
    cq.end_poll = Some(end_poll);
    cq.read_opcode = Some(read_opcode);
    cq.read_vendor_err = Some(read_vendor_err);
    cq.read_wc_flags = Some(read_wc_flags);
    if has(ibv_create_cq_wc_flags_IBV_WC_EX_WITH_BYTE_LEN) {
        cq.read_byte_len = Some(read_byte_len);
    }
    if has(ibv_create_cq_wc_flags_IBV_WC_EX_WITH_IMM) {
        cq.read_imm_data = Some(read_imm_data);
    }
    if has(ibv_create_cq_wc_flags_IBV_WC_EX_WITH_QP_NUM) {
        cq.read_qp_num = Some(read_qp_num);
    }
    if has(ibv_create_cq_wc_flags_IBV_WC_EX_WITH_SRC_QP) {
        cq.read_src_qp = Some(read_src_qp);
    }
    if has(ibv_create_cq_wc_flags_IBV_WC_EX_WITH_SLID) {
        cq.read_slid = Some(read_slid);
    }
    if has(ibv_create_cq_wc_flags_IBV_WC_EX_WITH_SL) {
        cq.read_sl = Some(read_sl);
    }
    if has(ibv_create_cq_wc_flags_IBV_WC_EX_WITH_DLID_PATH_BITS) {
        cq.read_dlid_path_bits = Some(read_dlid_path_bits);
    }
    if has(ibv_create_cq_wc_flags_IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) {
        cq.read_completion_ts = Some(read_completion_ts);
    }
    if has(ibv_create_cq_wc_flags_IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) {
        cq.read_completion_wallclock_ns = Some(read_completion_wallclock_ns);
    }
}

/// # Safety
///
/// `cq` must be the `ibv_cq_ex` of one of our CQs.
unsafe fn cq_of<'a>(cq: *mut ibv_cq_ex) -> &'a SrdmaCq {
    // SAFETY: `ibv_cq_ex` starts `SrdmaCq` (caller guarantee).
    unsafe { &*cq.cast::<SrdmaCq>() }
}

/// Takes the next CQE into the current one and shows its status and `wr_id` in `cq`; `ENOENT`
/// if there is none.
///
/// # Safety
///
/// `cq` must be one of our extended CQs, and the calling thread must hold its lock.
unsafe fn advance(cq: *mut ibv_cq_ex) -> c_int {
    // SAFETY: Our CQ (caller guarantee).
    let s = unsafe { cq_of(cq) };
    // SAFETY: The caller holds the lock.
    let poll = unsafe { s.poll.get() };
    let Some(cqe) = poll.take() else {
        return libc::ENOENT;
    };
    poll.cur = cqe;
    // SAFETY: `cq` is valid; the fields are the caller's to read after this call.
    unsafe {
        (*cq).status = cqe.status;
        (*cq).wr_id = cqe.wr_id;
    }
    0
}

unsafe extern "C" fn start_poll(cq: *mut ibv_cq_ex, attr: *mut ibv_poll_cq_attr) -> c_int {
    // SAFETY: libibverbs passes a valid attribute structure.
    if !attr.is_null() && unsafe { (*attr).comp_mask } != 0 {
        return libc::EINVAL;
    }
    // SAFETY: libibverbs passes one of our CQs.
    let s = unsafe { cq_of(cq) };
    // Held until ibv_end_poll; an empty CQ gives it back at once (no ibv_end_poll follows).
    s.poll.acquire();
    // SAFETY: Our CQ, whose lock we just took.
    let ret = unsafe { advance(cq) };
    if ret != 0 {
        // SAFETY: Taken above; no reference to the state is kept.
        unsafe { s.poll.release() };
    }
    ret
}

unsafe extern "C" fn next_poll(cq: *mut ibv_cq_ex) -> c_int {
    // SAFETY: Our CQ, locked since ibv_start_poll (the verbs contract).
    unsafe { advance(cq) }
}

unsafe extern "C" fn end_poll(cq: *mut ibv_cq_ex) {
    // SAFETY: libibverbs passes one of our CQs.
    let s = unsafe { cq_of(cq) };
    // SAFETY: Locked since ibv_start_poll; the reference ends before the release.
    unsafe {
        s.publish(s.poll.get().ci);
        s.poll.release();
    }
}

/// The CQE taken last.
///
/// # Safety
///
/// `cq` must be one of our extended CQs, inside `ibv_start_poll` .. `ibv_end_poll`.
unsafe fn cur<'a>(cq: *mut ibv_cq_ex) -> &'a srdma_cqe {
    // SAFETY: Our CQ, locked by the calling thread (caller guarantee).
    unsafe { &cq_of(cq).poll.get().cur }
}

unsafe extern "C" fn read_opcode(cq: *mut ibv_cq_ex) -> ibv_wc_opcode {
    // SAFETY: Called inside a poll (the verbs contract).
    unsafe { cur(cq) }.opcode
}

unsafe extern "C" fn read_vendor_err(cq: *mut ibv_cq_ex) -> u32 {
    // SAFETY: As in `read_opcode`.
    unsafe { cur(cq) }.vendor_err
}

unsafe extern "C" fn read_byte_len(cq: *mut ibv_cq_ex) -> u32 {
    // SAFETY: As in `read_opcode`.
    unsafe { cur(cq) }.byte_len
}

/// Immediate data in network order, or the invalidated rkey (`ibv_wc_read_invalidated_rkey`
/// reads this word too): as the kernel wrote it.
unsafe extern "C" fn read_imm_data(cq: *mut ibv_cq_ex) -> u32 {
    // SAFETY: As in `read_opcode`.
    unsafe { cur(cq) }.imm_data
}

unsafe extern "C" fn read_qp_num(cq: *mut ibv_cq_ex) -> u32 {
    // SAFETY: As in `read_opcode`.
    unsafe { cur(cq) }.qp_num
}

unsafe extern "C" fn read_src_qp(cq: *mut ibv_cq_ex) -> u32 {
    // SAFETY: As in `read_opcode`.
    unsafe { cur(cq) }.src_qp
}

unsafe extern "C" fn read_wc_flags(cq: *mut ibv_cq_ex) -> u32 {
    // SAFETY: As in `read_opcode`.
    unsafe { cur(cq) }.wc_flags
}

unsafe extern "C" fn read_slid(cq: *mut ibv_cq_ex) -> u32 {
    // SAFETY: As in `read_opcode`.
    u32::from(unsafe { cur(cq) }.slid)
}

unsafe extern "C" fn read_sl(cq: *mut ibv_cq_ex) -> u8 {
    // SAFETY: As in `read_opcode`.
    unsafe { cur(cq) }.sl
}

unsafe extern "C" fn read_dlid_path_bits(cq: *mut ibv_cq_ex) -> u8 {
    // SAFETY: As in `read_opcode`.
    unsafe { cur(cq) }.dlid_path_bits
}

unsafe extern "C" fn read_completion_ts(cq: *mut ibv_cq_ex) -> u64 {
    // SAFETY: As in `read_opcode`.
    unsafe { cur(cq) }.timestamp
}

unsafe extern "C" fn read_completion_wallclock_ns(cq: *mut ibv_cq_ex) -> u64 {
    // SAFETY: As in `read_opcode`.
    let ts = unsafe { cur(cq) }.timestamp;
    ts.wrapping_add(realtime_offset_ns() as u64)
}

fn clock_ns(clock: libc::clockid_t) -> i128 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to fill; both clocks always exist.
    unsafe { libc::clock_gettime(clock, &mut t) };
    i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec)
}

/// `CLOCK_REALTIME` minus `CLOCK_MONOTONIC`, now.
fn realtime_offset_ns() -> i64 {
    (clock_ns(libc::CLOCK_REALTIME) - clock_ns(libc::CLOCK_MONOTONIC)) as i64
}

/// The device clock now (`ibv_query_rt_values_ex`): `CLOCK_MONOTONIC` in nanoseconds, the
/// clock completion timestamps count. As with mlx5, the raw count is in `tv_nsec`.
pub(crate) unsafe extern "C" fn query_rt_values(
    _ctx: *mut ibv_context,
    values: *mut ibv_values_ex,
) -> c_int {
    // SAFETY: libibverbs passes a valid structure.
    let values = unsafe { &mut *values };
    let raw = ibv_values_mask_IBV_VALUES_MASK_RAW_CLOCK;
    if values.comp_mask & !raw != 0 {
        return libc::EINVAL;
    }
    if values.comp_mask & raw != 0 {
        values.raw_clock = timespec {
            tv_sec: 0,
            tv_nsec: clock_ns(libc::CLOCK_MONOTONIC) as i64,
        };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_attr_checks() {
        let mut attr = ibv_cq_init_attr_ex {
            cqe: 16,
            wc_flags: SUPPORTED_WC_FLAGS,
            ..Default::default()
        };
        assert_eq!(check_init_attr(&attr), Ok(()));
        attr.wc_flags |= ibv_create_cq_wc_flags_IBV_WC_EX_WITH_CVLAN as u64;
        assert_eq!(check_init_attr(&attr), Err(libc::EOPNOTSUPP));
        attr.wc_flags = 0;
        attr.comp_mask = ibv_cq_init_attr_mask_IBV_CQ_INIT_ATTR_MASK_FLAGS;
        attr.flags = ibv_create_cq_attr_flags_IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
        assert_eq!(check_init_attr(&attr), Ok(()));
        attr.flags = ibv_create_cq_attr_flags_IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
        assert_eq!(check_init_attr(&attr), Err(libc::EOPNOTSUPP));
        attr.comp_mask |= ibv_cq_init_attr_mask_IBV_CQ_INIT_ATTR_MASK_PD;
        assert_eq!(check_init_attr(&attr), Err(libc::EOPNOTSUPP));
    }

    #[test]
    fn wallclock_offset_is_the_epoch_distance() {
        // CLOCK_MONOTONIC starts at boot, CLOCK_REALTIME at 1970: the offset is decades.
        assert!(realtime_offset_ns() > 50 * 365 * 24 * 3600 * 1_000_000_000);
    }
}

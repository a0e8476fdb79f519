// SPDX-License-Identifier: GPL-2.0

//! Completion queues (`struct ib_cq`): creation attributes, completion events, and the work
//! completions that kernel callers poll.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{
    device::Device,
    driver::{Adapter, Driver},
    qp::QpHandle,
    ucontext::User,
};
use crate::{
    bindings,
    error::from_result,
    init::PinInit,
    new_spinlock_irqsave, pin_init,
    prelude::*,
    sync::{Arc, SpinLockIrqSave},
};
use core::ptr::NonNull;

/// The attributes a CQ is created with (`struct ib_cq_init_attr`).
#[derive(Clone, Copy, Debug)]
pub struct CqInitAttr {
    /// Minimum number of entries.
    pub cqe: u32,
    /// Completion vector for events.
    pub comp_vector: u32,
    /// What the creator asks of the CQ besides its size.
    pub flags: CqFlags,
}

/// How a CQ moderates its completion events (`ibv_modify_cq`, `rdma_set_cq_moderation`).
///
/// An armed CQ raises its event once `count` completions have arrived, or `period_us`
/// microseconds after the first of them, whichever comes first; zero for both raises it at the
/// first completion, as without moderation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CqModeration {
    /// Completions per event.
    pub count: u16,
    /// The longest an event waits after the first of its completions, in microseconds.
    pub period_us: u16,
}

/// The flags a CQ is created with (`enum ib_uverbs_ex_create_cq_flags`).
///
/// # Examples
///
/// ```
/// use kernel::rdma::cq::CqFlags;
///
/// let flags = CqFlags::TIMESTAMP_COMPLETION;
/// assert!(flags.contains(CqFlags::TIMESTAMP_COMPLETION));
/// assert!(flags.without(CqFlags::TIMESTAMP_COMPLETION).is_empty());
/// assert!(!CqFlags::IGNORE_OVERRUN.without(CqFlags::TIMESTAMP_COMPLETION).is_empty());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CqFlags(u32);

impl CqFlags {
    /// Each completion carries the time the device completed it.
    pub const TIMESTAMP_COMPLETION: Self =
        Self(bindings::ib_uverbs_ex_create_cq_flags_IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION);
    /// The CQ may overrun without the CQ error event.
    pub const IGNORE_OVERRUN: Self =
        Self(bindings::ib_uverbs_ex_create_cq_flags_IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN);

    /// Wraps the flags ib_core passes (`ib_cq_init_attr.flags`); unknown bits are kept, so
    /// that a driver refuses what it does not know.
    pub const fn from_raw(flags: u32) -> Self {
        Self(flags)
    }

    /// Returns whether every flag of `other` is set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Returns these flags without those of `other`.
    pub const fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    /// Returns whether no flag is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

super::object::driver_object!(
    /// A completion queue of driver `T`: ib_core's `struct ib_cq` followed by the driver's
    /// data.
    Cq,
    ib_cq,
    Cq,
    events: Option<Arc<CqEvents>>
);

impl<T: Driver> Cq<T> {
    /// Returns the number of entries the CQ has.
    pub fn cqe(&self) -> u32 {
        // SAFETY: `cqe` is written at creation and resize, which ib_core serialises with users.
        unsafe { (*self.raw()).cqe as u32 }
    }
}

/// A CQ's C part, while it exists.
struct RawCq(NonNull<bindings::ib_cq>);

// SAFETY: The pointer is only used under the lock of `CqEvents`, whose revocation the destroy
// trampoline waits for; ib_core's handlers may run on any thread.
unsafe impl Send for RawCq {}

/// The events a CQ delivers to its consumer: completion events (to a completion channel or a
/// kernel handler) and the CQ error event.
///
/// The driver may keep it for as long as it likes (the data path reaches a CQ through the QPs
/// it serves); once ib_core destroys the CQ, the handle is revoked and does nothing.
///
/// # Invariants
///
/// `cq` is `Some` only while the CQ it points to is alive: the destroy trampoline sets it to
/// `None` (under the lock) before ib_core frees the CQ.
#[pin_data]
pub struct CqEvents {
    /// Events may be raised from any context, as a NIC's interrupt raises them: softirq and
    /// hardirq included.
    #[pin]
    cq: SpinLockIrqSave<Option<RawCq>>,
}

impl CqEvents {
    pub(crate) fn new(cq: NonNull<bindings::ib_cq>) -> impl PinInit<Self> {
        // INVARIANT: The CQ is alive: its create trampoline makes the handle.
        pin_init!(Self {
            cq <- new_spinlock_irqsave!(Some(RawCq(cq)), "CqEvents::cq"),
        })
    }

    /// Tells the consumer that a completion it asked to hear about (with `req_notify_cq`) is
    /// in the CQ. Must not be called with locks held that the consumer's `poll_cq` takes.
    pub fn completion(&self) {
        let guard = self.cq.lock();
        if let Some(RawCq(cq)) = &*guard {
            let cq = cq.as_ptr();
            // SAFETY: The CQ is alive while the handle is not revoked (type invariant) and the
            // lock is held; ib_core sets the handler and its context at creation.
            unsafe {
                if let Some(handler) = (*cq).comp_handler {
                    handler(cq, (*cq).cq_context);
                }
            }
        }
    }

    /// Reports the CQ error event (`IB_EVENT_CQ_ERR`), for example after an overrun.
    pub fn error(&self) {
        let guard = self.cq.lock();
        if let Some(RawCq(cq)) = &*guard {
            let cq = cq.as_ptr();
            // SAFETY: `ib_event` holds pointers, a union and an enum, for which zero is valid.
            let mut ev: bindings::ib_event = unsafe { core::mem::zeroed() };
            ev.event = bindings::ib_event_type_IB_EVENT_CQ_ERR;
            ev.element.cq = cq;
            // SAFETY: The CQ is alive while the handle is not revoked (type invariant) and the
            // lock is held; ib_core sets the handler, its context and the device at creation.
            unsafe {
                ev.device = (*cq).device;
                if let Some(handler) = (*cq).event_handler {
                    handler(&mut ev, (*cq).cq_context);
                }
            }
        }
    }

    /// Makes the handle inert; after it returns no handler of the CQ runs on its behalf.
    pub(crate) fn revoke(&self) {
        // INVARIANT: Cleared before the CQ is freed.
        *self.cq.lock() = None;
    }
}

/// What `req_notify_cq` asks for (`enum ib_cq_notify_flags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotifyFlags(pub u32);

impl NotifyFlags {
    /// Only the next solicited completion (or an error completion) raises an event.
    pub fn solicited_only(self) -> bool {
        self.0 & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK
            == bindings::ib_cq_notify_flags_IB_CQ_SOLICITED
    }

    /// The caller wants to know whether completions are already waiting.
    pub fn report_missed(self) -> bool {
        self.0 & bindings::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0
    }
}

super::typed::flag_set! {
    /// Flags of a kernel caller's work completion (`enum ib_wc_flags`); numbered unlike the
    /// user ABI's `enum ibv_wc_flags`.
    pub struct WcFlags(u32) {
        /// The receive buffer starts with a GRH.
        const GRH = bindings::ib_wc_flags_IB_WC_GRH;
        /// `ex` holds immediate data.
        const WITH_IMM = bindings::ib_wc_flags_IB_WC_WITH_IMM;
        /// `ex` holds an invalidated rkey.
        const WITH_INVALIDATE = bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE;
        /// `network_hdr_type` is valid.
        const WITH_NETWORK_HDR_TYPE = bindings::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE;
    }
}

super::typed::c_enum! {
    /// The status of a work completion (`enum ib_wc_status`); the user ABI's `enum
    /// ibv_wc_status` has the same numbers.
    pub enum WcStatus: u32 {
        /// The work request completed.
        Success = bindings::ib_wc_status_IB_WC_SUCCESS,
        /// A length did not fit: a receive buffer too small, a message over the MTU of a UD QP.
        LocLenErr = bindings::ib_wc_status_IB_WC_LOC_LEN_ERR,
        /// The work request was inconsistent with the QP.
        LocQpOpErr = bindings::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
        /// An end-to-end context operation failed (reliable datagrams).
        LocEecOpErr = bindings::ib_wc_status_IB_WC_LOC_EEC_OP_ERR,
        /// A local key did not allow the access.
        LocProtErr = bindings::ib_wc_status_IB_WC_LOC_PROT_ERR,
        /// The QP went into the error state before the work request was carried out.
        WrFlushErr = bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR,
        /// A memory window bind failed.
        MwBindErr = bindings::ib_wc_status_IB_WC_MW_BIND_ERR,
        /// The responder's answer made no sense.
        BadRespErr = bindings::ib_wc_status_IB_WC_BAD_RESP_ERR,
        /// A local access to memory failed.
        LocAccessErr = bindings::ib_wc_status_IB_WC_LOC_ACCESS_ERR,
        /// The responder found the request invalid.
        RemInvReqErr = bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR,
        /// The responder's memory key did not allow the access.
        RemAccessErr = bindings::ib_wc_status_IB_WC_REM_ACCESS_ERR,
        /// The responder could not carry the request out.
        RemOpErr = bindings::ib_wc_status_IB_WC_REM_OP_ERR,
        /// The transport retried as often as the QP allows.
        RetryExcErr = bindings::ib_wc_status_IB_WC_RETRY_EXC_ERR,
        /// The responder refused as often as the QP's RNR retry count allows.
        RnrRetryExcErr = bindings::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR,
        /// Reliable datagram domain violation.
        LocRddViolErr = bindings::ib_wc_status_IB_WC_LOC_RDD_VIOL_ERR,
        /// The responder found an RDMA READ request invalid.
        RemInvRdReqErr = bindings::ib_wc_status_IB_WC_REM_INV_RD_REQ_ERR,
        /// The responder aborted the operation.
        RemAbortErr = bindings::ib_wc_status_IB_WC_REM_ABORT_ERR,
        /// Invalid end-to-end context number.
        InvEecnErr = bindings::ib_wc_status_IB_WC_INV_EECN_ERR,
        /// Invalid end-to-end context state.
        InvEecStateErr = bindings::ib_wc_status_IB_WC_INV_EEC_STATE_ERR,
        /// The device failed.
        FatalErr = bindings::ib_wc_status_IB_WC_FATAL_ERR,
        /// The response did not come in time.
        RespTimeoutErr = bindings::ib_wc_status_IB_WC_RESP_TIMEOUT_ERR,
        /// Any other error.
        GeneralErr = bindings::ib_wc_status_IB_WC_GENERAL_ERR,
    }
}

impl WcStatus {
    /// What ib_core calls the status (`ib_wc_status_msg`), as users see it in logs and in
    /// `ibv_wc_status_str`.
    ///
    /// ```
    /// use kernel::rdma::cq::WcStatus;
    ///
    /// assert_eq!(WcStatus::LocProtErr.msg().as_bytes(), b"local protection error");
    /// ```
    pub fn msg(self) -> &'static CStr {
        // SAFETY: `ib_wc_status_msg` takes any value and returns a static NUL-terminated
        // string.
        unsafe { CStr::from_char_ptr(bindings::ib_wc_status_msg(self as u32)) }
    }
}

super::typed::c_enum! {
    /// The operation a work completion reports (`enum ib_wc_opcode`); the user ABI's `enum
    /// ibv_wc_opcode` has the same numbers for the operations it has.
    pub enum WcOpcode: u32 {
        /// A SEND of any kind.
        Send = bindings::ib_wc_opcode_IB_WC_SEND,
        /// An RDMA WRITE, with or without immediate data.
        RdmaWrite = bindings::ib_wc_opcode_IB_WC_RDMA_WRITE,
        /// An RDMA READ.
        RdmaRead = bindings::ib_wc_opcode_IB_WC_RDMA_READ,
        /// A compare and swap.
        CompSwap = bindings::ib_wc_opcode_IB_WC_COMP_SWAP,
        /// A fetch and add.
        FetchAdd = bindings::ib_wc_opcode_IB_WC_FETCH_ADD,
        /// A memory window bind.
        BindMw = bindings::ib_wc_opcode_IB_WC_BIND_MW,
        /// A local invalidation.
        LocalInv = bindings::ib_wc_opcode_IB_WC_LOCAL_INV,
        /// A segmentation-offloaded send.
        Lso = bindings::ib_wc_opcode_IB_WC_LSO,
        /// An RDMA ATOMIC WRITE.
        AtomicWrite = bindings::ib_wc_opcode_IB_WC_ATOMIC_WRITE,
        /// A fast registration (kernel callers only).
        RegMr = bindings::ib_wc_opcode_IB_WC_REG_MR,
        /// A masked compare and swap.
        MaskedCompSwap = bindings::ib_wc_opcode_IB_WC_MASKED_COMP_SWAP,
        /// A masked fetch and add.
        MaskedFetchAdd = bindings::ib_wc_opcode_IB_WC_MASKED_FETCH_ADD,
        /// A flush.
        Flush = bindings::ib_wc_opcode_IB_WC_FLUSH,
        /// A receive.
        Recv = bindings::ib_wc_opcode_IB_WC_RECV,
        /// A receive of an RDMA WRITE with immediate data.
        RecvRdmaWithImm = bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM,
    }
}

impl WcOpcode {
    /// Whether the completion is of a receive (`opcode & IB_WC_RECV` in C).
    pub fn is_recv(self) -> bool {
        self as u32 & Self::Recv as u32 != 0
    }
}

/// A work completion for a kernel caller (`struct ib_wc`).
#[derive(Clone, Copy, Debug)]
pub struct Wc {
    /// The work request's `wr_id` (or `wr_cqe`, which shares its storage).
    pub wr_id: u64,
    /// The status.
    pub status: WcStatus,
    /// The operation.
    pub opcode: WcOpcode,
    /// Vendor error syndrome.
    pub vendor_err: u32,
    /// Bytes received (with the GRH area for UD).
    pub byte_len: u32,
    /// The QP the completion belongs to.
    pub qp: Option<QpHandle>,
    /// Immediate data (network order) or the invalidated rkey.
    pub ex: u32,
    /// Source QP number of a UD receive.
    pub src_qp: u32,
    /// The flags.
    pub wc_flags: WcFlags,
    /// P_Key index of a UD receive.
    pub pkey_index: u16,
    /// Source LID.
    pub slid: u32,
    /// Service level.
    pub sl: u8,
    /// Destination LID path bits.
    pub dlid_path_bits: u8,
    /// Port number (switches only).
    pub port_num: u32,
    /// `enum rdma_network_type` of the GRH area.
    pub network_hdr_type: u8,
}

/// The array a kernel caller polls completions into.
pub struct WcWriter<'a> {
    wc: &'a mut [bindings::ib_wc],
    written: usize,
}

impl<'a> WcWriter<'a> {
    pub(crate) fn new(wc: &'a mut [bindings::ib_wc]) -> Self {
        Self { wc, written: 0 }
    }

    /// Entries written so far.
    pub fn written(&self) -> usize {
        self.written
    }

    /// Whether the array has room for another entry.
    pub fn has_room(&self) -> bool {
        self.written < self.wc.len()
    }

    /// Appends `c`; returns `false` (writing nothing) when the array is full.
    pub fn push(&mut self, c: &Wc) -> bool {
        let Some(out) = self.wc.get_mut(self.written) else {
            return false;
        };
        // SAFETY: `ib_wc` is plain data (pointers, integers, unions), for which zero is valid.
        *out = unsafe { core::mem::zeroed() };
        out.__bindgen_anon_1.wr_id = c.wr_id;
        out.status = c.status as u32;
        out.opcode = c.opcode as u32;
        out.vendor_err = c.vendor_err;
        out.byte_len = c.byte_len;
        out.qp = c.qp.map_or(core::ptr::null_mut(), |q| q.0.as_ptr());
        out.ex.imm_data = c.ex;
        out.src_qp = c.src_qp;
        out.wc_flags = c.wc_flags.bits() as i32;
        out.pkey_index = c.pkey_index;
        out.slid = c.slid;
        out.sl = c.sl;
        out.dlid_path_bits = c.dlid_path_bits;
        out.port_num = c.port_num;
        out.network_hdr_type = c.network_hdr_type;
        self.written += 1;
        true
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// ib_core passes a zeroed CQ of `size_ib_cq` bytes on a device of `T`, valid attributes,
    /// and `attrs` null (kernel caller) or a valid command bundle.
    pub(crate) unsafe extern "C" fn create_cq(
        ibcq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core sets `device` before calling the driver.
            let dev = unsafe { Device::<T>::from_raw((*ibcq).device) };
            // SAFETY: `attr` is valid for the call.
            let attr = unsafe {
                CqInitAttr {
                    cqe: (*attr).cqe,
                    comp_vector: (*attr).comp_vector,
                    flags: CqFlags::from_raw((*attr).flags),
                }
            };
            let udata = if attrs.is_null() {
                core::ptr::null_mut()
            } else {
                // SAFETY: `attrs` is a valid bundle; its driver data is inside it.
                unsafe { bindings::uverbs_attr_bundle_udata(attrs) }
            };
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            // SAFETY: ib_core passes a valid CQ.
            let events = Arc::pin_init(
                CqEvents::new(unsafe { NonNull::new_unchecked(ibcq) }),
                GFP_KERNEL,
            )?;
            let (data, cqe) = match T::create_cq(dev, &attr, events.clone(), user) {
                Ok(created) => created,
                Err(e) => {
                    // ib_core frees the CQ without `destroy_cq`: copies the driver kept must
                    // not reach it.
                    events.revoke();
                    return Err(e);
                }
            };
            // SAFETY: ib_core just allocated the CQ (`destroy_cq` drops the data and the
            // events); `cqe` is ours to set during creation.
            unsafe {
                Cq::<T>::extra_slot(ibcq).write(Some(events));
                Cq::<T>::init_data(ibcq, data);
                (*ibcq).cqe = i32::try_from(cqe).unwrap_or(i32::MAX);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core calls this once for a CQ that `create_cq` initialised.
    pub(crate) unsafe extern "C" fn destroy_cq(
        ibcq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: `create_cq` set the events of the CQ; nothing else touches the slot.
        if let Some(events) = unsafe { (*Cq::<T>::extra_slot(ibcq)).take() } {
            // No handler runs for the CQ once this returns, wherever the driver keeps copies.
            events.revoke();
        }
        // SAFETY: ib_core destroys an object whose create operation initialised the data.
        unsafe { Cq::<T>::drop_data(ibcq) };
        0
    }

    /// # Safety
    ///
    /// ib_core passes a live CQ of `T`.
    pub(crate) unsafe extern "C" fn req_notify_cq(
        ibcq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> crate::ffi::c_int {
        // SAFETY: A live CQ of `T`.
        let cq = unsafe { Cq::<T>::from_raw(ibcq) };
        from_result(|| T::req_notify_cq(cq, NotifyFlags(flags)).map(i32::from))
    }

    /// # Safety
    ///
    /// ib_core passes a live CQ of `T` and room for `num_entries` completions at `wc`.
    pub(crate) unsafe extern "C" fn poll_cq(
        ibcq: *mut bindings::ib_cq,
        num_entries: crate::ffi::c_int,
        wc: *mut bindings::ib_wc,
    ) -> crate::ffi::c_int {
        let Ok(n) = usize::try_from(num_entries) else {
            return 0;
        };
        if n == 0 || wc.is_null() {
            return 0;
        }
        // SAFETY: A live CQ of `T`.
        let cq = unsafe { Cq::<T>::from_raw(ibcq) };
        // SAFETY: The caller provides `num_entries` entries at `wc`, ours for the call.
        let mut out = WcWriter::new(unsafe { core::slice::from_raw_parts_mut(wc, n) });
        from_result(|| {
            T::poll_cq(cq, &mut out)?;
            Ok(out.written() as i32)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a live CQ of `T` and `udata` null or valid.
    pub(crate) unsafe extern "C" fn resize_cq(
        ibcq: *mut bindings::ib_cq,
        cqe: crate::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live CQ of `T`.
            let cq = unsafe { Cq::<T>::from_raw(ibcq) };
            let cqe = u32::try_from(cqe).map_err(|_| EINVAL)?;
            // SAFETY: `udata` is null or the driver data of a command on a `T` device.
            let user = unsafe { User::from_udata(udata) };
            let real = T::resize_cq(cq, cqe, user)?;
            // SAFETY: ib_core serialises resizes of a CQ; `cqe` reports the new size.
            unsafe { (*ibcq).cqe = i32::try_from(real).unwrap_or(i32::MAX) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// ib_core passes a live CQ of `T`.
    pub(crate) unsafe extern "C" fn modify_cq(
        ibcq: *mut bindings::ib_cq,
        count: u16,
        period: u16,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: A live CQ of `T`.
            let cq = unsafe { Cq::<T>::from_raw(ibcq) };
            T::modify_cq(
                cq,
                CqModeration {
                    count,
                    period_us: period,
                },
            )?;
            Ok(0)
        })
    }
}

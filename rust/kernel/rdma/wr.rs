// SPDX-License-Identifier: GPL-2.0

//! Work requests of kernel callers (`struct ib_send_wr`, `struct ib_recv_wr` and the structs
//! that extend a send work request by its opcode).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{
    ah::Ah,
    cq::WcOpcode,
    driver::{Adapter, Driver},
    mr::{self, Access, KernelBuf, Mr},
    qp::{self, Qp},
    srq::Srq,
};
use crate::{bindings, error::from_result, prelude::*};
use core::marker::PhantomData;

super::typed::c_enum! {
    /// The operation of a send work request (`enum ib_wr_opcode`).
    ///
    /// Up to [`Opcode::AtomicWrite`] the numbers are the user ABI's too (`enum
    /// ib_uverbs_wr_opcode`), so a driver may decode the opcode of a WQE that userspace wrote with
    /// [`Opcode::from_raw`] as well; the rest are the kernel's own.
    pub enum Opcode: u32 {
        /// RDMA WRITE.
        RdmaWrite = bindings::ib_wr_opcode_IB_WR_RDMA_WRITE,
        /// RDMA WRITE with immediate data.
        RdmaWriteWithImm = bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM,
        /// SEND.
        Send = bindings::ib_wr_opcode_IB_WR_SEND,
        /// SEND with immediate data.
        SendWithImm = bindings::ib_wr_opcode_IB_WR_SEND_WITH_IMM,
        /// RDMA READ.
        RdmaRead = bindings::ib_wr_opcode_IB_WR_RDMA_READ,
        /// Atomic compare and swap.
        AtomicCmpAndSwp = bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP,
        /// Atomic fetch and add.
        AtomicFetchAndAdd = bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD,
        /// Binds a type 2 memory window (posted by userspace: kernel callers have no work request
        /// struct for it).
        BindMw = bindings::ib_wr_opcode_IB_WR_BIND_MW,
        /// TCP segmentation offload of a UD send.
        Lso = bindings::ib_wr_opcode_IB_WR_LSO,
        /// SEND that invalidates a memory window or fast-registered MR of the receiver.
        SendWithInv = bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV,
        /// RDMA READ that invalidates the local MR it lands in.
        RdmaReadWithInv = bindings::ib_wr_opcode_IB_WR_RDMA_READ_WITH_INV,
        /// Invalidates a fast-registered MR (or memory window) of the sender.
        LocalInv = bindings::ib_wr_opcode_IB_WR_LOCAL_INV,
        /// Masked compare and swap.
        MaskedAtomicCmpAndSwp = bindings::ib_wr_opcode_IB_WR_MASKED_ATOMIC_CMP_AND_SWP,
        /// Masked fetch and add.
        MaskedAtomicFetchAndAdd = bindings::ib_wr_opcode_IB_WR_MASKED_ATOMIC_FETCH_AND_ADD,
        /// Flushes remote memory to its persistence domain.
        Flush = bindings::ib_wr_opcode_IB_WR_FLUSH,
        /// Writes eight bytes of remote memory in one indivisible store (IBA annex A19).
        AtomicWrite = bindings::ib_wr_opcode_IB_WR_ATOMIC_WRITE,
        /// Registers the pages mapped into a fast-register MR under a key (`struct ib_reg_wr`);
        /// kernel callers only.
        RegMr = bindings::ib_wr_opcode_IB_WR_REG_MR,
        /// Registers an MR with signature (integrity) offload; kernel callers only.
        RegMrIntegrity = bindings::ib_wr_opcode_IB_WR_REG_MR_INTEGRITY,
    }
}

impl Opcode {
    /// The opcode of the completion of a work request with this opcode.
    pub fn completion(self) -> WcOpcode {
        match self {
            Opcode::Send | Opcode::SendWithImm | Opcode::SendWithInv => WcOpcode::Send,
            Opcode::RdmaWrite | Opcode::RdmaWriteWithImm => WcOpcode::RdmaWrite,
            Opcode::RdmaRead | Opcode::RdmaReadWithInv => WcOpcode::RdmaRead,
            Opcode::AtomicCmpAndSwp => WcOpcode::CompSwap,
            Opcode::AtomicFetchAndAdd => WcOpcode::FetchAdd,
            Opcode::MaskedAtomicCmpAndSwp => WcOpcode::MaskedCompSwap,
            Opcode::MaskedAtomicFetchAndAdd => WcOpcode::MaskedFetchAdd,
            Opcode::BindMw => WcOpcode::BindMw,
            Opcode::Lso => WcOpcode::Lso,
            Opcode::LocalInv => WcOpcode::LocalInv,
            Opcode::Flush => WcOpcode::Flush,
            Opcode::AtomicWrite => WcOpcode::AtomicWrite,
            Opcode::RegMr | Opcode::RegMrIntegrity => WcOpcode::RegMr,
        }
    }

    /// Whether it is a SEND of any kind (it consumes a receive WQE of the peer).
    pub fn is_send(self) -> bool {
        matches!(self, Self::Send | Self::SendWithImm | Self::SendWithInv)
    }

    /// Whether it carries immediate data.
    pub fn has_imm(self) -> bool {
        matches!(self, Self::SendWithImm | Self::RdmaWriteWithImm)
    }

    /// Whether the device carries it out without the peer: a bind, an invalidation, a
    /// registration.
    pub fn is_local(self) -> bool {
        matches!(
            self,
            Self::BindMw | Self::LocalInv | Self::RegMr | Self::RegMrIntegrity
        )
    }
}

super::typed::flag_set! {
    /// Flags of a send work request (`enum ib_send_flags`).
    pub struct SendFlags(u32) {
        /// Fence: wait for earlier reads and atomics.
        const FENCE = bindings::ib_send_flags_IB_SEND_FENCE;
        /// Write a completion.
        const SIGNALED = bindings::ib_send_flags_IB_SEND_SIGNALED;
        /// The receiver's completion is solicited.
        const SOLICITED = bindings::ib_send_flags_IB_SEND_SOLICITED;
        /// The payload is copied when posting; the SGEs are kernel virtual addresses.
        const INLINE = bindings::ib_send_flags_IB_SEND_INLINE;
    }
}

/// The remote end of an RDMA WRITE or READ (`struct ib_rdma_wr`).
#[derive(Clone, Copy, Debug)]
pub struct RdmaTarget {
    /// The peer's address.
    pub remote_addr: u64,
    /// The key of the peer's memory.
    pub rkey: u32,
}

/// The operands of an atomic (`struct ib_atomic_wr`).
#[derive(Clone, Copy, Debug)]
pub struct AtomicArgs {
    /// The peer's address of the eight bytes.
    pub remote_addr: u64,
    /// The value compared (compare and swap) or added (fetch and add).
    pub compare_add: u64,
    /// The value stored when the comparison holds.
    pub swap: u64,
    /// The key of the peer's memory.
    pub rkey: u32,
}

/// A fast registration (`struct ib_reg_wr`).
pub struct FastReg<'a, T: Driver> {
    /// The MR whose mapped pages are registered.
    pub mr: &'a Mr<T>,
    /// The key the registration takes.
    pub key: u32,
    /// The rights it grants.
    pub access: Access,
}

/// A scatter/gather entry (`struct ib_sge`) of a kernel caller's work request.
#[derive(Clone, Debug)]
pub struct Sge {
    addr: u64,
    length: u32,
    lkey: u32,
    /// The device uses virtual DMA, so `addr` is a kernel virtual address.
    virt: bool,
}

impl Sge {
    /// The address: for devices with virtual DMA, a kernel virtual address.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// The length in bytes.
    pub fn length(&self) -> u32 {
        self.length
    }

    /// The local key of the MR that covers the buffer.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }

    /// The buffer the entry names, for a device with virtual DMA; `None` for an empty entry or
    /// one outside the linear map.
    pub fn buf(&self) -> Option<KernelBuf> {
        if !self.virt {
            return None;
        }
        // SAFETY: A kernel caller named these bytes in a work request to a device with virtual
        // DMA (`virt`), and keeps them for it until the request completes.
        unsafe { KernelBuf::new(self.addr, u64::from(self.length)) }
    }
}

/// Reads entry `i` of an SGE list of `num` entries; `virt` says whether the device uses virtual
/// DMA.
///
/// # Safety
///
/// `list` must point to `num` valid entries when `num > 0`.
unsafe fn sge_at(list: *const bindings::ib_sge, num: i32, i: usize, virt: bool) -> Option<Sge> {
    if i >= usize::try_from(num).ok()? {
        return None;
    }
    // SAFETY: `i < num` entries are valid (caller guarantee).
    let s = unsafe { &*list.add(i) };
    Some(Sge {
        addr: s.addr,
        length: s.length,
        lkey: s.lkey,
        virt,
    })
}

/// The destination of a UD send (`struct ib_ud_wr`).
pub struct UdDest<'a, T: Driver> {
    /// The address handle.
    pub ah: &'a Ah<T>,
    /// The destination QP number.
    pub remote_qpn: u32,
    /// The Q_Key.
    pub remote_qkey: u32,
}

/// A send work request of a kernel caller.
///
/// # Invariants
///
/// `wr` is valid for `'a`; if `ud` is set it is the `wr` member of a `struct ib_ud_wr` (the
/// QP is a UD or GSI QP of `T`).
pub struct SendWr<'a, T: Driver> {
    wr: &'a bindings::ib_send_wr,
    ud: bool,
    virt: bool,
    _p: PhantomData<T>,
}

impl<'a, T: Driver> SendWr<'a, T> {
    /// The caller's `wr_id` (or `wr_cqe`; both share the storage and come back in the CQE).
    pub fn wr_id(&self) -> u64 {
        // SAFETY: Both members of the union are 64-bit plain data.
        unsafe { self.wr.__bindgen_anon_1.wr_id }
    }

    /// The operation, or `None` for a number ib_core does not define.
    pub fn opcode(&self) -> Option<Opcode> {
        Opcode::from_raw(self.wr.opcode)
    }

    /// The flags.
    pub fn send_flags(&self) -> SendFlags {
        SendFlags::from_bits_retain(self.wr.send_flags as u32)
    }

    /// Immediate data (network order) or the rkey to invalidate.
    pub fn ex(&self) -> u32 {
        // SAFETY: Both members of the union are 32-bit plain data.
        unsafe { self.wr.ex.imm_data }
    }

    /// The number of SGEs.
    pub fn num_sge(&self) -> usize {
        usize::try_from(self.wr.num_sge).unwrap_or(0)
    }

    /// SGE `i`.
    pub fn sge(&self, i: usize) -> Option<Sge> {
        // SAFETY: ib_core callers pass `num_sge` valid entries in `sg_list`.
        unsafe { sge_at(self.wr.sg_list, self.wr.num_sge, i, self.virt) }
    }

    /// The remote end of an RDMA WRITE or READ.
    pub fn rdma(&self) -> Option<RdmaTarget> {
        if !matches!(
            self.opcode(),
            Some(Opcode::RdmaWrite | Opcode::RdmaWriteWithImm | Opcode::RdmaRead)
        ) || self.ud
        {
            return None;
        }
        // SAFETY: Work requests with these opcodes are the first member of an `ib_rdma_wr`.
        let r =
            unsafe { &*(self.wr as *const bindings::ib_send_wr).cast::<bindings::ib_rdma_wr>() };
        Some(RdmaTarget {
            remote_addr: r.remote_addr,
            rkey: r.rkey,
        })
    }

    /// The operands of an atomic.
    pub fn atomic(&self) -> Option<AtomicArgs> {
        if !matches!(
            self.opcode(),
            Some(Opcode::AtomicCmpAndSwp | Opcode::AtomicFetchAndAdd)
        ) || self.ud
        {
            return None;
        }
        // SAFETY: Work requests with these opcodes are the first member of an `ib_atomic_wr`.
        let a =
            unsafe { &*(self.wr as *const bindings::ib_send_wr).cast::<bindings::ib_atomic_wr>() };
        Some(AtomicArgs {
            remote_addr: a.remote_addr,
            compare_add: a.compare_add,
            swap: a.swap,
            rkey: a.rkey,
        })
    }

    /// The fast registration a [`Opcode::RegMr`] work request asks for.
    pub fn reg(&self) -> Option<FastReg<'a, T>> {
        if self.opcode() != Some(Opcode::RegMr) || self.ud {
            return None;
        }
        // SAFETY: Work requests with this opcode are the first member of an `ib_reg_wr`.
        let r = unsafe { &*(self.wr as *const bindings::ib_send_wr).cast::<bindings::ib_reg_wr>() };
        if r.mr.is_null() {
            return None;
        }
        // SAFETY: The MR of a registration on a `T` device is a live MR of `T` (kernel callers
        // register MRs of the QP's device), made by `Mr::into_raw`.
        let mr = unsafe { &*r.mr.cast::<Mr<T>>() };
        Some(FastReg {
            mr,
            key: r.key,
            access: Access::from_c(r.access),
        })
    }

    /// The destination of a send on a UD or GSI QP.
    pub fn ud(&self) -> Option<UdDest<'a, T>> {
        if !self.ud {
            return None;
        }
        // SAFETY: Send work requests on UD and GSI QPs are the first member of an `ib_ud_wr`
        // (type invariant).
        let u = unsafe { &*(self.wr as *const bindings::ib_send_wr).cast::<bindings::ib_ud_wr>() };
        if u.ah.is_null() {
            return None;
        }
        Some(UdDest {
            // SAFETY: The AH of a work request on a `T` device is a live `T` AH.
            ah: unsafe { Ah::from_raw(u.ah) },
            remote_qpn: u.remote_qpn,
            remote_qkey: u.remote_qkey,
        })
    }

    /// The length of the payload of an inline send: the sum of its SGEs' lengths.
    pub fn inline_len(&self) -> usize {
        (0..self.num_sge())
            .filter_map(|i| self.sge(i))
            .map(|s| s.length as usize)
            .sum()
    }

    /// Hands the payload of an inline send to `f`, one SGE's bytes at a time, in order; stops
    /// at the first error `f` returns.
    pub fn inline_pieces(&self, mut f: impl FnMut(&[u8]) -> Result) -> Result {
        for i in 0..self.num_sge() {
            let Some(s) = self.sge(i) else { break };
            if s.length == 0 {
                continue;
            }
            // SAFETY: For inline sends, kernel callers pass kernel virtual addresses of `length`
            // readable bytes that nobody writes and that stay valid during `ib_post_send`, which
            // outlasts this borrow.
            let piece = unsafe {
                core::slice::from_raw_parts(s.addr as usize as *const u8, s.length as usize)
            };
            f(piece)?;
        }
        Ok(())
    }
}

/// The list of send work requests passed to `post_send`; remembers the last one handed out, so
/// that the trampoline can report it as the failed one.
pub struct SendWrs<'a, T: Driver> {
    next: *const bindings::ib_send_wr,
    pub(crate) current: *const bindings::ib_send_wr,
    ud: bool,
    virt: bool,
    _p: PhantomData<(&'a bindings::ib_send_wr, T)>,
}

impl<'a, T: Driver> SendWrs<'a, T> {
    /// # Safety
    ///
    /// `first` must be null or a valid list of a kernel caller for `'a`; `ud` true only for UD
    /// and GSI QPs of `T`; `virt` only if the device uses virtual DMA.
    pub(crate) unsafe fn new(first: *const bindings::ib_send_wr, ud: bool, virt: bool) -> Self {
        Self {
            next: first,
            current: first,
            ud,
            virt,
            _p: PhantomData,
        }
    }
}

impl<'a, T: Driver> Iterator for SendWrs<'a, T> {
    type Item = SendWr<'a, T>;

    fn next(&mut self) -> Option<SendWr<'a, T>> {
        if self.next.is_null() {
            return None;
        }
        self.current = self.next;
        // SAFETY: A valid list (constructor guarantee).
        let wr = unsafe { &*self.next };
        self.next = wr.next;
        // INVARIANT: `ud` comes from the constructor's guarantee.
        Some(SendWr {
            wr,
            ud: self.ud,
            virt: self.virt,
            _p: PhantomData,
        })
    }
}

/// A receive work request of a kernel caller.
pub struct RecvWr<'a> {
    wr: &'a bindings::ib_recv_wr,
    virt: bool,
}

impl RecvWr<'_> {
    /// The caller's `wr_id` (or `wr_cqe`).
    pub fn wr_id(&self) -> u64 {
        // SAFETY: Both members of the union are 64-bit plain data.
        unsafe { self.wr.__bindgen_anon_1.wr_id }
    }

    /// The number of SGEs.
    pub fn num_sge(&self) -> usize {
        usize::try_from(self.wr.num_sge).unwrap_or(0)
    }

    /// SGE `i`.
    pub fn sge(&self, i: usize) -> Option<Sge> {
        // SAFETY: ib_core callers pass `num_sge` valid entries in `sg_list`.
        unsafe { sge_at(self.wr.sg_list, self.wr.num_sge, i, self.virt) }
    }
}

/// The list of receive work requests passed to `post_recv` or `post_srq_recv`.
pub struct RecvWrs<'a> {
    next: *const bindings::ib_recv_wr,
    pub(crate) current: *const bindings::ib_recv_wr,
    virt: bool,
    _p: PhantomData<&'a bindings::ib_recv_wr>,
}

impl RecvWrs<'_> {
    /// # Safety
    ///
    /// `first` must be null or a valid list of a kernel caller for `'a`; `virt` only if the
    /// device uses virtual DMA.
    pub(crate) unsafe fn new(first: *const bindings::ib_recv_wr, virt: bool) -> Self {
        Self {
            next: first,
            current: first,
            virt,
            _p: PhantomData,
        }
    }
}

impl<'a> Iterator for RecvWrs<'a> {
    type Item = RecvWr<'a>;

    fn next(&mut self) -> Option<RecvWr<'a>> {
        if self.next.is_null() {
            return None;
        }
        self.current = self.next;
        // SAFETY: A valid list (constructor guarantee).
        let wr = unsafe { &*self.next };
        self.next = wr.next;
        Some(RecvWr {
            wr,
            virt: self.virt,
        })
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// ib_core passes a live QP of `T`, a work request list (null for a doorbell kick) and a
    /// valid `bad_wr`.
    pub(crate) unsafe extern "C" fn post_send(
        ibqp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> crate::ffi::c_int {
        // SAFETY: A live QP of `T`.
        let q = unsafe { Qp::<T>::from_raw(ibqp) };
        let (ret, bad) = if q.is_user() {
            // User QPs are driven by their rings: a list of work requests is not for them.
            let ret = if !wr.is_null() || !T::HAS_POST_SEND_USER {
                EINVAL.to_errno()
            } else {
                from_result(|| T::post_send_user(q).map(|()| 0))
            };
            (ret, wr)
        } else if T::HAS_POST_SEND {
            let ud = matches!(q.qp_type(), qp::QpType::Ud | qp::QpType::Gsi);
            let virt = mr::uses_virt_dma(q.device());
            // SAFETY: A kernel caller's valid list; `ud` says whether it holds `ib_ud_wr`s,
            // `virt` whether the device uses virtual DMA.
            let mut wrs = unsafe { SendWrs::<T>::new(wr, ud, virt) };
            let ret = from_result(|| T::post_send(q, &mut wrs).map(|()| 0));
            (ret, wrs.current)
        } else {
            (EOPNOTSUPP.to_errno(), wr)
        };
        if ret != 0 {
            // SAFETY: `bad_wr` is valid for writes.
            unsafe { *bad_wr = bad };
        }
        ret
    }

    /// # Safety
    ///
    /// ib_core passes a live QP of `T`, a work request list and a valid `bad_wr`.
    pub(crate) unsafe extern "C" fn post_recv(
        ibqp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> crate::ffi::c_int {
        // SAFETY: A live QP of `T`.
        let q = unsafe { Qp::<T>::from_raw(ibqp) };
        // User QPs post receives into their rings, without the kernel.
        let (ret, bad) = if !q.is_user() && T::HAS_POST_RECV {
            let virt = mr::uses_virt_dma(q.device());
            // SAFETY: A kernel caller's valid list; `virt` says whether the device uses
            // virtual DMA.
            let mut wrs = unsafe { RecvWrs::new(wr, virt) };
            let ret = from_result(|| T::post_recv(q, &mut wrs).map(|()| 0));
            (ret, wrs.current)
        } else {
            (EINVAL.to_errno(), wr)
        };
        if ret != 0 {
            // SAFETY: `bad_wr` is valid for writes.
            unsafe { *bad_wr = bad };
        }
        ret
    }

    /// # Safety
    ///
    /// ib_core passes a live SRQ of `T`, a work request list and a valid `bad_wr`.
    pub(crate) unsafe extern "C" fn post_srq_recv(
        ibsrq: *mut bindings::ib_srq,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> crate::ffi::c_int {
        // SAFETY: A live SRQ of `T`.
        let srq = unsafe { Srq::<T>::from_raw(ibsrq) };
        // User SRQs take receives in their rings, without the kernel.
        let (ret, bad) = if srq.is_user() {
            (EINVAL.to_errno(), wr)
        } else {
            let virt = mr::uses_virt_dma(srq.device());
            // SAFETY: A kernel caller's valid list; `virt` says whether the device uses
            // virtual DMA.
            let mut wrs = unsafe { RecvWrs::new(wr, virt) };
            let ret = from_result(|| T::post_srq_recv(srq, &mut wrs).map(|()| 0));
            (ret, wrs.current)
        };
        if ret != 0 {
            // SAFETY: `bad_wr` is valid for writes.
            unsafe { *bad_wr = bad };
        }
        ret
    }
}

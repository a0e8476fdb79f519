// SPDX-License-Identifier: GPL-2.0-only

//! What crosses a transport: the requests a requester sends and the responses its completer
//! gets back, with the fields a RoCEv2 packet carries (BTH, RETH, AtomicETH, ImmDt, IETH,
//! DETH) as named values.
//!
//! A request's payload travels by reference: a transport that delivers it on this host hands
//! the responder the requester's memory spans, so the data moves once, from the requester's
//! pages to the responder's.

use crate::{grh::GRH_SIZE, payload::Segments};
use kernel::{
    error::{code::EFAULT, Result},
    rdma::qp::QpType,
};

/// A 24-bit packet sequence number.
pub(crate) const PSN_MASK: u32 = 0xff_ffff;

/// Where an RDMA WRITE, READ or atomic goes at the responder (the RETH, or the AtomicETH's
/// address and key).
#[derive(Clone, Copy)]
pub(crate) struct Remote {
    pub(crate) va: u64,
    pub(crate) rkey: u32,
}

/// The operation of an atomic request.
#[derive(Clone, Copy)]
pub(crate) enum Atomic {
    CmpSwap { compare: u64, swap: u64 },
    FetchAdd { add: u64 },
}

/// The network header type a datagram's GRH area holds (`enum rdma_network_type`).
#[derive(Clone, Copy)]
#[repr(u8)]
pub(crate) enum NetworkHdr {
    Ipv4 = 2,
    Ipv6 = 3,
}

/// What a request asks of the responder.
pub(crate) enum Op<'a> {
    /// A SEND; `invalidate` is the rkey of a SEND_WITH_INV.
    Send {
        data: &'a Segments,
        imm: Option<u32>,
        invalidate: Option<u32>,
    },
    /// An RDMA WRITE, with immediate data if `imm`.
    Write {
        data: &'a Segments,
        to: Remote,
        imm: Option<u32>,
    },
    /// An RDMA READ of `sink.len()` bytes: the response data goes to `sink`, the requester's
    /// memory (the responder writes it directly when the request travels by reference).
    Read { from: Remote, sink: &'a Segments },
    /// An atomic on the 8 bytes at `at`.
    Atomic { at: Remote, op: Atomic },
    /// An RDMA ATOMIC WRITE: `value` (native byte order) stored whole in the 8 bytes at `at`.
    AtomicWrite { at: Remote, value: u64 },
    /// A UD datagram: the GRH area a receiver gets before the payload, and the payload.
    Datagram {
        grh: &'a [u8; GRH_SIZE],
        data: Payload<'a>,
        qkey: u32,
        imm: Option<u32>,
        network: NetworkHdr,
    },
}

/// A datagram's payload where its transport has it: the sender's memory (or inline bytes),
/// or the packet that brought it.
#[derive(Clone, Copy)]
pub(crate) enum Payload<'a> {
    Memory(&'a Segments),
    Packet(&'a [u8]),
}

impl Payload<'_> {
    /// The number of bytes.
    pub(crate) fn len(&self) -> usize {
        match self {
            Payload::Memory(m) => m.len(),
            Payload::Packet(p) => p.len(),
        }
    }

    /// Copies the `dst.len()` bytes from byte `at` into `dst`.
    pub(crate) fn read(&self, at: usize, dst: &mut [u8]) -> Result {
        match self {
            Payload::Memory(m) => m.read(at, dst),
            Payload::Packet(p) => {
                let src = at
                    .checked_add(dst.len())
                    .and_then(|end| p.get(at..end))
                    .ok_or(EFAULT)?;
                dst.copy_from_slice(src);
                Ok(())
            }
        }
    }
}

/// What the network header of a request carries besides its addresses: the address vector's
/// GRH fields.
#[derive(Clone, Copy, Default)]
pub(crate) struct Path {
    pub(crate) traffic_class: u8,
    pub(crate) hop_limit: u8,
    pub(crate) flow_label: u32,
}

/// A request from a QP to the QP `dest_qpn` of its peer.
pub(crate) struct Request<'a> {
    /// The transport service of the requester (RC, UC, or UD for UD and GSI QPs): the BTH
    /// opcode's high bits.
    pub(crate) service: QpType,
    pub(crate) src_qpn: u32,
    /// The GID it was sent from (the IP source address on the wire).
    pub(crate) sgid: [u8; 16],
    pub(crate) dest_qpn: u32,
    pub(crate) psn: u32,
    /// The sender asks for a solicited event.
    pub(crate) solicited: bool,
    pub(crate) path: Path,
    pub(crate) op: Op<'a>,
}

/// The NAK codes of an AETH (IBA 9.7.5.2.4), and the RNR NAK with its timer code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Nak {
    /// Receiver not ready: no receive WQE; the responder's `min_rnr_timer` code.
    Rnr(u8),
    /// Invalid request: the message did not fit the receive WQE, a bad receive WQE, an
    /// invalidation that failed, an operation the QP does not take.
    InvalidRequest,
    /// Remote access error: a key, a right or a range.
    RemoteAccess,
    /// Remote operational error: the responder could not carry out a valid request (it had
    /// no memory for the copy).
    RemoteOperational,
}

/// What comes back for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Response {
    /// Done (for RC, the acknowledgment; a READ's data is in its sink).
    Ack,
    /// The original value of an atomic's target.
    AtomicAck(u64),
    Nak(Nak),
    /// Nothing comes back: the request reached no QP that takes it (not there, not ready, not
    /// connected to the requester, out of sequence). An RC requester retransmits in vain and
    /// gives up; a transport that knows at once says so at once.
    Lost,
    /// The requester's own memory failed under the copy (the payload's or a READ's sink: a
    /// window or a registration of the requester went away meanwhile).
    LocalFault,
}

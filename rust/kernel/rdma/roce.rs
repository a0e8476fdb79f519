// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 packets: the InfiniBand transport headers carried in UDP (IBA volume 1, chapter 9,
//! and its annex A17, RoCEv2), encoded and decoded, and the invariant CRC that ends them.
//!
//! A packet's UDP payload is the base transport header ([`Bth`]), the extended transport
//! headers its opcode calls for, the payload, zero to three pad bytes and the ICRC. [`Packet`]
//! reads one and checks everything its bytes alone can tell; [`Headers`] writes one.
//!
//! ```
//! use kernel::rdma::roce::{Bth, Headers, Opcode, Operation, Packet, Service};
//!
//! let op = Opcode::new(Service::Rc, Operation::SendOnlyImm).unwrap();
//! let hdrs = Headers {
//!     bth: Bth::new(op, 0x12, 5, 3),
//!     imm: Some(0xdead_beef),
//!     ..Headers::default()
//! };
//! let mut buf = [0u8; 64];
//! let n = hdrs.write(&mut buf).unwrap();
//! assert_eq!(n, 16);
//! buf[n..n + 3].copy_from_slice(b"abc");
//! // 3 payload bytes, 1 pad byte, 4 ICRC bytes.
//! let p = Packet::parse(&buf[..n + 8]).unwrap();
//! assert_eq!(p.headers, hdrs);
//! assert_eq!((p.headers.bth.dest_qp, p.headers.bth.psn, p.headers.bth.pad), (0x12, 5, 1));
//! assert_eq!(p.headers.imm, Some(0xdead_beef));
//! // The immediate data travels as the verbs carry it, a `__be32`: its bytes as they are.
//! assert_eq!(buf[12..16], 0xdead_beef_u32.to_ne_bytes());
//! assert_eq!(p.payload, b"abc");
//! ```

use crate::{bindings, prelude::*};

/// The UDP destination port of RoCEv2.
pub const UDP_PORT: u16 = 4791;

/// The bytes of the ICRC.
pub const ICRC_LEN: usize = 4;

/// The default partition key, the only one RoCE devices use.
pub const DEFAULT_PKEY: u16 = 0xffff;

/// Whether a packet's P_Key `pkey` matches `entry`, a P_Key of the port's table (IBA 10.9.3):
/// the partitions (the low 15 bits) are the same and not both are a limited member's (the top
/// bit clear). The partition 0 is invalid and matches nothing.
///
/// ```
/// use kernel::rdma::roce::{pkey_matches, DEFAULT_PKEY};
///
/// assert!(pkey_matches(DEFAULT_PKEY, DEFAULT_PKEY));
/// assert!(pkey_matches(0x7fff, DEFAULT_PKEY));
/// assert!(!pkey_matches(0x7fff, 0x7fff));
/// assert!(!pkey_matches(0x1234, DEFAULT_PKEY));
/// assert!(!pkey_matches(0x8000, 0x8000));
/// ```
pub fn pkey_matches(pkey: u16, entry: u16) -> bool {
    const PARTITION: u16 = 0x7fff;
    const FULL: u16 = 0x8000;
    pkey & PARTITION == entry & PARTITION && pkey & PARTITION != 0 && (pkey | entry) & FULL != 0
}

/// A packet sequence number's bits.
pub const PSN_MASK: u32 = 0xff_ffff;

/// A QP number's bits.
pub const QPN_MASK: u32 = 0xff_ffff;

/// The transport service of an opcode: its top three bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
}

/// The operation of an opcode: its low five bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Operation {
    /// The first packet of a SEND of several.
    SendFirst = 0x00,
    /// A packet between the first and the last of a SEND.
    SendMiddle = 0x01,
    /// The last packet of a SEND of several.
    SendLast = 0x02,
    /// The last packet of a SEND, with immediate data.
    SendLastImm = 0x03,
    /// A SEND in one packet.
    SendOnly = 0x04,
    /// A SEND in one packet, with immediate data.
    SendOnlyImm = 0x05,
    /// The first packet of an RDMA WRITE of several.
    WriteFirst = 0x06,
    /// A packet between the first and the last of an RDMA WRITE.
    WriteMiddle = 0x07,
    /// The last packet of an RDMA WRITE of several.
    WriteLast = 0x08,
    /// The last packet of an RDMA WRITE, with immediate data.
    WriteLastImm = 0x09,
    /// An RDMA WRITE in one packet.
    WriteOnly = 0x0a,
    /// An RDMA WRITE in one packet, with immediate data.
    WriteOnlyImm = 0x0b,
    /// An RDMA READ request.
    ReadRequest = 0x0c,
    /// The first packet of an RDMA READ response of several.
    ReadResponseFirst = 0x0d,
    /// A packet between the first and the last of an RDMA READ response.
    ReadResponseMiddle = 0x0e,
    /// The last packet of an RDMA READ response of several.
    ReadResponseLast = 0x0f,
    /// An RDMA READ response in one packet.
    ReadResponseOnly = 0x10,
    /// An ACK or NAK.
    Acknowledge = 0x11,
    /// The acknowledgment of an atomic, with the original value.
    AtomicAcknowledge = 0x12,
    /// An atomic compare and swap.
    CompareSwap = 0x13,
    /// An atomic fetch and add.
    FetchAdd = 0x14,
    /// The last packet of a SEND with invalidate.
    SendLastInv = 0x16,
    /// A SEND with invalidate in one packet.
    SendOnlyInv = 0x17,
    /// An RDMA ATOMIC WRITE: eight bytes stored indivisibly (IBA annex A19), answered by an
    /// RDMA READ response without data.
    AtomicWrite = 0x1d,
}

impl Operation {
    const ALL: [Operation; 24] = [
        Operation::SendFirst,
        Operation::SendMiddle,
        Operation::SendLast,
        Operation::SendLastImm,
        Operation::SendOnly,
        Operation::SendOnlyImm,
        Operation::WriteFirst,
        Operation::WriteMiddle,
        Operation::WriteLast,
        Operation::WriteLastImm,
        Operation::WriteOnly,
        Operation::WriteOnlyImm,
        Operation::ReadRequest,
        Operation::ReadResponseFirst,
        Operation::ReadResponseMiddle,
        Operation::ReadResponseLast,
        Operation::ReadResponseOnly,
        Operation::Acknowledge,
        Operation::AtomicAcknowledge,
        Operation::CompareSwap,
        Operation::FetchAdd,
        Operation::SendLastInv,
        Operation::SendOnlyInv,
        Operation::AtomicWrite,
    ];

    /// The extended headers that follow the BTH, in order.
    fn layout(self) -> Layout {
        use Operation::*;
        let mut l = Layout::default();
        match self {
            SendFirst | SendMiddle | SendLast | SendOnly | WriteMiddle | WriteLast => {}
            SendLastImm | SendOnlyImm | WriteLastImm => l.imm = true,
            WriteFirst | WriteOnly | ReadRequest | AtomicWrite => l.reth = true,
            WriteOnlyImm => (l.reth, l.imm) = (true, true),
            ReadResponseFirst | ReadResponseLast | ReadResponseOnly | Acknowledge => l.aeth = true,
            ReadResponseMiddle => {}
            AtomicAcknowledge => (l.aeth, l.atomic_ack) = (true, true),
            CompareSwap | FetchAdd => l.atomic = true,
            SendLastInv | SendOnlyInv => l.ieth = true,
        }
        l.payload = !matches!(
            self,
            ReadRequest | Acknowledge | AtomicAcknowledge | CompareSwap | FetchAdd
        );
        l
    }
}

/// Which extended headers an opcode has, and whether a payload follows them.
#[derive(Default, Clone, Copy)]
struct Layout {
    deth: bool,
    reth: bool,
    atomic: bool,
    aeth: bool,
    atomic_ack: bool,
    imm: bool,
    ieth: bool,
    payload: bool,
}

impl Layout {
    fn len(&self) -> usize {
        let f = |b: bool, n: usize| if b { n } else { 0 };
        Bth::LEN
            + f(self.deth, Deth::LEN)
            + f(self.reth, Reth::LEN)
            + f(self.atomic, AtomicEth::LEN)
            + f(self.aeth, Aeth::LEN)
            + f(self.atomic_ack, 8)
            + f(self.imm, 4)
            + f(self.ieth, 4)
    }
}

/// An opcode that RoCEv2 defines for the service: UC has SENDs and RDMA WRITEs, UD only SEND
/// ONLY with or without immediate data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opcode {
    service: Service,
    op: Operation,
}

impl Opcode {
    /// The opcode of `op` on `service`, if that service has it.
    pub fn new(service: Service, op: Operation) -> Option<Self> {
        let ok = match service {
            Service::Rc => true,
            Service::Uc => (op as u8) <= Operation::WriteOnlyImm as u8,
            Service::Ud => matches!(op, Operation::SendOnly | Operation::SendOnlyImm),
        };
        ok.then_some(Self { service, op })
    }

    /// Decodes the opcode byte of a BTH.
    pub fn from_byte(b: u8) -> Option<Self> {
        let service = match b >> 5 {
            0 => Service::Rc,
            1 => Service::Uc,
            3 => Service::Ud,
            _ => return None,
        };
        let op = *Operation::ALL.iter().find(|op| **op as u8 == b & 0x1f)?;
        Self::new(service, op)
    }

    /// The opcode byte of a BTH.
    pub fn to_byte(self) -> u8 {
        let service = match self.service {
            Service::Rc => 0,
            Service::Uc => 1,
            Service::Ud => 3,
        };
        service << 5 | self.op as u8
    }

    /// The transport service.
    pub fn service(self) -> Service {
        self.service
    }

    /// The operation.
    pub fn operation(self) -> Operation {
        self.op
    }

    fn layout(self) -> Layout {
        let mut l = self.op.layout();
        l.deth = self.service == Service::Ud;
        l
    }

    /// The bytes of the BTH and the extended headers of a packet with this opcode.
    pub fn headers_len(self) -> usize {
        self.layout().len()
    }
}

/// The base transport header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bth {
    /// The opcode.
    pub opcode: Opcode,
    /// Solicited event.
    pub solicited: bool,
    /// Migration request (APM; RoCE devices differ in what they set, receivers accept both).
    pub mig_req: bool,
    /// Pad bytes after the payload, to a multiple of four.
    pub pad: u8,
    /// The partition key.
    pub pkey: u16,
    /// Explicit congestion notification bits of RoCEv2 (FECN, BECN).
    /// Forward explicit congestion notification.
    pub fecn: bool,
    /// Backward explicit congestion notification.
    pub becn: bool,
    /// The destination QP number.
    pub dest_qp: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// The packet sequence number.
    pub psn: u32,
}

impl Bth {
    /// The bytes of a BTH.
    pub const LEN: usize = 12;

    /// A BTH of `opcode` to QP `dest_qp` with PSN `psn`, for a payload of `payload_len` bytes,
    /// in the default partition.
    pub fn new(opcode: Opcode, dest_qp: u32, psn: u32, payload_len: usize) -> Self {
        Self {
            opcode,
            solicited: false,
            mig_req: false,
            pad: (payload_len.wrapping_neg() & 3) as u8,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp: dest_qp & QPN_MASK,
            ack_req: false,
            psn: psn & PSN_MASK,
        }
    }

    fn write(&self, b: &mut [u8]) {
        b[0] = self.opcode.to_byte();
        b[1] =
            (u8::from(self.solicited) << 7) | (u8::from(self.mig_req) << 6) | (self.pad & 3) << 4;
        b[2..4].copy_from_slice(&self.pkey.to_be_bytes());
        let qp =
            (u32::from(self.fecn) << 31) | (u32::from(self.becn) << 30) | self.dest_qp & QPN_MASK;
        b[4..8].copy_from_slice(&qp.to_be_bytes());
        let psn = (u32::from(self.ack_req) << 31) | self.psn & PSN_MASK;
        b[8..12].copy_from_slice(&psn.to_be_bytes());
    }

    fn read(b: &[u8]) -> Result<Self, Malformed> {
        let opcode = Opcode::from_byte(b[0]).ok_or(Malformed::Opcode)?;
        if b[1] & 0xf != 0 {
            return Err(Malformed::Version);
        }
        let qp = be32(&b[4..8]);
        let psn = be32(&b[8..12]);
        Ok(Self {
            opcode,
            solicited: b[1] & 0x80 != 0,
            mig_req: b[1] & 0x40 != 0,
            pad: (b[1] >> 4) & 3,
            pkey: u16::from_be_bytes([b[2], b[3]]),
            fecn: qp & (1 << 31) != 0,
            becn: qp & (1 << 30) != 0,
            dest_qp: qp & QPN_MASK,
            ack_req: psn & (1 << 31) != 0,
            psn: psn & PSN_MASK,
        })
    }
}

/// The datagram extended transport header (UD).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deth {
    /// The Q_Key.
    pub qkey: u32,
    /// The source QP number.
    pub src_qp: u32,
}

impl Deth {
    const LEN: usize = 8;
}

/// The RDMA extended transport header: where an RDMA WRITE or READ goes, and how long it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reth {
    /// The virtual address at the responder.
    pub va: u64,
    /// The remote key.
    pub rkey: u32,
    /// The length of the whole RDMA operation.
    pub len: u32,
}

impl Reth {
    const LEN: usize = 16;
}

/// The atomic extended transport header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicEth {
    /// The virtual address at the responder (8-byte aligned).
    pub va: u64,
    /// The remote key.
    pub rkey: u32,
    /// The value to swap in (compare and swap) or to add (fetch and add).
    pub swap_add: u64,
    /// The value to compare with (compare and swap).
    pub compare: u64,
}

impl AtomicEth {
    const LEN: usize = 28;
}

/// The ACK extended transport header: a syndrome (ACK, RNR NAK or NAK with its code) and the
/// message sequence number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Aeth {
    /// ACK (0x00..0x1f), RNR NAK (0x20 | timer) or NAK (0x60 | code).
    pub syndrome: u8,
    /// The message sequence number.
    pub msn: u32,
}

impl Aeth {
    const LEN: usize = 4;
}

/// What a packet's bytes alone show to be wrong with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// Shorter than its headers, pad and ICRC.
    Truncated,
    /// An opcode RoCEv2 does not define (for its service).
    Opcode,
    /// A transport header version other than 0.
    Version,
    /// A payload where the opcode has none.
    Payload,
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// The transport headers of a packet: the BTH and the extended headers its opcode has (the
/// others are ignored when writing and `None` when read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Headers {
    /// The base transport header.
    pub bth: Bth,
    /// The datagram header (UD).
    pub deth: Option<Deth>,
    /// The RDMA header.
    pub reth: Option<Reth>,
    /// The atomic header.
    pub atomic: Option<AtomicEth>,
    /// The ACK header.
    pub aeth: Option<Aeth>,
    /// The original value of an atomic acknowledgment.
    pub atomic_ack: Option<u64>,
    /// Immediate data as the verbs carry it (`__be32`): the value's bytes in memory are the
    /// bytes on the wire, whatever the CPU's byte order.
    pub imm: Option<u32>,
    /// The rkey a SEND with invalidate names.
    pub ieth: Option<u32>,
}

impl Default for Headers {
    fn default() -> Self {
        Self {
            // Overwritten by every user; any opcode will do.
            bth: Bth::new(
                Opcode {
                    service: Service::Rc,
                    op: Operation::Acknowledge,
                },
                0,
                0,
                0,
            ),
            deth: None,
            reth: None,
            atomic: None,
            aeth: None,
            atomic_ack: None,
            imm: None,
            ieth: None,
        }
    }
}

impl Headers {
    /// Writes the headers to the start of `out`; returns their length, or fails if `out` is too
    /// short or an extended header the opcode needs is missing.
    pub fn write(&self, out: &mut [u8]) -> Result<usize> {
        let l = self.bth.opcode.layout();
        let len = l.len();
        let b = out.get_mut(..len).ok_or(EINVAL)?;
        self.bth.write(&mut b[..Bth::LEN]);
        let mut at = Bth::LEN;
        if l.deth {
            let d = self.deth.ok_or(EINVAL)?;
            b[at..at + 4].copy_from_slice(&d.qkey.to_be_bytes());
            b[at + 4..at + 8].copy_from_slice(&(d.src_qp & QPN_MASK).to_be_bytes());
            at += Deth::LEN;
        }
        if l.reth {
            let r = self.reth.ok_or(EINVAL)?;
            b[at..at + 8].copy_from_slice(&r.va.to_be_bytes());
            b[at + 8..at + 12].copy_from_slice(&r.rkey.to_be_bytes());
            b[at + 12..at + 16].copy_from_slice(&r.len.to_be_bytes());
            at += Reth::LEN;
        }
        if l.atomic {
            let a = self.atomic.ok_or(EINVAL)?;
            b[at..at + 8].copy_from_slice(&a.va.to_be_bytes());
            b[at + 8..at + 12].copy_from_slice(&a.rkey.to_be_bytes());
            b[at + 12..at + 20].copy_from_slice(&a.swap_add.to_be_bytes());
            b[at + 20..at + 28].copy_from_slice(&a.compare.to_be_bytes());
            at += AtomicEth::LEN;
        }
        if l.aeth {
            let a = self.aeth.ok_or(EINVAL)?;
            let v = u32::from(a.syndrome) << 24 | a.msn & PSN_MASK;
            b[at..at + 4].copy_from_slice(&v.to_be_bytes());
            at += Aeth::LEN;
        }
        if l.atomic_ack {
            b[at..at + 8].copy_from_slice(&self.atomic_ack.ok_or(EINVAL)?.to_be_bytes());
            at += 8;
        }
        if l.imm {
            b[at..at + 4].copy_from_slice(&self.imm.ok_or(EINVAL)?.to_ne_bytes());
            at += 4;
        }
        if l.ieth {
            b[at..at + 4].copy_from_slice(&self.ieth.ok_or(EINVAL)?.to_be_bytes());
        }
        Ok(len)
    }
}

/// A RoCEv2 packet read from the payload of its UDP datagram.
#[derive(Debug)]
pub struct Packet<'a> {
    /// Its transport headers.
    pub headers: Headers,
    /// The payload, without the pad bytes and the ICRC.
    pub payload: &'a [u8],
    /// The ICRC the packet carries.
    pub icrc: u32,
}

impl<'a> Packet<'a> {
    /// Reads the packet `udp_payload`, from the BTH to the end of the ICRC. Checks that the
    /// opcode exists for its service, the version, and that the headers, the pad and the ICRC
    /// fit; nothing else (the ICRC itself needs the IP and UDP headers: [`icrc`]).
    pub fn parse(udp_payload: &'a [u8]) -> Result<Self, Malformed> {
        let b = udp_payload;
        if b.len() < Bth::LEN + ICRC_LEN {
            return Err(Malformed::Truncated);
        }
        let bth = Bth::read(b)?;
        let l = bth.opcode.layout();
        let hdr = l.len();
        let end = b
            .len()
            .checked_sub(ICRC_LEN + usize::from(bth.pad))
            .filter(|end| *end >= hdr)
            .ok_or(Malformed::Truncated)?;
        if !l.payload && (end != hdr || bth.pad != 0) {
            return Err(Malformed::Payload);
        }
        let mut at = Bth::LEN;
        let mut take = |present: bool, n: usize| {
            let r = present.then(|| &b[at..at + n]);
            if present {
                at += n;
            }
            r
        };
        let deth = take(l.deth, Deth::LEN).map(|h| Deth {
            qkey: be32(h),
            src_qp: be32(&h[4..]) & QPN_MASK,
        });
        let reth = take(l.reth, Reth::LEN).map(|h| Reth {
            va: be64(h),
            rkey: be32(&h[8..]),
            len: be32(&h[12..]),
        });
        let atomic = take(l.atomic, AtomicEth::LEN).map(|h| AtomicEth {
            va: be64(h),
            rkey: be32(&h[8..]),
            swap_add: be64(&h[12..]),
            compare: be64(&h[20..]),
        });
        let aeth = take(l.aeth, Aeth::LEN).map(|h| Aeth {
            syndrome: h[0],
            msn: be32(h) & PSN_MASK,
        });
        let atomic_ack = take(l.atomic_ack, 8).map(be64);
        let imm = take(l.imm, 4).map(|h| u32::from_ne_bytes([h[0], h[1], h[2], h[3]]));
        let ieth = take(l.ieth, 4).map(be32);
        let tail = &b[b.len() - ICRC_LEN..];
        Ok(Self {
            headers: Headers {
                bth,
                deth,
                reth,
                atomic,
                aeth,
                atomic_ack,
                imm,
                ieth,
            },
            payload: &b[hdr..end],
            icrc: u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]),
        })
    }
}

/// Continues the CRC-32 (the IEEE 802.3 polynomial, bit-reflected, as zlib's) `crc` over
/// `bytes`, without the final inversion.
fn crc32(crc: u32, bytes: &[u8]) -> u32 {
    // SAFETY: `crc32_le` only reads `bytes.len()` bytes at `bytes.as_ptr()`.
    unsafe { bindings::crc32_le(crc, bytes.as_ptr(), bytes.len()) }
}

/// The invariant CRC of the RoCEv2 packet `ip`, from its IP header (IPv4 of 20 bytes or IPv6)
/// to the end of its pad bytes: the CRC-32 over eight bytes of ones (the masked LRH of
/// InfiniBand), the IP and UDP headers with the fields that routers change set to ones, the
/// BTH with its reserved byte set to ones, the rest of the packet. Sent in little-endian
/// order. `None` if `ip` is not such a packet.
///
/// ```
/// use kernel::rdma::roce::icrc;
///
/// // An IPv4 UDP datagram to port 4791 with a BTH (RC ACKNOWLEDGE) and AETH.
/// let mut p = [0u8; 44];
/// p[0] = 0x45;
/// p[2..4].copy_from_slice(&40u16.to_be_bytes());
/// p[9] = 17;
/// p[22..24].copy_from_slice(&4791u16.to_be_bytes());
/// p[28] = 0x11;
/// let a = icrc(&p[..40]).unwrap();
/// // The fields routers change do not count.
/// p[1] = 0x3c; // TOS
/// p[8] = 7; // TTL
/// p[10] = 0x12; // header checksum
/// p[26] = 0x34; // UDP checksum
/// p[32] = 0x80; // FECN
/// assert_eq!(icrc(&p[..40]), Some(a));
/// // Everything else does.
/// p[29] = 0x80;
/// assert_ne!(icrc(&p[..40]), Some(a));
/// ```
///
/// Against packets rxe sent (captured with `tools/roce/capture-rxe.sh`): their IP, UDP and
/// transport headers, the length of their payload (`ibv_*_pingpong` fills it with 0x7b) and the
/// ICRC rxe computed.
///
/// ```
/// use kernel::rdma::roce::{icrc, Operation, Packet, Service};
///
/// let captured: [(&[u8], usize, [u8; 4]); 5] = [
///     // RC SEND FIRST, IPv4.
///     (
///         &[
///             0x45, 0x00, 0x04, 0x2c, 0xb7, 0xc6, 0x40, 0x00, 0x40, 0x11, 0x6a, 0xf8,
///             0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0xd3, 0x53, 0x12, 0xb7,
///             0x04, 0x18, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x01, 0x23,
///             0x00, 0xbc, 0x0e, 0xf0,
///         ],
///         1024,
///         [0x3b, 0xd6, 0x05, 0x0f],
///     ),
///     // RC SEND MIDDLE, IPv4.
///     (
///         &[
///             0x45, 0x00, 0x04, 0x2c, 0xb7, 0xca, 0x40, 0x00, 0x40, 0x11, 0x6a, 0xf4,
///             0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0xd3, 0x53, 0x12, 0xb7,
///             0x04, 0x18, 0x00, 0x00, 0x01, 0x00, 0xff, 0xff, 0x00, 0x00, 0x01, 0x23,
///             0x00, 0xbc, 0x0e, 0xf1,
///         ],
///         1024,
///         [0xf1, 0x79, 0x6d, 0x82],
///     ),
///     // RC SEND LAST with AckReq, IPv4.
///     (
///         &[
///             0x45, 0x00, 0x03, 0xb4, 0xb7, 0xcd, 0x40, 0x00, 0x40, 0x11, 0x6b, 0x69,
///             0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0xd3, 0x53, 0x12, 0xb7,
///             0x03, 0xa0, 0x00, 0x00, 0x02, 0x00, 0xff, 0xff, 0x00, 0x00, 0x01, 0x23,
///             0x80, 0xbc, 0x0e, 0xf4,
///         ],
///         904,
///         [0x67, 0x3e, 0x00, 0xc4],
///     ),
///     // RC SEND ONLY, IPv6.
///     (
///         &[
///             0x60, 0x00, 0x00, 0x00, 0x00, 0x58, 0x11, 0x40, 0xfd, 0x00, 0x00, 0x00,
///             0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
///             0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
///             0x00, 0x00, 0x00, 0x02, 0xd4, 0x76, 0x12, 0xb7, 0x00, 0x58, 0x00, 0x00,
///             0x04, 0x00, 0xff, 0xff, 0x00, 0x00, 0x01, 0x23, 0x80, 0xc2, 0x32, 0x8f,
///         ],
///         64,
///         [0x0f, 0x5f, 0xd0, 0xca],
///     ),
///     // UD SEND ONLY with DETH, IPv4.
///     (
///         &[
///             0x45, 0x00, 0x00, 0x74, 0xc6, 0xde, 0x40, 0x00, 0x40, 0x11, 0x5f, 0x98,
///             0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0xd0, 0x78, 0x12, 0xb7,
///             0x00, 0x60, 0x00, 0x00, 0x64, 0x00, 0xff, 0xff, 0x00, 0x00, 0x01, 0x23,
///             0x00, 0xf4, 0x13, 0x00, 0x11, 0x11, 0x11, 0x11, 0x00, 0x00, 0x00, 0x13,
///         ],
///         64,
///         [0xee, 0x6a, 0x46, 0xa9],
///     ),
/// ];
/// for (hdrs, len, sent) in captured {
///     let mut p = KVec::new();
///     p.extend_from_slice(hdrs, GFP_KERNEL)?;
///     p.extend_with(len, 0x7b, GFP_KERNEL)?;
///     assert_eq!(icrc(&p).map(u32::to_le_bytes), Some(sent));
///     p.extend_from_slice(&sent, GFP_KERNEL)?;
///     let transport = if hdrs[0] >> 4 == 4 { 28 } else { 48 };
///     let pkt = Packet::parse(&p[transport..]).unwrap();
///     assert_eq!((pkt.headers.bth.dest_qp, pkt.payload.len()), (0x123, len));
///     assert_eq!(pkt.icrc.to_le_bytes(), sent);
///     // Written again from what was read, the headers are the bytes rxe sent.
///     let mut out = [0u8; 20];
///     let n = pkt.headers.write(&mut out)?;
///     assert_eq!(&out[..n], &hdrs[transport..]);
/// }
/// let first = Packet::parse(&[0, 0, 0xff, 0xff, 0, 0, 1, 0x23, 0, 0, 0, 1, 0, 0, 0, 0]).unwrap();
/// assert_eq!(first.headers.bth.opcode.operation(), Operation::SendFirst);
/// assert_eq!(first.headers.bth.opcode.service(), Service::Rc);
/// # Ok::<(), Error>(())
/// ```
pub fn icrc(ip: &[u8]) -> Option<u32> {
    Icrc::of_headers(ip).map(Icrc::value)
}

/// The invariant CRC of a packet computed piece by piece, for a packet whose payload is not in
/// one slice (page fragments): the headers first, then each piece of the payload in order.
///
/// ```
/// use kernel::rdma::roce::{icrc, Icrc};
///
/// // IPv4, UDP, a BTH and eight bytes of payload.
/// let mut p = [0u8; 20 + 8 + 12 + 8];
/// p[0] = 0x45;
/// p[40..].copy_from_slice(b"abcdefgh");
/// let pieces = Icrc::of_headers(&p[..43])
///     .unwrap()
///     .update(&p[43..45])
///     .update(&p[45..]);
/// assert_eq!(Some(pieces.value()), icrc(&p));
/// ```
#[derive(Clone, Copy)]
pub struct Icrc(u32);

impl Icrc {
    /// The CRC of `ip`: an IP header (IPv4 without options, or IPv6), the UDP header, the base
    /// transport header and whatever follows in `ip`, with the variant fields masked as
    /// [`icrc`] says; `None` if `ip` is not that long or not IP.
    pub fn of_headers(ip: &[u8]) -> Option<Self> {
        const UDP: usize = 8;
        let ip_len = match ip.first()? >> 4 {
            4 if ip[0] & 0xf == 5 => 20,
            6 => 40,
            _ => return None,
        };
        let hdrs = ip_len + UDP + Bth::LEN;
        if ip.len() < hdrs {
            return None;
        }
        let mut masked = [0u8; 40 + UDP + Bth::LEN];
        let m = &mut masked[..hdrs];
        m.copy_from_slice(&ip[..hdrs]);
        if ip_len == 20 {
            m[1] = 0xff; // type of service
            m[8] = 0xff; // time to live
            m[10..12].fill(0xff); // header checksum
        } else {
            m[0] |= 0x0f; // traffic class, high bits
            m[1..4].fill(0xff); // traffic class, low bits, and flow label
            m[7] = 0xff; // hop limit
        }
        m[ip_len + 6..ip_len + 8].fill(0xff); // UDP checksum
        m[ip_len + UDP + 4] = 0xff; // BTH reserved byte, FECN and BECN
        let crc = crc32(!0, &[0xff; 8]);
        let crc = crc32(crc, m);
        Some(Self(crc32(crc, &ip[hdrs..])))
    }

    /// The CRC continued over `bytes`.
    pub fn update(self, bytes: &[u8]) -> Self {
        Self(crc32(self.0, bytes))
    }

    /// The CRC continued by `f`, which continues a CRC-32 (as `crc32_le`) over bytes it reads
    /// from where they are ([`PageSlice::crc32`](super::pages::PageSlice::crc32)).
    pub fn update_with<E>(
        self,
        f: impl FnOnce(u32) -> core::result::Result<u32, E>,
    ) -> core::result::Result<Self, E> {
        f(self.0).map(Self)
    }

    /// The ICRC field's value (little-endian on the wire).
    pub fn value(self) -> u32 {
        !self.0
    }
}

// SPDX-License-Identifier: GPL-2.0-only

//! The RoCEv2 transport: requests leave as IP/UDP packets through the device's network device
//! and packets to UDP port 4791 come in through a tunnel socket in the namespace of that
//! network device, opened with its first srdma device and closed with its last.
//!
//! Every received packet is checked before anything reads what it claims: its IP and UDP
//! lengths, its ICRC, its transport headers ([`roce::Packet::parse`]), that it is addressed to
//! an IP address of the device and to a QP of the device that takes its transport service.
//! What fails is dropped and counted, as rxe and RoCE NICs drop it, without an answer.
//!
//! Datagrams (UD, and GSI: rdma_cm's MADs) are one packet each and leave from [`send`]; RC
//! and UC requests leave from [`requester`], whose completer takes the responses, and arrive at
//! [`responder`].

use crate::{
    counters::Counter,
    device::{SrdmaDevice, PORT},
    grh::GRH_SIZE,
    message::{NetworkHdr, Op, Path, Payload, Request, Response},
    payload::Segments,
    qp::QpShared,
    resp, trace,
};
use kernel::{
    net::{
        self,
        ip::{self, Addr, Header, IPV4_HLEN, IPV6_HLEN},
        skb::{Received, SkBuff},
        udp_tunnel::{self, Receiver, Tunnel, Tunnels, UDP_HLEN},
    },
    prelude::*,
    rdma::{
        qp::{QpAttr, QpType},
        roce::{self, Bth, Deth, Headers, Opcode, Operation, Packet, Service, ICRC_LEN},
        Device,
    },
    str::CStr,
    types::ARef,
};

mod burst;
pub(crate) mod requester;
pub(crate) mod responder;

pub(crate) use burst::Burst;

/// The receive side of the transport: the tunnel sockets' callback.
pub(crate) struct Rx;

/// The RoCEv2 sockets of every namespace that has an srdma device.
static TUNNELS: Tunnels<Rx> = Tunnels::new();

impl Receiver for Rx {
    const PORT: u16 = roce::UDP_PORT;

    fn tunnels() -> &'static Tunnels<Self> {
        &TUNNELS
    }

    fn receive(skb: Received<'_>) {
        // The device of the network device the packet came in on (packets for other network
        // devices of the namespace are not ours).
        let Some(dev) = skb.dev().and_then(Device::<SrdmaDevice>::get_by_netdev) else {
            return;
        };
        dev.worker().received(skb.into_skb());
    }
}

/// Starts keeping RoCEv2 sockets per namespace; the module holds the registration.
pub(crate) fn register() -> Result<udp_tunnel::Registration<Rx>> {
    TUNNELS.register()
}

/// The device's use of the RoCEv2 port in the namespace of its network device `ndev`, or
/// `None` if something else holds the port there (rxe, which opens it in the initial namespace
/// when it loads): the device then works with srdma devices of this host only, and says so.
pub(crate) fn open(name: &CStr, ndev: &net::device::Device) -> Option<Tunnel> {
    let net = ndev.net()?;
    match TUNNELS.open(&net) {
        Ok(tunnel) => Some(tunnel),
        Err(e) => {
            pr_warn!(
                "{}: UDP port {} of the namespace of {} is in use ({:?}): RoCEv2 packets will not reach the device, only srdma devices of this host\n",
                name,
                roce::UDP_PORT,
                ndev.name(),
                e
            );
            None
        }
    }
}

/// The UDP source port of a packet between QPs `lqpn` and `rqpn` with IPv6 flow label
/// `flow_label` (0: none): from the flow label, or one derived from the QP numbers, so that
/// the flows of different QP pairs spread over paths and queues (`rdma_get_udp_sport`).
fn udp_sport(flow_label: u32, lqpn: u32, rqpn: u32) -> u16 {
    let fl = if flow_label != 0 {
        flow_label
    } else {
        let v = u64::from(lqpn) * u64::from(rqpn);
        let v = v ^ (v >> 20) ^ (v >> 40);
        (v & 0xf_ffff) as u32
    };
    let low = (fl & 0x3fff) ^ ((fl & 0xf_c000) >> 14);
    (low as u16) | 0xc000
}

/// Sends datagram `req` of QP `q` of device `dev` to `dgid` as a RoCEv2 packet; it completes
/// when it has left. A connected request comes here only if its peer went away between the
/// requester's look and the send: it is lost.
pub(crate) fn send(
    dev: &Device<SrdmaDevice>,
    q: &QpShared,
    dgid: &[u8; 16],
    req: &Request<'_>,
) -> Response {
    q.counters.send.sent(None);
    let Op::Datagram {
        data: payload,
        qkey,
        imm,
        ..
    } = req.op
    else {
        return Response::Lost;
    };
    let operation = if imm.is_some() {
        Operation::SendOnlyImm
    } else {
        Operation::SendOnly
    };
    let Some(opcode) = Opcode::new(Service::Ud, operation) else {
        return Response::Lost;
    };
    let headers = Headers {
        bth: Bth::new(opcode, req.dest_qpn, req.psn, payload.len()),
        deth: Some(Deth {
            qkey,
            src_qp: req.src_qpn,
        }),
        imm,
        ..Headers::default()
    };
    let ends = Ends {
        sgid: req.sgid,
        dgid: *dgid,
        path: req.path,
        src_qpn: req.src_qpn,
        dest_qpn: req.dest_qpn,
    };
    // Copied into the packet: the datagram completes once it is handed on, when the network
    // device may not have read its pages yet.
    let sent = transmit_with(dev, &ends, &headers, payload.len(), |buf| {
        payload.read(0, buf)
    });
    if sent.is_err() {
        q.counters.send.inc(Counter::TxErrors);
    }
    // Whatever becomes of it, a datagram completes as sent.
    Response::Lost
}

/// Who a packet goes between: the IP addresses (as GIDs), what else the IP header carries,
/// and the QP numbers its UDP source port is derived from.
#[derive(Clone, Copy)]
pub(crate) struct Ends {
    pub(crate) sgid: [u8; 16],
    pub(crate) dgid: [u8; 16],
    pub(crate) path: Path,
    pub(crate) src_qpn: u32,
    pub(crate) dest_qpn: u32,
}

/// Builds the packet of `headers` and `payload` between `ends` and hands it to the IP layer
/// of the device's network device.
pub(crate) fn transmit(
    dev: &Device<SrdmaDevice>,
    ends: &Ends,
    headers: &Headers,
    payload: &[u8],
) -> Result {
    transmit_with(dev, ends, headers, payload.len(), |out| {
        out.copy_from_slice(payload);
        Ok(())
    })
}

/// As [`transmit`], for a payload of `len` bytes that `fill` writes into the packet (straight
/// from where it is, without a copy in between).
pub(crate) fn transmit_with(
    dev: &Device<SrdmaDevice>,
    ends: &Ends,
    headers: &Headers,
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result,
) -> Result {
    build_with(dev, ends, headers, len, fill)?.send()
}

/// Builds the packet that [`transmit_with`] sends, to be sent later.
pub(crate) fn build_with(
    dev: &Device<SrdmaDevice>,
    ends: &Ends,
    headers: &Headers,
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result,
) -> Result<Ready> {
    trace::srdma_tx(
        ends.dest_qpn,
        headers.bth.opcode.to_byte().into(),
        headers.bth.psn,
        len as u32,
    );
    let mut out = Outgoing::new(dev, ends, headers, len + (4 - len % 4) % 4 + ICRC_LEN)?;
    fill(out.skb.put(len)?)?;
    out.skb.put((4 - len % 4) % 4 + ICRC_LEN)?;
    out.push_headers(ends)?;
    // The ICRC covers the IP header as it leaves, ID included.
    let bytes = out.skb.data_mut()?;
    let end = bytes.len() - ICRC_LEN;
    let icrc = roce::icrc(&bytes[..end]).ok_or(EINVAL)?;
    bytes[end..].copy_from_slice(&icrc.to_le_bytes());
    Ok(out.ready())
}

/// Builds the packet of `headers` and the `len` bytes from byte `at` of `payload`, which leave
/// as fragments of the packet that refer to the memory's pages: no copy on this side, the
/// network device (with scatter-gather, as virtio-net) or the peer reads them where they are.
/// Where the memory cannot go that way (see [`Segments::append_to`]), or the packet has too
/// many pieces, the payload is copied into the packet instead.
///
/// The pages are read when the packet leaves, so only a sender that learns of the delivery
/// from the peer (an RC requester: the WQE completes at the ACK) may send this way; a sender
/// that completes at once (UC, UD) would let its user reuse the memory before it left.
pub(crate) fn build_pages(
    dev: &Device<SrdmaDevice>,
    ends: &Ends,
    headers: &Headers,
    payload: &Segments,
    at: usize,
    len: usize,
) -> Result<Ready> {
    let pad = (4 - len % 4) % 4;
    let mut out = Outgoing::new(dev, ends, headers, 0)?;
    if len == 0 || payload.append_to(at, len, &mut out.skb).is_err() {
        drop(out);
        return build_with(dev, ends, headers, len, |buf| payload.read(at, buf));
    }
    trace::srdma_tx(
        ends.dest_qpn,
        headers.bth.opcode.to_byte().into(),
        headers.bth.psn,
        len as u32,
    );
    out.skb.append_tail(pad + ICRC_LEN)?;
    out.push_headers(ends)?;
    let icrc = roce::Icrc::of_headers(out.skb.head())
        .ok_or(EINVAL)?
        .update_with(|crc| payload.crc32(at, len, crc))?
        .update(&[0; 3][..pad]);
    let mut trailer = [0u8; 3 + ICRC_LEN];
    trailer[pad..pad + ICRC_LEN].copy_from_slice(&icrc.value().to_le_bytes());
    out.skb.write_tail(&trailer[..pad + ICRC_LEN])?;
    Ok(out.ready())
}

/// A packet being built: its buffer, holding the transport headers, and where it goes.
struct Outgoing {
    skb: SkBuff,
    ip: Header,
    net: ARef<net::namespace::Net>,
    route: ip::Route,
}

impl Outgoing {
    /// Routes a packet between `ends` and starts its buffer with `headers`, leaving room for
    /// `tail` more bytes after them and for the UDP and IP headers before.
    fn new(dev: &Device<SrdmaDevice>, ends: &Ends, headers: &Headers, tail: usize) -> Result<Self> {
        let ndev = dev.netdev(PORT).ok_or(ENODEV)?;
        let net = ndev.net().ok_or(ENODEV)?;
        let ip = Header {
            saddr: Addr::from_mapped(&ends.sgid),
            daddr: Addr::from_mapped(&ends.dgid),
            traffic_class: ends.path.traffic_class,
            hop_limit: ends.path.hop_limit,
            flow_label: ends.path.flow_label,
            protocol: ip::PROTO_UDP,
        };
        let route = ip::Route::output(&net, &ip, ndev.ifindex())?;
        let link = route.dev().map_or(0, |d| d.ll_reserved_space());
        let transport = headers.bth.opcode.headers_len();
        let size = link + ip.len() + UDP_HLEN + transport + tail;
        let mut skb = SkBuff::alloc(u32::try_from(size)?, GFP_KERNEL)?;
        skb.reserve(link + ip.len() + UDP_HLEN)?;
        if headers.write(skb.put(transport)?)? != transport {
            return Err(EINVAL);
        }
        Ok(Self {
            skb,
            ip,
            net,
            route,
        })
    }

    /// Puts the UDP and IP headers in front, once the packet is whole.
    fn push_headers(&mut self, ends: &Ends) -> Result {
        udp_tunnel::push_header(
            &mut self.skb,
            udp_sport(ends.path.flow_label, ends.src_qpn, ends.dest_qpn),
            roce::UDP_PORT,
        )?;
        self.ip.push(&mut self.skb, &self.net)
    }

    /// The packet, whole once its headers are pushed.
    fn ready(self) -> Ready {
        Ready {
            skb: self.skb,
            net: self.net,
            route: self.route,
        }
    }
}

/// A packet whole and routed, for the IP layer.
pub(crate) struct Ready {
    skb: SkBuff,
    net: ARef<net::namespace::Net>,
    route: ip::Route,
}

impl Ready {
    /// Hands the packet to the IP layer; in atomic context too.
    pub(crate) fn send(self) -> Result {
        ip::local_out(&self.net, self.skb, self.route)
    }
}

/// Why a received packet was dropped (the values `srdma_drop` records).
#[derive(Clone, Copy)]
pub(crate) enum Dropped {
    /// Not a well-formed RoCEv2 packet: IP or UDP lengths, transport headers, an IP header
    /// with options or extension headers.
    Malformed = 0,
    /// Its ICRC does not match.
    Icrc = 1,
    /// Not for this device: another IP address, an unknown QP, a QP that does not take its
    /// transport service.
    NotOurs = 2,
}

/// Carries out a packet the device's network device received, in process context.
pub(crate) fn receive(dev: &Device<SrdmaDevice>, mut skb: SkBuff) {
    let Err(why) = deliver(dev, &mut skb) else {
        return;
    };
    trace::srdma_drop(why as u32);
    dev.counters().inc(match why {
        Dropped::Malformed => Counter::RxMalformed,
        Dropped::Icrc => Counter::IcrcErrors,
        Dropped::NotOurs => Counter::RxNotOurs,
    });
}

/// Counts `n` packets that arrived while the device's receive backlog was full.
pub(crate) fn count_overflow(dev: &Device<SrdmaDevice>, n: u64) {
    dev.counters().add(Counter::RxDropped, n);
}

/// What the IP header of a received packet says.
pub(crate) struct Arrived {
    pub(crate) sgid: [u8; 16],
    pub(crate) dgid: [u8; 16],
    network: NetworkHdr,
    /// The GRH area a UD receive gets: the IPv4 header behind 20 zero bytes, or the IPv6
    /// header.
    grh: [u8; GRH_SIZE],
}

impl Arrived {
    /// Whether the packet is between the two ends of the address vector `attr` of a connected
    /// QP: from its destination GID, to its source GID (another address of the same network
    /// device is another port of the fabric, which the QP was not connected through).
    pub(crate) fn is_between(&self, dev: &Device<SrdmaDevice>, attr: &QpAttr) -> bool {
        attr.ah_attr.dgid == self.sgid
            && dev
                .query_gid(PORT, u32::from(attr.ah_attr.sgid_index))
                .is_ok_and(|sgid| sgid == self.dgid)
    }
}

/// Reads the IP and UDP headers of `bytes` (from the IP header to the end of the packet);
/// returns what they say and the UDP payload.
fn headers(bytes: &[u8]) -> core::result::Result<(Arrived, &[u8]), Dropped> {
    let mut grh = [0u8; GRH_SIZE];
    let (arrived, ip_len) = match bytes.first().map(|b| b >> 4) {
        Some(4) if bytes.len() >= IPV4_HLEN && bytes[0] & 0xf == 5 => {
            grh[20..].copy_from_slice(&bytes[..IPV4_HLEN]);
            let addr =
                |at: usize| Addr::V4([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
            let a = Arrived {
                sgid: addr(12).to_mapped(),
                dgid: addr(16).to_mapped(),
                network: NetworkHdr::Ipv4,
                grh,
            };
            (a, IPV4_HLEN)
        }
        Some(6) if bytes.len() >= IPV6_HLEN && bytes[6] == ip::PROTO_UDP => {
            grh.copy_from_slice(&bytes[..IPV6_HLEN]);
            let mut sgid = [0u8; 16];
            let mut dgid = [0u8; 16];
            sgid.copy_from_slice(&bytes[8..24]);
            dgid.copy_from_slice(&bytes[24..40]);
            let a = Arrived {
                sgid,
                dgid,
                network: NetworkHdr::Ipv6,
                grh,
            };
            (a, IPV6_HLEN)
        }
        _ => return Err(Dropped::Malformed),
    };
    let udp = &bytes[ip_len..];
    let udp_len = udp
        .get(4..6)
        .map(|l| usize::from(u16::from_be_bytes([l[0], l[1]])))
        .ok_or(Dropped::Malformed)?;
    if udp_len < UDP_HLEN || udp_len != udp.len() {
        return Err(Dropped::Malformed);
    }
    Ok((arrived, &udp[UDP_HLEN..]))
}

fn deliver(dev: &Device<SrdmaDevice>, skb: &mut SkBuff) -> core::result::Result<(), Dropped> {
    skb.linearize().map_err(|_| Dropped::Malformed)?;
    let bytes = skb.from_network_header().map_err(|_| Dropped::Malformed)?;
    let (arrived, udp_payload) = headers(bytes)?;
    let ip_end = bytes
        .len()
        .checked_sub(ICRC_LEN)
        .ok_or(Dropped::Malformed)?;
    let sent = bytes[ip_end..]
        .try_into()
        .map(u32::from_le_bytes)
        .map_err(|_| Dropped::Malformed)?;
    match roce::icrc(&bytes[..ip_end]) {
        // Too short for the headers the ICRC covers.
        None => return Err(Dropped::Malformed),
        Some(icrc) if icrc != sent => return Err(Dropped::Icrc),
        Some(_) => {}
    }
    let pkt = Packet::parse(udp_payload).map_err(|_| Dropped::Malformed)?;
    if !in_partition(pkt.headers.bth.pkey) || !is_ours(dev, &arrived.dgid) {
        return Err(Dropped::NotOurs);
    }
    let qp = dev
        .qps()
        .lock()
        .get(pkt.headers.bth.dest_qp)
        .ok_or(Dropped::NotOurs)?;
    let bth = &pkt.headers.bth;
    trace::srdma_rx(
        bth.dest_qp,
        bth.opcode.to_byte().into(),
        bth.psn,
        pkt.payload.len() as u32,
    );
    match pkt.headers.bth.opcode.service() {
        Service::Ud => datagram(&qp, &arrived, &pkt),
        Service::Rc | Service::Uc if is_request(pkt.headers.bth.opcode.operation()) => {
            responder::request(dev, &qp, &arrived, &pkt)
        }
        Service::Rc => requester::response(dev, &qp, &arrived, &pkt),
        _ => Err(Dropped::NotOurs),
    }
}

/// Whether `op` asks something of a responder (rather than answering a requester).
fn is_request(op: Operation) -> bool {
    !matches!(
        op,
        Operation::ReadResponseFirst
            | Operation::ReadResponseMiddle
            | Operation::ReadResponseLast
            | Operation::ReadResponseOnly
            | Operation::Acknowledge
            | Operation::AtomicAcknowledge
    )
}

/// Whether a packet with P_Key `pkey` is of the port's partition: the port's P_Key table
/// holds the default P_Key only.
fn in_partition(pkey: u16) -> bool {
    roce::pkey_matches(pkey, roce::DEFAULT_PKEY)
}

/// Whether `dgid` is an IP address of the device's network device, in its namespace.
fn is_ours(dev: &Device<SrdmaDevice>, dgid: &[u8; 16]) -> bool {
    let Some(ndev) = dev.netdev(PORT) else {
        return false;
    };
    let Some(net) = ndev.net() else {
        return false;
    };
    net::device::Device::find_by_addr(&net, net::ip::Addr::from_mapped(dgid))
        .is_some_and(|d| d.ifindex() == ndev.ifindex())
}

/// A UD or GSI datagram for `qp`: goes to the responder as a loopback one would, GRH area
/// first.
fn datagram(
    qp: &kernel::sync::Arc<QpShared>,
    arrived: &Arrived,
    pkt: &Packet<'_>,
) -> core::result::Result<(), Dropped> {
    let h = &pkt.headers;
    let Some(deth) = h.deth else {
        return Err(Dropped::Malformed);
    };
    if !matches!(
        h.bth.opcode.operation(),
        Operation::SendOnly | Operation::SendOnlyImm
    ) {
        return Err(Dropped::Malformed);
    }
    if !matches!(qp.qp_type, QpType::Ud | QpType::Gsi) {
        return Err(Dropped::NotOurs);
    }
    let req = Request {
        service: QpType::Ud,
        src_qpn: deth.src_qp,
        sgid: arrived.sgid,
        dest_qpn: h.bth.dest_qp,
        psn: h.bth.psn,
        solicited: h.bth.solicited,
        path: Default::default(),
        op: Op::Datagram {
            grh: &arrived.grh,
            data: Payload::Packet(pkt.payload),
            qkey: deth.qkey,
            imm: h.imm,
            network: arrived.network,
        },
    };
    qp.counters.received();
    let _ = resp::receive(qp, &req);
    Ok(())
}

// SPDX-License-Identifier: GPL-2.0-only

//! The 40 bytes that verbs puts in front of every UD receive: the GRH, or for RoCEv2 the IP
//! header the packet would have carried on the wire.

/// Bytes a UD receive buffer reserves for the GRH.
pub(crate) const GRH_SIZE: usize = 40;

/// UDP, BTH, DETH and ICRC: what a RoCEv2 UD packet carries between IP header and payload and
/// after it.
const UD_TRANSPORT_BYTES: usize = 8 + 12 + 8 + 4;

const IPPROTO_UDP: u8 = 17;

/// The fields of a network header that a receiver can see.
pub(crate) struct Route<'a> {
    pub(crate) sgid: &'a [u8; 16],
    pub(crate) dgid: &'a [u8; 16],
    pub(crate) traffic_class: u8,
    pub(crate) hop_limit: u8,
    pub(crate) flow_label: u32,
}

/// Whether `gid` is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), as RoCEv2 GIDs of IPv4
/// addresses are.
pub(crate) fn is_v4_mapped(gid: &[u8; 16]) -> bool {
    gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff
}

/// The Internet checksum (RFC 1071) of `header`.
fn ip_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Returns the GRH area of a UD receive of `payload` bytes sent along `route`.
///
/// Between IPv4 GIDs the last 20 bytes hold an IPv4 header with a valid checksum (ib_core
/// checks it before it believes the addresses); otherwise the area is an IPv6 header.
pub(crate) fn build(route: &Route<'_>, payload: usize) -> [u8; GRH_SIZE] {
    let mut grh = [0u8; GRH_SIZE];
    if is_v4_mapped(route.sgid) && is_v4_mapped(route.dgid) {
        let ip = &mut grh[20..];
        let total = (20 + UD_TRANSPORT_BYTES + payload).min(0xffff) as u16;
        ip[0] = 0x45;
        ip[1] = route.traffic_class;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        // Don't fragment, as RoCEv2 senders set it.
        ip[6] = 0x40;
        ip[8] = route.hop_limit;
        ip[9] = IPPROTO_UDP;
        ip[12..16].copy_from_slice(&route.sgid[12..]);
        ip[16..20].copy_from_slice(&route.dgid[12..]);
        let check = ip_checksum(ip);
        ip[10..12].copy_from_slice(&check.to_be_bytes());
    } else {
        let len = (UD_TRANSPORT_BYTES + payload).min(0xffff) as u16;
        let word =
            (6u32 << 28) | (u32::from(route.traffic_class) << 20) | (route.flow_label & 0xf_ffff);
        grh[0..4].copy_from_slice(&word.to_be_bytes());
        grh[4..6].copy_from_slice(&len.to_be_bytes());
        grh[6] = IPPROTO_UDP;
        grh[7] = route.hop_limit;
        grh[8..24].copy_from_slice(route.sgid);
        grh[24..40].copy_from_slice(route.dgid);
    }
    grh
}

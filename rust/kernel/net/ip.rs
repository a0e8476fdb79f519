// SPDX-License-Identifier: GPL-2.0

//! IP output for protocols that write their own IP header: route lookup, the header, and
//! handing the packet to the IP layer.
//!
//! A tunnel whose checksums cover the IP header (RoCEv2's ICRC covers the IPv4 ID) must see the
//! header complete before the packet leaves, so the header is written here, ID included,
//! rather than by the IP layer on the way out.
//!
//! C headers: [`include/net/ip.h`](srctree/include/net/ip.h),
//! [`include/net/route.h`](srctree/include/net/route.h),
//! [`include/net/ipv6.h`](srctree/include/net/ipv6.h).

use super::{device::Device, namespace::Net, skb::SkBuff};
use crate::{bindings, error::from_err_ptr, prelude::*};
use core::ptr::NonNull;

/// The IP protocol number of UDP.
pub const PROTO_UDP: u8 = bindings::IPPROTO_UDP as u8;

/// An IP address of either family, in network order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addr {
    /// An IPv4 address.
    V4([u8; 4]),
    /// An IPv6 address.
    V6([u8; 16]),
}

impl Addr {
    /// The address a 16-byte GID or IPv6 address stands for: an IPv4-mapped address
    /// (`::ffff:a.b.c.d`) is the IPv4 address, anything else the IPv6 address.
    pub fn from_mapped(a: &[u8; 16]) -> Self {
        const V4_MAPPED: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];
        if a[..12] == V4_MAPPED {
            Addr::V4([a[12], a[13], a[14], a[15]])
        } else {
            Addr::V6(*a)
        }
    }

    /// The 16-byte form: IPv4 addresses mapped (`::ffff:a.b.c.d`).
    pub fn to_mapped(self) -> [u8; 16] {
        match self {
            Addr::V4(a) => [
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a[0], a[1], a[2], a[3],
            ],
            Addr::V6(a) => a,
        }
    }
}

/// What a packet's IP header says besides its length: both addresses of one family, the
/// traffic class (IPv4 TOS), the hop limit (IPv4 TTL), the IPv6 flow label and the protocol of
/// what follows.
#[derive(Clone, Copy, Debug)]
pub struct Header {
    /// The source address.
    pub saddr: Addr,
    /// The destination address, of the same family.
    pub daddr: Addr,
    /// The IPv4 type of service or IPv6 traffic class.
    pub traffic_class: u8,
    /// The IPv4 time to live or IPv6 hop limit.
    pub hop_limit: u8,
    /// The IPv6 flow label (20 bits); IPv4 has none.
    pub flow_label: u32,
    /// The protocol of the payload (`IPPROTO_*`).
    pub protocol: u8,
}

/// The length of an IPv4 header without options.
pub const IPV4_HLEN: usize = 20;
/// The length of an IPv6 header.
pub const IPV6_HLEN: usize = 40;

/// A route out of the host, as the IP layer found it: a reference to its `dst_entry`.
///
/// # Invariants
///
/// `dst` is a valid `dst_entry` whose reference this value holds.
pub struct Route {
    dst: NonNull<bindings::dst_entry>,
}

// SAFETY: A dst reference may be released from any thread.
unsafe impl Send for Route {}
// SAFETY: `&Route` only reads the device, which the reference keeps.
unsafe impl Sync for Route {}

impl Route {
    /// Looks up the route for `hdr` in `net` out of the device with index `oif`, as
    /// `ip_route_output_flow` or the IPv6 stub's `ipv6_dst_lookup_flow` find it.
    pub fn output(net: &Net, hdr: &Header, oif: i32) -> Result<Self> {
        match (hdr.saddr, hdr.daddr) {
            (Addr::V4(saddr), Addr::V4(daddr)) => {
                // SAFETY: `flowi4` holds integers and plain structures, for which zero is valid.
                let mut fl: bindings::flowi4 = unsafe { core::mem::zeroed() };
                fl.__fl_common.flowic_oif = oif;
                fl.__fl_common.flowic_tos = hdr.traffic_class;
                fl.__fl_common.flowic_proto = hdr.protocol;
                fl.saddr = u32::from_ne_bytes(saddr);
                fl.daddr = u32::from_ne_bytes(daddr);
                // SAFETY: `net` is alive (its invariant) and `fl` a valid flow; the result is a
                // held route or an error pointer.
                let rt = from_err_ptr(unsafe {
                    bindings::ip_route_output_flow(net.as_raw(), &mut fl, core::ptr::null())
                })?;
                // INVARIANT: `dst` is the first member of the held `rtable`.
                Ok(Self {
                    dst: NonNull::new(rt.cast()).ok_or(EHOSTUNREACH)?,
                })
            }
            (Addr::V6(saddr), Addr::V6(daddr)) => {
                // SAFETY: `flowi6` holds integers and plain structures, for which zero is valid.
                let mut fl: bindings::flowi6 = unsafe { core::mem::zeroed() };
                fl.__fl_common.flowic_oif = oif;
                fl.__fl_common.flowic_proto = hdr.protocol;
                // SAFETY: `in6_addr` is 16 bytes of any value.
                unsafe {
                    fl.saddr = core::mem::transmute::<[u8; 16], bindings::in6_addr>(saddr);
                    fl.daddr = core::mem::transmute::<[u8; 16], bindings::in6_addr>(daddr);
                }
                // SAFETY: `ipv6_stub` is set at boot (to the real functions when IPv6 is built
                // in); its lookup takes a live namespace and a valid flow and returns a held
                // dst or an error pointer.
                let dst = from_err_ptr(unsafe {
                    let lookup = (*bindings::ipv6_stub)
                        .ipv6_dst_lookup_flow
                        .ok_or(EAFNOSUPPORT)?;
                    lookup(net.as_raw(), core::ptr::null(), &mut fl, core::ptr::null())
                })?;
                // INVARIANT: a held dst.
                Ok(Self {
                    dst: NonNull::new(dst).ok_or(EHOSTUNREACH)?,
                })
            }
            _ => Err(EAFNOSUPPORT),
        }
    }

    /// The device the route goes out of.
    pub fn dev(&self) -> Option<&Device> {
        // SAFETY: The dst is valid (type invariant) and holds its device.
        let dev = unsafe { (*self.dst.as_ptr()).__bindgen_anon_1.dev };
        // SAFETY: See above; the device lives as long as the dst reference we hold.
        NonNull::new(dev).map(|d| unsafe { Device::from_raw(d.as_ptr()) })
    }

    fn into_raw(self) -> *mut bindings::dst_entry {
        let dst = self.dst.as_ptr();
        core::mem::forget(self);
        dst
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        // SAFETY: We hold a reference (type invariant).
        unsafe { bindings::dst_release(self.dst.as_ptr()) };
    }
}

impl Header {
    /// The length of the header.
    pub fn len(&self) -> usize {
        match self.saddr {
            Addr::V4(_) => IPV4_HLEN,
            Addr::V6(_) => IPV6_HLEN,
        }
    }

    /// Whether the header is empty: never.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Prepends the header to the data of `skb` and marks it as its network header: complete,
    /// with the length of the data, and for IPv4 don't-fragment, an ID the IP layer picks for
    /// `net` and the header checksum.
    pub fn push(&self, skb: &mut SkBuff, net: &Net) -> Result {
        let payload = skb.len();
        match (self.saddr, self.daddr) {
            (Addr::V4(saddr), Addr::V4(daddr)) => {
                let total = u16::try_from(payload + IPV4_HLEN).map_err(|_| EMSGSIZE)?;
                let h = skb.push(IPV4_HLEN)?;
                h[0] = 0x45;
                h[1] = self.traffic_class;
                h[2..4].copy_from_slice(&total.to_be_bytes());
                h[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // don't fragment
                h[8] = self.hop_limit;
                h[9] = self.protocol;
                h[12..16].copy_from_slice(&saddr);
                h[16..20].copy_from_slice(&daddr);
                let iph = h.as_mut_ptr().cast::<bindings::iphdr>();
                // SAFETY: `iph` is the 20-byte header just written into the buffer, which we
                // borrow mutably; the kernel writes its ID field and then its checksum.
                unsafe {
                    bindings::__ip_select_ident(net.as_raw(), iph, 1);
                    bindings::ip_send_check(iph);
                }
            }
            (Addr::V6(saddr), Addr::V6(daddr)) => {
                let len = u16::try_from(payload).map_err(|_| EMSGSIZE)?;
                let h = skb.push(IPV6_HLEN)?;
                let first = 0x6000_0000
                    | u32::from(self.traffic_class) << 20
                    | (self.flow_label & 0xf_ffff);
                h[0..4].copy_from_slice(&first.to_be_bytes());
                h[4..6].copy_from_slice(&len.to_be_bytes());
                h[6] = self.protocol;
                h[7] = self.hop_limit;
                h[8..24].copy_from_slice(&saddr);
                h[24..40].copy_from_slice(&daddr);
            }
            _ => return Err(EAFNOSUPPORT),
        }
        skb.set_network_header();
        Ok(())
    }
}

/// Sends `skb`, whose data starts with a complete IP header ([`Header::push`]), along `route`,
/// through the namespace's netfilter hooks and the route's output (`ip_local_out` or
/// `ip6_local_out`). Fails if the packet was dropped on the way.
pub fn local_out(net: &Net, skb: SkBuff, route: Route) -> Result {
    // The output functions set the buffer's protocol.
    let v4 = skb.head().first().ok_or(EINVAL)? >> 4 == 4;
    let skb = skb.into_raw();
    // SAFETY: We own `skb` and hand it over with the route's reference (`skb_dst_set` takes
    // it); the output functions consume the buffer whatever they return.
    let ret = unsafe {
        bindings::skb_dst_set(skb, route.into_raw());
        if v4 {
            bindings::ip_local_out(net.as_raw(), core::ptr::null_mut(), skb)
        } else {
            ip6_local_out(net, skb)
        }
    };
    // Congestion notification means sent; a positive value otherwise means dropped.
    match ret {
        0 => Ok(()),
        r if r == bindings::NET_XMIT_CN as i32 => Ok(()),
        r if r < 0 => Err(Error::from_errno(r)),
        _ => Err(ENOBUFS),
    }
}

/// # Safety
///
/// As `ip6_local_out`: an owned buffer with a dst, handed over.
#[cfg(CONFIG_IPV6)]
unsafe fn ip6_local_out(net: &Net, skb: *mut bindings::sk_buff) -> i32 {
    // SAFETY: The caller's promise.
    unsafe { bindings::ip6_local_out(net.as_raw(), core::ptr::null_mut(), skb) }
}

/// # Safety
///
/// As `ip6_local_out`: an owned buffer, handed over (and freed: no IPv6 here).
#[cfg(not(CONFIG_IPV6))]
unsafe fn ip6_local_out(_net: &Net, skb: *mut bindings::sk_buff) -> i32 {
    if let Some(skb) = NonNull::new(skb) {
        // SAFETY: The caller hands the buffer over; dropping it frees it.
        drop(unsafe { SkBuff::from_raw(skb) });
    }
    -(bindings::EAFNOSUPPORT as i32)
}

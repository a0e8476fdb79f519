// SPDX-License-Identifier: GPL-2.0

//! UDP tunnels: a protocol carried in UDP datagrams to a well-known port, received by a kernel
//! socket in each network namespace that wants it.
//!
//! [`Tunnels`] keeps those sockets per namespace, opened on demand: the first [`Tunnels::open`]
//! in a namespace binds the port there (IPv4 and IPv6), the last [`Tunnel`] of the namespace
//! closes it, and a namespace that goes away closes its sockets whoever still holds a use.
//! A namespace nobody opened the tunnel in keeps its port free for others.
//!
//! C header: [`include/net/udp_tunnel.h`](srctree/include/net/udp_tunnel.h).

use super::{
    namespace::{Net, Pernet, PernetData, Registration as PernetRegistration},
    skb::{Received, SkBuff},
};
use crate::{
    bindings,
    error::to_result,
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};
use core::{marker::PhantomData, ptr::NonNull};

/// The length of a UDP header.
pub const UDP_HLEN: usize = 8;

/// Receives the datagrams of a tunnel.
pub trait Receiver: Sized + 'static {
    /// The UDP port the tunnel listens on.
    const PORT: u16;

    /// The `static` that keeps the sockets.
    fn tunnels() -> &'static Tunnels<Self>;

    /// Called for each datagram that arrives, in softirq context under the RCU read lock: it
    /// must not sleep. The data starts at the UDP header; the network header precedes it.
    fn receive(skb: Received<'_>);
}

/// A kernel UDP socket bound to a tunnel's port, its receive callback set.
///
/// # Invariants
///
/// `sock` is a socket that `udp_sock_create` made and `setup_udp_tunnel_sock` set up; only the
/// slot of its namespace owns it, and the slot drops it before the namespace exits.
struct Socket {
    sock: NonNull<bindings::socket>,
}

// SAFETY: A kernel socket may be released from any thread in process context.
unsafe impl Send for Socket {}

impl Socket {
    fn open<R: Receiver>(net: &Net, v6: bool) -> Result<Self> {
        // SAFETY: `udp_port_cfg` holds integers and addresses, for which zero is valid: the
        // wildcard address, no peer, no bound device, and zero UDP checksums accepted.
        let mut cfg: bindings::udp_port_cfg = unsafe { core::mem::zeroed() };
        cfg.local_udp_port = R::PORT.to_be();
        let mut sock: *mut bindings::socket = core::ptr::null_mut();
        let ret = if v6 {
            #[cfg(not(CONFIG_IPV6))]
            return Err(EAFNOSUPPORT);
            #[cfg(CONFIG_IPV6)]
            {
                cfg.family = bindings::AF_INET6 as u8;
                // The IPv4 socket has the IPv4 datagrams.
                cfg.set_ipv6_v6only(1);
                // SAFETY: `net` is alive (its invariant), `cfg` valid, `sock` a place for the
                // result.
                unsafe { bindings::udp_sock_create6(net.as_raw(), &mut cfg, &mut sock) }
            }
        } else {
            cfg.family = bindings::AF_INET as u8;
            // SAFETY: As above.
            unsafe { bindings::udp_sock_create4(net.as_raw(), &mut cfg, &mut sock) }
        };
        to_result(ret)?;
        let sock = NonNull::new(sock).ok_or(ENOMEM)?;
        // SAFETY: `udp_tunnel_sock_cfg` holds an integer and pointers, for which zero is valid.
        let mut tcfg: bindings::udp_tunnel_sock_cfg = unsafe { core::mem::zeroed() };
        tcfg.encap_type = 1;
        tcfg.encap_rcv = Some(encap_rcv::<R>);
        // SAFETY: `sock` is the new UDP socket of `net`; from now on its datagrams go to
        // `encap_rcv`, which lives as long as the module that holds the socket (released, with
        // an RCU grace period, before the module goes).
        unsafe { bindings::setup_udp_tunnel_sock(net.as_raw(), sock.as_ptr(), &mut tcfg) };
        // INVARIANT: made and set up above; the caller is the namespace's slot.
        Ok(Self { sock })
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: The socket is ours and its namespace alive (type invariant); the release
        // waits for an RCU grace period, so no receive callback runs after it.
        unsafe { bindings::udp_tunnel_sock_release(self.sock.as_ptr()) };
    }
}

/// # Safety
///
/// Called by the UDP layer for a datagram to a socket that [`Socket::open`] set up.
unsafe extern "C" fn encap_rcv<R: Receiver>(
    _sk: *mut bindings::sock,
    skb: *mut bindings::sk_buff,
) -> crate::ffi::c_int {
    let Some(skb) = NonNull::new(skb) else {
        return 0;
    };
    // SAFETY: The UDP layer hands the buffer over (returning 0 says it was consumed), unshared,
    // with the device it arrived on alive for the callback.
    R::receive(unsafe { Received::from_raw(skb) });
    0
}

/// What a namespace's slot holds.
struct State {
    /// The [`Tunnel`]s of the namespace.
    users: usize,
    /// The open sockets: IPv4, and IPv6 where the kernel has it.
    socks: KVec<Socket>,
    /// The namespace went away: nothing opens here again.
    gone: bool,
}

/// The sockets of one namespace, shared by its slot and its [`Tunnel`]s.
#[pin_data]
struct Shared {
    #[pin]
    state: Mutex<State>,
}

/// The per-namespace data of [`Tunnels`].
pub struct Slot<R: Receiver> {
    shared: Arc<Shared>,
    _p: PhantomData<fn() -> R>,
}

impl<R: Receiver> PernetData for Slot<R> {
    fn pernet() -> &'static Pernet<Self> {
        &R::tunnels().pernet
    }

    fn init(_net: &Net) -> Result<Self> {
        let shared = Arc::pin_init(
            pin_init!(Shared {
                state <- new_mutex!(State {
                    users: 0,
                    socks: KVec::new(),
                    gone: false,
                }),
            }),
            GFP_KERNEL,
        )?;
        Ok(Self {
            shared,
            _p: PhantomData,
        })
    }

    fn exit(_net: &Net, slot: &Self) {
        let socks = {
            let mut state = slot.shared.state.lock();
            state.gone = true;
            core::mem::take(&mut state.socks)
        };
        // Closed while the namespace still exists, whoever still holds a use.
        drop(socks);
    }
}

/// The per-namespace sockets of a UDP tunnel; declared as a `static` of the [`Receiver`].
pub struct Tunnels<R: Receiver> {
    pernet: Pernet<Slot<R>>,
}

/// The registration of [`Tunnels`]: while it exists, [`Tunnels::open`] works.
pub type Registration<R> = PernetRegistration<Slot<R>>;

impl<R: Receiver> Tunnels<R> {
    /// No sockets yet.
    pub const fn new() -> Self {
        Self {
            pernet: Pernet::new(),
        }
    }

    /// Starts keeping sockets per namespace; dropping the registration closes them all.
    pub fn register(&'static self) -> Result<Registration<R>> {
        self.pernet.register()
    }

    /// A use of the tunnel in `net`: the first opens the sockets there, the last
    /// [`Tunnel`] dropped closes them. Fails if the port is taken in `net` (`EADDRINUSE`), or
    /// when not registered (`ENODEV`).
    pub fn open(&'static self, net: &Net) -> Result<Tunnel> {
        let slot = self.pernet.get(net).ok_or(ENODEV)?;
        let shared = slot.shared.clone();
        let mut state = shared.state.lock();
        if state.gone {
            return Err(ENODEV);
        }
        if state.socks.is_empty() {
            let v4 = Socket::open::<R>(net, false)?;
            state.socks.push(v4, GFP_KERNEL)?;
            match Socket::open::<R>(net, true) {
                Ok(v6) => state.socks.push(v6, GFP_KERNEL)?,
                // A kernel without IPv6 carries the tunnel over IPv4 only.
                Err(e) if e == EAFNOSUPPORT => {}
                Err(e) => {
                    let v4 = core::mem::take(&mut state.socks);
                    drop(state);
                    drop(v4);
                    return Err(e);
                }
            }
        }
        state.users += 1;
        drop(state);
        Ok(Tunnel { shared })
    }
}

impl<R: Receiver> Default for Tunnels<R> {
    fn default() -> Self {
        Self::new()
    }
}

/// One use of a tunnel in a namespace ([`Tunnels::open`]).
pub struct Tunnel {
    shared: Arc<Shared>,
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        let socks = {
            let mut state = self.shared.state.lock();
            state.users -= 1;
            if state.users == 0 {
                core::mem::take(&mut state.socks)
            } else {
                KVec::new()
            }
        };
        // The namespace is alive: it would have taken the sockets on its way out.
        drop(socks);
    }
}

/// Prepends a UDP header from `sport` to `dport` to the data of `skb` (covering all of it) with
/// a zero checksum, as tunnels over UDP send, and marks it as the transport header.
pub fn push_header(skb: &mut SkBuff, sport: u16, dport: u16) -> Result {
    let len = u16::try_from(skb.len() + UDP_HLEN).map_err(|_| EMSGSIZE)?;
    let h = skb.push(UDP_HLEN)?;
    h[0..2].copy_from_slice(&sport.to_be_bytes());
    h[2..4].copy_from_slice(&dport.to_be_bytes());
    h[4..6].copy_from_slice(&len.to_be_bytes());
    skb.set_transport_header();
    Ok(())
}

// SPDX-License-Identifier: GPL-2.0-only

//! Memory windows: remote access to part of an MR, granted by a bind and revoked by an
//! invalidation, both carried out by the engine as work requests of a QP.
//!
//! Type 1 windows are bound (and rebound, or unbound with length 0) through `ibv_bind_mw` and
//! belong to their PD; they cannot be invalidated. Type 2 windows (2B) are bound by a BIND_MW
//! work request to the QP that posts it, which alone may use them as a responder, and are
//! freed again by LOCAL_INV or by a peer's SEND_WITH_INV arriving at that QP.

use crate::{
    device::SrdmaDevice,
    keys::Keys,
    limits::{Charge, Kind},
    mr::{Denied, MrShared, Span},
    pd::PdRef,
    qp::QpShared,
    table::Reservation,
};
use kernel::{
    new_mutex,
    prelude::*,
    rdma::{mr::Access, mw::MwType, pd::Pd, uapi::srdma_wqe_bind, ucontext::User},
    sync::{Arc, Mutex},
};

/// Window key indexes: the upper half of the 24-bit index space, so that a key tells whether
/// it names a window or an MR.
pub(crate) const MW_INDEX_MIN: u32 = 0x80_0000;
pub(crate) const MW_INDEX_MAX: u32 = 0xff_ffff;

/// Rights a window can grant, and the flags a bind may carry: local write and bind rights mean
/// nothing for a window and are ignored, as rxe does.
const WINDOW_ACCESS: Access = Access::REMOTE_READ
    .union(Access::REMOTE_WRITE)
    .union(Access::REMOTE_ATOMIC)
    .union(Access::ZERO_BASED)
    .union(Access::LOCAL_WRITE)
    .union(Access::MW_BIND);

/// A reference to an MR that counts as a window bound to it, so that the MR cannot be
/// deregistered meanwhile.
struct BoundMr(Arc<MrShared>);

impl BoundMr {
    /// Counts a window bound to `mr`; fails if `mr` is being deregistered.
    fn new(mr: Arc<MrShared>) -> core::result::Result<Self, Denied> {
        mr.windows.bind()?;
        Ok(Self(mr))
    }
}

impl Drop for BoundMr {
    fn drop(&mut self) {
        self.0.windows.unbind();
    }
}

/// What a bound window grants.
struct Binding {
    mr: BoundMr,
    /// The window's first byte, in the MR's addresses.
    start: u64,
    length: u64,
    /// The rights of the window, with `ZERO_BASED` if remote addresses count from the
    /// window's start.
    access: Access,
    /// The QP a type 2 window is bound to.
    qp: Option<Arc<QpShared>>,
}

struct State {
    /// The current rkey: the window's index and the key byte of the last bind.
    rkey: u32,
    binding: Option<Binding>,
    /// Counts the changes of `binding`, so that an access knows whether what it resolved
    /// still holds.
    generation: u64,
}

impl State {
    fn set(&mut self, rkey: u32, binding: Option<Binding>) {
        self.rkey = rkey;
        self.binding = binding;
        self.generation = self.generation.wrapping_add(1);
    }
}

/// What an access through a window resolved: the window as it was bound then.
pub(crate) struct WindowRef {
    mw: Arc<MwShared>,
    generation: u64,
}

impl WindowRef {
    /// Runs `copy` if the window is still bound as it was when the access was resolved, and
    /// holds it so until `copy` returns: a bind, an invalidation or the window's deallocation
    /// waits, so once it has completed no copy through the old binding is running.
    pub(crate) fn with<R>(&self, copy: impl FnOnce() -> Result<R>) -> Result<R> {
        let state = self.mw.state.lock();
        if state.generation != self.generation {
            return Err(EFAULT);
        }
        copy()
    }
}

/// What the data path needs of a window, found by key.
pub(crate) struct MwShared {
    pd: PdRef,
    mw_type: MwType,
    state: Pin<KBox<Mutex<State>>>,
}

/// srdma's part of a memory window.
pub(crate) struct SrdmaMw {
    /// Its place within the device's limit.
    _charge: Charge,
    _key: Reservation<MwShared>,
    shared: Arc<MwShared>,
}

impl SrdmaMw {
    pub(crate) fn new(
        pd: &Pd<SrdmaDevice>,
        mw_type: MwType,
        _user: Option<User<'_, SrdmaDevice>>,
    ) -> Result<(Self, u32)> {
        let charge = pd.device().limits().charge(Kind::Mw)?;
        let key = Reservation::new(pd.device().mws())?;
        let rkey = key.id() << 8 | u32::from(kernel::random::u8());
        let shared = Arc::new(
            MwShared {
                pd: pd.id(),
                mw_type,
                state: KBox::pin_init(
                    new_mutex!(State {
                        rkey,
                        binding: None,
                        generation: 0,
                    }),
                    GFP_KERNEL,
                )?,
            },
            GFP_KERNEL,
        )?;
        key.publish(shared.clone());
        Ok((
            Self {
                _charge: charge,
                _key: key,
                shared,
            },
            rkey,
        ))
    }
}

impl Drop for SrdmaMw {
    fn drop(&mut self) {
        // The MR is free to go as soon as its window is; an access in flight still holds it.
        let mut state = self.shared.state.lock();
        let rkey = state.rkey;
        state.set(rkey, None);
    }
}

/// Whether `key` names a window rather than an MR.
pub(crate) fn is_window_key(key: u32) -> bool {
    key >> 8 >= MW_INDEX_MIN
}

fn lookup(keys: &Keys, key: u32) -> Option<Arc<MwShared>> {
    if !is_window_key(key) {
        return None;
    }
    keys.mws.lock().get(key >> 8)
}

/// Carries out a bind posted on QP `q`.
pub(crate) fn bind(q: &Arc<QpShared>, b: &srdma_wqe_bind) -> core::result::Result<(), Denied> {
    let mw = lookup(&q.keys, b.mw_rkey).ok_or(Denied)?;
    // The new rkey names the same window; only its key byte is the consumer's.
    if mw.pd != q.pd
        || b.new_rkey >> 8 != b.mw_rkey >> 8
        || !Access::from_bits_retain(b.access)
            .difference(WINDOW_ACCESS)
            .is_empty()
    {
        return Err(Denied);
    }
    let binding = if b.length == 0 {
        // Type 1 windows are unbound so; type 2 windows need an invalidation.
        if mw.mw_type == MwType::Type2 {
            return Err(Denied);
        }
        None
    } else {
        Some(new_binding(q, &mw, b)?)
    };
    let mut state = mw.state.lock();
    if mw.mw_type == MwType::Type2 && state.binding.is_some() {
        return Err(Denied);
    }
    state.set(b.new_rkey, binding);
    Ok(())
}

fn new_binding(
    q: &Arc<QpShared>,
    mw: &MwShared,
    b: &srdma_wqe_bind,
) -> core::result::Result<Binding, Denied> {
    let access = Access::from_bits_retain(b.access);
    if mw.mw_type == MwType::Type1 && access.contains(Access::ZERO_BASED) {
        return Err(Denied);
    }
    if is_window_key(b.mr_lkey) {
        return Err(Denied);
    }
    let mr = q.keys.mrs.lock().get(b.mr_lkey >> 8).ok_or(Denied)?;
    let writable = access.intersects(Access::REMOTE_WRITE | Access::REMOTE_ATOMIC);
    if mr.key != b.mr_lkey
        || mr.pd != q.pd
        || !mr.access.contains(Access::MW_BIND)
        || (writable && !mr.access.contains(Access::LOCAL_WRITE))
    {
        return Err(Denied);
    }
    let end = b.addr.checked_add(b.length).ok_or(Denied)?;
    if b.addr < mr.iova || end > mr.iova.checked_add(mr.length).ok_or(Denied)? {
        return Err(Denied);
    }
    Ok(Binding {
        mr: BoundMr::new(mr)?,
        start: b.addr,
        length: b.length,
        access,
        qp: (mw.mw_type == MwType::Type2).then(|| q.clone()),
    })
}

/// Invalidates the type 2 window with rkey `rkey` for QP `q`: by a LOCAL_INV of `q` (any QP
/// of the window's PD), or by a SEND_WITH_INV that arrived at `q` (`remote`: only the QP the
/// window is bound to).
pub(crate) fn invalidate(
    q: &Arc<QpShared>,
    rkey: u32,
    remote: bool,
) -> core::result::Result<(), Denied> {
    let mw = lookup(&q.keys, rkey).ok_or(Denied)?;
    if mw.mw_type != MwType::Type2 || mw.pd != q.pd {
        return Err(Denied);
    }
    let mut state = mw.state.lock();
    let bound_here = match &state.binding {
        Some(b) => b.qp.as_ref().is_some_and(|bq| Arc::ptr_eq(bq, q)),
        None => return Err(Denied),
    };
    if state.rkey != rkey || (remote && !bound_here) {
        return Err(Denied);
    }
    state.set(rkey, None);
    Ok(())
}

/// Returns the span of the MR behind the window with rkey `rkey` that covers `len` bytes at
/// `addr` with rights `need`, for responder QP `q` (of the window's device).
pub(crate) fn resolve(
    q: &Arc<QpShared>,
    rkey: u32,
    need: Access,
    addr: u64,
    len: u64,
) -> Option<Span> {
    let mw = lookup(&q.keys, rkey)?;
    if mw.pd != q.pd {
        return None;
    }
    let state = mw.state.lock();
    let b = state.binding.as_ref()?;
    if state.rkey != rkey
        || !b.access.contains(need)
        || b.qp.as_ref().is_some_and(|bq| !Arc::ptr_eq(bq, q))
    {
        return None;
    }
    let start = if b.access.contains(Access::ZERO_BASED) {
        b.start.checked_add(addr)?
    } else {
        addr
    };
    let end = start.checked_add(len)?;
    if start < b.start || end > b.start.checked_add(b.length)? {
        return None;
    }
    let mr = &b.mr.0;
    let offset = usize::try_from(start - mr.iova).ok()?;
    let window = WindowRef {
        mw: mw.clone(),
        generation: state.generation,
    };
    Some(Span::of_window(
        mr.clone(),
        offset,
        usize::try_from(len).ok()?,
        window,
    ))
}

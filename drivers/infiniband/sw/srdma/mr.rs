// SPDX-License-Identifier: GPL-2.0-only

//! Memory regions: pinned user memory, all kernel memory, or the pages kernel callers register
//! in a fast-register MR; the keys that name them, and the spans of memory a key grants.

use crate::{
    device::SrdmaDevice,
    fastreg::{FastMr, Registration},
    keys::Keys,
    limits::{Charge, Kind},
    mw::WindowRef,
    params::MAX_MR_SIZE,
    pd::{Owner, PdRef},
    table::Reservation,
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    net::skb::SkBuff,
    new_condvar, new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    rdma::{
        mmap::SharedPages,
        mr::{Access, KernelBuf, Mr, MrCreated, SgMapper, Umem, UserRegion},
        pages::{self, PageRun, PageSlice},
        pd::Pd,
        ucontext::User,
    },
    sync::{Arc, CondVar, Mutex},
};

/// Memory key indexes; a key is `index << 8 | key byte`, the key byte random so that a key
/// cannot be guessed from its index. Index 0 is never used, so that a zeroed key is always
/// invalid; the last index below the windows' is the null MR's; the upper half belongs to
/// memory windows.
pub(crate) const MR_INDEX_MIN: u32 = 1;
pub(crate) const MR_INDEX_MAX: u32 = crate::mw::MW_INDEX_MIN - 2;

/// The lkey of the null MR (`ibv_alloc_null_mr`), the same for every PD and context: it grants
/// no memory (what is written through it is discarded, what is read is zeros), so knowing it
/// gives nothing. It is no rkey, and no window or registration can be made on it.
pub(crate) const NULL_MR_KEY: u32 = (crate::mw::MW_INDEX_MIN - 1) << 8;

/// Rights srdma implements; `IB_ACCESS_OPTIONAL` hints are accepted and ignored.
const SUPPORTED_ACCESS: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_WRITE)
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_ATOMIC)
    .union(Access::MW_BIND)
    .union(Access::OPTIONAL);

/// Why a bind, a registration or an invalidation was denied (the engine turns it into a
/// completion status).
#[derive(Debug)]
pub(crate) struct Denied;

/// The memory behind an MR.
pub(crate) enum MrMem {
    /// Pinned user pages.
    User(Umem),
    /// Kernel callers' memory, addressed by kernel virtual address (the MR's iova is 0): only
    /// reached through the [`KernelBuf`] of the SGE that names it, never by address alone.
    Kernel,
    /// A fast-register MR: reached through its current registration, not directly.
    Fast(FastMr),
}

impl MrMem {
    /// The bytes from byte `offset` of the MR to the end of their page, at most `n`; only
    /// pinned user memory is reached directly.
    fn slice(&self, offset: usize, n: usize) -> Option<PageSlice<'_>> {
        match self {
            MrMem::User(umem) => umem.slice(offset, n),
            MrMem::Kernel | MrMem::Fast(_) => None,
        }
    }

    /// The bytes from byte `offset` of the MR, at most `n`, as one run of pages: pinned user
    /// memory only.
    fn run(&self, offset: usize, n: usize) -> Option<PageRun<'_>> {
        match self {
            MrMem::User(umem) => umem.run(offset, n),
            MrMem::Kernel | MrMem::Fast(_) => None,
        }
    }
}

/// Memory a key granted: `len` bytes from the first byte asked for, where copies go.
pub(crate) struct Span {
    target: Target,
    offset: usize,
    len: usize,
}

enum Target {
    /// The null MR: reads zeros, discards writes.
    Null,
    Mr(Arc<MrShared>),
    /// An MR reached through a memory window; the copy fails if the window changes meanwhile.
    Window(Arc<MrShared>, WindowRef),
    /// A registration of a fast-register MR; the copy fails if it is invalidated meanwhile.
    Fast(Arc<Registration>),
    /// A kernel caller's buffer, named by an SGE of its own work request through a DMA MR.
    Kernel(KernelBuf),
}

impl Span {
    pub(crate) fn of_window(
        mr: Arc<MrShared>,
        offset: usize,
        len: usize,
        window: WindowRef,
    ) -> Self {
        Self {
            target: Target::Window(mr, window),
            offset,
            len,
        }
    }

    /// The bytes the key granted.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether it is the null MR's: what is written to it goes nowhere.
    pub(crate) fn discards(&self) -> bool {
        matches!(self.target, Target::Null)
    }

    /// Whether a copy through it holds a lock: a window's or a registration's.
    pub(crate) fn guarded(&self) -> bool {
        matches!(self.target, Target::Window(..) | Target::Fast(_))
    }

    /// Runs `f` with the span's memory held as the key granted it: a window stays bound as it
    /// was, a registration valid, until `f` returns (an unbind or invalidation waits for it).
    /// Fails with `fail` if that is no longer so.
    pub(crate) fn hold<R, E>(
        &self,
        fail: E,
        f: impl FnOnce(&Held<'_>) -> core::result::Result<R, E>,
    ) -> core::result::Result<R, E> {
        let held = Held(self);
        match &self.target {
            Target::Window(_, window) => window.with(|| Ok(f(&held))).map_err(|_| fail)?,
            Target::Fast(reg) => reg.hold(|| Ok(f(&held))).map_err(|_| fail)?,
            Target::Mr(mr) => mr.copies.run(|| f(&held)).unwrap_or(Err(fail)),
            Target::Null | Target::Kernel(_) => f(&held),
        }
    }

    /// Copies the bytes from byte `at` of the span into `dst`.
    pub(crate) fn read(&self, at: usize, dst: &mut [u8]) -> Result {
        self.hold(EFAULT, |held| {
            held.pieces(at, dst.len(), |slice, r| slice.read(0, &mut dst[r]))
        })
    }

    /// Copies `src` to byte `at` of the span.
    pub(crate) fn write(&self, at: usize, src: &[u8]) -> Result {
        self.write_with(at, src.len(), |slice, r| slice.write(0, &src[r]))
    }

    /// Copies the `n` bytes from byte `src_at` of `src`, a ring its process may be writing, to
    /// byte `at` of the span, with no copy in between.
    pub(crate) fn write_shared(
        &self,
        at: usize,
        src: &SharedPages,
        src_at: usize,
        n: usize,
    ) -> Result {
        self.write_with(at, n, |slice, r| {
            pages::copy_from_shared(&slice, 0, src, src_at + r.start, r.len())
        })
    }

    /// Calls `f(slice, range)` to write each page's part of the `n` bytes from byte `at`, as
    /// [`Held::pieces`], with the memory held; for the null MR only checks that the bytes fit.
    fn write_with(
        &self,
        at: usize,
        n: usize,
        f: impl FnMut(PageSlice<'_>, core::ops::Range<usize>) -> Result,
    ) -> Result {
        if self.discards() {
            return (at.checked_add(n).ok_or(EFAULT)? <= self.len)
                .then_some(())
                .ok_or(EFAULT);
        }
        self.hold(EFAULT, |held| held.pieces(at, n, f))
    }

    /// Stores `value` in the aligned 8 bytes at byte `at` of the span in one store with release
    /// ordering (see [`PageSlice::store_u64_release`]); `EINVAL` if they are not aligned.
    pub(crate) fn store_u64_release(&self, at: usize, value: u64) -> Result {
        self.hold(EFAULT, |held| {
            let slice = held.slice(at, 8).ok_or(EFAULT)?;
            if slice.len() != 8 {
                // The 8 bytes cross a page: not aligned.
                return Err(EINVAL);
            }
            slice.store_u64_release(0, value)
        })
    }

    /// Continues CRC-32 `crc` over `n` bytes from byte `at` of the span.
    pub(crate) fn crc32(&self, at: usize, n: usize, mut crc: u32) -> Result<u32> {
        self.hold(EFAULT, |held| {
            held.pieces(at, n, |slice, r| {
                crc = slice.crc32(0, r.len(), crc)?;
                Ok(())
            })
        })?;
        Ok(crc)
    }

    /// Appends `n` bytes from byte `at` of the span to `skb` as fragments that refer to its
    /// pages, without a copy. Only pinned user memory of an MR goes that way (`EOPNOTSUPP`
    /// otherwise): its pages stay allocated while the buffer holds them, whereas a window or a
    /// fast registration may stop granting its memory before the buffer leaves, and a kernel
    /// caller's buffer may be slab memory.
    pub(crate) fn append_to(&self, at: usize, n: usize, skb: &mut SkBuff) -> Result {
        match &self.target {
            Target::Mr(mr) if matches!(mr.mem, MrMem::User(_)) => {
                Held(self).pieces(at, n, |slice, r| slice.append_to(skb, 0, r.len()))
            }
            _ => Err(EOPNOTSUPP),
        }
    }
}

/// A span whose memory is held for a copy ([`Span::hold`]).
pub(crate) struct Held<'a>(&'a Span);

impl<'a> Held<'a> {
    /// The bytes from byte `at` of the span to the end of their page, at most `n`.
    pub(crate) fn slice(&self, at: usize, n: usize) -> Option<PageSlice<'a>> {
        let span = self.0;
        let n = n.min(span.len.checked_sub(at)?);
        if n == 0 {
            return None;
        }
        let offset = span.offset.checked_add(at)?;
        match &span.target {
            // Reads of the null MR see the zero page.
            Target::Null => {
                let in_page = offset % PAGE_SIZE;
                PageSlice::zeroes(in_page, n.min(PAGE_SIZE - in_page))
            }
            Target::Mr(mr) | Target::Window(mr, _) => mr.mem.slice(offset, n),
            Target::Fast(reg) => reg.slice(offset, n),
            Target::Kernel(buf) => buf.slice(offset, n),
        }
    }

    /// The `n` bytes from byte `at` of the span as one run of pages, if they lie in pinned user
    /// memory of an MR (directly or through a window), the memory most copies are between.
    pub(crate) fn run(&self, at: usize, n: usize) -> Option<PageRun<'a>> {
        let span = self.0;
        if at.checked_add(n)? > span.len {
            return None;
        }
        let offset = span.offset.checked_add(at)?;
        match &span.target {
            Target::Mr(mr) | Target::Window(mr, _) => mr.mem.run(offset, n),
            Target::Null | Target::Fast(_) | Target::Kernel(_) => None,
        }
    }

    /// Calls `f(slice, range)` for each page's part of the `n` bytes from byte `at`, `range`
    /// being where the part lies in the `n` bytes.
    fn pieces(
        &self,
        at: usize,
        n: usize,
        mut f: impl FnMut(PageSlice<'a>, core::ops::Range<usize>) -> Result,
    ) -> Result {
        let mut done = 0;
        while done < n {
            let slice = self.slice(at + done, n - done).ok_or(EFAULT)?;
            let len = slice.len();
            f(slice, done..done + len)?;
            done += len;
        }
        Ok(())
    }
}

/// Returns the span of the MR among `keys` behind `key` that covers `len` bytes at `addr`
/// with rights `need`, in PD `pd`. Keys of ordinary MRs must be the key the MR was given; keys
/// of fast-register MRs must match their current registration. `local` is the buffer of the
/// SGE being resolved if a kernel caller posted it: the only way into a DMA MR.
pub(crate) fn resolve(
    keys: &Keys,
    key: u32,
    pd: &PdRef,
    need: Access,
    addr: u64,
    len: u64,
    local: Option<&KernelBuf>,
) -> Option<Span> {
    if key == NULL_MR_KEY {
        // Local rights only: reading (a gather) and writing (a scatter).
        return Access::LOCAL_WRITE.contains(need).then_some(Span {
            target: Target::Null,
            offset: 0,
            len: usize::try_from(len).ok()?,
        });
    }
    let mr = keys.mrs.lock().get(key >> 8)?;
    if mr.pd != *pd {
        return None;
    }
    // Kernel memory is never a user PD's, whatever a bug elsewhere might let it name.
    if pd.owner() == Owner::User && !matches!(mr.mem, MrMem::User(_)) {
        return None;
    }
    if let MrMem::Fast(fast) = &mr.mem {
        let reg = fast.registration()?;
        let offset = reg.check(key, need, addr, len)?;
        return Some(Span {
            target: Target::Fast(reg),
            offset,
            len: usize::try_from(len).ok()?,
        });
    }
    if key != mr.key || !mr.access.contains(need) {
        return None;
    }
    let end = addr.checked_add(len)?;
    if addr < mr.iova || end > mr.iova.checked_add(mr.length)? {
        return None;
    }
    let offset = usize::try_from(addr - mr.iova).ok()?;
    if let MrMem::Kernel = mr.mem {
        // The SGE's own buffer, so within what its caller handed over.
        let buf = local?;
        let offset = usize::try_from(addr.checked_sub(buf.addr())?).ok()?;
        if offset.checked_add(usize::try_from(len).ok()?)? > buf.len() {
            return None;
        }
        return Some(Span {
            target: Target::Kernel(buf.clone()),
            offset,
            len: usize::try_from(len).ok()?,
        });
    }
    Some(Span {
        target: Target::Mr(mr),
        offset,
        len: usize::try_from(len).ok()?,
    })
}

/// Invalidates `rkey`, a memory window's or a fast-register MR's, for QP `q`; `remote` says
/// a SEND_WITH_INV that arrived at `q` asks for it.
pub(crate) fn invalidate(
    q: &Arc<crate::qp::QpShared>,
    rkey: u32,
    remote: bool,
) -> core::result::Result<(), Denied> {
    if crate::mw::is_window_key(rkey) {
        crate::mw::invalidate(q, rkey, remote)
    } else {
        crate::fastreg::invalidate(&q.keys, &q.pd, rkey)
    }
}

/// What the data path needs of an MR, found by key.
pub(crate) struct MrShared {
    /// The PD the MR belongs to.
    pub(crate) pd: PdRef,
    /// The MR's lkey and rkey (one key), with its random key byte.
    pub(crate) key: u32,
    pub(crate) mem: MrMem,
    /// The address peers and work requests use for the first byte.
    pub(crate) iova: u64,
    pub(crate) length: u64,
    pub(crate) access: Access,
    /// Memory windows bound to the MR; it cannot be deregistered while there are any.
    pub(crate) windows: WindowCount,
    /// The copies through the MR's key (of a user MR) running now.
    copies: Copies,
}

/// The copies running through an MR and whether it is deregistered, in one word, and a place
/// to wait for the last of them: a copy counts itself in before it starts and out when it
/// ends; the deregistration marks the MR and waits until no copy runs, and a copy that counts
/// itself in after the mark does not run. So once `ibv_dereg_mr` has returned, nothing is read
/// from or written to the memory any more, though a message under way (on the wire, or a
/// large one) had resolved its key before.
struct Copies {
    word: AtomicU32,
    lock: Pin<KBox<Mutex<()>>>,
    idle: Pin<KBox<CondVar>>,
}

impl Copies {
    /// Set by the deregistration; the bits below count the copies.
    const CLOSED: u32 = 1 << 31;

    fn new() -> Result<Self> {
        Ok(Self {
            word: AtomicU32::new(0),
            lock: KBox::pin_init(new_mutex!(()), GFP_KERNEL)?,
            idle: KBox::pin_init(new_condvar!(), GFP_KERNEL)?,
        })
    }

    /// Runs `copy` unless the MR is deregistered (`None` then); the deregistration waits for
    /// it.
    fn run<R>(&self, copy: impl FnOnce() -> R) -> Option<R> {
        let open = self.word.fetch_add(1, Ordering::Acquire) & Self::CLOSED == 0;
        let done = open.then(copy);
        if self.word.fetch_sub(1, Ordering::Release) == Self::CLOSED | 1 {
            self.idle.notify_all();
        }
        done
    }

    /// Lets no copy start any more and waits for those running.
    fn close(&self) {
        self.word.fetch_or(Self::CLOSED, Ordering::AcqRel);
        let mut guard = self.lock.lock();
        while self.word.load(Ordering::Acquire) != Self::CLOSED {
            // The last copy's wake-up may come between the look and the wait: the wait ends
            // after a jiffy anyway. A signal ends it at once, and the look comes again.
            let _ = self.idle.wait_interruptible_timeout(&mut guard, 1);
        }
    }
}

/// The windows bound to an MR and whether the MR is being deregistered, in one word, so that
/// of a bind and a deregistration racing each other exactly one succeeds.
pub(crate) struct WindowCount(AtomicU32);

impl WindowCount {
    /// Set once the MR is being deregistered; binds fail from then on.
    const DEREGISTERING: u32 = 1 << 31;

    fn new() -> Self {
        Self(AtomicU32::new(0))
    }

    /// Counts one more window bound to the MR, unless the MR is being deregistered.
    pub(crate) fn bind(&self) -> core::result::Result<(), Denied> {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n & Self::DEREGISTERING == 0).then_some(n + 1)
            })
            .map(|_| ())
            .map_err(|_| Denied)
    }

    /// Counts one window fewer.
    pub(crate) fn unbind(&self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }

    /// Marks the MR as being deregistered if no window is bound to it, else fails with `EBUSY`.
    fn deregister(&self) -> Result {
        self.0
            .compare_exchange(0, Self::DEREGISTERING, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(|_| EBUSY)
    }
}

/// srdma's part of a memory region.
pub(crate) struct SrdmaMr {
    /// Its place within the device's limit.
    _charge: Charge,
    _key: Reservation<MrShared>,
    shared: Arc<MrShared>,
}

impl Drop for SrdmaMr {
    fn drop(&mut self) {
        // The deregistration: the memory is the process's again once this returns.
        self.shared.copies.close();
    }
}

impl SrdmaMr {
    /// What the data path and `rdma resource show mr -dd` see of the MR.
    pub(crate) fn shared(&self) -> &MrShared {
        &self.shared
    }

    /// Refuses deregistration while windows are bound to the MR, as verbs requires; once it
    /// allows it, no bind can take the MR any more.
    pub(crate) fn may_dereg(&self) -> Result {
        self.shared.windows.deregister()
    }

    /// Gives the MR described by `mem`, `iova`, `length` and `access` a key and makes it
    /// findable by it.
    fn publish(
        pd: &Pd<SrdmaDevice>,
        mem: MrMem,
        iova: u64,
        length: u64,
        access: Access,
    ) -> Result<MrCreated<Self>> {
        let charge = pd.device().limits().charge(Kind::Mr)?;
        let key = Reservation::new(pd.device().mrs())?;
        let k = key.id() << 8 | u32::from(kernel::random::u8());
        let shared = Arc::new(
            MrShared {
                pd: pd.id(),
                key: k,
                mem,
                iova,
                length,
                access,
                windows: WindowCount::new(),
                copies: Copies::new()?,
            },
            GFP_KERNEL,
        )?;
        key.publish(shared.clone());
        Ok(MrCreated {
            data: SrdmaMr {
                _charge: charge,
                _key: key,
                shared,
            },
            lkey: k,
            rkey: k,
        })
    }

    pub(crate) fn reg_user(
        pd: &Pd<SrdmaDevice>,
        region: &UserRegion,
        _user: Option<User<'_, SrdmaDevice>>,
    ) -> Result<MrCreated<Self>> {
        if !region.access.difference(SUPPORTED_ACCESS).is_empty() {
            return Err(EOPNOTSUPP);
        }
        if region.length == 0 || region.length > MAX_MR_SIZE {
            return Err(EINVAL);
        }
        region.iova.checked_add(region.length).ok_or(EINVAL)?;
        let umem = Umem::get(pd.device(), region.start, region.length, region.access)?;
        Self::publish(
            pd,
            MrMem::User(umem),
            region.iova,
            region.length,
            region.access,
        )
    }

    pub(crate) fn fast(pd: &Pd<SrdmaDevice>, max_pages: u32) -> Result<MrCreated<Self>> {
        if pd.id().owner() != Owner::Kernel {
            return Err(EINVAL);
        }
        // A fast-register MR grants what its registration grants.
        Self::publish(
            pd,
            MrMem::Fast(FastMr::new(max_pages)?),
            0,
            0,
            Access::empty(),
        )
    }

    /// Maps a kernel caller's scatter/gather list into a fast-register MR.
    pub(crate) fn map_sg(mr: &Mr<SrdmaDevice>, sg: SgMapper<'_, SrdmaDevice>) -> Result<u32> {
        match &mr.shared.mem {
            MrMem::Fast(fast) => fast.map(sg),
            _ => Err(EINVAL),
        }
    }

    pub(crate) fn dma(pd: &Pd<SrdmaDevice>, access: Access) -> Result<MrCreated<Self>> {
        if !access.difference(SUPPORTED_ACCESS).is_empty() {
            return Err(EOPNOTSUPP);
        }
        // Remote rights on all of memory (`IB_PD_UNSAFE_GLOBAL_RKEY`) would let any peer read
        // and write the whole kernel; srdma lends a kernel buffer only to the work request
        // that names it.
        if !access
            .difference(Access::LOCAL_WRITE | Access::OPTIONAL)
            .is_empty()
        {
            return Err(EOPNOTSUPP);
        }
        if pd.id().owner() != Owner::Kernel {
            return Err(EINVAL);
        }
        Self::publish(pd, MrMem::Kernel, 0, u64::MAX, access)
    }
}

// SPDX-License-Identifier: GPL-2.0-only

//! Message payloads: the bytes a work request names, as a list of pieces read and written in
//! order, and the copy between two such lists, page to page, so that a message of any size up
//! to `max_msg_sz` moves once and needs no kernel buffer.

use crate::mr::Span;
use kernel::{
    net::skb::SkBuff,
    prelude::*,
    rdma::{mmap::SharedPages, pages},
    sync::Arc,
    task::cond_resched,
};

/// The most bytes one step of a copy moves, holding what its spans hold.
pub(crate) const CHUNK: usize = 64 * 1024;

/// The bytes of a message, or the memory they go to, in order.
pub(crate) enum Segments {
    /// An inline payload, where its process wrote it in its send queue.
    Inline(InlineBytes),
    /// Memory that keys granted, one span after the other.
    Spans(SpanList),
}

/// `len` bytes from byte `at` of a ring: the inline payload of a WQE, read where it lies, as a
/// NIC reads it.
///
/// The WQE's slot stays the device's until the WQE completes, so the bytes are the payload for
/// as long as anything sends them, retransmissions included; a process that rewrites the slot
/// meanwhile changes only what it sends.
///
/// # Invariants
///
/// `at + len <= mem.len()`.
pub(crate) struct InlineBytes {
    mem: Arc<SharedPages>,
    at: usize,
    len: usize,
}

impl InlineBytes {
    /// The `len` bytes from byte `at` of `mem`; `None` if they leave it.
    pub(crate) fn new(mem: &Arc<SharedPages>, at: usize, len: usize) -> Option<Self> {
        if at.checked_add(len)? > mem.len() {
            return None;
        }
        // INVARIANT: Checked above.
        Some(Self {
            mem: mem.clone(),
            at,
            len,
        })
    }

    /// Copies the first `n` bytes to the `n` bytes from byte `to_at` of `to`, from the ring
    /// straight into the destination's pages.
    fn copy_to(&self, to: &Segments, to_at: usize, n: usize) -> Result<(), Failed> {
        if n > self.len {
            return Err(Failed::Source);
        }
        to.pieces(to_at, n, |piece, off, range| match piece {
            Piece::Inline => Err(EFAULT),
            Piece::Span(span) => {
                span.write_shared(off, &self.mem, self.at + range.start, range.len())
            }
        })
        .map_err(|_| Failed::Destination)
    }
}

/// Spans of memory in order. Most work requests name one buffer, which needs no allocation.
pub(crate) enum SpanList {
    Empty,
    One(Span),
    Many(KVec<Span>),
}

impl SpanList {
    /// Appends `span`.
    pub(crate) fn push(&mut self, span: Span) -> Result {
        *self = match core::mem::replace(self, SpanList::Empty) {
            SpanList::Empty => SpanList::One(span),
            SpanList::One(first) => {
                let mut spans = KVec::with_capacity(4, GFP_KERNEL)?;
                spans.push(first, GFP_KERNEL)?;
                spans.push(span, GFP_KERNEL)?;
                SpanList::Many(spans)
            }
            SpanList::Many(mut spans) => {
                spans.push(span, GFP_KERNEL)?;
                SpanList::Many(spans)
            }
        };
        Ok(())
    }
}

impl From<Span> for SpanList {
    fn from(span: Span) -> Self {
        SpanList::One(span)
    }
}

impl core::ops::Deref for SpanList {
    type Target = [Span];

    fn deref(&self) -> &[Span] {
        match self {
            SpanList::Empty => &[],
            SpanList::One(span) => core::slice::from_ref(span),
            SpanList::Many(spans) => spans,
        }
    }
}

/// Which side of a copy failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failed {
    /// Reading the source (the sender's memory changed under the copy).
    Source,
    /// Writing the destination.
    Destination,
    /// No memory for the bounce buffer.
    NoMemory,
}

impl Segments {
    /// The number of bytes.
    pub(crate) fn len(&self) -> usize {
        match self {
            Segments::Inline(bytes) => bytes.len,
            Segments::Spans(spans) => spans.iter().map(Span::len).sum(),
        }
    }

    /// Calls `f(piece, offset in piece, bytes)` for each piece of the `n` bytes from byte `at`.
    fn pieces(
        &self,
        mut at: usize,
        mut n: usize,
        mut f: impl FnMut(Piece<'_>, usize, core::ops::Range<usize>) -> Result,
    ) -> Result {
        let mut done = 0;
        match self {
            Segments::Inline(bytes) => {
                if at.checked_add(n).ok_or(EFAULT)? > bytes.len {
                    return Err(EFAULT);
                }
                f(Piece::Inline, at, 0..n)
            }
            Segments::Spans(spans) => {
                for span in spans.iter() {
                    if n == 0 {
                        break;
                    }
                    if at >= span.len() {
                        at -= span.len();
                        continue;
                    }
                    let len = (span.len() - at).min(n);
                    f(Piece::Span(span), at, done..done + len)?;
                    done += len;
                    n -= len;
                    at = 0;
                }
                if n != 0 {
                    return Err(EFAULT);
                }
                Ok(())
            }
        }
    }

    /// Copies the `dst.len()` bytes from byte `at` into `dst`.
    pub(crate) fn read(&self, at: usize, dst: &mut [u8]) -> Result {
        self.pieces(at, dst.len(), |piece, off, range| match piece {
            Piece::Inline => {
                let Segments::Inline(bytes) = self else {
                    return Err(EFAULT);
                };
                bytes.mem.read(bytes.at + off, &mut dst[range])
            }
            Piece::Span(span) => span.read(off, &mut dst[range]),
        })
    }

    /// Copies `src` to byte `at`; only memory spans can be written.
    pub(crate) fn write(&self, at: usize, src: &[u8]) -> Result {
        self.pieces(at, src.len(), |piece, off, range| match piece {
            Piece::Inline => Err(EFAULT),
            Piece::Span(span) => span.write(off, &src[range]),
        })
    }
}

impl Segments {
    /// Continues CRC-32 `crc` over the `n` bytes from byte `at`, of memory spans only (what
    /// [`Segments::append_to`] can append).
    pub(crate) fn crc32(&self, at: usize, n: usize, mut crc: u32) -> Result<u32> {
        self.pieces(at, n, |piece, off, range| {
            crc = match piece {
                Piece::Inline => return Err(EOPNOTSUPP),
                Piece::Span(span) => span.crc32(off, range.len(), crc)?,
            };
            Ok(())
        })?;
        Ok(crc)
    }

    /// Appends the `n` bytes from byte `at` to `skb` as fragments that refer to the memory's
    /// pages ([`Span::append_to`]); `EOPNOTSUPP` for an inline payload (its ring is no page a
    /// buffer can hold), or memory that cannot go that way. On failure the buffer may hold part
    /// of them.
    pub(crate) fn append_to(&self, at: usize, n: usize, skb: &mut SkBuff) -> Result {
        self.pieces(at, n, |piece, off, range| match piece {
            Piece::Inline => Err(EOPNOTSUPP),
            Piece::Span(span) => span.append_to(off, range.len(), skb),
        })
    }
}

/// One piece of [`Segments`] that a copy step touches.
enum Piece<'a> {
    Inline,
    Span(&'a Span),
}

/// Copies the first `n` bytes of `from` to the first `n` bytes of `to`, once: from the ring
/// or from the source pages straight into the destination pages.
pub(crate) fn copy(from: &Segments, to: &Segments, n: usize) -> core::result::Result<(), Failed> {
    copy_to(from, to, 0, n)
}

/// As [`copy`], to the `n` bytes from byte `to_at` of `to`.
pub(crate) fn copy_to(
    from: &Segments,
    to: &Segments,
    to_at: usize,
    n: usize,
) -> core::result::Result<(), Failed> {
    if n == 0 {
        return Ok(());
    }
    match (from, to) {
        (Segments::Inline(bytes), _) => bytes.copy_to(to, to_at, n),
        (Segments::Spans(from), Segments::Spans(to)) => copy_spans(from, to, to_at, n),
        (_, Segments::Inline(_)) => Err(Failed::Destination),
    }
}

/// Copies `n` bytes from the spans `from` to the spans `to` from byte `to_at` on, a piece at a
/// time: each piece lies in one span of each side and is at most [`CHUNK`] bytes, so that no
/// lock a span holds is held for long.
fn copy_spans(
    from: &[Span],
    to: &[Span],
    to_at: usize,
    n: usize,
) -> core::result::Result<(), Failed> {
    let (mut src, mut dst) = (from.iter(), to.iter());
    let (mut s, mut d) = (src.next(), dst.next());
    let (mut s_at, mut d_at, mut done) = (0, to_at, 0);
    // The destination span that byte `to_at` lies in.
    while let Some(span) = d {
        if d_at < span.len() {
            break;
        }
        d_at -= span.len();
        d = dst.next();
    }
    // Made only when two guarded spans meet: even an empty vector costs a call into the
    // allocator when it is dropped.
    let mut bounce = None;
    while done < n {
        let span_s = s.ok_or(Failed::Source)?;
        let span_d = d.ok_or(Failed::Destination)?;
        if s_at == span_s.len() {
            (s, s_at) = (src.next(), 0);
            continue;
        }
        if d_at == span_d.len() {
            (d, d_at) = (dst.next(), 0);
            continue;
        }
        let step = (span_s.len() - s_at)
            .min(span_d.len() - d_at)
            .min(n - done)
            .min(CHUNK);
        piece(span_s, s_at, span_d, d_at, step, &mut bounce)?;
        s_at += step;
        d_at += step;
        done += step;
        // A message may be gigabytes: between pieces the CPU goes to whoever the scheduler
        // says should have it (every context that copies may sleep).
        cond_resched();
    }
    Ok(())
}

/// Copies `n` bytes from byte `s_at` of `s` to byte `d_at` of `d`, page to page while both
/// spans are held. Two spans that both hold a lock (windows, registrations) are never held
/// at once, since their locks are of one class: their bytes pass through `bounce` instead.
fn piece(
    s: &Span,
    s_at: usize,
    d: &Span,
    d_at: usize,
    n: usize,
    bounce: &mut Option<KVec<u8>>,
) -> core::result::Result<(), Failed> {
    if d.discards() {
        // Nothing moves, but the source must still be granted, as for a copy.
        return s.hold(Failed::Source, |_| Ok(()));
    }
    if s.guarded() && d.guarded() {
        let bounce = bounce.get_or_insert_with(KVec::new);
        if bounce.len() < n {
            bounce
                .extend_with(n - bounce.len(), 0, GFP_KERNEL)
                .map_err(|_| Failed::NoMemory)?;
        }
        let buf = &mut bounce[..n];
        s.read(s_at, buf).map_err(|_| Failed::Source)?;
        return d.write(d_at, buf).map_err(|_| Failed::Destination);
    }
    s.hold(Failed::Source, |src| {
        d.hold(Failed::Destination, |dst| {
            if let (Some(from), Some(to)) = (src.run(s_at, n), dst.run(d_at, n)) {
                if from.len() == n && to.len() == n {
                    return pages::copy_run(&to, &from, n).map_err(|_| Failed::Destination);
                }
            }
            let mut done = 0;
            while done < n {
                let from = src.slice(s_at + done, n - done).ok_or(Failed::Source)?;
                let to = dst
                    .slice(d_at + done, from.len())
                    .ok_or(Failed::Destination)?;
                let len = to.len();
                pages::copy(&to, 0, &from, 0, len).map_err(|_| Failed::Destination)?;
                done += len;
            }
            Ok(())
        })
    })
}

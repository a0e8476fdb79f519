// SPDX-License-Identifier: GPL-2.0-only

//! Message payloads: the bytes a work request names, as a list of pieces read and written in
//! order, and the copy between two such lists through a bounded buffer, so that a message of
//! any size up to `max_msg_sz` needs at most [`CHUNK`] bytes of kernel memory.

use crate::mr::Span;
use kernel::prelude::*;

/// The most bytes one step of a copy moves.
pub(crate) const CHUNK: usize = 64 * 1024;

/// The bytes of a message, or the memory they go to, in order.
pub(crate) enum Segments {
    /// Bytes the kernel holds: an inline payload, a datagram with its GRH area.
    Bytes(KVec<u8>),
    /// Memory that keys granted, one span after the other.
    Spans(KVec<Span>),
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
    /// No bytes.
    pub(crate) fn empty() -> Self {
        Segments::Bytes(KVec::new())
    }

    /// The number of bytes.
    pub(crate) fn len(&self) -> usize {
        match self {
            Segments::Bytes(b) => b.len(),
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
            Segments::Bytes(b) => {
                if at.checked_add(n).ok_or(EFAULT)? > b.len() {
                    return Err(EFAULT);
                }
                f(Piece::Bytes, at, 0..n)
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
            Piece::Bytes => {
                let Segments::Bytes(b) = self else {
                    return Err(EFAULT);
                };
                dst.copy_from_slice(&b[off..off + range.len()]);
                Ok(())
            }
            Piece::Span(span) => span.read(off, &mut dst[range]),
        })
    }

    /// Copies `src` to byte `at`; only memory spans can be written.
    pub(crate) fn write(&self, at: usize, src: &[u8]) -> Result {
        self.pieces(at, src.len(), |piece, off, range| match piece {
            Piece::Bytes => Err(EFAULT),
            Piece::Span(span) => span.write(off, &src[range]),
        })
    }
}

/// One piece of [`Segments`] that a copy step touches.
enum Piece<'a> {
    Bytes,
    Span(&'a Span),
}

/// Copies the first `n` bytes of `from` to the first `n` bytes of `to`, at most [`CHUNK`]
/// bytes at a time.
pub(crate) fn copy(from: &Segments, to: &Segments, n: usize) -> core::result::Result<(), Failed> {
    if n == 0 {
        return Ok(());
    }
    if let Segments::Bytes(b) = from {
        // Kernel-held bytes need no bounce buffer.
        let src = b.get(..n).ok_or(Failed::Source)?;
        return to.write(0, src).map_err(|_| Failed::Destination);
    }
    let mut buf = KVec::new();
    buf.extend_with(n.min(CHUNK), 0u8, GFP_KERNEL)
        .map_err(|_| Failed::NoMemory)?;
    let mut at = 0;
    while at < n {
        let step = (n - at).min(CHUNK);
        from.read(at, &mut buf[..step])
            .map_err(|_| Failed::Source)?;
        to.write(at, &buf[..step])
            .map_err(|_| Failed::Destination)?;
        at += step;
    }
    Ok(())
}

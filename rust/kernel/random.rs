// SPDX-License-Identifier: GPL-2.0

//! Random numbers from the kernel's entropy pool.
//!
//! C header: [`include/linux/random.h`](srctree/include/linux/random.h).

use crate::bindings;

/// Returns a random byte, as unpredictable as `get_random_u8` makes it (suitable for keys
/// that others must not guess).
pub fn u8() -> u8 {
    // SAFETY: `get_random_u8` has no preconditions and may be called from any context.
    unsafe { bindings::get_random_u8() }
}

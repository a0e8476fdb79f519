// SPDX-License-Identifier: GPL-2.0

//! Bottom halves (softirqs) held off on the current CPU.
//!
//! C header: [`include/linux/bottom_half.h`](srctree/include/linux/bottom_half.h).
//!
//! ```
//! use kernel::bh;
//!
//! let held = bh::disable();
//! // Softirqs raised here run when `held` goes.
//! drop(held);
//! ```

use crate::bindings;
use core::marker::PhantomData;

/// Softirqs held off on this CPU for as long as it lives; those raised meanwhile run when the
/// last such guard on the CPU goes.
///
/// A sender holds one while it hands a burst of packets to the network stack, so that the
/// receive processing they raise on this CPU (a local peer's, behind a veth or loopback
/// device) runs once for the burst instead of after each packet.
///
/// Its holder runs in atomic context: it must not sleep, so neither take a mutex nor allocate
/// with `GFP_KERNEL` (the debug kernel's atomic-sleep checks report it).
///
/// It holds off preemption too, so it stays on the CPU it was made on; it may not be sent to
/// another thread (`!Send`), which would release the wrong CPU's count.
pub struct Disabled {
    _not_send: PhantomData<*mut ()>,
}

/// Holds softirqs off on this CPU until the returned guard goes.
pub fn disable() -> Disabled {
    // SAFETY: Any context may hold softirqs off; the guard's drop ends it on the same CPU.
    unsafe { bindings::local_bh_disable() };
    Disabled {
        _not_send: PhantomData,
    }
}

impl Drop for Disabled {
    fn drop(&mut self) {
        // SAFETY: `disable` held softirqs off on this CPU (the guard cannot leave the thread,
        // which cannot leave the CPU meanwhile) and nothing else ended it.
        unsafe { bindings::local_bh_enable() };
    }
}

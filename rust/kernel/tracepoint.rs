// SPDX-License-Identifier: GPL-2.0

//! Tracepoints: events that `perf`, `trace-cmd` and tracefs record.
//!
//! The events themselves are C: a `TRACE_EVENT` header (`include/trace/events/NAME.h`), made
//! into tracepoints by a C file of the module that defines `CREATE_TRACE_POINTS` before
//! including it. For each event `E` that file also defines `void rust_do_trace_E(args)`,
//! which calls `trace_E(args)`, and the header declares it, so that bindgen sees it (the header
//! is included by `rust/bindings/bindings_helper.h`). [`declare_trace!`](crate::declare_trace)
//! then gives the Rust code a safe function per event. When the event is off the cost is the
//! call into that function and the tracepoint's static branch.
//!
//! C header: [`include/linux/tracepoint.h`](srctree/include/linux/tracepoint.h).

/// A value an event may take: plain integers and booleans, copied into the event. The C side
/// of an event receives nothing else, so firing it cannot touch memory.
pub trait TraceArg: Copy + private::Sealed {}

mod private {
    pub trait Sealed {}
}

macro_rules! trace_args {
    ($($t:ty),*) => {$(
        impl private::Sealed for $t {}
        impl TraceArg for $t {}
    )*};
}
trace_args!(bool, u8, u16, u32, u64, i8, i16, i32, i64);

/// Checks at compile time that `T` may be an event's argument (used by [`declare_trace!`]).
#[doc(hidden)]
pub const fn assert_arg<T: TraceArg>() {}

/// Declares safe Rust functions that fire the events of a C tracepoint header.
///
/// Each `fn E(args);` fires event `E` through the C function `rust_do_trace_E`, which the
/// header declares and the module's C file defines; `fn E_enabled() -> bool;` calls
/// `rust_trace_E_enabled`, for arguments that cost something to compute. Arguments are plain
/// integers and booleans ([`TraceArg`]).
///
/// A crate compiled with `--cfg no_trace_events` (a module's `rustflags-y`) gets functions that
/// do nothing and events that are never enabled: the baseline for measuring what the events
/// cost when off.
///
/// ```ignore
/// kernel::declare_trace! {
///     /// A doorbell of QP `qpn`.
///     pub(crate) fn srdma_doorbell(qpn: u32, sq_ci: u32, sq_pi: u32);
///     pub(crate) fn srdma_wqe_enabled() -> bool;
/// }
/// ```
#[macro_export]
macro_rules! declare_trace {
    () => {};
    ($(#[$attr:meta])* $vis:vis fn $name:ident() -> bool; $($rest:tt)*) => {
        $(#[$attr])*
        #[inline(always)]
        $vis fn $name() -> bool {
            if cfg!(no_trace_events) {
                return false;
            }
            $crate::macros::paste! {
                // SAFETY: `rust_trace_<event>_enabled` only reads the tracepoint's static key.
                unsafe { $crate::bindings::[<rust_trace_ $name>]() }
            }
        }
        $crate::declare_trace!($($rest)*);
    };
    ($(#[$attr:meta])* $vis:vis fn $name:ident($($arg:ident : $ty:ty),* $(,)?); $($rest:tt)*) => {
        $(#[$attr])*
        #[inline(always)]
        $vis fn $name($($arg: $ty),*) {
            $( const { $crate::tracepoint::assert_arg::<$ty>() }; )*
            #[cfg(no_trace_events)]
            let _ = ($($arg,)*);
            #[cfg(not(no_trace_events))]
            $crate::macros::paste! {
                // SAFETY: `rust_do_trace_<event>` only hands its arguments, plain values
                // (`TraceArg`), to the tracepoint of the same name; it compiles only if its C
                // declaration takes these types.
                unsafe { $crate::bindings::[<rust_do_trace_ $name>]($($arg),*) }
            }
        }
        $crate::declare_trace!($($rest)*);
    };
}

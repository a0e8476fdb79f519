// SPDX-License-Identifier: GPL-2.0

//! Module parameters of Rust modules (`module_param`), until the `module!` macro takes them.
//!
//! [`module_param_uint!`](crate::module_param_uint) declares a read-only `uint` parameter as C's
//! `module_param(name, uint, 0444)` does: an entry in the module's `__param` section, which the
//! kernel parses from the module's arguments (or, for built-in code, the kernel command line
//! as `module.name=`) before the module's init runs, and which appears in
//! `/sys/module/<module>/parameters/`; `parmtype` and `parm` strings in `.modinfo` for
//! `modinfo -p`.
//!
//! C header: [`include/linux/moduleparam.h`](srctree/include/linux/moduleparam.h).

use crate::{bindings, str::CStr};
use core::cell::UnsafeCell;

/// The value of a `uint` module parameter.
///
/// # Invariants
///
/// Only the kernel's parameter parsing writes it, while the module loads and before its init
/// runs; the parameter is read-only in sysfs ([`KernelParam::uint`]).
#[repr(transparent)]
pub struct ParamU32(UnsafeCell<u32>);

// SAFETY: Once the module runs the value is only read (type invariant).
unsafe impl Sync for ParamU32 {}

impl ParamU32 {
    /// A parameter whose value is `default` unless the module's arguments set it.
    pub const fn new(default: u32) -> Self {
        Self(UnsafeCell::new(default))
    }

    /// Returns the value.
    pub fn get(&self) -> u32 {
        // SAFETY: Nothing writes the value any more once the module's code runs (type
        // invariant).
        unsafe { *self.0.get() }
    }
}

/// A module parameter's entry in the module's `__param` section (`struct kernel_param`).
#[repr(transparent)]
pub struct KernelParam(bindings::kernel_param);

// SAFETY: The kernel only reads the entry; its pointers refer to statics.
unsafe impl Sync for KernelParam {}

impl KernelParam {
    /// The entry of a `uint` parameter named `name` (`module.name` for built-in code) of
    /// `module` (null for built-in code), stored in `value`, readable by everyone in sysfs and
    /// writable by no one, as the module reads it once.
    pub const fn uint(
        name: &'static CStr,
        value: &'static ParamU32,
        module: *mut bindings::module,
    ) -> Self {
        Self(bindings::kernel_param {
            name: name.as_char_ptr(),
            mod_: module,
            ops: &raw const bindings::param_ops_uint,
            perm: 0o444,
            level: -1,
            flags: 0,
            __bindgen_anon_1: bindings::kernel_param__bindgen_ty_1 {
                arg: value.0.get().cast(),
            },
        })
    }
}

/// Copies `s` into a NUL-terminated byte array of `N` bytes (`s.len() + 1`), for `.modinfo`.
pub const fn modinfo_string<const N: usize>(s: &str) -> [u8; N] {
    let bytes = s.as_bytes();
    assert!(bytes.len() + 1 == N);
    let mut out = [0u8; N];
    let mut i = 0;
    while i < bytes.len() {
        out[i] = bytes[i];
        i += 1;
    }
    out
}

/// Declares a read-only `uint` module parameter of module `$module` named `$name`, with the
/// default value `$default`, stored in a static [`ParamU32`] called `$storage`.
///
/// # Examples
///
/// ```ignore
/// kernel::module_param_uint!(MODE, "srdma", "mode", 0, "How to do it: 0 or 1");
/// let mode = MODE.get();
/// ```
#[macro_export]
macro_rules! module_param_uint {
    ($storage:ident, $module:literal, $name:literal, $default:expr, $desc:literal) => {
        static $storage: $crate::module_param::ParamU32 =
            $crate::module_param::ParamU32::new($default);

        // Loadable modules: the names as they are, and the module itself.
        #[cfg(MODULE)]
        const _: () = {
            extern "C" {
                static __this_module: $crate::bindings::module;
            }

            #[link_section = "__param"]
            #[used(compiler)]
            static PARAM: $crate::module_param::KernelParam =
                $crate::module_param::KernelParam::uint(
                    $crate::c_str!($name),
                    &$storage,
                    (&raw const __this_module).cast_mut(),
                );

            $crate::module_param_uint!(@modinfo [] $name, $desc);
        };

        // Built-in code: `module.name`, as the kernel command line names it.
        #[cfg(not(MODULE))]
        const _: () = {
            #[link_section = "__param"]
            #[used(compiler)]
            static PARAM: $crate::module_param::KernelParam =
                $crate::module_param::KernelParam::uint(
                    $crate::c_str!(concat!($module, ".", $name)),
                    &$storage,
                    core::ptr::null_mut(),
                );

            $crate::module_param_uint!(@modinfo [$module, "."] $name, $desc);
        };
    };
    (@modinfo [$($prefix:literal),*] $name:literal, $desc:literal) => {
        #[link_section = ".modinfo"]
        #[used(compiler)]
        static PARMTYPE: [u8; concat!($($prefix,)* "parmtype=", $name, ":uint").len() + 1] =
            $crate::module_param::modinfo_string(concat!($($prefix,)* "parmtype=", $name, ":uint"));

        #[link_section = ".modinfo"]
        #[used(compiler)]
        static PARM: [u8; concat!($($prefix,)* "parm=", $name, ":", $desc).len() + 1] =
            $crate::module_param::modinfo_string(concat!($($prefix,)* "parm=", $name, ":", $desc));
    };
}

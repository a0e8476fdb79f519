// SPDX-License-Identifier: GPL-2.0

//! Typed forms of the C integers ib_core passes: enums and sets of bit flags.
//!
//! A flag set is a transparent newtype over the C integer: bits the abstraction does not name
//! are kept, not dropped, so that a driver can reject a request that asks for something it does
//! not know (`!set.difference(SUPPORTED).is_empty()`). An enum converts from the C integer
//! with `from_raw`, which returns `None` for a number the C enum does not have.

/// Declares a flag set type `$name` over `$int` with one associated constant per flag.
macro_rules! flag_set {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident($int:ty) {
            $(
                $(#[$fmeta:meta])*
                const $flag:ident = $value:expr;
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Default)]
        #[repr(transparent)]
        $vis struct $name($int);

        impl $name {
            $(
                $(#[$fmeta])*
                pub const $flag: Self = Self($value as $int);
            )*

            /// The set with no flag.
            pub const fn empty() -> Self {
                Self(0)
            }

            /// The set whose bits are `bits`, named by this type or not.
            pub const fn from_bits_retain(bits: $int) -> Self {
                Self(bits)
            }

            /// The bits of the set, as the C API spells them.
            pub const fn bits(self) -> $int {
                self.0
            }

            /// Whether no flag is set.
            pub const fn is_empty(self) -> bool {
                self.0 == 0
            }

            /// Whether every flag of `other` is set in `self`.
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }

            /// Whether `self` and `other` have a flag in common.
            pub const fn intersects(self, other: Self) -> bool {
                self.0 & other.0 != 0
            }

            /// The flags of `self` that are not in `other`.
            pub const fn difference(self, other: Self) -> Self {
                Self(self.0 & !other.0)
            }

            /// The flags of `self` and of `other`.
            pub const fn union(self, other: Self) -> Self {
                Self(self.0 | other.0)
            }
        }

        impl core::ops::BitOr for $name {
            type Output = Self;

            fn bitor(self, other: Self) -> Self {
                self.union(other)
            }
        }

        impl core::ops::BitOrAssign for $name {
            fn bitor_assign(&mut self, other: Self) {
                *self = self.union(other);
            }
        }

        impl core::ops::BitAnd for $name {
            type Output = Self;

            fn bitand(self, other: Self) -> Self {
                Self(self.0 & other.0)
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "{}({:#x})", stringify!($name), self.0)
            }
        }
    };
}

/// Declares an enum `$name` whose discriminants are the values of a C enum, with `from_raw`.
macro_rules! c_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident: $int:ty {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $value:expr,
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr($int)]
        $vis enum $name {
            $(
                $(#[$vmeta])*
                $variant = $value,
            )*
        }

        impl $name {
            /// The value numbered `raw` in C, or `None` if the C enum has no such number.
            pub fn from_raw(raw: $int) -> Option<Self> {
                $(
                    if raw == Self::$variant as $int {
                        return Some(Self::$variant);
                    }
                )*
                None
            }
        }
    };
}

pub(crate) use {c_enum, flag_set};

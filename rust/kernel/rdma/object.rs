// SPDX-License-Identifier: GPL-2.0

//! The shape shared by the verbs objects that ib_core allocates for a driver.

/// Declares a verbs object type of driver `T`: ib_core's C struct followed by the driver's data
/// of type `T::$data`, with what every such type needs: conversion from the pointer ib_core
/// passes, initialisation and dropping of the data by the create and destroy trampolines, the
/// device, and dereference to the data.
///
/// ib_core allocates `size_ib_*` bytes (the size of the declared type, from the ops table),
/// zeroed, and frees them after the destroy operation.
///
/// An optional `extra: Type` names a field that the abstraction itself keeps in the object, between
/// the C struct and the driver's data; it starts zeroed (so `Type` must be valid when zeroed, as
/// `Option<Arc<_>>` is), the trampolines set and clear it through `extra_slot`.
macro_rules! driver_object {
    ($(#[$meta:meta])* $name:ident, $raw:ident, $data:ident $(, $extra:ident: $extra_ty:ty)?) => {
        $(#[$meta])*
        ///
        /// # Invariants
        ///
        /// A reference is only handed out while the object is alive with its data initialised,
        /// and the object belongs to a device of `T`.
        #[repr(C)]
        pub struct $name<T: Driver> {
            ib: crate::types::Opaque<crate::bindings::$raw>,
            $($extra: $extra_ty,)?
            data: T::$data,
        }

        $(
        impl<T: Driver> $name<T> {
            /// Returns the abstraction's own field of the object that `ptr` is the C part of.
            ///
            /// # Safety
            ///
            /// `ptr` must be an object of this type allocated by ib_core (zeroed).
            pub(crate) unsafe fn extra_slot(ptr: *mut crate::bindings::$raw) -> *mut $extra_ty {
                let this = ptr.cast::<Self>();
                // SAFETY: The field lies within the allocation (caller guarantee).
                unsafe { core::ptr::addr_of_mut!((*this).$extra) }
            }
        }
        )?

        // SAFETY: The driver's data is `Send + Sync` (required by `Driver`); ib_core manages the
        // C part and calls the driver from any thread.
        unsafe impl<T: Driver> Send for $name<T> {}
        // SAFETY: See `Send`.
        unsafe impl<T: Driver> Sync for $name<T> {}

        impl<T: Driver> $name<T> {
            /// Returns the object that `ptr` (from ib_core) is the C part of.
            ///
            /// # Safety
            ///
            /// `ptr` must be a live object of `T` with initialised data, for `'a`.
            #[allow(dead_code, reason = "not every object type uses it")]
            pub(crate) unsafe fn from_raw<'a>(ptr: *mut crate::bindings::$raw) -> &'a Self {
                // SAFETY: The C struct is the first field of the `repr(C)` type (caller
                // guarantee).
                unsafe { &*ptr.cast::<Self>() }
            }

            /// Initialises the driver's data of an object that ib_core has just allocated.
            ///
            /// # Safety
            ///
            /// `ptr` must be an object of this type without initialised data; the data must be
            /// dropped exactly once, by [`Self::drop_data`].
            pub(crate) unsafe fn init_data(ptr: *mut crate::bindings::$raw, data: T::$data) {
                let this = ptr.cast::<Self>();
                // SAFETY: The data slot lies within the allocation (caller guarantee).
                unsafe { core::ptr::addr_of_mut!((*this).data).write(data) };
            }

            /// Drops the driver's data when ib_core destroys the object.
            ///
            /// # Safety
            ///
            /// `ptr` must be an object of this type with initialised data that nothing uses any
            /// more.
            pub(crate) unsafe fn drop_data(ptr: *mut crate::bindings::$raw) {
                let this = ptr.cast::<Self>();
                // SAFETY: The data is initialised and unused (caller guarantee).
                unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*this).data)) };
            }

            /// Returns the C part.
            #[allow(dead_code, reason = "not every object type uses it")]
            pub(crate) fn raw(&self) -> *mut crate::bindings::$raw {
                self.ib.get()
            }

            /// Returns the device of the object.
            pub fn device(&self) -> &super::device::Device<T> {
                // SAFETY: ib_core sets `device` before calling the driver and never changes it;
                // it is a device of `T` (type invariant) that outlives the object.
                unsafe { super::device::Device::from_raw((*self.ib.get()).device) }
            }
        }

        impl<T: Driver> core::ops::Deref for $name<T> {
            type Target = T::$data;

            fn deref(&self) -> &T::$data {
                &self.data
            }
        }
    };
}

pub(crate) use driver_object;

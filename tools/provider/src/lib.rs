//! libsrdma: the rdma-core (libibverbs) provider of srdma, the Rust software RDMA device.
//!
//! libibverbs loads `libsrdma-rdmav34.so` for devices whose kernel driver is srdma (matched by
//! driver ID, or by name where the driver ID is not known). The provider turns verbs into the
//! uverbs commands of the kernel driver and maps the rings and doorbell records the kernel
//! shares; the layouts come from srdma's ABI header through bindgen.

pub mod ah;
pub mod context;
pub mod cq;
pub mod cq_ex;
pub mod datapath;
pub mod doorbell;
pub mod driver;
pub mod ffi;
pub mod lock;
pub mod mr;
pub mod mw;
pub mod pd;
pub mod qp;
pub mod srq;
pub mod wqe;
pub mod wr;

use driver::{
    verbs_register_driver_34, VerbsDevice, VerbsDeviceOps, VerbsMatchEnt, RDMA_DRIVER_SRDMA,
    VERBS_MATCH_DRIVER_ID, VERBS_MATCH_MODALIAS,
};
use libc::c_void;

/// Sets `errno`, as libibverbs expects from a failed create operation that returns NULL.
pub(crate) fn set_errno(err: i32) {
    // SAFETY: `__errno_location` returns the calling thread's errno.
    unsafe { *libc::__errno_location() = err };
}

/// Runs the create command `cmd` for a new provider object `obj`; on failure frees the object,
/// sets `errno` and returns `None`.
pub(crate) fn create_with<T>(obj: T, cmd: impl FnOnce(*mut T) -> libc::c_int) -> Option<*mut T> {
    let ptr = Box::into_raw(Box::new(obj));
    let ret = cmd(ptr);
    if ret != 0 {
        // SAFETY: `ptr` came from `Box::into_raw` above and was not handed out.
        drop(unsafe { Box::from_raw(ptr) });
        set_errno(ret);
        return None;
    }
    Some(ptr)
}

/// Runs the destroy command `cmd` of `obj` and frees the object if the kernel destroyed it.
///
/// # Safety
///
/// `obj` must come from [`create_with`] and not be used after a successful destroy.
pub(crate) unsafe fn destroy_with<T>(
    obj: *mut T,
    cmd: impl FnOnce() -> libc::c_int,
) -> libc::c_int {
    let ret = cmd();
    if ret == 0 {
        // SAFETY: The kernel object is gone; `obj` came from `create_with` (caller guarantee).
        drop(unsafe { Box::from_raw(obj) });
    }
    ret
}

static MATCH_TABLE: [VerbsMatchEnt; 3] = [
    VerbsMatchEnt {
        driver_data: core::ptr::null(),
        u: RDMA_DRIVER_SRDMA as usize as *const c_void,
        vendor: 0,
        device: 0,
        kind: VERBS_MATCH_DRIVER_ID,
    },
    // Where the device list comes from sysfs, the driver ID is unknown: match the name.
    VerbsMatchEnt {
        driver_data: core::ptr::null(),
        u: c"rdma_device:*Nsrdma*".as_ptr().cast(),
        vendor: 0,
        device: 0,
        kind: VERBS_MATCH_MODALIAS,
    },
    VerbsMatchEnt {
        driver_data: core::ptr::null(),
        u: core::ptr::null(),
        vendor: 0,
        device: 0,
        kind: 0,
    },
];

static DEVICE_OPS: VerbsDeviceOps = VerbsDeviceOps {
    name: c"srdma".as_ptr(),
    match_min_abi_version: ffi::SRDMA_ABI_VERSION,
    match_max_abi_version: ffi::SRDMA_ABI_VERSION,
    match_table: MATCH_TABLE.as_ptr(),
    static_providers: core::ptr::null(),
    match_device: None,
    alloc_context: Some(context::alloc_context),
    import_context: None,
    alloc_device: Some(alloc_device),
    uninit_device: Some(uninit_device),
};

unsafe extern "C" fn alloc_device(_sysfs: *mut c_void) -> *mut VerbsDevice {
    // SAFETY: `verbs_device` is plain C data for which all-zero is the expected initial state.
    let dev: Box<VerbsDevice> = Box::new(unsafe { core::mem::zeroed() });
    Box::into_raw(dev)
}

unsafe extern "C" fn uninit_device(dev: *mut VerbsDevice) {
    // SAFETY: `dev` came from `alloc_device` and libibverbs is done with it.
    drop(unsafe { Box::from_raw(dev) });
}

extern "C" fn register() {
    // SAFETY: The ops and the tables they point to are immutable statics.
    unsafe { verbs_register_driver_34(&DEVICE_OPS) };
}

/// Registers the provider when libibverbs loads the library, as its providers do.
#[used]
#[link_section = ".init_array"]
static REGISTER: extern "C" fn() = register;

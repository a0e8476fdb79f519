//! The doorbell kick of kick mode: srdma's doorbell method, an ioctl on the context's command
//! file, or the empty post_send command where the kernel does not have the method.

use crate::driver::{ibv_cmd_post_send, RDMA_DRIVER_SRDMA};
use crate::ffi::*;
use core::mem::size_of;
use core::ptr::null_mut;
use core::sync::atomic::{AtomicBool, Ordering};
use libc::c_int;

/// The ioctl request of the uverbs ioctl interface, `RDMA_VERBS_IOCTL` (the header's macro is
/// a function-like macro): `_IOWR(RDMA_IOCTL_MAGIC, 1, struct ib_uverbs_ioctl_hdr)` in the
/// ioctl encoding of x86, Arm and most others.
const RDMA_VERBS_IOCTL: libc::c_ulong = {
    const IOC_READ_WRITE: u32 = 3;
    let size = size_of::<ib_uverbs_ioctl_hdr>() as u32;
    ((IOC_READ_WRITE << 30) | (size << 16) | (RDMA_IOCTL_MAGIC << 8) | 1) as libc::c_ulong
};

/// The doorbell method's command: the header and its one attribute, the QP's handle.
#[repr(C)]
struct DoorbellCmd {
    hdr: ib_uverbs_ioctl_hdr,
    handle: ib_uverbs_attr,
}

/// Whether the kernel may have the doorbell method, per context: cleared for good by the
/// first kick that finds it missing (an older module).
pub struct Doorbell {
    method: AtomicBool,
}

impl Default for Doorbell {
    fn default() -> Self {
        Self {
            method: AtomicBool::new(true),
        }
    }
}

impl Doorbell {
    /// Rings the doorbell of `ibqp`: the kernel processes its send queue before this returns,
    /// or, when another context is processing it, leaves the new WQEs to the device's worker.
    /// Returns 0 or an errno value.
    ///
    /// # Safety
    ///
    /// `ibqp` must be a live QP of ours, of the context this belongs to.
    pub unsafe fn kick(&self, ibqp: *mut ibv_qp) -> c_int {
        if self.method.load(Ordering::Relaxed) {
            // SAFETY: `ibqp` is a live QP, and its context outlives it.
            let (fd, handle) = unsafe { ((*(*ibqp).context).cmd_fd, (*ibqp).handle) };
            let mut cmd = DoorbellCmd {
                hdr: ib_uverbs_ioctl_hdr {
                    length: size_of::<DoorbellCmd>() as u16,
                    object_id: uverbs_default_objects_UVERBS_OBJECT_QP as u16,
                    method_id: srdma_ib_qp_methods_SRDMA_IB_METHOD_QP_DOORBELL as u16,
                    num_attrs: 1,
                    driver_id: RDMA_DRIVER_SRDMA,
                    ..Default::default()
                },
                handle: ib_uverbs_attr {
                    attr_id: srdma_ib_qp_doorbell_attrs_SRDMA_IB_ATTR_QP_DOORBELL_HANDLE as u16,
                    flags: UVERBS_ATTR_F_MANDATORY as u16,
                    __bindgen_anon_1: ib_uverbs_attr__bindgen_ty_2 {
                        data: u64::from(handle),
                    },
                    ..Default::default()
                },
            };
            // SAFETY: The command is a valid uverbs ioctl of `length` bytes; the kernel writes
            // only the attributes' flags.
            if unsafe { libc::ioctl(fd, RDMA_VERBS_IOCTL, &mut cmd) } == 0 {
                return 0;
            }
            let err = std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            if err != libc::EPROTONOSUPPORT {
                return err;
            }
            self.method.store(false, Ordering::Relaxed);
        }
        let mut bad = null_mut();
        // SAFETY: An empty post_send command is the older doorbell kick.
        unsafe { ibv_cmd_post_send(ibqp, null_mut(), &mut bad) }
    }
}

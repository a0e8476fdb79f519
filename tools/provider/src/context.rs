//! The device context of a process (`ibv_open_device`): user ABI checks, queries, and the
//! doorbell pages mapped into the process.

use crate::driver::*;
use crate::ffi::*;
use crate::set_errno;
use core::mem::{offset_of, size_of, ManuallyDrop};
use core::ptr::{addr_of_mut, null_mut};
use libc::{c_int, c_void};
use std::sync::Mutex;

/// The provider's context: libibverbs allocates it (calloc) around the `verbs_context`.
#[repr(C)]
pub struct SrdmaContext {
    pub vctx: verbs_context,
    pub state: ManuallyDrop<ContextState>,
}

/// What the provider keeps per context.
pub struct ContextState {
    /// What the kernel told us at alloc_ucontext.
    pub abi: srdma_alloc_ucontext_resp,
    /// Doorbell pages mapped so far: (mmap key, address).
    db_pages: Mutex<Vec<(u64, usize)>>,
    /// The address of the context record in doorbell mode "poll"; 0 in mode "kick".
    pub ctx_db: usize,
    /// How a kick reaches the kernel.
    pub doorbell: crate::doorbell::Doorbell,
}

#[repr(C)]
#[derive(Default)]
struct GetContextResp {
    core: ib_uverbs_get_context_resp,
    drv: srdma_alloc_ucontext_resp,
}

impl SrdmaContext {
    /// # Safety
    ///
    /// `ctx` must be the `ibv_context` of an srdma context.
    pub unsafe fn from_ibv<'a>(ctx: *mut ibv_context) -> &'a SrdmaContext {
        let vctx = ctx
            .cast::<u8>()
            .wrapping_sub(offset_of!(verbs_context, context));
        // SAFETY: The context is embedded in a `verbs_context` inside an `SrdmaContext`.
        unsafe {
            &*vctx
                .sub(offset_of!(SrdmaContext, vctx))
                .cast::<SrdmaContext>()
        }
    }

    pub fn cmd_fd(&self) -> c_int {
        self.vctx.context.cmd_fd
    }

    /// Returns the address of the doorbell record at `loc`, mapping its page on first use.
    pub fn doorbell(&self, loc: &srdma_db_loc) -> Result<*mut u8, i32> {
        let page = self.state.abi.db_page_size as usize;
        if loc.db_offset as usize + self.state.abi.db_record_size as usize > page {
            return Err(libc::EINVAL);
        }
        let mut pages = self.state.db_pages.lock().map_err(|_| libc::EIO)?;
        let base = match pages.iter().find(|(k, _)| *k == loc.db_mmap_key) {
            Some(&(_, addr)) => addr,
            None => {
                let addr = map(self.cmd_fd(), loc.db_mmap_key, page)?;
                pages.push((loc.db_mmap_key, addr as usize));
                addr as usize
            }
        };
        Ok((base + loc.db_offset as usize) as *mut u8)
    }
}

/// Maps `len` bytes of kernel memory published at `key`.
pub fn map(fd: c_int, key: u64, len: usize) -> Result<*mut u8, i32> {
    // SAFETY: A shared mapping of the uverbs file at an offset the kernel gave us.
    let addr = unsafe {
        libc::mmap(
            null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            key as libc::off_t,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    Ok(addr.cast())
}

static CONTEXT_OPS: VerbsContextOps = {
    let mut slots = [core::ptr::null(); 76];
    slots[op::FREE_CONTEXT] = free_context as *const c_void;
    slots[op::QUERY_DEVICE_EX] = query_device_ex as *const c_void;
    slots[op::QUERY_PORT] = query_port as *const c_void;
    slots[op::ALLOC_PD] = crate::pd::alloc_pd as *const c_void;
    slots[op::DEALLOC_PD] = crate::pd::dealloc_pd as *const c_void;
    slots[op::CREATE_CQ] = crate::cq::create_cq as *const c_void;
    slots[op::CREATE_CQ_EX] = crate::cq::create_cq_ex as *const c_void;
    slots[op::QUERY_RT_VALUES] = crate::cq_ex::query_rt_values as *const c_void;
    slots[op::DESTROY_CQ] = crate::cq::destroy_cq as *const c_void;
    slots[op::RESIZE_CQ] = crate::cq::resize_cq as *const c_void;
    slots[op::MODIFY_CQ] = crate::cq::modify_cq as *const c_void;
    slots[op::CREATE_QP] = crate::qp::create_qp as *const c_void;
    slots[op::CREATE_QP_EX] = crate::qp::create_qp_ex as *const c_void;
    slots[op::DESTROY_QP] = crate::qp::destroy_qp as *const c_void;
    slots[op::MODIFY_QP] = crate::qp::modify_qp as *const c_void;
    slots[op::QUERY_QP] = crate::qp::query_qp as *const c_void;
    slots[op::POST_SEND] = crate::datapath::post_send as *const c_void;
    slots[op::POST_RECV] = crate::datapath::post_recv as *const c_void;
    slots[op::POLL_CQ] = crate::datapath::poll_cq as *const c_void;
    slots[op::REQ_NOTIFY_CQ] = crate::datapath::req_notify_cq as *const c_void;
    slots[op::POST_SRQ_RECV] = crate::datapath::post_srq_recv as *const c_void;
    slots[op::REG_MR] = crate::mr::reg_mr as *const c_void;
    slots[op::DEREG_MR] = crate::mr::dereg_mr as *const c_void;
    slots[op::ALLOC_NULL_MR] = crate::mr::alloc_null_mr as *const c_void;
    slots[op::ALLOC_MW] = crate::mw::alloc_mw as *const c_void;
    slots[op::DEALLOC_MW] = crate::mw::dealloc_mw as *const c_void;
    slots[op::BIND_MW] = crate::mw::bind_mw as *const c_void;
    slots[op::CREATE_SRQ] = crate::srq::create_srq as *const c_void;
    slots[op::MODIFY_SRQ] = crate::srq::modify_srq as *const c_void;
    slots[op::QUERY_SRQ] = crate::srq::query_srq as *const c_void;
    slots[op::DESTROY_SRQ] = crate::srq::destroy_srq as *const c_void;
    slots[op::CREATE_AH] = crate::ah::create_ah as *const c_void;
    slots[op::DESTROY_AH] = crate::ah::destroy_ah as *const c_void;
    VerbsContextOps { slots }
};

/// `alloc_context` of `verbs_device_ops`.
///
/// # Safety
///
/// Called by libibverbs with a device of this provider and an open uverbs file.
pub unsafe extern "C" fn alloc_context(
    ibdev: *mut ibv_device,
    cmd_fd: c_int,
    _private_data: *mut c_void,
) -> *mut verbs_context {
    // SAFETY: libibverbs allocates and zeroes `SrdmaContext` and initialises its `vctx`.
    let base = unsafe {
        _verbs_init_and_alloc_context(
            ibdev,
            cmd_fd,
            size_of::<SrdmaContext>(),
            offset_of!(SrdmaContext, vctx) as *mut verbs_context,
            RDMA_DRIVER_SRDMA,
        )
    }
    .cast::<SrdmaContext>();
    if base.is_null() {
        return null_mut();
    }
    // SAFETY: `base` is a live, initialised context; nothing else uses it yet.
    let vctx = unsafe { addr_of_mut!((*base).vctx) };
    let mut resp = GetContextResp::default();
    // SAFETY: `resp` is the core response followed by srdma's, as the kernel writes them.
    let mut ret = unsafe {
        ibv_cmd_get_context(
            vctx,
            null_mut(),
            0,
            (&mut resp as *mut GetContextResp).cast(),
            size_of::<GetContextResp>(),
        )
    };
    if ret == 0 && (resp.drv.abi_version != SRDMA_ABI_VERSION || resp.drv.db_record_size == 0) {
        ret = libc::EPROTO;
    }
    if ret != 0 {
        // SAFETY: Undoes `_verbs_init_and_alloc_context`; `base` came from its calloc.
        unsafe {
            verbs_uninit_context(vctx);
            libc::free(base.cast());
        }
        set_errno(ret);
        return null_mut();
    }
    let state = ContextState {
        abi: resp.drv,
        db_pages: Mutex::new(Vec::new()),
        ctx_db: 0,
        doorbell: crate::doorbell::Doorbell::default(),
    };
    // SAFETY: The state field is zeroed memory that we initialise once.
    unsafe { addr_of_mut!((*base).state).write(ManuallyDrop::new(state)) };
    if resp.drv.doorbell_mode == SRDMA_DB_MODE_POLL {
        // SAFETY: The context is initialised and not shared yet.
        match unsafe { (*base).doorbell(&resp.drv.ctx_db) } {
            // SAFETY: As above.
            Ok(addr) => unsafe { (&mut (*base).state).ctx_db = addr as usize },
            Err(e) => {
                // SAFETY: Undoes the above; nothing else saw the context.
                unsafe { free_context(addr_of_mut!((*vctx).context)) };
                set_errno(e);
                return null_mut();
            }
        }
    }
    // SAFETY: The ops go in last.
    unsafe { verbs_set_ops(vctx, &CONTEXT_OPS) };
    vctx
}

unsafe extern "C" fn free_context(ctx: *mut ibv_context) {
    // SAFETY: libibverbs calls this once for a context made by `alloc_context`.
    let this = unsafe { SrdmaContext::from_ibv(ctx) } as *const SrdmaContext as *mut SrdmaContext;
    // SAFETY: Nothing uses the context any more: unmap what it mapped, drop its state, then
    // free what libibverbs allocated.
    unsafe {
        let state = &mut (*this).state;
        let page = state.abi.db_page_size as usize;
        if let Ok(pages) = state.db_pages.lock() {
            for &(_, addr) in pages.iter() {
                libc::munmap(addr as *mut c_void, page);
            }
        }
        ManuallyDrop::drop(state);
        verbs_uninit_context(addr_of_mut!((*this).vctx));
        libc::free(this.cast());
    }
}

unsafe extern "C" fn query_device_ex(
    ctx: *mut ibv_context,
    input: *const ibv_query_device_ex_input,
    attr: *mut ibv_device_attr_ex,
    attr_size: usize,
) -> c_int {
    let mut resp = ib_uverbs_ex_query_device_resp::default();
    let mut resp_size = size_of::<ib_uverbs_ex_query_device_resp>();
    // SAFETY: Arguments as libibverbs passed them; `resp` is a full response buffer.
    let ret = unsafe {
        ibv_cmd_query_device_any(
            ctx,
            input,
            attr,
            attr_size,
            (&mut resp as *mut ib_uverbs_ex_query_device_resp).cast(),
            &mut resp_size,
        )
    };
    if ret != 0 {
        return ret;
    }
    let fw = resp.base.fw_ver;
    let text = format!("{}.{}.{}", fw >> 32, (fw >> 16) & 0xffff, fw & 0xffff);
    // SAFETY: `attr` is at least an `ibv_device_attr` (checked by ibv_cmd_query_device_any).
    let dst = unsafe { &mut (*attr).orig_attr.fw_ver };
    for (d, s) in dst.iter_mut().zip(text.bytes().chain(core::iter::once(0))) {
        *d = s as libc::c_char;
    }
    0
}

unsafe extern "C" fn query_port(
    ctx: *mut ibv_context,
    port: u8,
    attr: *mut ibv_port_attr,
) -> c_int {
    let mut cmd = [0u64; 3];
    // SAFETY: `cmd` is a zeroed `struct ibv_query_port` (24 bytes), which the library fills.
    unsafe {
        ibv_cmd_query_port(
            ctx,
            port,
            attr,
            cmd.as_mut_ptr().cast(),
            size_of::<[u64; 3]>(),
        )
    }
}

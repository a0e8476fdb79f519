// Generates the Rust declarations of the C headers the provider uses, srdma's ABI header
// (include/uapi/rdma/srdma-abi.h, the one source of truth shared with the kernel) among them.

use std::{env, path::PathBuf};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let uapi = manifest.join("../../include/uapi");
    println!("cargo:rerun-if-changed=wrapper.h");
    println!(
        "cargo:rerun-if-changed={}",
        uapi.join("rdma/srdma-abi.h").display()
    );
    println!("cargo:rustc-link-lib=ibverbs");

    let bindings = bindgen::Builder::default()
        .header("wrapper.h")
        .clang_arg(format!("-I{}", uapi.display()))
        .allowlist_type(
            "ibv_.*|ib_uverbs_.*|srdma_.*|uverbs_default_objects|verbs_context|_compat_ibv_port_attr",
        )
        .allowlist_var("SRDMA_.*|IBV_.*|IB_USER_VERBS_.*|UVERBS_ATTR_F_MANDATORY|RDMA_IOCTL_MAGIC")
        .allowlist_function("ibv_(query_gid|query_gid_type)")
        .derive_default(true)
        .layout_tests(true)
        .generate_comments(false)
        .generate()
        .expect("bindgen failed on wrapper.h");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("bindings.rs");
    bindings.write_to_file(out).expect("cannot write bindings");
}

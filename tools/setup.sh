#!/usr/bin/env bash
# Install what srdma's build, VM and tests need on Debian 12; idempotent: only what is missing.
set -euo pipefail
trap 'rc=$?; echo "setup: failed (exit $rc) at tools/setup.sh:$LINENO: $BASH_COMMAND" >&2
echo "setup: fix the cause above and run make again; set-up resumes where it stopped" >&2' ERR

# The same default as tools/kernel/build.sh and the Makefile: under SRDMA_CACHE.
TOOLS_DIR=${SRDMA_TOOLS:-${SRDMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/srdma}/tools}

# python3-sphinx, python3-yaml, graphviz: the kernel's docs build (make htmldocs, make lint), as
# the tree's scripts/sphinx-pre-install asks for HTML.
APT_PKGS=(linux-source-6.12 rustc-web rust-web-src rust-web-clippy rustfmt-web
	clang-16 lld-16 llvm-16 libclang-16-dev qemu-system-x86
	ibverbs-utils rdma-core rdmacm-utils perftest python3-pyverbs libibverbs-dev
	busybox-static pahole flex bison libelf-dev libssl-dev bc cpio kmod
	xz-utils zstd iproute2 rsync python3-pip python3-venv make gcc linux-perf
	python3-ply python3-git python3-sphinx python3-yaml graphviz)

missing=()
for p in "${APT_PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing Debian packages: ${missing[*]}"
	SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The provider and bindgen-cli build with cargo: rustup's where present, else Debian's, which
# matches rustc-web.
if ! command -v cargo >/dev/null 2>&1; then
	echo "setup: installing Debian's cargo-web"
	SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends cargo-web
fi

mkdir -p "$TOOLS_DIR"
if ! "$TOOLS_DIR/bin/bindgen" --version 2>/dev/null | grep -q '0.73.2'; then
	echo "setup: building bindgen-cli 0.73.2"
	LIBCLANG_PATH=/usr/lib/llvm-16/lib cargo install bindgen-cli --version 0.73.2 --locked --root "$TOOLS_DIR"
fi

if [ ! -x "$TOOLS_DIR/venv/bin/vng" ]; then
	echo "setup: installing virtme-ng 1.42"
	python3 -m venv --system-site-packages "$TOOLS_DIR/venv" 2>/dev/null || /usr/bin/python3 -m venv --system-site-packages "$TOOLS_DIR/venv"
	"$TOOLS_DIR/venv/bin/pip" install -q 'virtme-ng==1.42'
fi

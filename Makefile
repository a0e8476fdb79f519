# SPDX-License-Identifier: GPL-2.0-only
# srdma: the one entry point. `make demo` and `make check` do all set-up themselves.

SHELL := /bin/bash
export SRDMA_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/srdma
export SRDMA_BUILD ?= $(SRDMA_CACHE)/build
export SRDMA_TOOLS ?= $(SRDMA_CACHE)/tools
# The bench kernel: production-like (tools/kernel/bench.config), in its own build directory.
export SRDMA_BENCH_BUILD ?= $(SRDMA_CACHE)/build-bench
OUT ?= $(CURDIR)/out

PROVIDER := $(SRDMA_CACHE)/provider/libsrdma-rdmav34.so
LIBIBVERBS_DIR := /usr/lib/x86_64-linux-gnu/libibverbs

.PHONY: all setup kernel bench-kernel provider ktest vm demo check check-2vm fresh bench profile lint fmt htmldocs series install clean help
all: kernel provider

help:
	@echo "make demo    build everything, boot the VM, create srdma0 and show it"
	@echo "make check   build everything and run all tests (ends with 'N passed, N failed')"
	@echo "make fresh   make demo, then make check, from an empty cache (SRDMA_CACHE=\$$(mktemp -d))"
	@echo "make check-2vm  srdma in one VM, rxe in another, over a QEMU dgram link (opt-in, slow)"
	@echo "make bench   perftest on srdma, rxe and siw in the VM: bench/results.md, bench/plot.svg"
	@echo "             (BENCH_QUICK=1: a few minutes, results in out/bench only)"
	@echo "make profile perf profile of one perftest run on the bench kernel: out/profile/report.txt"
	@echo "             (PROFILE_VARIANT=srdma PROFILE_TEST=ib_send_lat PROFILE_SIZE=8 PROFILE_ITERS=10000)"
	@echo "make kernel  build the kernel and modules (incremental) in \$$SRDMA_BUILD"
	@echo "make ktest   build and install the kselftests from the kernel tree (run by make check)"
	@echo "make bench-kernel  build the bench kernel (no debug options) in \$$SRDMA_BENCH_BUILD"
	@echo "make provider  build the rdma-core provider (libsrdma-rdmav34.so)"
	@echo "make vm      interactive shell in the VM; make vm CMD='...' runs one command"
	@echo "make install install the provider system-wide (libibverbs' directory, /etc/libibverbs.d)"
	@echo "make lint    rustfmt, clippy, rustdoc, make series' checkpatch, make htmldocs (make fmt formats)"
	@echo "make htmldocs  Documentation/infiniband (srdma.rst) as HTML in \$$SRDMA_BUILD/Documentation/output"
	@echo "make series  the project as patches on Linux 6.12, checked by checkpatch --strict: out/series"
	@echo "make clean   remove the build directory and test output"

setup:
	@tools/setup.sh

kernel: setup
	@tools/kernel/build.sh

bench-kernel: setup
	@SRDMA_BUILD="$(SRDMA_BENCH_BUILD)" SRDMA_KCONFIG_EXTRA=tools/kernel/bench.config \
		tools/kernel/build.sh

provider: setup
	@cd tools/provider && CARGO_TARGET_DIR="$(SRDMA_CACHE)/provider-target" \
		LIBCLANG_PATH=/usr/lib/llvm-16/lib cargo build --release --quiet
	@mkdir -p "$(dir $(PROVIDER))"
	@cp "$(SRDMA_CACHE)/provider-target/release/libsrdma.so" "$(PROVIDER)"

# CMD is one shell command line for the guest: quoted here so that the host's shell passes it
# whole (";", "&&", "|" and redirections run in the VM), and taken unexpanded ($(value)).
vm: kernel provider ktest
	@tools/vm/run.sh $(if $(CMD),--shell '$(subst ','\'',$(value CMD))')

demo: kernel provider
	@tools/vm/run.sh --timeout 600 -- $(CURDIR)/tools/demo.sh

# The kselftests (selftests/, at tools/testing/selftests/drivers/infiniband/srdma in the kernel
# tree), built and installed the kernel's way in $(SRDMA_BUILD)/kselftest/kselftest_install.
ktest: kernel
	@tools/kernel/build.sh --kselftest > "$(SRDMA_BUILD)/kselftest-build.log" 2>&1 || \
		{ tail -30 "$(SRDMA_BUILD)/kselftest-build.log"; exit 1; }

check: kernel provider ktest
	@tools/check.sh "$(OUT)/check"

# Opt-in: srdma in one guest and rxe (SRDMA_2VM_PEER=srdma: srdma) in another, joined by a
# QEMU dgram netdev (tools/vm/two.sh).
check-2vm: kernel provider ktest
	@tools/vm/two.sh "$(OUT)/check-2vm"

# The README's promise from nothing: both commands in a throwaway cache (tools/fresh.sh).
fresh:
	@tools/fresh.sh

# Benchmarks (bench/README.md): one boot of the bench kernel, raw logs in out/bench.
bench: bench-kernel provider
	@tools/bench/bench.sh "$(OUT)/bench"

# One perftest run under `perf record` in the bench kernel (tools/bench/profile.sh).
PROFILE_VARIANT ?= srdma
PROFILE_TEST ?= ib_send_lat
PROFILE_SIZE ?= 8
PROFILE_ITERS ?= 10000
PROFILE_ARGS ?=
profile: bench-kernel provider
	@rm -rf "$(OUT)/profile"
	@SRDMA_BUILD="$(SRDMA_BENCH_BUILD)" SRDMA_VM_LOG="$(OUT)/profile/dmesg.log" tools/vm/run.sh \
		--timeout 900 --append tsc=reliable -- env PROFILE_SYSTEM_MAP="$(SRDMA_BENCH_BUILD)/System.map" \
		PROFILE_ARGS="$(PROFILE_ARGS)" \
		$(CURDIR)/tools/bench/profile.sh "$(OUT)/profile" $(PROFILE_VARIANT) \
		$(PROFILE_TEST) $(PROFILE_SIZE) $(PROFILE_ITERS)
	@echo "profile: $(OUT)/profile/report.txt"

install: provider
	install -D -m 0644 "$(PROVIDER)" "$(DESTDIR)$(LIBIBVERBS_DIR)/libsrdma-rdmav34.so"
	install -D -m 0644 tools/provider/srdma.driver "$(DESTDIR)/etc/libibverbs.d/srdma.driver"

lint: setup
	@tools/lint.sh

fmt: setup
	@tools/kernel/build.sh -s prepare >/dev/null
	@find rust drivers -name '*.rs' | xargs /usr/bin/rustfmt --config-path "$(SRDMA_CACHE)/linux-source-6.12/.rustfmt.toml"

# The project as a patch series on Debian's Linux 6.12 source, in a git tree of its own in
# $(SRDMA_CACHE)/series-tree, checked by the kernel's checkpatch.pl (tools/series/series.sh).
series:
	@tools/series/series.sh "$(OUT)/series"

# The kernel's InfiniBand book with srdma.rst in it (Sphinx, as the kernel builds it). -E reads
# every file each time, so that a warning shows on every run, not only after an edit.
htmldocs: setup
	@tools/kernel/build.sh SPHINXDIRS=infiniband SPHINXOPTS="-q -E" htmldocs
	@echo "htmldocs: $(SRDMA_BUILD)/Documentation/output/infiniband/srdma.html"

clean:
	rm -rf "$(SRDMA_BUILD)" "$(OUT)"

# SPDX-License-Identifier: GPL-2.0-only
# srdma: the one entry point. `make demo` and `make check` do all set-up themselves.

SHELL := /bin/bash
export SRDMA_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/srdma
export SRDMA_BUILD ?= $(SRDMA_CACHE)/build
export SRDMA_TOOLS ?= $(SRDMA_CACHE)/tools
OUT ?= $(CURDIR)/out

.PHONY: all setup kernel vm demo check lint fmt clean help
all: kernel

help:
	@echo "make demo    build everything, boot the VM, create srdma0 and show it"
	@echo "make check   build everything and run all tests (ends with 'N passed, N failed')"
	@echo "make kernel  build the kernel and modules (incremental) in \$$SRDMA_BUILD"
	@echo "make vm      interactive shell in the VM; make vm CMD='...' runs one command"
	@echo "make lint    rustfmt and clippy on the Rust code (make fmt formats it)"
	@echo "make clean   remove the build directory and test output"

setup:
	@tools/setup.sh

kernel: setup
	@tools/kernel/build.sh

vm: kernel
	@tools/vm/run.sh $(if $(CMD),-- $(CMD))

demo: kernel
	@tools/vm/run.sh --timeout 600 -- $(CURDIR)/tools/demo.sh

check: kernel
	@tools/check.sh "$(OUT)/check"

lint: setup
	@tools/lint.sh

fmt: setup
	@tools/kernel/build.sh -s prepare >/dev/null
	@find rust drivers -name '*.rs' | xargs /usr/bin/rustfmt --config-path "$(SRDMA_CACHE)/linux-source-6.12/.rustfmt.toml"

clean:
	rm -rf "$(SRDMA_BUILD)" "$(OUT)"

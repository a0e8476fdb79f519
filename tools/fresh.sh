#!/usr/bin/env bash
# The set-up from nothing, in a throwaway cache (SRDMA_CACHE), so that a warm cache cannot
# hide a missing step.
#   fresh.sh --configure   tools, kernel source, in-tree hooks and config; no kernel build
#                          (a few minutes; `make check` runs it on every run)
#   fresh.sh               the README's promise whole: `make demo`, then `make check`, in one
#                          empty cache (about 30 minutes here; `make fresh`)
# The throwaway cache is removed at the end unless SRDMA_FRESH_KEEP=1. Debian packages are
# system-wide: tools/setup.sh installs the missing ones either way.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-full}
cache=$(mktemp -d "${TMPDIR:-/tmp}/srdma-fresh.XXXXXX")
cleanup() {
	if [ "${SRDMA_FRESH_KEEP:-0}" = 1 ]; then
		echo "fresh: the cache stays in $cache"
	else
		rm -rf "$cache"
	fi
}
trap cleanup EXIT
export SRDMA_CACHE=$cache
unset SRDMA_BUILD SRDMA_TOOLS SRDMA_PROVIDER SRDMA_KCONFIG_EXTRA
start=$(date +%s)

case $mode in
--configure)
	"$top/tools/setup.sh"
	"$top/tools/kernel/build.sh" --no-build
	config=$cache/build/.config
	for want in CONFIG_RUST=y CONFIG_RUST_RDMA_ABSTRACTIONS=y CONFIG_RDMA_SRDMA=m; do
		grep -qx "$want" "$config" || { echo "fresh: $want is not in $config" >&2; exit 1; }
	done
	echo "fresh: set-up from an empty cache configured the kernel in $(($(date +%s) - start)) s"
	;;
full)
	out=${OUT:-$top/out}/fresh
	mkdir -p "$out"
	echo "fresh: make demo and make check from the empty cache $cache (logs in $out)"
	rc=0
	make -C "$top" demo > >(tee "$out/demo.log") 2>&1 || rc=$?
	if [ "$rc" -ne 0 ] || ! grep -q '^demo: done' "$out/demo.log"; then
		echo "fresh: make demo failed (exit $rc); see $out/demo.log" >&2
		exit 1
	fi
	demo_s=$(($(date +%s) - start))
	make -C "$top" check OUT="$out" > >(tee "$out/check.log") 2>&1 || rc=$?
	echo "fresh: make demo took $demo_s s, make check $(($(date +%s) - start - demo_s)) s"
	[ "$rc" -eq 0 ] || { echo "fresh: make check failed (exit $rc); see $out/check.log" >&2; exit 1; }
	;;
*)
	echo "usage: fresh.sh [--configure]" >&2
	exit 2
	;;
esac

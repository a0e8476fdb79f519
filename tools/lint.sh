#!/usr/bin/env bash
# `make lint`: rustfmt, clippy and rustdoc on the kernel tree with our Rust code, the kernel's
# docs build of Documentation/infiniband (a warning fails when it names srdma), and the patch
# series through checkpatch --strict (make series); any warning fails.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
"$top/tools/kernel/build.sh" RUSTFMT=/usr/bin/rustfmt rustfmtcheck > "$log" 2>&1 || status=1
grep -A12 '^Diff in' "$log"
[ "$status" -eq 0 ] || { echo "lint: rustfmt: run 'make fmt'"; exit 1; }
"$top/tools/kernel/build.sh" CLIPPY=1 > "$log" 2>&1 || status=1
if grep -q -E '^(warning|error)' "$log"; then
	grep -E -A14 '^(warning|error)' "$log"
	status=1
fi
[ "$status" -eq 0 ] || { echo "lint: clippy found problems"; exit 1; }
# rustdoc of the kernel crate (our abstractions' documentation and its links): no warnings.
"$top/tools/kernel/build.sh" rustdoc > "$log" 2>&1 || status=1
if grep -q -E '^(warning|error)' "$log"; then
	grep -E -A14 '^(warning|error)' "$log"
	status=1
fi
[ "$status" -eq 0 ] || { echo "lint: make rustdoc found problems"; exit 1; }
# -E: every file read again, so the warnings show even when nothing changed.
"$top/tools/kernel/build.sh" SPHINXDIRS=infiniband SPHINXOPTS="-q -E" htmldocs > "$log" 2>&1 || status=1
if grep -E '(WARNING|ERROR|SEVERE|CRITICAL)' "$log" | grep srdma; then
	status=1
fi
[ "$status" -eq 0 ] || { grep -v '^  PARSE ' "$log" | tail -20; echo "lint: htmldocs: Documentation/infiniband/srdma.rst has problems (make htmldocs)"; exit 1; }
# The patch series a maintainer would apply, through checkpatch --strict.
"$top/tools/series/series.sh" "${SRDMA_SERIES_OUT:-$top/out/series}" > "$log" 2>&1 || {
	cat "$log"
	echo "lint: make series: checkpatch --strict does not accept the series"
	exit 1
}
tail -1 "$log"
cd "$top/tools/provider"
export CARGO_TARGET_DIR="${SRDMA_CACHE:-$HOME/.cache/srdma}/provider-target" LIBCLANG_PATH=/usr/lib/llvm-16/lib
cargo fmt --check || { echo "lint: provider: run 'cargo fmt' in tools/provider"; exit 1; }
cargo clippy --release --all-targets --quiet -- -D warnings || { echo "lint: provider: clippy"; exit 1; }
echo "lint: rustfmt, clippy, rustdoc, htmldocs and checkpatch clean"

#!/usr/bin/env bash
# Prepare the kernel tree (unpack once, overlay the checkout, apply the in-tree hooks, configure)
# and build it incrementally.  Usage: build.sh [make targets...], e.g.
#   build.sh SPHINXDIRS=infiniband htmldocs: the documentation (srdma.rst) as HTML.
#   build.sh --no-build: prepare and configure only (make check's set-up-from-nothing proof).
#   build.sh --kselftest: build the srdma kselftests against the built kernel and install them
#   in $SRDMA_BUILD/kselftest/kselftest_install (make ktest).
set -euo pipefail
# A failing step says which one, and where to look, instead of a bare make error.
trap 'rc=$?; echo "kernel: failed (exit $rc) at tools/kernel/build.sh:$LINENO: $BASH_COMMAND" >&2' ERR

top=$(cd "$(dirname "$0")/../.." && pwd)
build_too=1 kselftest=0
if [ "${1:-}" = --no-build ]; then
	build_too=0
	shift
elif [ "${1:-}" = --kselftest ]; then
	kselftest=1
	shift
fi
cache=${SRDMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/srdma}
src=$cache/linux-source-6.12
build=${SRDMA_BUILD:-$cache/build}
tarball=/usr/src/linux-source-6.12.tar.xz
tools=${SRDMA_TOOLS:-$cache/tools}
patches=$top/tools/kernel/patches
# The config: srdma.config, plus the fragment SRDMA_KCONFIG_EXTRA names (debug builds, in
# their own SRDMA_BUILD: e.g. tools/kernel/kasan.config).
mkdir -p "$cache" "$build"
fragment=$build/.srdma-fragment.want
# One line per symbol, the last one said (the extra fragment overrides srdma.config).
cat "$top/tools/kernel/srdma.config" ${SRDMA_KCONFIG_EXTRA:+"$SRDMA_KCONFIG_EXTRA"} |
	sed -n 's/^\(# \)\?\(CONFIG_[A-Za-z0-9_]*\)\([= ].*\)$/\2 &/p' |
	awk '{ sym = $1; sub(/^[^ ]* /, ""); if (!(sym in line)) order[n++] = sym; line[sym] = $0 }
		END { for (i = 0; i < n; i++) print line[order[i]] }' > "$fragment"

# 1. Unpack Debian's source once.
if [ ! -f "$src/.srdma-unpacked" ]; then
	[ -f "$tarball" ] || { echo "kernel: $tarball is missing: run tools/setup.sh (make setup)" >&2; exit 1; }
	echo "kernel: unpacking $tarball into $cache"
	rm -rf "$src"
	tar -C "$cache" -xf "$tarball"
	touch "$src/.srdma-unpacked"
fi

# 2. The in-tree hooks: keep a copy of what is applied so a changed series is reverted first.
applied=$src/.srdma-patches
if ! diff -rq "$patches" "$applied" >/dev/null 2>&1; then
	# Files whose content ends up unchanged keep their mtime, so they are not rebuilt.
	saved=$(mktemp -d)
	# What the series touches now and what the applied copy touched (none on a fresh tree).
	files=$(cat "$patches"/*.patch $([ -d "$applied" ] && echo "$applied"/*.patch) |
		sed -n 's|^+++ b/||p' | sort -u)
	for f in $files; do
		[ -e "$src/$f" ] && mkdir -p "$saved/$(dirname "$f")" && cp -p "$src/$f" "$saved/$f"
	done
	if [ -d "$applied" ]; then
		for p in $(ls -r "$applied"/*.patch); do
			patch -s -d "$src" -p1 -R < "$p"
		done
		rm -rf "$applied"
	fi
	for p in "$patches"/*.patch; do
		echo "kernel: applying $(basename "$p")"
		patch -s -d "$src" -p1 --no-backup-if-mismatch < "$p"
	done
	for f in $files; do
		if [ -e "$saved/$f" ] && cmp -s "$saved/$f" "$src/$f"; then
			touch -r "$saved/$f" "$src/$f"
		fi
	done
	rm -rf "$saved"
	cp -r "$patches" "$applied"
fi

# 3. Overlay our tree. --checksum leaves a file whose content is unchanged alone, so it is not
# rebuilt; a changed one is written with the time of the copy, not its own: a file edited while
# a build ran is older than the objects that build made from its earlier content.
rsync -a --no-times --checksum "$top/rust/" "$src/rust/"
rsync -a --no-times --checksum "$top/drivers/" "$src/drivers/"
rsync -a --no-times --checksum "$top/include/" "$src/include/"
rsync -a --no-times --checksum "$top/Documentation/" "$src/Documentation/"
# The top-level Kconfig holds all of srdma's symbols (abstractions and driver); the tree has it
# as the driver's Kconfig, which the hooks source from drivers/infiniband/Kconfig.
rsync -a --no-times --checksum "$top/Kconfig" "$src/drivers/infiniband/sw/srdma/Kconfig"
# The kselftests, where the kernel's selftests Makefile finds TARGETS=drivers/infiniband/srdma.
mkdir -p "$src/tools/testing/selftests/drivers/infiniband/srdma"
rsync -a --no-times --checksum "$top/selftests/" \
	"$src/tools/testing/selftests/drivers/infiniband/srdma/"

kmake=(make -C "$src" O="$build" LLVM=-16 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
	BINDGEN="$tools/bin/bindgen" CLIPPY_DRIVER=/usr/bin/clippy-driver RUSTFMT=/usr/bin/rustfmt
	-j"$(nproc)")

# Whether every line of the fragment holds in .config; says which do not.
config_holds() {
	local line ok=0
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*) grep -qx "$line" "$build/.config" ;;
		"# CONFIG_"*" is not set") sym=${line#"# "}; ! grep -q "^${sym%% *}=" "$build/.config" ;;
		*) true ;;
		esac || { echo "kernel: config did not take: $line" >&2; ok=1; }
	done < "$fragment"
	return $ok
}

# 4. Configure when the fragment changed or the config lost part of it: tinyconfig + fragment
# + olddefconfig.
if ! cmp -s "$fragment" "$build/.srdma-fragment" || ! config_holds 2>/dev/null; then
	echo "kernel: configuring (tinyconfig + srdma.config${SRDMA_KCONFIG_EXTRA:+ + $SRDMA_KCONFIG_EXTRA})"
	"${kmake[@]}" -s tinyconfig >/dev/null
	(cd "$build" && KCONFIG_CONFIG=.config "$src/scripts/kconfig/merge_config.sh" -m -O "$build" .config "$fragment" >/dev/null)
	"${kmake[@]}" -s olddefconfig >/dev/null
	missing=0
	config_holds || missing=1
	if [ "$missing" -ne 0 ]; then
		if ! grep -qx CONFIG_RUST=y "$build/.config"; then
			echo "kernel: Rust is not available to the kernel build; it says:" >&2
			"${kmake[@]}" rustavailable >&2 || true
			echo "kernel: run tools/setup.sh (make setup) with the same SRDMA_CACHE/SRDMA_TOOLS" >&2
		fi
		exit 1
	fi
	cp "$fragment" "$build/.srdma-fragment"
fi

[ "$build_too" = 1 ] || exit 0
if [ "$kselftest" = 1 ]; then
	# The kernel's documented way, not `make kselftest-install`: under the kernel's own make
	# the kverbs module's nested kernel make would inherit its half-set-up environment.
	exec make -C "$src/tools/testing/selftests" O="$build" TARGETS=drivers/infiniband/srdma \
		KDIR="$build" LLVM=-16 -j"$(nproc)" install
fi
if [ $# -eq 0 ]; then
	set -- all
fi
"${kmake[@]}" "$@"
# A changed Kconfig makes the build sync the config, and a sync that found no usable Rust
# (a make without this script's RUSTC and BINDGEN) drops CONFIG_RUST and with it srdma:
# configure again, once, rather than leave a kernel without srdma.
if ! config_holds; then
	[ -z "${SRDMA_RECONFIGURED:-}" ] || exit 1
	echo "kernel: the configuration lost srdma's symbols: configuring again" >&2
	rm -f "$build/.srdma-fragment"
	SRDMA_RECONFIGURED=1 exec "$0" "$@"
fi

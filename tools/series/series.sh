#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# srdma as a patch series against Debian's Linux 6.12 source (make series).
#
# Usage: series.sh [OUTDIR]       (default: out/series of the checkout)
#
# 1. The base: /usr/src/linux-source-6.12.tar.xz, unpacked once into its own git tree
#    ($SRDMA_CACHE/series-tree, not the build tree of tools/kernel/build.sh) and committed as
#    it is.  A later run starts again from that commit; a changed tarball is unpacked anew.
# 2. The series: the files build.sh lays over the kernel source (rust/, drivers/, include/,
#    the hooks of tools/kernel/patches) plus the documentation, the selftests and a
#    MAINTAINERS entry, split into the patches of tools/series/plan, each one committed with
#    its message from tools/series/messages/ by the author of the checkout's git config.
#    SERIES_REV=<commit> takes the checkout's files from that commit instead of the work tree.
# 3. git format-patch --cover-letter into OUTDIR, then the tree's scripts/checkpatch.pl
#    --strict on every patch: any error, warning or check fails the run and is printed
#    (OUTDIR/checkpatch.log keeps them all).
set -euo pipefail
trap 'rc=$?; echo "series: failed (exit $rc) at tools/series/series.sh:$LINENO: ${BASH_COMMAND%%$'"'\\n'"'*}" >&2' ERR

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tools/series
cache=${SRDMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/srdma}
tree=$cache/series-tree
final=$cache/series-final
out=${1:-$top/out/series}
tarball=/usr/src/linux-source-6.12.tar.xz
hooks=$top/tools/kernel/patches

# checkpatch types not checked, each with its reason:
#   FILE_PATH_CHANGES: "added file(s), does MAINTAINERS need updating?" fires on every patch
#     that adds a file but does not touch MAINTAINERS; the last patch adds the entries, and
#     the get_maintainer.pl check at the end proves that every file added has a maintainer.
ignore=FILE_PATH_CHANGES

name=$(git -C "$top" config user.name || true)
email=$(git -C "$top" config user.email || true)
if [ -z "$name" ] || [ -z "$email" ]; then
	echo "series: git user.name and user.email are not set for $top; the patches need an" >&2
	echo "series: author and a Signed-off-by. Set them, e.g.:" >&2
	echo "series:   git -C $top config user.name 'Your Name'" >&2
	echo "series:   git -C $top config user.email you@example.org" >&2
	exit 1
fi
[ -f "$tarball" ] || { echo "series: $tarball is missing: run tools/setup.sh (make setup)" >&2; exit 1; }
debver=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo unknown)

# Every commit of the series has the date of the checkout's last commit, so that the same
# checkout gives the same patches.
date=$(git -C "$top" log -1 --format=%cI)
export GIT_AUTHOR_NAME=$name GIT_AUTHOR_EMAIL=$email GIT_COMMITTER_NAME=$name
export GIT_COMMITTER_EMAIL=$email GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date
g() { git -C "$tree" -c gc.auto=0 -c core.autocrlf=false "$@"; }

# 1. The base tree.
stamp="$(stat -c '%s %Y' "$tarball") $debver"
if [ "$(cat "$tree/.git/srdma-base" 2>/dev/null)" != "$stamp" ] ||
	! g rev-parse -q --verify refs/tags/base >/dev/null; then
	echo "series: unpacking $tarball (linux-source-6.12 $debver) into $tree"
	rm -rf "$tree" "$tree.tmp"
	mkdir -p "$tree.tmp"
	tar -C "$tree.tmp" -xf "$tarball"
	mv "$tree.tmp/linux-source-6.12" "$tree"
	rmdir "$tree.tmp"
	kver=$(make -s --no-print-directory -C "$tree" kernelversion 2>/dev/null)
	g init -q -b series
	echo "series: committing the base tree (v$kver)"
	g add -A -f
	g commit -q -F - <<-EOF
	Linux $kver as shipped by Debian (linux-source-6.12 $debver)

	This is the content of $tarball from Debian's
	linux-source-6.12 package, version $debver, unpacked as it is:
	the v$kver stable kernel with the patches Debian applies to it. It is
	not a commit of the mainline or stable git trees; the srdma series
	applies on top of it.
	EOF
	g tag base
	echo "$stamp" > "$tree/.git/srdma-base"
fi
kver=$(make -s --no-print-directory -C "$tree" kernelversion 2>/dev/null)
g checkout -q -f -B series base
g clean -q -f -d -x

# 2. The final state of every file the series adds or changes: $final/PATH, with the base
# tree's version of a changed file in $final/.base/PATH.
src=$top
if [ -n "${SERIES_REV:-}" ]; then
	src=$(mktemp -d)
	git -C "$top" archive "$SERIES_REV" rust drivers include Documentation selftests tools/kernel/patches |
		tar -C "$src" -xf -
	hooks=$src/tools/kernel/patches
	[ -n "$(git -C "$top" ls-tree "$SERIES_REV" Kconfig)" ] && git -C "$top" show "$SERIES_REV:Kconfig" > "$src/Kconfig"
fi
rm -rf "$final"
mkdir -p "$final"
# The checkout's files as git sees them: tracked or new, not ignored (no build products).
listed() {
	if [ "$src" = "$top" ]; then
		git -C "$top" ls-files -co --exclude-standard -- "$@" |
			while read -r f; do [ -f "$top/$f" ] && echo "$f"; done
	else
		(cd "$src" && find "$@" -type f)
	fi
}
listed rust drivers include Documentation/infiniband/srdma.rst | rsync -a --files-from=- "$src/" "$final/"
# The selftests go where the kernel's selftests live.
selftests=tools/testing/selftests/drivers/infiniband/srdma
mkdir -p "$final/$selftests"
listed selftests | sed 's|^selftests/||' | rsync -a --files-from=- "$src/selftests/" "$final/$selftests/"
if [ -f "$src/Kconfig" ]; then
	# Where tools/kernel/build.sh puts the project's Kconfig in the tree.
	kconfig=$(sed -n 's|.*"\$top/Kconfig" "\$src/\([^"]*\)".*|\1|p' "$top/tools/kernel/build.sh" | head -1)
	[ -n "$kconfig" ] || { echo "series: $src/Kconfig exists but tools/kernel/build.sh does not say where it goes" >&2; exit 1; }
	mkdir -p "$final/$(dirname "$kconfig")"
	cp "$src/Kconfig" "$final/$kconfig"
fi
for p in "$hooks"/*.patch; do
	for f in $(sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$p"); do
		[ -e "$final/$f" ] || { mkdir -p "$final/$(dirname "$f")" && cp "$tree/$f" "$final/$f"; }
	done
	patch -s -d "$final" -p1 --no-backup-if-mismatch -r - < "$p"
done
(cd "$tree" && cp --parents MAINTAINERS net/ipv4/Kconfig "$final/")
python3 - "$final" "$name <$email>" "${kconfig:-}" <<'EOF'
import sys
final, who, kconfig = sys.argv[1:]

# The project Kconfig: the driver's symbol stays in the driver's Kconfig, each abstraction's
# goes where its kind lives upstream, so that each patch has its symbol in a Kconfig the tree
# sources; the header comment, about the checkout, stays out.
if kconfig:
    spdx, *lines = open(f"{final}/{kconfig}", encoding="utf-8").read().splitlines()
    blocks, name = {}, None
    for line in lines:
        if line.startswith("config "):
            name = line.split()[1]
            blocks[name] = ""
        if name:
            blocks[name] += line + "\n"
    blocks = {k: v.rstrip("\n") + "\n" for k, v in blocks.items()}

    def insert(path, before=None, after=None, block=""):
        lines = open(f"{final}/{path}", encoding="utf-8").read().split("\n\n")
        at = next(i for i, chunk in enumerate(lines)
                  if chunk.startswith(f"config {before or after}\n"))
        lines.insert(at if before else at + 1, block.rstrip("\n"))
        open(f"{final}/{path}", "w", encoding="utf-8").write("\n\n".join(lines))

    insert("drivers/infiniband/Kconfig", before="INFINIBAND_VIRT_DMA",
           block=blocks.pop("RUST_RDMA_ABSTRACTIONS"))
    insert("net/ipv4/Kconfig", after="NET_UDP_TUNNEL",
           block=blocks.pop("RUST_UDP_TUNNEL_ABSTRACTIONS"))
    open(f"{final}/{kconfig}", "w", encoding="utf-8").write(
        spdx + "\n" + "\n".join(blocks.values()))

# MAINTAINERS: the entries, each where its name sorts.
entries = {
    "RUST [RDMA]": ["L:\tlinux-rdma@vger.kernel.org", "L:\trust-for-linux@vger.kernel.org",
                    "S:\tMaintained", "F:\trust/helpers/rdma.c", "F:\trust/kernel/rdma.rs",
                    "F:\trust/kernel/rdma/"],
    "SOFT-RDMA DRIVER IN RUST (srdma)": [
        "L:\tlinux-rdma@vger.kernel.org", "S:\tMaintained",
        "F:\tDocumentation/infiniband/srdma.rst", "F:\tdrivers/infiniband/sw/srdma/",
        "F:\tinclude/trace/events/srdma.h", "F:\tinclude/uapi/rdma/srdma-abi.h",
        "F:\ttools/testing/selftests/drivers/infiniband/srdma/"],
}
path = f"{final}/MAINTAINERS"
lines = open(path, encoding="utf-8").read().splitlines(keepends=True)
for title, body in entries.items():
    block = [title + "\n", f"M:\t{who}\n"] + [b + "\n" for b in body] + ["\n"]
    for i in range(1, len(lines) - 1):
        header = (lines[i - 1] == "\n" and lines[i][:1].isalnum()
                  and lines[i + 1][:1].isalpha() and lines[i + 1][1:3] == ":\t")
        if header and lines[i].rstrip("\n") > title and lines[i].startswith(title[:1]):
            lines[i:i] = block
            break
    else:
        sys.exit(f"series: no place in MAINTAINERS for {title}")
open(path, "w", encoding="utf-8").writelines(lines)
EOF
(cd "$final" && find . -path ./.base -prune -o -type f -printf '%P\n') | while read -r f; do
	if [ -e "$tree/$f" ]; then
		mkdir -p "$final/.base/$(dirname "$f")"
		cp "$tree/$f" "$final/.base/$f"
	fi
done

# 3. One commit per patch of the plan.
keys=$(awk '$2 == "commit" { print $1 }' "$here/plan")
n=0
for key in $keys; do
	n=$((n + 1))
	[ -f "$here/messages/$key" ] || { echo "series: tools/series/messages/$key is missing" >&2; exit 1; }
	files=$(python3 "$here/stage.py" "$here/plan" "$final" "$tree" "$key")
	[ -n "$files" ] || { echo "series: patch $key has nothing in it" >&2; exit 1; }
	# shellcheck disable=SC2086 # one path a line, no spaces in kernel paths
	g add -f -- $files
	g commit -q -s -F "$here/messages/$key"
done
# The last commit is the checkout's files, every one.
(cd "$final" && find . -path ./.base -prune -o -type f -printf '%P\n') | while read -r f; do
	cmp -s "$final/$f" "$tree/$f" || { echo "series: $f differs from what the checkout has" >&2; exit 1; }
done
[ "$src" = "$top" ] || rm -rf "$src"

# 4. The patches, and checkpatch on each.
rm -rf "$out"
mkdir -p "$out"
cover=$(mktemp)
sed -e "s|@KVER@|$kver|g" -e "s|@DEBVER@|$debver|g" "$here/cover-letter" > "$cover"
g config branch.series.description "$(cat "$cover")"
rm -f "$cover"
g format-patch -q --cover-letter --cover-from-description=subject -o "$out" base..series
echo "series: $n patches and a cover letter in $out (on Debian's linux-source-6.12 $debver, v$kver)"

# checkpatch checks SPDX license tags with scripts/spdxcheck.py, which needs Python's ply and
# git modules; without them it passes every tag silently, so insist on them.  Debian's
# python3 first, whatever else PATH has.
export PATH=/usr/bin:$PATH
if ! python3 -c 'import ply, git' 2>/dev/null; then
	echo "series: checkpatch's SPDX check needs python3-ply and python3-git:" >&2
	echo "series:   apt-get install python3-ply python3-git" >&2
	exit 1
fi
log=$out/checkpatch.log
: > "$log"
bad=0
for p in "$out"/[0-9][0-9][0-9][0-9]-*.patch; do
	case "$p" in */0000-cover-letter.patch) continue ;; esac
	res=$(cd "$tree" && perl scripts/checkpatch.pl --strict --show-types --ignore "$ignore" \
		--no-color "$p" 2>&1) || true
	total=$(printf '%s\n' "$res" | sed -n 's/^total: //p' | tail -1)
	# The trace header is laid out as include/trace/events/ lays them out (TP_STRUCT__entry(
	# on a line of its own, fields indented by a tab), which --strict flags in every in-tree
	# RDMA trace header too (rdma_core.h: 36 and 20 of these); only those two checks, and only
	# there, are let through.
	kept=$(printf '%s\n' "$res" | awk 'BEGIN { RS = ""; ORS = "\n\n" }
		/^CHECK:(OPEN_ENDED_LINE|PARENTHESIS_ALIGNMENT):/ &&
			/FILE: include\/trace\/events\/srdma\.h:/ { next }
		/^(ERROR|WARNING|CHECK):/ { print }')
	[ -n "$total" ] || kept="checkpatch printed no total: $res"
	printf '%s: %s\n' "$(basename "$p")" "$total" | tee -a "$log"
	if [ -n "$kept" ]; then
		bad=$((bad + 1))
		printf '%s\n' "$kept" >> "$log"
	fi
done

# What FILE_PATH_CHANGES would ask: every added file has a maintainer in the final tree.
unmaintained=$(g diff --name-only --diff-filter=A base series | while read -r f; do
	(cd "$tree" && perl scripts/get_maintainer.pl --no-git --no-git-fallback --no-rolestats \
		--nol --no-tree -f "$f" 2>/dev/null) | grep -q . || echo "$f"
done)
if [ -n "$unmaintained" ]; then
	bad=$((bad + 1))
	printf 'files without a maintainer:\n%s\n' "$unmaintained" | tee -a "$log"
fi

if [ "$bad" -ne 0 ]; then
	echo "series: checkpatch --strict did not accept $bad of the patches:" >&2
	cat "$log" >&2
	exit 1
fi
echo "series: checkpatch --strict: all $n patches clean"

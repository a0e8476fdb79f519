#!/usr/bin/env bash
# Boot the kernel built by tools/kernel/build.sh in QEMU (virtme-ng, host root filesystem) and
# run one command in it, or an interactive shell when no command is given.
#   run.sh [--rwdir DIR]... [--append KERNEL_ARG]... [--qemu-opts 'QEMU ARGS']...
#          [--timeout SECONDS] [--] [COMMAND...]
#   run.sh [OPTIONS] --shell 'SHELL COMMAND LINE'   (run whole by bash in the guest)
# Exits with the command's status. The guest's kernel log is saved to $SRDMA_VM_LOG
# (default: <build>/vm-dmesg.log) when the command ends.
set -euo pipefail

cache=${SRDMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/srdma}
build=${SRDMA_BUILD:-$cache/build}
tools=${SRDMA_TOOLS:-$cache/tools}
vng=$tools/venv/bin/vng
export PATH="$tools/venv/bin:$PATH"
dmesg_log=${SRDMA_VM_LOG:-$build/vm-dmesg.log}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
memory=${SRDMA_VM_MEMORY:-2G}
timeout=0
shell=

rwdirs=()  # and other options passed through to vng
while [ $# -gt 0 ]; do
	case "$1" in
	--rwdir) rwdirs+=(--rwdir "$2"); shift 2 ;;
	--append) rwdirs+=(--append "$2"); shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--qemu-opts) rwdirs+=("--qemu-opts=$2"); shift 2 ;;
	--shell) shell=$2; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done

if [ -n "$shell" ]; then
	set -- /bin/bash -c "$shell"
fi

[ -f "$build/arch/x86/boot/bzImage" ] || { echo "vm: no kernel in $build; run 'make kernel'" >&2; exit 2; }

# KVM only where it really works: a usable /dev/kvm is not enough on hosts whose nested
# virtualisation cannot run a stock kernel, so it is opt-in (SRDMA_KVM=1).
accel=(--disable-kvm)
if [ "${SRDMA_KVM:-0}" = 1 ] && [ -w /dev/kvm ]; then
	accel=()
fi

logdir=$(dirname "$dmesg_log")
mkdir -p "$logdir"
rm -f "$dmesg_log"
# The guest mounts fresh tmpfs on /tmp and friends: share the checkout explicitly so that a
# checkout anywhere (even under /tmp) is visible at the same path, writable for out/.
# Two virtio-net NICs joined by a QEMU hub (udev may rename them): a wire between two RDMA devices
# whose frames the virtio-net device reads from guest memory itself (srdma_wire_virtio.sh).
args=(--run "$build" "${accel[@]}" --cpus 2 --memory "$memory" --network loop --rwdir "$top")
case "$logdir/" in
"$top"/*) ;;
*) args+=(--rwdir "$logdir") ;;
esac
args+=("${rwdirs[@]}")

if [ $# -eq 0 ]; then
	exec "$vng" "${args[@]}"
fi

# The guest command runs under a wrapper that saves the kernel log when it ends. It goes
# through a script file: virtme-ng passes --exec on the kernel command line, which is short.
script=$logdir/vm-cmd.sh
{
	echo '#!/bin/bash'
	# The provider is found without touching the system's directories.
	provider=${SRDMA_PROVIDER:-$cache/provider/libsrdma}
	if [ -e "$provider-rdmav34.so" ]; then
		printf 'export RDMAV_DRIVERS=%q\n' "$provider"
	fi
	printf 'export SRDMA_BUILD=%q\n' "$build"
	# The installed kselftests (make ktest): their shell helpers and test programs serve tools
	# that run in the VM, whichever kernel it boots (the bench kernel has none of its own).
	ksft=kselftest/kselftest_install/drivers/infiniband/srdma
	if [ -d "$build/$ksft" ]; then
		ksft=$build/$ksft
	else
		ksft=$cache/build/$ksft
	fi
	printf 'export SRDMA_KSELFTEST=%q\n' "$ksft"
	# The per-test limit of the kselftests (tools/vm/selftests.sh), for slow kernels (KASAN).
	if [ -n "${SRDMA_TEST_TIMEOUT:-}" ]; then
		printf 'export SRDMA_TEST_TIMEOUT=%q\n' "$SRDMA_TEST_TIMEOUT"
	fi
	printf 'exec %q %q %s\n' "$here/guest.sh" "$dmesg_log" "$(printf '%q ' "$@")"
} > "$script"
cmd="/bin/bash $script"
if [ "$timeout" -gt 0 ]; then
	# QEMU is a child of vng: on timeout the whole tree goes, not just vng.
	killtree() {
		local child
		for child in $(pgrep -P "$2"); do
			killtree "$1" "$child"
		done
		kill "-$1" "$2" 2>/dev/null
	}
	"$vng" "${args[@]}" --exec "$cmd" &
	vm=$!
	(
		sleep "$timeout"
		echo "vm: timed out after $timeout seconds" >&2
		killtree TERM "$vm"
		sleep 10
		killtree KILL "$vm"
	) &
	watchdog=$!
	trap 'killtree KILL "$vm"; exit 130' INT TERM
	rc=0
	wait "$vm" || rc=$?
	killtree KILL "$watchdog"
	exit "$rc"
fi
exec "$vng" "${args[@]}" --exec "$cmd"

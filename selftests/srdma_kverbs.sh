#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Kernel callers: kverbs/srdma_kverbs.ko creates and destroys every verbs object on srdma0
# through the kernel verbs API when it is loaded; its KTAP lines come back through the log.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip insmod
load_srdma

# Built by the Makefile's TEST_GEN_MODS_DIR.
mod=$(dirname "$0")/kverbs/srdma_kverbs.ko
if [ ! -e "$mod" ]; then
	fail "kverbs/srdma_kverbs.ko was built" "no $mod"
	finish
fi

A=sk0 B=sk1
cleanup() {
	rmmod srdma_kverbs 2>/dev/null
	rdma link delete srdma0 2>/dev/null
	ip link del "$A" 2>/dev/null
}
trap cleanup EXIT
cleanup
setup_veth "$A" "$B" 10.41.0.1/24 10.41.0.2/24 || skip_all "cannot create a veth pair"
rdma link add srdma0 type srdma netdev "$A" || skip_all "cannot create srdma0"

# ib_mad's QP1 and its PD and CQ are there from the start; the module must add nothing.
before=$(rdma res show srdma0 | grep -o 'pd [0-9]* cq [0-9]* qp [0-9]*')
mark="srdma_kverbs start $$"
echo "$mark" > /dev/kmsg
insmod "$mod" dev=srdma0
rc=$?
lines=$(dmesg | sed -n "/$mark/,\$p" | sed -n 's/^\[[ 0-9.]*\] \(\(not \)\?ok [0-9]* .*\)/\1/p')
[ -n "$lines" ] || fail "the module printed its checks"
while IFS= read -r line; do
	case $line in
	"ok "*) ok "kernel caller: ${line#ok [0-9]* }" ;;
	"not ok "*) fail "kernel caller: ${line#not ok [0-9]* }" ;;
	esac
done <<<"$lines"
check_eq "module loaded (all checks passed)" 0 "$rc"
check_eq "rdma res: nothing left on srdma0" "$before" \
	"$(rdma res show srdma0 | grep -o 'pd [0-9]* cq [0-9]* qp [0-9]*')"
check "device can be deleted" rdma link delete srdma0

finish

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Loading and unloading srdma.ko: on demand by rdma link add, with devices present, repeatedly.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip modprobe
modinfo srdma >/dev/null 2>&1 || skip_all "srdma.ko is not installed for this kernel"

A=sm0 B=sm1
cleanup() {
	ip link del "$A" 2>/dev/null
	ip link del sm2 2>/dev/null
}
trap cleanup EXIT
cleanup

loaded() { grep -q '^srdma ' /proc/modules; }
refcnt() { cat /sys/module/srdma/refcnt; }

check "modinfo: alias rdma-link-srdma" sh -c 'modinfo -F alias srdma | grep -qx rdma-link-srdma'
check "modinfo: license GPL" sh -c 'modinfo -F license srdma | grep -qx GPL'

modprobe -r srdma 2>/dev/null
check "insmod" modprobe srdma
check "loaded" loaded
check_eq "refcount 0 without devices" 0 "$(refcnt)"
check "rmmod" modprobe -r srdma
check "unloaded" eval '! loaded'

setup_veth "$A" "$B" 10.21.0.1/24 10.21.0.2/24 || skip_all "cannot create a veth pair"
check "rdma link add loads srdma on demand" rdma link add srdma0 type srdma netdev "$A"
check "loaded by rdma link add" loaded

check "second device" rdma link add srdma1 type srdma netdev "$B"
check_eq "two devices" "srdma0 srdma1" "$(rdma_devs | sort | xargs)"
check "rmmod with devices present" modprobe -r srdma
check "rmmod removed the devices" no_rdma_devs
check "the netdevs stay" ip link show "$A"

ok_rounds=1
for i in $(seq 1 10); do
	modprobe srdma || { ok_rounds=0; break; }
	rdma link add srdma0 type srdma netdev "$A" || { ok_rounds=0; break; }
	modprobe -r srdma || { ok_rounds=0; break; }
done
check_eq "10 rounds of load, add, unload" 1 "$ok_rounds"
check "no device left" no_rdma_devs
check "module gone" eval '! loaded'

# The module parameter doorbell_mode: the mode new devices start in.
check "modinfo -p: doorbell_mode, a uint" sh -c \
	'modinfo -p srdma | grep -q "^doorbell_mode:.*(uint)"'
check "load with doorbell_mode=1" modprobe srdma doorbell_mode=1
check_eq "/sys/module/srdma/parameters/doorbell_mode" 1 \
	"$(cat /sys/module/srdma/parameters/doorbell_mode 2>/dev/null)"
check "add a device" rdma link add srdma0 type srdma netdev "$A"
check_eq "the device starts in poll mode" poll "$(cat /sys/class/infiniband/srdma0/doorbell_mode)"
check "its attribute still switches it" sh -c \
	'echo kick > /sys/class/infiniband/srdma0/doorbell_mode'
check_eq "now kick" kick "$(cat /sys/class/infiniband/srdma0/doorbell_mode)"
check "unload" modprobe -r srdma
check "load with doorbell_mode=7" modprobe srdma doorbell_mode=7
check "add a device" rdma link add srdma0 type srdma netdev "$A"
check_eq "an unknown mode falls back to kick" kick \
	"$(cat /sys/class/infiniband/srdma0/doorbell_mode)"
check "unload" modprobe -r srdma
check "load without parameters" modprobe srdma
check_eq "doorbell_mode defaults to 0 (kick)" 0 "$(cat /sys/module/srdma/parameters/doorbell_mode)"
check "unload" modprobe -r srdma

# After all that, a device still works normally.
check "load again" modprobe srdma
check "add after the rounds" rdma link add srdma0 type srdma netdev "$A"
check_eq "port ACTIVE" ACTIVE "$(port_state srdma0)"
check "delete" rdma link delete srdma0
check "final rmmod" modprobe -r srdma

finish

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Captures RoCEv2 frames (UDP port 4791) arriving at a network interface and prints each as
one line of hex, from the IP header on: the packets that the KUnit tests of the RoCEv2 headers
and ICRC (rust/kernel/rdma/roce.rs) compare against.

    capture.py IFACE COUNT SECONDS
"""
import socket
import sys
import time

ETH_P_ALL = 0x0003
iface, count, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
s.bind((iface, 0))
s.settimeout(0.5)
print("ready", file=sys.stderr, flush=True)
end = time.time() + seconds
got = 0
while got < count and time.time() < end:
    try:
        frame, addr = s.recvfrom(65535)
    except socket.timeout:
        continue
    if addr[2] == socket.PACKET_OUTGOING:
        continue
    ethertype = int.from_bytes(frame[12:14], "big")
    ip = frame[14:]
    if ethertype == 0x0800 and ip[9] == 17:
        udp = ip[(ip[0] & 0xF) * 4:]
    elif ethertype == 0x86DD and ip[6] == 17:
        udp = ip[40:]
    else:
        continue
    if int.from_bytes(udp[2:4], "big") != 4791:
        continue
    print(ip.hex(), flush=True)
    got += 1

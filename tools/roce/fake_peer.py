#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Answers one ibv_{rc,ud}_pingpong client with a made-up peer (QPN, PSN and GID given), so
that the client's device sends its packets to an address where only a capture listens.

    fake_peer.py GID_HEX QPN PSN
"""
import socket
import sys

gid, qpn, psn = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3], 0)
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", 18515))
srv.listen(1)
print("ready", file=sys.stderr, flush=True)
conn, _ = srv.accept()
conn.settimeout(30)
msg = b""
while len(msg) < 52:
    chunk = conn.recv(52 - len(msg))
    if not chunk:
        break
    msg += chunk
print("client:", msg.rstrip(b"\0").decode(), file=sys.stderr, flush=True)
conn.sendall(b"%04x:%06x:%06x:%s\0" % (0, qpn, psn, gid.encode()))
# The client waits for nothing more from a server before it sends.
try:
    conn.recv(16)
except OSError:
    pass

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A hostile RoCEv2 peer: for one ibv_rc_pingpong client, or for a QP whose memory it reads.

It answers the client's TCP exchange as a server would (its own QPN and PSN, GID = SRC_IP),
then fires forged RoCEv2 packets at the client's QP from a raw IP socket, and at the end sends
what a real server would: the ACK of the client's SEND and a SEND of SIZE bytes (i & 0xff), so
that a device that dropped every forged packet completes the client's one iteration.

    srdma_forge.py PORT SRC_IP DST_IP SIZE HW_COUNTERS_DIR [MODE [OTHER_IP]]

MODE "drops" (the default) sends only packets a receiver must drop silently and prints how
many of each kind it sent ("icrc N", ...); with OTHER_IP (another address of the client's
network device) also the ACK of the client's SEND and the expected SEND, addressed there.
MODE "fatal" sends, at the expected PSN, an RDMA WRITE with a huge length and a bad rkey,
which the QP must refuse with a NAK and fail on.

    srdma_forge.py read SRC_IP DST_IP TARGET_COMMAND...

runs TARGET_COMMAND (selftests/srdma_target.c, an RC QP exposing memory for READ and WRITE),
connects to it and asks for READs, honest and forged duplicates among them; prints one line per
request ("NAME PSN,PSN,..." : the PSNs of the READ responses that came back, "-" for none, and
"bad_bytes NAME" where a response's bytes are not the memory's), then the target's last line.

    srdma_forge.py replay SRC_IP DST_IP TARGET_COMMAND...

has the target read 64 KiB of our memory (its "read" command) and answers as a responder
does that loses a response while a duplicate of the READ waits in its queue: the responses
up to a gap, a pause that makes the target ask again, the rest bar one, then what a queued
duplicate makes it send again (responses the target has, slowly, for longer than the target's
timer with all its retries) and only then the missing one and those after it. Prints the
READ requests the target sent ("requests PSN,PSN,...", relative to its first), then the
target's "read STATUS BYTES" and last line.

    srdma_forge.py stale SRC_IP DST_IP TARGET_COMMAND...

does the same up to the pause, then sends the first response again and again and nothing
else; prints "stale SECONDS" (how long until the target gave up, at most 50), then the
target's lines as above.

    srdma_forge.py gap SRC_IP DST_IP TARGET_COMMAND...

answers READs of the target as a responder does whose responses the network loses, each
time long before the target's timer (268 ms) could run out: a READ of 16 KiB with its sixth
response lost; two READs of 2 KiB of which every response to the first is lost; and a READ of
2 KiB whose responses are lost, with a SEND behind it that is acknowledged, and then the READ
asked again lost as well. Prints, for each, the READ requests the target sent within 0.2 s of
the responses after the loss ("gap PSN,PSN,...", "later ..." and "between ...", relative to
its first request, "-" for none; for the last also "between_timer ..." for the first that
came in the 0.6 s after, on the timer, and "between_sends N", the SENDs that came again in all) and,
after answering the READs, the target's "read ..." line; then the target's last line.

    srdma_forge.py rnr SRC_IP DST_IP TARGET_COMMAND...

has the target send two SENDs and answers as a responder without a receive for the second
does when the ACK of the first was lost: an RNR NAK (timer 10.24 ms) that names the second and
so acknowledges the first, and an ACK of the second as soon as it comes again. Prints
"rnr_wait MS" (from the NAK to the second SEND's next copy, "-" if none came within a second),
"resent PSN,PSN,..." (what the target sent again until half a second after the ACK, relative to
its first SEND, "-" for nothing), then the target's "send ..." line and last line.

    srdma_forge.py abandon SRC_IP DST_IP TARGET_COMMAND...

leaves a SEND unfinished at three targets, each with two receives posted: the first packet
of a SEND of 2 KiB (which takes the first receive) and then, at the first target, nothing (the
target moves its QP to the error state itself), at the second a SEND ONLY where the rest of
the SEND belongs, at the third a READ request there (each an invalid request, which fails the
QP). Prints "NAME RECEIVES" for each, RECEIVES as the target printed them after the error
("WR:STATUS,..."), and "NAME_answers ANSWERS" with the answers to the request after the first
packet, as atomic_write prints them.

    srdma_forge.py uc SRC_IP DST_IP TARGET_COMMAND...

loses a packet of a UC SEND at two UC targets (TARGET_COMMAND run with "uc"), each with two
receives posted: the first packet of a SEND of 2 KiB (which takes the first receive), then,
past the lost one, a SEND ONLY at the first target and the SEND's next packet at the second.
Prints "NAME RECEIVES" as abandon does, after the target moved its QP to the error state.

    srdma_forge.py closed SRC_IP DST_IP TARGET_COMMAND...

sends, each to a target of its own with one receive posted, a request the QP's attributes
refuse whatever the memory allows: to a QP that grants no remote access (TARGET_COMMAND run
with "closed") an RDMA WRITE of 0 bytes, one with immediate data and a READ of 0 bytes; to a
QP with max_dest_rd_atomic 0 ("nord") a READ of 64 bytes; to a QP that grants both a READ
and an RDMA WRITE (no payload) of 2^31 + 1 bytes, longer than any message. Prints "NAME
ANSWERS RECEIVES MEMORY STATE": the answers as atomic_write prints them, the receive as abandon
prints them after the target moved its QP to the error state, then the target's memory and QP
state.

    srdma_forge.py seqnak SRC_IP DST_IP TARGET_COMMAND...

has the target send one SEND and answers every copy of it with a PSN sequence error NAK that
names it, as a broken or hostile responder could for ever. Prints "copies N" (how many copies
came, at most 30), then the target's "send ..." line and last line.

    srdma_forge.py nakack SRC_IP DST_IP TARGET_COMMAND...

has the target send one SEND of 4 KiB (four packets) and answers its first copy with a PSN
sequence error NAK that names the third packet, which acknowledges the two before it; then
stays silent until the target's timer has sent the SEND again, and acknowledges it. Prints
"resent PSN,PSN,..." (the packets that came after the NAK until the last one had come twice,
relative to the first), then the target's "send ..." line and last line.

    srdma_forge.py atomic_write SRC_IP DST_IP TARGET_COMMAND...

sends RDMA ATOMIC WRITEs to targets run with TARGET_COMMAND: an honest one, its duplicate with
another value, then a READ of the word; and, each to a target of its own, forged ones (a
payload of 4 or 16 bytes, a RETH length of 4, a pad, an unaligned address, a wrong rkey).
Prints "NAME ANSWERS" for the honest ones ("aw", "aw_dup", "read_back" with the bytes read),
each answer "OPCODE/PSN/SYNDROME" in hex (the syndrome "ack" for any ACK, "-" for no answer),
then "aw_end MEMORY STATE" (the target's first 16 bytes in hex and its QP state at the end);
and "NAME ANSWERS MEMORY STATE" for each forged one.

    srdma_forge.py unsent SRC_IP DST_IP TARGET_COMMAND...

has the target send one SEND of 1 MiB (1024 packets at its path MTU of 1024), more than its
window lets go before an acknowledgment, and, before acknowledging anything, sends an ACK of
the SEND's last PSN, one the target has not sent yet; then answers as a real responder does
(an ACK of all that arrived in order whenever a packet asks for one, or nothing came for half
a second). Prints "held N" (the packets that came before the forged ACK), "all N" (the distinct
PSNs that came in all, at most 1024), then the target's "send ..." line and last line.

    srdma_forge.py coalesce SRC_IP DST_IP TARGET_COMMAND...

sends requests in bursts (the shell holds the packets back and lets them go together, so that
they reach the target's receive thread in few batches): 40 one-byte RDMA WRITEs asking for an
ACK (byte i + 1 at offset i), then WRITEs at PSNs 0x28 and 0x29 (relative to the first), a
READ of 16 bytes at 0x2a, WRITEs at 0x2b, 0x2c and 0x2d (the last asking for no ACK), a
duplicate of the fourth WRITE with another byte, and a WRITE with a wrong rkey at 0x2e.
Prints "stream N LAST MSN GAP ORDER" for the first burst: the ACKs that came, the PSN (hex)
and MSN of the last, the most requests one ACK stood for and "ordered" when every answer was
an ACK, their PSNs rising and each MSN the count of WRITEs up to it ("disordered" if not);
then "mixed ANSWERS" for the second burst as atomic_write prints them, but for the ACKs of
0x28 and 0x2b, which come or not as the batches fall ("mixed_all" has them); then the
target's memory and QP state as "end HEX N".
"""
import select
import socket
import struct
import subprocess
import sys
import time
import zlib

TARGET_MODES = ("read", "replay", "stale", "gap", "rnr", "atomic_write", "abandon", "closed",
                "seqnak", "nakack", "uc", "unsent", "coalesce")
MODE = (
    sys.argv[1] if sys.argv[1] in TARGET_MODES else (sys.argv[6] if len(sys.argv) > 6 else "drops")
)
if MODE in TARGET_MODES:
    SRC, DST, TARGET = sys.argv[2], sys.argv[3], sys.argv[4:]
else:
    PORT, SRC, DST, SIZE = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    COUNTERS = sys.argv[5]
    OTHER_DST = sys.argv[7] if len(sys.argv) > 7 else None
OUR_QPN, OUR_PSN = 0x123, 0x1000
PKEY = 0xFFFF
RC_ACK, RC_SEND_ONLY, RC_WRITE_ONLY, RC_READ_REQUEST = 0x11, 0x04, 0x0A, 0x0C
RC_SEND_FIRST = 0x00
RC_WRITE_ONLY_IMM = 0x0B
UC_SEND_FIRST, UC_SEND_MIDDLE, UC_SEND_ONLY = 0x20, 0x21, 0x24
RC_ATOMIC_WRITE = 0x1D
RC_READ_FIRST, RC_READ_MIDDLE, RC_READ_LAST, RC_READ_ONLY = 0x0D, 0x0E, 0x0F, 0x10
READ_RESPONSES = range(0x0D, 0x11)
# What a requester may get back: READ responses, ACK (or NAK), ATOMIC ACKNOWLEDGE.
ANSWERS = range(0x0D, 0x13)


def exchange():
    """The pingpong exchange: returns the client's QPN and PSN."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", PORT))
    srv.listen(1)
    conn, _ = srv.accept()
    conn.settimeout(30)
    msg = b""
    while len(msg) < 52:
        chunk = conn.recv(52 - len(msg))
        if not chunk:
            break
        msg += chunk
    _lid, qpn, psn = msg.split(b":")[:3]
    gid = b"00000000000000000000ffff" + socket.inet_aton(SRC).hex().encode()
    conn.sendall(b"%04x:%06x:%06x:%s\0" % (0, OUR_QPN, OUR_PSN, gid))
    return conn, int(qpn, 16), int(psn, 16)


def ip_udp(src, payload_len, ident, dst=None):
    total = 20 + 8 + payload_len
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, ident, 0x4000, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(dst or DST))
    udp = struct.pack("!HHHH", 0xC123, 4791, 8 + payload_len, 0)
    return ip, udp


def icrc(ip, udp, transport):
    masked_ip = bytearray(ip)
    masked_ip[1] = 0xFF
    masked_ip[8] = 0xFF
    masked_ip[10:12] = b"\xff\xff"
    masked_udp = bytearray(udp)
    masked_udp[6:8] = b"\xff\xff"
    masked = bytearray(transport)
    if len(masked) > 4:
        masked[4] = 0xFF
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + masked_ip + masked_udp + masked))


def bth(opcode, qpn, psn, payload_len, ack_req=True, tver=0, pad=None, pkey=PKEY):
    pad = (-payload_len) & 3 if pad is None else pad
    return struct.pack("!BBHII", opcode, (pad << 4) | tver, pkey, qpn & 0xFFFFFF,
                       (0x80000000 if ack_req else 0) | (psn & 0xFFFFFF))


ident = 0x4242


def send(sock, transport, src=SRC, bad_icrc=False, truncate_to=None, dst=None):
    """Sends transport headers + payload (+ pad) with their ICRC from `src` to `dst` (DST)."""
    global ident
    ident = (ident + 1) & 0xFFFF or 1
    ip, udp = ip_udp(src, len(transport) + 4, ident, dst)
    crc = icrc(ip, udp, transport)
    if bad_icrc:
        crc = bytes(b ^ 0x5A for b in crc)
    body = transport + crc
    if truncate_to is not None:
        body = body[:truncate_to]
        ip, udp = ip_udp(src, len(body), ident, dst)
        body = body[:-4] + icrc(ip, udp, body[:-4]) if len(body) >= 4 else body
    sock.sendto(ip + udp + body, (dst or DST, 0))


def sent_pkts():
    with open(COUNTERS + "/sent_pkts") as f:
        return int(f.read())


def raw_sockets():
    """A socket to send forged IP packets from and one to see the UDP datagrams that arrive."""
    return (socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW),
            socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP))


def arrivals(rx, secs):
    """The RoCEv2 packets from DST to OUR_QPN that arrive within secs, one at a time as they
    come: (opcode, flags, psn, transport headers and payload with the ICRC)."""
    end = time.time() + secs
    while time.time() < end:
        if not select.select([rx], [], [], max(0, end - time.time()))[0]:
            return
        pkt = rx.recv(65536)
        ihl = (pkt[0] & 0xF) * 4
        if socket.inet_ntoa(pkt[12:16]) != DST:
            continue
        if struct.unpack("!H", pkt[ihl + 2:ihl + 4])[0] != 4791:
            continue
        t = pkt[ihl + 8:]
        opcode, flags, _pkey, qpn, psn = struct.unpack("!BBHII", t[:12])
        if qpn & 0xFFFFFF == OUR_QPN:
            yield opcode, flags, psn & 0xFFFFFF, t


def answers(rx, secs):
    """The answers to OUR_QPN that arrive within secs: [(opcode, psn, syndrome, payload)], the
    syndrome None for a READ RESPONSE MIDDLE (no AETH)."""
    got = []
    for opcode, flags, psn, t in arrivals(rx, secs):
        if opcode not in ANSWERS:
            continue
        syndrome = None if opcode == 0x0E else t[12]
        hdr = 12 + (0 if syndrome is None else 4)
        pad = (flags >> 4) & 3
        got.append((opcode, psn, syndrome, t[hdr:len(t) - 4 - pad]))
    return got


def show(got):
    """Answers as "OPCODE/PSN/SYNDROME ..." in hex, the syndrome "ack" for any ACK and "-" for
    none (a READ RESPONSE MIDDLE); "-" for no answer."""
    return " ".join("%x/%x/%s" % (op, psn, "-" if syn is None else
                                  "ack" if syn >> 5 == 0 else "%02x" % syn)
                    for op, psn, syn, _ in got) or "-"


def read_responses(rx, secs):
    """The READ responses to OUR_QPN that arrive within secs: [(psn, payload)]."""
    return [(psn, data) for op, psn, _, data in answers(rx, secs) if op in READ_RESPONSES]


class Target:
    """A run of TARGET_COMMAND, its QP connected to OUR_QPN at OUR_PSN."""

    def __init__(self, *args):
        self.proc = subprocess.Popen(TARGET + list(args), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        fields = self.proc.stdout.readline().split()
        self.qpn, _psn, self.rkey, self.va = (int(x, 16) for x in fields)
        gid = "00000000000000000000ffff" + socket.inet_aton(SRC).hex()
        self.proc.stdin.write("%x %x %s\n" % (OUR_QPN, OUR_PSN, gid))
        self.proc.stdin.flush()
        if self.proc.stdout.readline().strip() != "connected":
            print("target did not connect", flush=True)
            sys.exit(1)

    def finish(self):
        """Lets the target end; returns the lines it printed after connecting."""
        self.proc.stdin.write("done\n")
        self.proc.stdin.flush()
        out, _ = self.proc.communicate(timeout=30)
        return out.strip().splitlines()

    def echo_line(self, none):
        """Prints the target's next line, `none` if it printed nothing more."""
        print(self.proc.stdout.readline().strip() or none, flush=True)

    def echo_last(self):
        """Lets the target end and prints the last line it printed."""
        out = self.finish()
        print(out[-1] if out else "target printed nothing", flush=True)

    def post_receives(self, n, name):
        """Has the target post n receives; False (and the target killed, `name` said to be
        "not posted") if it did not."""
        self.proc.stdin.write("recv %d\n" % n)
        self.proc.stdin.flush()
        if self.proc.stdout.readline().strip() == "posted":
            return True
        print(name, "not posted", flush=True)
        self.proc.kill()
        return False

    def to_error(self):
        """Has the target move its QP to the error state; returns its receive completions
        then, "WR:STATUS,..." ("-" for none)."""
        self.proc.stdin.write("error\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().strip()
        return line[5:] if line.startswith("recv ") else "-"

    def end(self):
        """Lets the target end; returns its memory and QP state: "HEX N"."""
        out = dict(line.split(" ", 1) for line in self.finish() if " " in line)
        return "%s %s" % (out.get("memory", "-"), out.get("state", "-"))


def read_main():
    target = Target()
    qpn, rkey, va = target.qpn, target.rkey, target.va
    raw, rx = raw_sockets()
    memory = bytes((i * 7) & 0xFF for i in range(65536))

    def read(name, psn, offset, length, key=rkey, quiet=2.0):
        reth = struct.pack("!QII", va + offset, key, length)
        send(raw, bth(RC_READ_REQUEST, qpn, psn, 0) + reth)
        got = read_responses(rx, quiet)
        print(name, ",".join("%x" % p for p, _ in got) or "-", flush=True)
        # Responses from PSN psn on carry the memory from offset on, a path MTU (1024) each.
        for p, data in got:
            at = offset + ((p - psn) & 0xFFFFFF) * 1024
            if data != memory[at:at + len(data)]:
                print("bad_bytes", name, flush=True)

    p = OUR_PSN
    read("read", p, 0, 4096)  # PSNs p .. p+3, the expected PSN is now p+4
    read("replay_tail", p + 2, 2048, 2048)  # asked again: its last two responses
    read("dup_longer", p, 0, 65536)  # the same PSN, but more than was read
    read("dup_other_key", p + 1, 1024, 1024, key=rkey ^ 0x100)
    read("dup_outside", p + 1, 8192, 1024)  # within the PSNs, outside the range read
    read("dup_never", p - 3, 0, 1024)  # behind, but no READ had that PSN
    read("next", p + 4, 0, 1024)
    target.echo_last()


def requests(rx, secs, opcode, want=0):
    """The requests of `opcode` to OUR_QPN that arrive within secs, until `want` of them (all
    for 0): [(psn, when, transport headers and payload)]."""
    got = []
    for op, _flags, psn, t in arrivals(rx, secs):
        if op == opcode:
            got.append((psn, time.monotonic(), t))
            if len(got) == want:
                break
    return got


def read_requests(rx, secs, first=False):
    """The READ requests to OUR_QPN that arrive within secs: [(psn, va, rkey, len)]; with
    first, only the first of them, as soon as it arrives."""
    return [(psn,) + struct.unpack("!QII", t[12:28])
            for psn, _, t in requests(rx, secs, RC_READ_REQUEST, 1 if first else 0)]


def replay_main():
    target = Target()
    raw, rx = raw_sockets()
    size, mtu, gap, resent_from = 65536, 1024, 40, 10
    memory = bytes((i * 7) & 0xFF for i in range(size))
    va, rkey = 0x7F0000000000, 0x4242
    target.proc.stdin.write("read %x %x %x\n" % (va, rkey, size))
    target.proc.stdin.flush()
    got = read_requests(rx, 10, first=True)
    if not got:
        print("requests -", flush=True)
        target.proc.kill()
        return
    p = got[0][0]
    n = size // mtu

    def respond(i, opcode=RC_READ_MIDDLE):
        t = bth(opcode, target.qpn, p + i, mtu, ack_req=False)
        if opcode != RC_READ_MIDDLE:
            t += struct.pack("!I", 0x1F000000)  # AETH: ACK
        send(raw, t + memory[i * mtu:(i + 1) * mtu])

    respond(0, RC_READ_FIRST)
    for i in range(1, resent_from):
        respond(i)
    if MODE == "stale":
        # Hostile: response 0 again and again, each 20 ms, never the rest. The target gives up
        # once the responses the requests it sent can ask for are spent (about 12 s).
        t0 = time.time()
        while not select.select([target.proc.stdout], [], [], 0.02)[0] and time.time() < t0 + 50:
            respond(0, RC_READ_FIRST)
        print("stale %d" % (time.time() - t0), flush=True)
        target.echo_line("read - -")
        target.echo_last()
        return
    # Silent for longer than the target's timeout (268 ms): it asks again from `resent_from`.
    got += read_requests(rx, 0.6)
    for i in list(range(resent_from, gap)) + list(range(gap + 1, n - 1)):
        respond(i)
    respond(n - 1, RC_READ_LAST)
    # The duplicate's turn: what the target has, a response each 100 ms, 3 s in all, more
    # than its timer with every retry (8 x 268 ms).
    for i in range(resent_from, gap):
        respond(i)
        got += read_requests(rx, 0.1)
    for i in range(gap, n - 1):
        respond(i)
    respond(n - 1, RC_READ_LAST)
    got += read_requests(rx, 1.0)
    print("requests", ",".join("%d" % ((q - p) & 0xFFFFFF) for q, *_ in got), flush=True)
    line = target.proc.stdout.readline().strip()
    print(line or "read - -", flush=True)
    target.echo_last()


def gap_main():
    target = Target()
    raw, rx = raw_sockets()
    mtu = 1024
    memory = bytes((i * 7) & 0xFF for i in range(16 * mtu))
    va, rkey = 0x7F0000000000, 0x4242

    def respond(first, at, i, n):
        """Response i of the n to the READ of PSN `first`, which reads our memory at `at`."""
        if n == 1:
            opcode = RC_READ_ONLY
        else:
            opcode = RC_READ_FIRST if i == 0 else RC_READ_LAST if i == n - 1 else RC_READ_MIDDLE
        t = bth(opcode, target.qpn, first + i, mtu, ack_req=False)
        if opcode != RC_READ_MIDDLE:
            t += struct.pack("!I", 0x1F000000)  # AETH: ACK
        send(raw, t + memory[at + i * mtu:at + (i + 1) * mtu])

    def reads(name, n, length):
        """Has the target post n READs of `length`; their first PSN, None if they did not
        all come."""
        target.proc.stdin.write("read %x %x %x %d\n" % (va, rkey, length, n))
        target.proc.stdin.flush()
        got = requests(rx, 10, RC_READ_REQUEST, n)
        if len(got) == n:
            return got[0][0]
        print(name, "-", flush=True)
        target.proc.kill()
        return None

    def asked_again(name, p, secs=0.2):
        """What came within secs (by default well within the target's timer, which each
        response to its READ holds off), until a READ request with a longer secs."""
        again = []
        for op, _flags, psn, _t in arrivals(rx, secs):
            again.append((op, psn))
            if secs > 0.2 and op == RC_READ_REQUEST:
                break
        print(name, ",".join("%d" % ((q - p) & 0xFFFFFF) for op, q in again
                             if op == RC_READ_REQUEST) or "-", flush=True)
        return again

    # One READ of 16 responses; the sixth is lost, the four after it arrive.
    p = reads("gap", 1, 16 * mtu)
    if p is None:
        return
    for i in (0, 1, 2, 3, 4, 6, 7, 8, 9):
        respond(p, 0, i, 16)
    asked_again("gap", p)
    for i in range(5, 16):
        respond(p, 0, i, 16)
    target.echo_line("read - -")
    # Two READs of two responses each; those to the first are lost, those to the second arrive.
    p = reads("later", 2, 2 * mtu)
    if p is None:
        return
    for i in range(2):
        respond(p + 2, 2 * mtu, i, 2)
    asked_again("later", p)
    for first, at in ((p, 0), (p + 2, 2 * mtu)):
        for i in range(2):
            respond(first, at, i, 2)
    target.echo_line("read - -")
    # A READ, then a SEND; the READ's responses are lost, the SEND's ACK (MSN 2) comes.
    target.proc.stdin.write("read %x %x %x 1 send\n" % (va, rkey, 2 * mtu))
    target.proc.stdin.flush()
    got = requests(rx, 10, RC_READ_REQUEST, 1) + requests(rx, 10, RC_SEND_ONLY, 1)
    if len(got) != 2:
        print("between -", flush=True)
        target.proc.kill()
        return
    p = got[0][0]
    send(raw, bth(RC_ACK, target.qpn, p + 2, 0, ack_req=False) + struct.pack("!I", 0x1F000002))
    again = asked_again("between", p)
    # That request is lost too: the timer asks again.
    again += asked_again("between_timer", p, 0.6)
    print("between_sends", sum(op == RC_SEND_ONLY for op, _ in again), flush=True)
    for i in range(2):
        respond(p, 0, i, 2)
    target.echo_line("read - -")
    target.echo_last()


def rnr_main():
    target = Target()
    raw, rx = raw_sockets()
    target.proc.stdin.write("send 2 64\n")
    target.proc.stdin.flush()
    got = requests(rx, 10, RC_SEND_ONLY, 2)
    if len(got) != 2:
        print("sends", ",".join("%x" % q for q, *_ in got) or "-", flush=True)
        target.proc.kill()
        return
    p = got[0][0]
    # AETH: RNR NAK (syndrome 0b01 and timer code 20, 10.24 ms), one message completed.
    send(raw, bth(RC_ACK, target.qpn, p + 1, 0, ack_req=False) + struct.pack("!I", 0x34000001))
    nak = time.monotonic()
    again = requests(rx, 1.0, RC_SEND_ONLY, 1)
    send(raw, bth(RC_ACK, target.qpn, p + 1, 0, ack_req=False) + struct.pack("!I", 0x1F000002))
    resent = again + requests(rx, 0.5, RC_SEND_ONLY)
    print("rnr_wait", "%.1f" % ((again[0][1] - nak) * 1000) if again else "-", flush=True)
    print("resent", ",".join("%d" % ((q - p) & 0xFFFFFF) for q, *_ in resent) or "-",
          flush=True)
    target.echo_line("send -")
    target.echo_last()


def atomic_write_main():
    raw, rx = raw_sockets()
    p = OUR_PSN

    def atomic_write(t, psn, offset=0, value=b"\x5a" * 8, key=None, reth_len=8, pad=0):
        reth = struct.pack("!QII", t.va + offset, t.rkey if key is None else key, reth_len)
        send(raw, bth(RC_ATOMIC_WRITE, t.qpn, psn, len(value), pad=pad) + reth + value
             + b"\0" * pad)
        return show(answers(rx, 2.0))

    t = Target()
    print("aw", atomic_write(t, p, value=b"\x11" * 8), flush=True)
    print("aw_dup", atomic_write(t, p, value=b"\x22" * 8), flush=True)
    send(raw, bth(RC_READ_REQUEST, t.qpn, p + 1, 0) + struct.pack("!QII", t.va, t.rkey, 8))
    got = answers(rx, 2.0)
    print("read_back", show(got), got[0][3].hex() if got else "-", flush=True)
    print("aw_end", t.end(), flush=True)
    # Each forgery: what it changes of an honest ATOMIC WRITE to target t.
    forged = (
        ("aw_short", lambda t: {"value": b"\x33" * 4}),
        ("aw_long", lambda t: {"value": b"\x33" * 16}),
        ("aw_reth_len", lambda t: {"reth_len": 4}),
        ("aw_pad", lambda t: {"pad": 1}),
        ("aw_unaligned", lambda t: {"offset": 4}),
        ("aw_bad_rkey", lambda t: {"key": t.rkey ^ 0x100}),
    )
    for name, forgery in forged:
        t = Target()
        print(name, atomic_write(t, p, **forgery(t)), t.end(), flush=True)


def abandon_main():
    raw, rx = raw_sockets()
    p = OUR_PSN
    for name in ("abandon_err", "abandon_nak", "abandon_read"):
        t = Target()
        if not t.post_receives(2, name):
            continue
        send(raw, bth(RC_SEND_FIRST, t.qpn, p, 1024) + b"\x5a" * 1024)
        answers(rx, 0.5)
        if name == "abandon_nak":
            send(raw, bth(RC_SEND_ONLY, t.qpn, p + 1, 64) + b"\x5a" * 64)
            print(name + "_answers", show(answers(rx, 0.5)), flush=True)
        elif name == "abandon_read":
            reth = struct.pack("!QII", t.va, t.rkey, 64)
            send(raw, bth(RC_READ_REQUEST, t.qpn, p + 1, 0) + reth)
            print(name + "_answers", show(answers(rx, 0.5)), flush=True)
        print(name, t.to_error(), flush=True)
        t.finish()


def uc_main():
    raw, rx = raw_sockets()
    p = OUR_PSN
    for name in ("uc_next", "uc_end"):
        t = Target("uc")
        if not t.post_receives(2, name):
            continue
        send(raw, bth(UC_SEND_FIRST, t.qpn, p, 1024, ack_req=False) + b"\x5a" * 1024)
        # The packet at p + 1 is lost; then a new message, or more of the one lost.
        if name == "uc_next":
            send(raw, bth(UC_SEND_ONLY, t.qpn, p + 2, 64, ack_req=False) + b"\x5b" * 64)
        else:
            send(raw, bth(UC_SEND_MIDDLE, t.qpn, p + 2, 1024, ack_req=False) + b"\x5a" * 1024)
        time.sleep(0.5)
        print(name, t.to_error(), flush=True)
        t.finish()


def closed_main():
    raw, rx = raw_sockets()
    p = OUR_PSN
    # NAME: the target's mode, then the request's opcode, RETH length and immediate data.
    cases = (
        ("write0", "closed", RC_WRITE_ONLY, 0, b""),
        ("write0_imm", "closed", RC_WRITE_ONLY_IMM, 0, b"\x5e\xed\0\0"),
        ("read0", "closed", RC_READ_REQUEST, 0, b""),
        ("read_nord", "nord", RC_READ_REQUEST, 64, b""),
        ("read_huge", None, RC_READ_REQUEST, 0x80000001, b""),
        ("write_huge", None, RC_WRITE_ONLY, 0x80000001, b""),
    )
    for name, mode, opcode, length, imm in cases:
        t = Target(mode) if mode else Target()
        if not t.post_receives(1, name):
            continue
        reth = struct.pack("!QII", t.va, t.rkey, length)
        send(raw, bth(opcode, t.qpn, p, 0) + reth + imm)
        got = show(answers(rx, 1.0))
        print(name, got, t.to_error(), t.end(), flush=True)


def seqnak_main():
    target = Target()
    raw, rx = raw_sockets()
    target.proc.stdin.write("send 1 64\n")
    target.proc.stdin.flush()
    copies = 0
    # AETH: PSN sequence error NAK, naming the SEND itself, for every copy of it (at most 30).
    while copies < 30:
        got = requests(rx, 1.0, RC_SEND_ONLY, 1)
        if not got:
            break
        copies += 1
        send(raw, bth(RC_ACK, target.qpn, got[0][0], 0, ack_req=False) +
             struct.pack("!I", 0x60000000))
    print("copies", copies, flush=True)
    target.echo_line("send -")
    target.echo_last()


def nakack_main():
    target = Target()
    raw, rx = raw_sockets()
    target.proc.stdin.write("send 1 4096\n")
    target.proc.stdin.flush()
    got = requests(rx, 10, RC_SEND_FIRST, 1)
    if not got:
        print("resent -", flush=True)
        target.proc.kill()
        return
    p = got[0][0]

    def until_last(times, secs):
        """The SEND's packets (PSNs relative to its first) until its last came `times` times
        or secs passed."""
        seen = []
        for _op, _flags, psn, _t in arrivals(rx, secs):
            seen.append((psn - p) & 0xFFFFFF)
            if seen.count(3) == times:
                break
        return seen

    until_last(1, 2)
    # A sequence NAK of the third packet: the two before it arrived.
    send(raw, bth(RC_ACK, target.qpn, p + 2, 0, ack_req=False) + struct.pack("!I", 0x60000000))
    # What the NAK sends again, then what the timer (268 ms) does.
    print("resent", ",".join("%d" % i for i in until_last(2, 3)) or "-", flush=True)
    send(raw, bth(RC_ACK, target.qpn, p + 3, 0, ack_req=False) + struct.pack("!I", 0x1F000001))
    target.echo_line("send -")
    target.echo_last()


def unsent_main():
    target = Target()
    raw, rx = raw_sockets()
    # A window of packets at once: more than the default buffer of a raw socket holds.
    # (SO_RCVBUFFORCE, 33 on Linux, which Python's socket module does not name.)
    rx.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)
    packets = 1024
    target.proc.stdin.write("send 1 %d\n" % (packets * 1024))
    target.proc.stdin.flush()
    got = requests(rx, 10, RC_SEND_FIRST, 1)
    if not got:
        print("held -", flush=True)
        target.proc.kill()
        return
    first = got[0][0]
    seen = {0}

    def take(secs):
        """The next packet of the SEND, if one comes within secs: (whether its PSN is new,
        whether it asks for an acknowledgment); None for no packet."""
        for _op, _flags, psn, t in arrivals(rx, secs):
            offset = (psn - first) & 0xFFFFFF
            new = offset not in seen
            seen.add(offset)
            return new, bool(t[8] & 0x80)
        return None

    def ack():
        """An ACK of the packets that came in order, MSN 1 once the SEND is whole; whether
        it is."""
        in_order = 0
        while in_order + 1 in seen:
            in_order += 1
        aeth = 0x1F000001 if in_order == packets - 1 else 0x1F000000
        send(raw, bth(RC_ACK, target.qpn, first + in_order, 0, ack_req=False) +
             struct.pack("!I", aeth))
        return in_order == packets - 1

    # What the window lets go: until a packet comes again (the target's timer) or none comes.
    while (got := take(0.15)) is not None and got[0]:
        pass
    print("held", len(seen), flush=True)
    # An ACK of the last PSN of the message, which the target has not sent.
    send(raw, bth(RC_ACK, target.qpn, first + packets - 1, 0, ack_req=False) +
         struct.pack("!I", 0x1F000001))
    end = time.time() + 30
    whole = ack()
    while not whole and time.time() < end:
        got = take(0.5)
        if got is None or got[1]:
            whole = ack()
    print("all", len(seen), flush=True)
    target.echo_line("send -")
    target.echo_last()


def coalesce_main():
    t = Target()
    raw, rx = raw_sockets()
    p = OUR_PSN

    def write(psn, offset, value, ack_req=True, key=None):
        reth = struct.pack("!QII", t.va + offset, t.rkey if key is None else key, 1)
        send(raw, bth(RC_WRITE_ONLY, t.qpn, psn, 1, ack_req=ack_req) + reth + bytes([value]) +
             b"\0" * 3)

    def collect(last):
        """The answers until one for PSN `last` that ends the burst (an ACK of it, or a NAK),
        at most 5 s: [(opcode, psn, syndrome, msn)], no syndrome or MSN for a READ RESPONSE
        MIDDLE."""
        got = []
        for op, _flags, psn, tr in arrivals(rx, 5):
            if op not in ANSWERS:
                continue
            syn = None if op == RC_READ_MIDDLE else tr[12]
            got.append((op, psn, syn, None if syn is None else int.from_bytes(tr[13:16], "big")))
            if op == RC_ACK and psn == last & 0xFFFFFF:
                break
        return got

    writes = 40
    for i in range(writes):
        write(p + i, i, i + 1)
    got = collect(p + writes - 1)
    acks = [(psn - p, msn) for op, psn, syn, msn in got if op == RC_ACK and syn >> 5 == 0]
    ordered = len(acks) == len(got) and all(msn == rel + 1 for rel, msn in acks) and all(
        a[0] < b[0] for a, b in zip(acks, acks[1:]))
    gap = max((b[0] - a[0] for a, b in zip([(-1, 0)] + acks, acks)), default=0)
    print("stream", len(acks), "%x" % (p + acks[-1][0]) if acks else "-",
          acks[-1][1] if acks else "-", gap, "ordered" if ordered else "disordered", flush=True)

    q = p + writes
    write(q, 16, 0x81)
    write(q + 1, 17, 0x82)
    send(raw, bth(RC_READ_REQUEST, t.qpn, q + 2, 0) + struct.pack("!QII", t.va, t.rkey, 16))
    write(q + 3, 18, 0x83)
    write(q + 4, 19, 0x84)
    write(q + 5, 20, 0x85, ack_req=False)
    write(p + 3, 3, 0xEE)
    write(q + 6, 21, 0x86, key=t.rkey ^ 0x100)
    got = collect(q + 6)
    optional = {(RC_ACK, q & 0xFFFFFF), (RC_ACK, (q + 3) & 0xFFFFFF)}
    print("mixed", show([(op, psn, syn, b"") for op, psn, syn, _ in got
                         if syn is None or syn >> 5 != 0 or (op, psn) not in optional]),
          flush=True)
    print("mixed_all", show([(op, psn, syn, b"") for op, psn, syn, _ in got]), flush=True)
    print("end", t.end(), flush=True)


def main():
    before = sent_pkts()
    conn, qpn, psn = exchange()
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    deadline = time.time() + 20
    while sent_pkts() == before and time.time() < deadline:
        time.sleep(0.01)
    # The ACK of the client's ping, before its timer runs out; with OTHER_DST, first a copy
    # addressed there, which the completer of a QP connected through DST must not take.
    ack = bth(RC_ACK, qpn, psn, 0, ack_req=False) + struct.pack("!I", 0x1F000001)
    if OTHER_DST:
        send(raw, ack, dst=OTHER_DST)
    send(raw, ack)
    payload = bytes(i & 0xFF for i in range(SIZE))
    pad = b"\0" * ((-SIZE) & 3)
    good_send = bth(RC_SEND_ONLY, qpn, OUR_PSN, SIZE) + payload + pad
    sent = {}

    def count(kind, n=1):
        sent[kind] = sent.get(kind, 0) + n

    if MODE == "fatal":
        reth = struct.pack("!QII", 0xDEAD0000, 0xBADBAD, 0xFFFFFFFF)
        send(raw, bth(RC_WRITE_ONLY, qpn, OUR_PSN, 16) + reth + b"\x11" * 16)
        count("fatal")
    else:
        for _ in range(5):
            send(raw, good_send, bad_icrc=True)
        count("icrc", 5)
        # Too short for its headers: a BTH cut in half, a SEND_ONLY without payload room.
        for cut in (6, 10, 14):
            send(raw, good_send, truncate_to=cut)
        count("malformed", 3)
        # Opcodes RC does not define, and a transport header version other than 0.
        for op in (0x18, 0x1F, 0x15):
            send(raw, bth(op, qpn, OUR_PSN, 0))
        send(raw, bth(RC_SEND_ONLY, qpn, OUR_PSN, SIZE, tver=1) + payload + pad)
        count("malformed", 4)
        # Not for this QP: an unknown QP number, a source the QP is not connected to, a
        # partition the port is not a member of (P_Key 0x1234; the port has 0xFFFF only),
        # another address of the QP's network device than its own.
        send(raw, bth(RC_SEND_ONLY, 0xABCDE, OUR_PSN, SIZE) + payload + pad)
        send(raw, bth(RC_SEND_ONLY, 0x1, OUR_PSN, SIZE) + payload + pad)
        send(raw, good_send, src="10.61.0.9")
        send(raw, bth(RC_SEND_ONLY, qpn, OUR_PSN, SIZE, pkey=0x1234) + payload + pad)
        count("not_ours", 4)
        if OTHER_DST:
            send(raw, good_send, dst=OTHER_DST)
            # This SEND, and the ACK sent there before.
            count("not_ours", 2)
        # Far ahead of the expected PSN: dropped (with one sequence error NAK).
        for d in (1000, 0x400000, 5):
            send(raw, bth(RC_SEND_ONLY, qpn, OUR_PSN + d, SIZE) + payload + pad)
        count("psn_ahead", 3)
        # A response to a request never made (the QP sent one SEND, not a READ).
        send(raw, bth(0x10, qpn, psn + 7, 4) + struct.pack("!I", 0x1F) + b"abcd")
        count("stray_response")
    # What a real server sends next: the pong.
    send(raw, good_send)
    for kind, n in sent.items():
        print(kind, n, flush=True)
    time.sleep(1)
    conn.close()


if MODE == "read":
    read_main()
elif MODE in ("replay", "stale"):
    replay_main()
elif MODE == "gap":
    gap_main()
elif MODE == "rnr":
    rnr_main()
elif MODE == "atomic_write":
    atomic_write_main()
elif MODE == "abandon":
    abandon_main()
elif MODE == "closed":
    closed_main()
elif MODE == "seqnak":
    seqnak_main()
elif MODE == "nakack":
    nakack_main()
elif MODE == "uc":
    uc_main()
elif MODE == "unsent":
    unsent_main()
elif MODE == "coalesce":
    coalesce_main()
else:
    main()

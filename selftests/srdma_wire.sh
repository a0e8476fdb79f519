#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# srdma on the wire: RoCEv2 packets between srdma and the kernel's rxe across a veth pair,
# rxe in the initial namespace, srdma in a namespace of its own (each holds UDP 4791 in its
# own namespace): the exchanges of wire_lib.sh's wire_matrix in both roles, IPv6 GIDs, forged
# packets, a lossy link, and teardown under traffic.

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/wire_lib.sh"
require_cmd rdma ip ibv_ud_pingpong ibv_rc_pingpong ibv_uc_pingpong rping ib_send_bw timeout
load_srdma

NS=srdma_wire
R=rw0 S=rw1
RXE_IP=10.61.0.1 SRDMA_IP=10.61.0.2
PEER=rxe PEER_DEV=rxe_w PEER_IP=$RXE_IP PEER_NS=
cleanup() {
	kill $(jobs -p) 2>/dev/null
	in_ns rdma link delete srdma_w 2>/dev/null
	rdma link delete rxe_w 2>/dev/null
	unload_rxe
	ip link del "$R" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
}
trap cleanup EXIT
cleanup
# Loaded after the first cleanup, so that only the one at exit unloads it.
load_rxe || skip_all "rdma_rxe not available"

ip netns add "$NS" || skip_all "cannot create a network namespace"
ip link add "$R" type veth peer name "$S" netns "$NS" || skip_all "cannot create a veth pair"
ip addr add "$RXE_IP/24" dev "$R"
ip link set "$R" up
in_ns ip addr add "$SRDMA_IP/24" dev "$S"
in_ns ip link set "$S" up
in_ns ip link set lo up

check "rxe on $R (initial namespace)" rdma link add rxe_w type rxe netdev "$R"
check "srdma on $S (namespace $NS)" in_ns rdma link add srdma_w type srdma netdev "$S"
check "srdma on a virtual network device has no parent device" test ! -e "$SYSFS_IB/srdma_w/device"
check "srdma holds UDP 4791 in its namespace" sh -c \
	"ip netns exec $NS cat /proc/net/udp | grep -q ':12B7 '"

check "rxe has the RoCE v2 GID of $RXE_IP" wait_for 10 gid_index rxe_w "$(ipv4_gid "$RXE_IP")"
check "srdma has the RoCE v2 GID of $SRDMA_IP" wait_for 10 gid_index srdma_w \
	"$(ipv4_gid "$SRDMA_IP")"
rg=$(gid_index rxe_w "$(ipv4_gid "$RXE_IP")")
sg=$(gid_index srdma_w "$(ipv4_gid "$SRDMA_IP")")

pg=$rg
hw=$SYSFS_IB/srdma_w/ports/1/hw_counters

wire_matrix 18601

# RC and UD over IPv6 GIDs (the exchange of QP numbers still over IPv4 TCP).
port=18680
ip -6 addr add 2001:db8:61::1/64 dev "$R" nodad
in_ns ip -6 addr add 2001:db8:61::2/64 dev "$S" nodad
if wait_for 10 gid_index rxe_w 2001:0db8:0061:0000:0000:0000:0000:0001 &&
	wait_for 10 gid_index srdma_w 2001:0db8:0061:0000:0000:0000:0000:0002; then
	pg4=$pg sg4=$sg
	pg=$(gid_index rxe_w 2001:0db8:0061:0000:0000:0000:0000:0001)
	sg=$(gid_index srdma_w 2001:0db8:0061:0000:0000:0000:0000:0002)
	pingpong ibv_rc_pingpong "RC over IPv6: srdma server, rxe client, 4096 B x 50, checked" \
		$((port++)) srdma 4096 50
	pingpong ibv_rc_pingpong "RC over IPv6: rxe server, srdma client, 4096 B x 50, checked" \
		$((port++)) peer 4096 50
	pingpong ibv_ud_pingpong "UD over IPv6: srdma server, rxe client, 1000 B x 50, checked" \
		$((port++)) srdma 1000 50
	pg=$pg4 sg=$sg4
else
	fail "RC and UD over IPv6" "no RoCE v2 GIDs for the IPv6 addresses"
fi

check_eq "no ICRC errors" 0 "$(counter rx_icrc_errors)"
check_eq "no malformed packets" 0 "$(counter rx_malformed)"
check_eq "no send errors" 0 "$(counter send_err)"
# A long message leaves as acknowledgments make room, never more packets than fit a window.
check_eq "no packet dropped for a full receive backlog" 0 "$(counter rx_dropped)"

# --- forged packets (srdma_forge.py): a peer at an address no RDMA device answers for talks to
# an ibv_rc_pingpong client of srdma and fires malformed, misaddressed and out-of-sequence
# packets at its live QP. Each is dropped and counted; the conversation completes.
FORGE_IP=10.61.0.3
ip addr add "$FORGE_IP/24" dev "$R"
# forge PORT MODE [OTHER_IP]: runs the forger and the client; sets rc_c and leaves the outputs
# in $out_f and $out_c.
forge() {
	out_f=$(mktemp) out_c=$(mktemp)
	timeout 90 python3 "$(dirname "$0")/srdma_forge.py" "$1" "$FORGE_IP" "$SRDMA_IP" 64 "$hw" \
		"$2" ${3:+"$3"} \
		>"$out_f" 2>&1 &
	wait_for 30 tcp_listening "$1"
	timeout 60 ip netns exec "$NS" ibv_rc_pingpong -d srdma_w -g "$sg" -p "$1" -s 64 -n 1 \
		"$FORGE_IP" >"$out_c" 2>&1
	rc_c=$?
	wait $!
}
declare -A before
for c in rx_icrc_errors rx_malformed rx_not_ours out_of_sequence; do before[$c]=$(counter $c); done
# A second address of srdma's network device: a packet to it (the ACK of the client's SEND, a
# SEND) is not to the client's QP, which was connected through the first. Its neighbour entry
# is made here, so that the forged packets are not held back by address resolution behind the
# ones that follow them.
SRDMA_IP2=10.61.0.4
in_ns ip addr add "$SRDMA_IP2/24" dev "$S"
ip neigh replace "$SRDMA_IP2" lladdr "$(in_ns cat "/sys/class/net/$S/address")" dev "$R"
forge 18700 drops "$SRDMA_IP2"
ip neigh del "$SRDMA_IP2" dev "$R"
in_ns ip addr del "$SRDMA_IP2/24" dev "$S"
if [ "$rc_c" = 0 ]; then
	ok "forged packets: the conversation completes"
else
	fail "forged packets: the conversation completes" "client exit $rc_c: $(cat "$out_c")" \
		"forger: $(cat "$out_f")"
fi
sent_of() { awk -v k="$1" '$1 == k { n = $2 } END { print n + 0 }' "$out_f"; }
# The counts below compare with what the forger says it sent: it must have sent some of each.
check "the forger sent every kind of packet" test "$(sent_of icrc)" -gt 0 -a \
	"$(sent_of malformed)" -gt 0 \
	-a "$(sent_of not_ours)" -gt 0 -a "$(sent_of psn_ahead)" -gt 0
check_eq "bad ICRC: dropped and counted" "$(sent_of icrc)" \
	$(($(counter rx_icrc_errors) - before[rx_icrc_errors]))
check_eq "truncated, undefined opcodes, TVer 1: dropped as malformed" "$(sent_of malformed)" \
	$(($(counter rx_malformed) - before[rx_malformed]))
check_eq "unknown QP, GSI QP, foreign source or address, other P_Key, stray response: not ours" \
	$(($(sent_of not_ours) + $(sent_of stray_response))) \
	$(($(counter rx_not_ours) - before[rx_not_ours]))
check_eq "PSNs far ahead: dropped, counted out of sequence" "$(sent_of psn_ahead)" \
	$(($(counter out_of_sequence) - before[out_of_sequence]))
rm -f "$out_f" "$out_c"

# A well-formed request the QP must refuse (an RDMA WRITE of 4 GiB with a bad rkey to a QP
# without remote write access): a NAK, the QP fails, the client sees an error completion.
forge 18701 fatal
if [ "$rc_c" != 0 ] && grep -q -i "fail\|error" "$out_c"; then
	ok "a forged RDMA WRITE of 4 GiB with a bad rkey: refused, the QP fails cleanly"
else
	fail "a forged RDMA WRITE of 4 GiB with a bad rkey: refused, the QP fails cleanly" \
		"client exit $rc_c: $(cat "$out_c")" "forger: $(cat "$out_f")"
fi
rm -f "$out_f" "$out_c"

# Duplicate READs (srdma_forge.py read, against srdma_target.c): the responder answers a READ
# again only within the PSNs, key and range of one it carried out, so that a small forged
# packet cannot make it send more than it was once asked for.
if prog srdma_target; then
	dup0=$(counter duplicate_request)
	out_f=$(mktemp)
	timeout 120 python3 "$(dirname "$0")/srdma_forge.py" read "$FORGE_IP" "$SRDMA_IP" \
		ip netns exec "$NS" "$PROG" srdma_w "$sg" >"$out_f" 2>&1
	answer() { awk -v k="$1" '$1 == k { print $2 }' "$out_f"; }
	[ -n "$(answer read)" ] || diag "forger: $(cat "$out_f")"
	check_eq "a READ of 4 KiB: four responses" 1000,1001,1002,1003 "$(answer read)"
	check_eq "a duplicate READ of its last 2 KiB: answered again" 1002,1003 \
		"$(answer replay_tail)"
	for d in dup_longer dup_other_key dup_outside dup_never; do
		check_eq "a forged duplicate READ ($d): not answered" - "$(answer $d)"
	done
	check_eq "a new READ after them: answered" 1004 "$(answer next)"
	check "READ responses carry the memory's bytes" eval '! grep -q bad_bytes "$out_f"'
	check_eq "the QP stays in RTS" "state 3" "$(tail -1 "$out_f")"
	check_eq "duplicates counted" 5 $(($(counter duplicate_request) - dup0))
	rm -f "$out_f"

	# ATOMIC WRITEs (srdma_forge.py atomic_write): a duplicate is answered again and never
	# carried out again; a forged one (not 8 bytes each way, padded, unaligned, a wrong key)
	# is refused with a NAK that fails the QP, and leaves the memory as it was.
	out_f=$(mktemp)
	timeout 180 python3 "$(dirname "$0")/srdma_forge.py" atomic_write "$FORGE_IP" "$SRDMA_IP" \
		ip netns exec "$NS" "$PROG" srdma_w "$sg" >"$out_f" 2>&1
	answer() { awk -v k="$1" '$1 == k { $1 = ""; print substr($0, 2) }' "$out_f"; }
	[ -n "$(answer aw_end)" ] || diag "forger: $(cat "$out_f")"
	intact=00070e151c232a31383f464d545b6269
	check_eq "an ATOMIC WRITE: answered by a READ response without data" 10/1000/ack \
		"$(answer aw)"
	check_eq "its duplicate with another value: answered again" 10/1000/ack "$(answer aw_dup)"
	check_eq "a READ of the word after them: the first value" "10/1001/ack 1111111111111111" \
		"$(answer read_back)"
	check_eq "the duplicate wrote nothing, the QP stays in RTS" \
		"1111111111111111${intact:16} 3" "$(answer aw_end)"
	for aw in aw_short:61 aw_long:61 aw_reth_len:61 aw_pad:61 aw_unaligned:61 aw_bad_rkey:62; do
		what="a forged ATOMIC WRITE (${aw%:*}): NAK ${aw#*:}, nothing written, QP failed"
		check_eq "$what" "11/1000/${aw#*:} $intact 6" "$(answer "${aw%:*}")"
	done
	rm -f "$out_f"

	# A SEND left unfinished (srdma_forge.py abandon): the receive it took completes all the
	# same, flushed, when the QP enters the error state (moved there by the process, or failed
	# by an invalid request), and before the receive posted after it.
	out_f=$(mktemp)
	timeout 120 python3 "$(dirname "$0")/srdma_forge.py" abandon "$FORGE_IP" "$SRDMA_IP" \
		ip netns exec "$NS" "$PROG" srdma_w "$sg" >"$out_f" 2>&1
	answer() { awk -v k="$1" '$1 == k { $1 = ""; print substr($0, 2) }' "$out_f"; }
	[ -n "$(answer abandon_err)" ] || diag "forger: $(cat "$out_f")"
	flushed="0:Work Request Flushed Error,1:Work Request Flushed Error"
	check_eq "a SEND under way, the QP moved to the error state: both receives flushed" \
		"$flushed" "$(answer abandon_err)"
	check_eq "a SEND under way, an invalid request fails the QP: both receives flushed" \
		"$flushed" "$(answer abandon_nak)"
	check_eq "a SEND ONLY in the middle of a SEND: NAK invalid request" 11/1001/61 \
		"$(answer abandon_nak_answers)"
	check_eq "a READ in the middle of a SEND: NAK invalid request, not carried out" \
		11/1001/61 "$(answer abandon_read_answers)"
	check_eq "a READ in the middle of a SEND: both receives flushed" "$flushed" \
		"$(answer abandon_read)"
	# The same with the receives in an SRQ: the one the SEND took completes, flushed; the
	# other stays in the SRQ for its other QPs.
	timeout 120 python3 "$(dirname "$0")/srdma_forge.py" abandon "$FORGE_IP" "$SRDMA_IP" \
		ip netns exec "$NS" "$PROG" srdma_w "$sg" srq >"$out_f" 2>&1
	[ -n "$(answer abandon_err)" ] || diag "forger: $(cat "$out_f")"
	for a in abandon_err abandon_nak abandon_read; do
		check_eq "SRQ: a SEND under way as the QP fails ($a): its receive flushed" \
			"0:Work Request Flushed Error" "$(answer $a)"
	done
	rm -f "$out_f"

	# UC loses a SEND's packet (srdma_forge.py uc): the receive the SEND took takes the next
	# message, or completes flushed when the QP fails; from an RQ or an SRQ alike.
	flushed="Work Request Flushed Error"
	for q in rq srq; do
		timeout 120 python3 "$(dirname "$0")/srdma_forge.py" uc "$FORGE_IP" "$SRDMA_IP" \
			ip netns exec "$NS" "$PROG" srdma_w "$sg" ${q#rq} >"$out_f" 2>&1
		[ -n "$(answer uc_end)" ] || diag "forger: $(cat "$out_f")"
		next="0:success" end="0:$flushed"
		[ $q = rq ] && next="$next,1:$flushed" end="$end,1:$flushed"
		check_eq "UC, $q: a SEND that lost a packet; its receive takes the next message" \
			"$next" "$(answer uc_next)"
		check_eq "UC, $q: a SEND that lost a packet; its receive flushed as the QP fails" \
			"$end" "$(answer uc_end)"
	done
	rm -f "$out_f"

	# srdma reads from a responder that answers a READ it was asked again in part only after
	# the rest of the first, and then from where it was asked (srdma_forge.py replay): the
	# responses srdma has already are signs of life that hold its timer off, until the missing
	# one comes.
	out_f=$(mktemp)
	timeout 120 python3 "$(dirname "$0")/srdma_forge.py" replay "$FORGE_IP" "$SRDMA_IP" \
		ip netns exec "$NS" "$PROG" srdma_w "$sg" >"$out_f" 2>&1
	answer() { awk -v k="$1" '$1 == k { $1 = ""; print substr($0, 2) }' "$out_f"; }
	[ -n "$(answer read)" ] || diag "forger: $(cat "$out_f")"
	check_eq "a READ answered again only after a replay longer than its timer: completes" \
		"success intact" "$(answer read)"
	check "it was asked again from the first missing response" eval \
		'answer requests | grep -q ",10\(,\|$\)"'
	check_eq "the QP stays in RTS" "3" "$(answer state)"
	# A hostile responder that repeats one response for ever holds the READ only as long as
	# the requests it sent can ask for responses: then it fails.
	timeout 120 python3 "$(dirname "$0")/srdma_forge.py" stale "$FORGE_IP" "$SRDMA_IP" \
		ip netns exec "$NS" "$PROG" srdma_w "$sg" >"$out_f" 2>&1
	[ -n "$(answer read)" ] || diag "forger: $(cat "$out_f")"
	check "a READ answered with one old response for ever: gives up (after $(answer stale) s)" \
		test "$(answer stale)" -lt 50
	check_eq "it fails with RETRY_EXC_ERR" "transport retry counter exceeded wrong" \
		"$(answer read)"
	check_eq "its QP is in the error state" "6" "$(answer state)"

	# A READ response lost on the way, seen by a later response coming first (IBA's implied
	# NAK; srdma_forge.py gap): the READ is asked again at once from the missing response,
	# once, not after the timer (268 ms); a later READ whose responses came is not asked again,
	# nor is a SEND acknowledged behind it, which completes with the READ; and a READ whose
	# request asked again is lost too goes again on the timer all the same.
	imp0=$(counter implied_nak_seq_err) rt0=$(counter local_ack_timeout_err)
	timeout 120 python3 "$(dirname "$0")/srdma_forge.py" gap "$FORGE_IP" "$SRDMA_IP" \
		ip netns exec "$NS" "$PROG" srdma_w "$sg" >"$out_f" 2>&1
	[ -n "$(answer gap)" ] || diag "forger: $(cat "$out_f")"
	check_eq "a READ whose sixth response is lost: asked again at once, from it" 5 \
		"$(answer gap)"
	check_eq "... and completes" "success intact" "$(awk '$1 == "read"' "$out_f" |
		sed -n '1s/^read //p')"
	check_eq "two READs whose first's responses are lost: that one asked again at once" 0 \
		"$(answer later)"
	check_eq "... and complete" "success,success intact" "$(awk '$1 == "read"' "$out_f" |
		sed -n '2s/^read //p')"
	check_eq "a READ's responses lost, the SEND behind it acked: the READ asked again" \
		0 "$(answer between)"
	check_eq "... and, that request lost too, asked again on the timer" 0 \
		"$(answer between_timer)"
	check_eq "... alone" 0 "$(answer between_sends)"
	check_eq "... and both complete, without another ACK" "success,success intact" \
		"$(awk '$1 == "read"' "$out_f" | sed -n '3s/^read //p')"
	check_eq "each loss counted once (implied_nak_seq_err)" 3 \
		$(($(counter implied_nak_seq_err) - imp0))
	check_eq "one timeout, for the request lost (local_ack_timeout_err)" 1 \
		$(($(counter local_ack_timeout_err) - rt0))
	check_eq "the QP stays in RTS" "3" "$(answer state)"

	# A sequence NAK acknowledges the packets before the one it names: when the timer sends
	# the message again later, it sends only from there (srdma_forge.py nakack).
	sq0=$(counter packet_seq_err) rt0=$(counter local_ack_timeout_err)
	timeout 120 python3 "$(dirname "$0")/srdma_forge.py" nakack "$FORGE_IP" "$SRDMA_IP" \
		ip netns exec "$NS" "$PROG" srdma_w "$sg" >"$out_f" 2>&1
	[ -n "$(answer send)" ] || diag "forger: $(cat "$out_f")"
	check_eq "a SEND NAKed at its third packet: sent again from it, then on the timeout too" \
		2,3,2,3 "$(answer resent)"
	check_eq "it completes once acknowledged" "0:success" "$(answer send)"
	check_eq "one NAK and one timeout counted" "1 1" \
		"$(($(counter packet_seq_err) - sq0)) $(($(counter local_ack_timeout_err) - rt0))"
	check_eq "the QP stays in RTS" "3" "$(answer state)"

	# An RNR NAK that also acknowledges the SEND before the refused one (its ACK was lost):
	# the first completes, the refused one goes again when the NAK's timer (10.24 ms) says,
	# not when the transport timer (268 ms) would, and alone.
	timeout 120 python3 "$(dirname "$0")/srdma_forge.py" rnr "$FORGE_IP" "$SRDMA_IP" \
		ip netns exec "$NS" "$PROG" srdma_w "$sg" >"$out_f" 2>&1
	[ -n "$(answer send)" ] || diag "forger: $(cat "$out_f")"
	wait_ms=$(answer rnr_wait)
	what="an RNR NAK also acknowledging an earlier SEND: the refused one waits $wait_ms ms"
	check "$what" awk -v m="$wait_ms" 'BEGIN { exit !(m >= 10.24 && m < 150) }'
	check_eq "only the refused SEND went again" 1 "$(answer resent)"
	check_eq "both SENDs complete, in order" "0:success,1:success" "$(answer send)"
	check_eq "the QP stays in RTS" "3" "$(answer state)"

	# A responder that answers every copy of a SEND with a sequence error NAK naming it: each
	# NAK without progress spends a retry, as a timeout does; after retry_cnt (7) of them the
	# SEND fails, where the requester would otherwise send it again for as long as asked.
	timeout 120 python3 "$(dirname "$0")/srdma_forge.py" seqnak "$FORGE_IP" "$SRDMA_IP" \
		ip netns exec "$NS" "$PROG" srdma_w "$sg" >"$out_f" 2>&1
	[ -n "$(answer send)" ] || diag "forger: $(cat "$out_f")"
	check_eq "a SEND NAKed for sequence again and again: sent retry_cnt + 1 times" 8 \
		"$(answer copies)"
	check_eq "it fails with RETRY_EXC_ERR" "0:transport retry counter exceeded" \
		"$(answer send)"
	check_eq "its QP is in the error state" "6" "$(answer state)"

	# An ACK of a PSN the requester has not sent yet: a SEND of 1024 packets, more than the
	# window lets go unacknowledged, and an ACK of its last PSN before anything else. The ACK
	# answers nothing sent and is dropped (one rx_not_ours); the SEND completes only once all
	# its packets went and the peer acknowledged them.
	not_ours0=$(counter rx_not_ours)
	timeout 120 python3 "$(dirname "$0")/srdma_forge.py" unsent "$FORGE_IP" "$SRDMA_IP" \
		ip netns exec "$NS" "$PROG" srdma_w "$sg" >"$out_f" 2>&1
	[ -n "$(answer send)" ] || diag "forger: $(cat "$out_f")"
	held=$(answer held)
	check "the window held part of the SEND back ($held of 1024 packets sent)" \
		awk -v n="$held" 'BEGIN { exit !(n > 0 && n < 1024) }'
	check_eq "after a forged ACK of its last PSN, every packet of the SEND still went" 1024 \
		"$(answer all)"
	check_eq "the SEND completes" "0:success" "$(answer send)"
	check_eq "the forged ACK counted as not ours" 1 $(($(counter rx_not_ours) - not_ours0))
	check_eq "the QP stays in RTS" "3" "$(answer state)"

	# What the QP's own attributes refuse, whatever the memory's key allows: zero-length
	# WRITEs and READs to a QP without remote access (no key to check, but the QP's rights
	# still hold, as rxe and loopback check them), a READ to a QP with max_dest_rd_atomic 0,
	# and a READ and a WRITE longer than any message (2^31 + 1 bytes: invalid, whatever the
	# key). Each is NAKed, fails the QP and takes no receive.
	timeout 120 python3 "$(dirname "$0")/srdma_forge.py" closed "$FORGE_IP" "$SRDMA_IP" \
		ip netns exec "$NS" "$PROG" srdma_w "$sg" >"$out_f" 2>&1
	answer() { awk -v k="$1" '$1 == k { $1 = ""; print substr($0, 2) }' "$out_f"; }
	[ -n "$(answer write_huge)" ] || diag "forger: $(cat "$out_f")"
	flushed="0:Work Request Flushed Error $intact 6"
	for c in write0:62 write0_imm:62 read0:62 read_nord:61 read_huge:61 write_huge:61; do
		what="${c%:*} to a QP that refuses it: NAK ${c#*:}, receive flushed, QP failed"
		check_eq "$what" \
			"11/1000/${c#*:} $flushed" "$(answer "${c%:*}")"
	done

	# One ACK for the requests of a batch (srdma_forge.py coalesce): netem holds the forged
	# requests back and lets each burst go at once, so that they reach srdma's receive thread
	# in few batches. The ACKs stand for the WRITEs before them, in order, none for more than
	# 32; any other answer (a READ response, a duplicate's ACK, a NAK) comes after the ACK of
	# the requests before it, never before it.
	if tc qdisc add dev "$R" root netem slot 300ms 300ms 2>/dev/null; then
		timeout 120 python3 "$(dirname "$0")/srdma_forge.py" coalesce "$FORGE_IP" \
			"$SRDMA_IP" ip netns exec "$NS" "$PROG" srdma_w "$sg" >"$out_f" 2>&1
		tc qdisc del dev "$R" root
		[ -n "$(answer end)" ] || diag "forger: $(cat "$out_f")"
		read -r acks last msn most order <<<"$(answer stream)"
		check_eq "40 WRITEs in a burst: the last ACK names the last, MSN 40" "1027 40" \
			"$last $msn"
		check_eq "... every answer an ACK, in order, each MSN the WRITEs up to it" ordered \
			"$order"
		check "... no ACK stands for more than 32 WRITEs (most: $most)" \
			awk -v n="$most" 'BEGIN { exit !(n >= 1 && n <= 32) }'
		check "... fewer ACKs than WRITEs ($acks)" test "${acks:-40}" -lt 40
		mixed="11/1029/ack 10/102a/ack 11/102c/ack 11/102d/ack 11/102e/62"
		check_eq "a READ, a duplicate and a NAK among WRITEs: each after the held ACK" \
			"$mixed" "$(answer mixed)"
		check_eq "the duplicate wrote nothing, the wrong key failed the QP" \
			"0102030405060708090a0b0c0d0e0f10 6" "$(answer end)"
	else
		skip "ACKs of a burst" "no netem slot (tc qdisc ... netem slot)"
	fi
	rm -f "$out_f"
fi
ip addr del "$FORGE_IP/24" dev "$R"

# --- a lossy link (netem on both ends): RC completes with every byte checked, the counters
# say what happened. srdma_wire.c keeps both QPs until both ends completed: a pingpong that
# exits at its last completion leaves its peer retrying into nothing when the last ACK is lost.
netem="netem loss 3% duplicate 3% delay 1ms reorder 5%"
if ip netns exec "$NS" tc qdisc add dev "$S" root $netem 2>/dev/null &&
	tc qdisc add dev "$R" root $netem; then
	rt0=$(counter local_ack_timeout_err) sq0=$(counter packet_seq_err)
	in0=$(counter implied_nak_seq_err)
	dup0=$(counter duplicate_request) oos0=$(counter out_of_sequence)
	c_tap "RC over loss, duplication and reordering" 900 srdma_wire srdma_w "$sg" "$PEER_DEV" \
		"$pg" lossy rxe
	# READs asked again from the first missing response, both ways: the responder answers a
	# READ repeated in part from the READ it keeps.
	perftest "RDMA READ over loss: srdma reads from rxe, 16 KiB x 50" 18713 peer ib_read_bw \
		-s 16384 -n 50
	perftest "RDMA READ over loss: rxe reads from srdma, 16 KiB x 50" 18714 srdma ib_read_bw \
		-s 16384 -n 50
	lost=$(($(counter local_ack_timeout_err) - rt0 + $(counter packet_seq_err) - sq0 +
		$(counter implied_nak_seq_err) - in0))
	seen=$(($(counter duplicate_request) - dup0 + $(counter out_of_sequence) - oos0))
	check "srdma's requester recovered lost packets (timeouts, seq. or implied NAK: $lost)" \
		test "$lost" -gt 0
	check "srdma's responder saw duplicates or gaps ($seen)" test "$seen" -gt 0
	# Corruption on the way to srdma (rxe's end).
	ip netns exec "$NS" tc qdisc del dev "$S" root
	tc qdisc replace dev "$R" root netem corrupt 5%
	icrc0=$(counter rx_icrc_errors)
	c_tap "RC over a corrupting link" 900 srdma_wire srdma_w "$sg" "$PEER_DEV" "$pg" lossy rxe
	check "corrupted packets dropped as ICRC errors" test "$(counter rx_icrc_errors)" -gt \
		"$icrc0"
	tc qdisc del dev "$R" root
else
	skip "RC over a lossy link" "no netem (tc qdisc ... netem)"
fi

# --- teardown under traffic: RC WRITEs between srdma and rxe while srdma's network device,
# the device itself, its namespace or the module goes away. Nothing hangs or leaks; a device
# that processes hold goes when they let go of it, as rxe's does.
# topology: the namespace, the veth pair and both devices again, after a teardown.
topology() {
	ip netns list | grep -qw "$NS" || ip netns add "$NS" || return 1
	if ! ip link show "$R" >/dev/null 2>&1; then
		ip link add "$R" type veth peer name "$S" netns "$NS" || return 1
		ip addr add "$RXE_IP/24" dev "$R"
		ip link set "$R" up
		in_ns ip addr add "$SRDMA_IP/24" dev "$S"
		in_ns ip link set "$S" up
	fi
	[ -e "$SYSFS_IB/rxe_w" ] || rdma link add rxe_w type rxe netdev "$R" || return 1
	[ -e "$SYSFS_IB/srdma_w" ] || in_ns rdma link add srdma_w type srdma netdev "$S" || return 1
	wait_for 10 gid_index rxe_w "$(ipv4_gid "$RXE_IP")" &&
		wait_for 10 gid_index srdma_w "$(ipv4_gid "$SRDMA_IP")" || return 1
	rg=$(gid_index rxe_w "$(ipv4_gid "$RXE_IP")")
	sg=$(gid_index srdma_w "$(ipv4_gid "$SRDMA_IP")")
}
# traffic PORT: ib_write_bw for 20 s, the srdma side the server, running after 3 s; sets the
# PIDs ts and tc.
traffic() {
	timeout 90 ip netns exec "$NS" ib_write_bw -d srdma_w -x "$sg" -p "$1" -F -D 20 -s 65536 \
		>/dev/null 2>&1 &
	ts=$!
	wait_for 10 tcp_listening "$1" "$NS"
	timeout 90 ib_write_bw -d rxe_w -x "$rg" -p "$1" -F -D 20 -s 65536 "$SRDMA_IP" \
		>/dev/null 2>&1 &
	tc=$!
	sleep 3
}
# ended PID...: waits for the processes; whether none was cut by its timeout (exit 124, 137).
ended() {
	local p rc all=0
	for p in "$@"; do
		wait "$p"
		rc=$?
		[ "$rc" = 124 ] || [ "$rc" = 137 ] && all=1
	done
	return $all
}
gone() { ! [ -e "$SYSFS_IB/$1" ]; }
# returns_within SECS CMD...: runs CMD; whether it returned (with any status) within SECS.
returns_within() {
	local secs=$1
	shift
	timeout "$secs" "$@" >/dev/null 2>&1
	[ $? != 124 ]
}

if kmemleak_available; then
	kmemleak_clear
	leak=1
else
	leak=0
fi
in_ns tc qdisc del dev "$S" root 2>/dev/null
tc qdisc del dev "$R" root 2>/dev/null

# The network device goes while srdma's QP is answering: the unregistration waits until the
# processes that hold the device let go of it, as with rxe (neither disassociates them). The
# server's own exchange with its peer went over that link, so it waits forever: it is killed.
traffic 18720
in_ns ip link del "$S" &
del=$!
sleep 3
check "under traffic: the peer's QP fails once the link is gone (client exits)" \
	returns_within 60 sh -c "while kill -0 $tc 2>/dev/null; do sleep 0.2; done"
kill -9 "$ts" 2>/dev/null
pkill -9 -f "ib_write_bw -d srdma_w"
wait "$ts" "$tc" 2>/dev/null
t0=$SECONDS
check "under traffic: the network device's deletion completes once the server is gone" \
	returns_within 60 sh -c "while kill -0 $del 2>/dev/null; do sleep 0.2; done"
if wait_for 30 gone srdma_w; then
	ok "under traffic: srdma's device went with its network device ($((SECONDS - t0)) s after)"
else
	fail "under traffic: srdma's device went with its network device" "still there: $(rdma dev)"
fi

if topology; then
	traffic 18721
	in_ns rdma link delete srdma_w >/dev/null 2>&1 &
	del=$!
	check "under traffic: the perftest processes end while the device is deleted" ended "$ts" \
		"$tc"
	check "under traffic: rdma link delete completes once they let go" \
		returns_within 30 sh -c "while kill -0 $del 2>/dev/null; do sleep 0.2; done"
	check "under traffic: the device is gone" gone srdma_w
else
	fail "under traffic: rdma link delete" "cannot set the devices up again"
fi

if topology; then
	traffic 18722
	# The processes die with their QPs sending; then the namespace goes, and with it the
	# network device, the srdma device and the namespace's RoCEv2 socket.
	kill -9 "$ts" "$tc" 2>/dev/null
	pkill -9 ib_write_bw
	wait "$ts" "$tc" 2>/dev/null
	check "under traffic: processes killed, then the namespace deleted" ip netns del "$NS"
	check "under traffic: srdma's device goes with the namespace" wait_for 30 gone srdma_w
else
	fail "under traffic: namespace deletion" "cannot set the devices up again"
fi

if topology; then
	traffic 18723
	check_fails_with "under traffic: rmmod refused while processes hold the device" "in use" \
		rmmod srdma
	check "under traffic: the perftest processes still end normally" ended "$ts" "$tc"
	# The processes' last references to the module go as their files are released.
	check "after traffic: rmmod with the device still there" wait_for 20 rmmod srdma
	check "after traffic: the device went with the module" gone srdma_w
	check "the module loads again" modprobe srdma
else
	fail "under traffic: rmmod" "cannot set the devices up again"
fi

if [ "$leak" = 1 ]; then
	report=$(kmemleak_report)
	ours=$(grep -E -B2 -A20 'unreferenced object' <<<"$report" | grep -E \
		'srdma|ib_|rdma|udp|skb' || true)
	if [ -z "$ours" ]; then
		ok "kmemleak: nothing leaked by the teardowns"
	else
		fail "kmemleak: nothing leaked by the teardowns" "$report"
	fi
else
	skip "kmemleak: nothing leaked by the teardowns" "kmemleak not available"
fi

finish

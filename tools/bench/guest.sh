#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Inside the VM: runs every benchmark of `make bench` and keeps the raw output.
#   guest.sh OUTDIR
# Settings (environment): BENCH_QUICK=1 (the smoke subset), BENCH_VARIANTS, BENCH_TESTS,
# BENCH_SIZES, BENCH_RUNS. Writes OUTDIR/raw/VARIANT/*.log (both perftest sides),
# OUTDIR/runs.tsv (one line per run: variant test mode size run status log), OUTDIR/raw/limits-rN.txt
# and OUTDIR/raw/VARIANT/crossover-rN.txt; tools/bench/report.py turns them into tables.
here=$(dirname "$(readlink -f "$0")")
out=${1:?usage: guest.sh OUTDIR}
. "$here/variants.sh"
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH"

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	sizes=${BENCH_SIZES:-"64 65536"}
	runs=${BENCH_RUNS:-1}
	xsizes="64 256 512"
	quick=-q
else
	sizes=${BENCH_SIZES:-"2 8 64 256 1024 4096 16384 65536 262144 1048576"}
	runs=${BENCH_RUNS:-3}
	xsizes="64 128 192 256 320 512"
	quick=
fi
variants=${BENCH_VARIANTS:-$BENCH_VARIANTS_ALL}
tests=${BENCH_TESTS:-"ib_send_lat ib_write_lat ib_read_lat ib_send_bw ib_write_bw ib_read_bw"}
bin=$out/bin
mkdir -p "$out/raw"
: > "$out/runs.tsv"

{
	echo "kernel $(uname -r)"
	echo "cpus $(nproc)"
	echo "perftest $(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
	echo "quick ${BENCH_QUICK:-0}"
	echo "runs $runs"
	echo "sizes $sizes"
	echo "date $(date -u +%Y-%m-%dT%H:%MZ)"
} > "$out/env.txt"

# iters TEST SIZE: perftest's -n, so that each run moves a bounded amount of data under TCG.
iters() {
	local n
	case $1 in
	*_lat) if [ "$2" -le 4096 ]; then n=1000; elif [ "$2" -le 65536 ]; then n=200; else n=50; fi ;;
	*) n=$((16 * 1048576 / $2)); [ "$n" -le 1000 ] || n=1000; [ "$n" -ge 20 ] || n=20 ;;
	esac
	[ -z "$quick" ] || n=$(((n + 4) / 5))
	echo "$n"
}

# wait_listen PORT PID: until perftest's server listens (TCP, or rdma_cm with -R) or died.
wait_listen() {
	local i
	for i in $(seq 100); do
		kill -0 "$2" 2>/dev/null || return 1
		if [ "$PT_FLAGS" = -R ]; then
			rdma res show cm_id 2>/dev/null | grep -q "LISTEN.*:$1\b" && return 0
		else
			[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ] && return 0
		fi
		sleep 0.1
	done
	return 0
}

# result SIZE LOG: perftest's result line for SIZE.
result() {
	awk -v s="$1" '$1 == s && NF >= 5 && $3 ~ /^[0-9.]+$/ { print; exit }' "$2"
}

port=19000
# run_pair LOGBASE PROGRAM ARGS...: server on SRV_DEV, client on CLI_DEV; 0 when both exited
# 0 and the client printed its result line.
run_pair() {
	local base=$1 srv crc src
	shift
	port=$((port + 1))
	# shellcheck disable=SC2086
	timeout 300 "$@" -d "$SRV_DEV" -p "$port" $PT_FLAGS > "$base.srv.log" 2>&1 &
	srv=$!
	wait_listen "$port" "$srv"
	# shellcheck disable=SC2086
	timeout 300 "$@" -d "$CLI_DEV" -p "$port" $PT_FLAGS "$SRV_ADDR" > "$base.log" 2>&1
	crc=$?
	wait "$srv"
	src=$?
	[ "$crc" = 0 ] && [ "$src" = 0 ]
}

n=0
total=0
for v in $variants; do
	for t in $tests; do
		total=$((total + $(wc -w <<<"$sizes") * runs))
	done
done
vi=0
for v in $variants; do
	vi=$((vi + 1))
	fn=${v//-/_}
	dir=$out/raw/$v
	mkdir -p "$dir"
	echo "bench: variant $vi/$(wc -w <<<"$variants"): $v: setting up"
	if ! "variant_${fn}_setup" > "$dir/setup.log" 2>&1; then
		echo "bench: $v: set-up failed (see $dir/setup.log); its figures are n/a"
		cat "$dir/setup.log"
		for t in $tests; do
			for s in $sizes; do
				printf '%s\t%s\tsge\t%s\t-\tn/a:set-up failed\t-\n' "$v" "$t" "$s" >> "$out/runs.tsv"
			done
		done
		n=$((n + $(wc -w <<<"$tests") * $(wc -w <<<"$sizes") * runs))
		"variant_${fn}_teardown" >/dev/null 2>&1
		continue
	fi
	# The set-up ran in this shell (only its output went to the file): its variables are set.
	echo "bench: $v: server $SRV_DEV, client $CLI_DEV at $SRV_ADDR, perftest flags '$PT_FLAGS'"

	# Does perftest honour -I on this device? It turns inline off for devices it does not know.
	modes=sge
	run_pair "$dir/inline-probe" ib_send_lat -F -s 64 -n 10 -I 64
	if grep -q 'Max inline data : 64\[B\]' "$dir/inline-probe.log"; then
		modes="sge inline"
		total=$((total + 4 * $(wc -w <<<"$sizes") * runs))
	fi
	reason=$(grep -m1 -o 'Device not recognized to implement inline feature' "$dir/inline-probe.log")
	echo "bench: $v: perftest -I: ${reason:+disabled by perftest ($reason)}${modes#sge}"
	printf '%s\tinline-probe\t-\t64\t-\t%s\t%s\n' "$v" "${reason:-$modes}" "raw/$v/inline-probe.log" >> "$out/runs.tsv"

	for t in $tests; do
		na=
		for x in $NA_TESTS; do
			[ "${x%%=*}" = "$t" ] && na=${x#*=}
		done
		for mode in $modes; do
			case $mode/$t in inline/ib_read_*) continue ;; esac
			for s in $sizes; do
				for r in $(seq "$runs"); do
					n=$((n + 1))
					base=$dir/$t-$mode-$s-r$r
					if [ -n "$na" ]; then
						status="n/a:$na"
					elif [ "$mode" = inline ] && [ "$s" -gt 256 ]; then
						status="n/a:above max inline"
					else
						args=(-F -s "$s" -n "$(iters "$t" "$s")")
						[ "$mode" = sge ] || args+=(-I "$s")
						if run_pair "$base" "$t" "${args[@]}" && [ -n "$(result "$s" "$base.log")" ]; then
							status=ok
						else
							status=fail
						fi
					fi
					line=$(result "$s" "$base.log" 2>/dev/null)
					case $t in
					*_lat) fig=$(awk '{ print $5 " us typical" }' <<<"$line") ;;
					*) fig=$(awk '{ print $4 " MB/s" }' <<<"$line") ;;
					esac
					printf 'bench: [%4d/%d] %-6s %-12s %-6s %8s B run %d/%d: %s\n' "$n" "$total" \
						"$v" "$t" "$mode" "$s" "$r" "$runs" "${fig:-$status}"
					printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "$t" "$mode" "$s" "$r" "$status" \
						"${base#"$out"/}.log" >> "$out/runs.tsv"
				done
			done
		done
	done

	if [ "$CROSSOVER" = 1 ]; then
		for r in $(seq "$runs"); do
			echo "bench: $v: inline/SGE crossover ($xsizes B) run $r/$runs"
			# shellcheck disable=SC2086
			timeout 600 "$bin/inline" $quick "$SRV_DEV" "$CLI_DEV" "$GID_INDEX" $xsizes \
				> "$dir/crossover-r$r.txt" 2>&1 ||
				echo "bench: $v: crossover failed: $(tail -3 "$dir/crossover-r$r.txt")"
		done
	fi
	"variant_${fn}_teardown" >/dev/null 2>&1
done

for r in $(seq "$runs"); do
	echo "bench: limits (memcpy, shared-memory ping-pong) run $r/$runs"
	# shellcheck disable=SC2086
	"$bin/limits" $quick $(printf '%s\n' $sizes $xsizes | sort -nu) > "$out/raw/limits-r$r.txt" 2>&1
done
echo "bench: done"

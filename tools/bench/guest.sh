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

# The quick run proves the harness (make check runs it on the debug kernel, where each perftest
# run takes half a minute): one latency and one bandwidth test, SEND and READ, two sizes.
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	sizes=${BENCH_SIZES:-"64 65536"}
	tests=${BENCH_TESTS:-"ib_send_lat ib_read_bw"}
	runs=${BENCH_RUNS:-1}
	xsizes="64 1024 1280"
	quick=-q
	# perftest's margin is a quarter of the duration in whole seconds: none below 4 s.
	bw_secs=2
else
	sizes=${BENCH_SIZES:-"2 8 64 256 1024 4096 16384 65536 262144 1048576"}
	tests=${BENCH_TESTS:-"ib_send_lat ib_write_lat ib_read_lat ib_send_bw ib_write_bw ib_read_bw"}
	runs=${BENCH_RUNS:-3}
	xsizes="64 128 256 512 768 1024 1280"
	quick=
	bw_secs=4
fi
variants=${BENCH_VARIANTS:-$BENCH_VARIANTS_ALL}
bin=$out/bin
mkdir -p "$out/raw"
: > "$out/runs.tsv"

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null
{
	echo "kernel $(uname -r)"
	echo "kernel_kind ${BENCH_KERNEL_KIND:-unknown}"
	echo "config_sha256 ${BENCH_CONFIG_SHA:-unknown}"
	echo "cmdline $(cat /proc/cmdline)"
	# Debug options that tax allocations and locks: a bench kernel has none of them.
	debug=
	[ ! -e /sys/kernel/debug/kmemleak ] || debug+=" kmemleak"
	[ ! -e /proc/lockdep ] || debug+=" lockdep"
	echo "debug ${debug:- none}"
	echo "cpus $(nproc)"
	echo "perftest $(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
	echo "quick ${BENCH_QUICK:-0}"
	echo "runs $runs"
	echo "bw_secs $bw_secs"
	echo "sizes $sizes"
	echo "pinning server vCPU 0, client vCPU 1"
	echo "date $(date -u +%Y-%m-%dT%H:%MZ)"
} > "$out/env.txt"

# measure TEST SIZE: how long perftest runs. Latency: -n, enough iterations that the 99.9 %
# figure rests on at least 10 samples (10000) where a run stays short, the 99 % one (1000) above
# 4 KiB, neither above 64 KiB (report.py leaves those columns out). Bandwidth: -D, the same time
# for every device, of which perftest measures the middle half (-D 4: a margin of 1 s at each end,
# outside the ramp-up and the drain); a count of messages would give a fast device a run of a
# few milliseconds, as short as one of the VM's stalls and mostly ramp-up.
measure() {
	local n
	case $1 in
	*_lat)
		if [ "$2" -le 4096 ]; then n=10000; elif [ "$2" -le 65536 ]; then n=1000; else n=100; fi
		# The quick run proves the harness, not the figures: a fiftieth, at least 10.
		[ -z "$quick" ] || { n=$(((n + 49) / 50)); [ "$n" -ge 10 ] || n=10; }
		echo "-n $n"
		;;
	*) echo "-D $bw_secs" ;;
	esac
}

# wait_listen PORT PID: until perftest's server listens (TCP, or rdma_cm with -R) or died.
wait_listen() {
	local i
	for i in $(seq 100); do
		kill -0 "$2" 2>/dev/null || return 1
		if [ "$PT_FLAGS" = -R ]; then
			rdma res show cm_id 2>/dev/null | grep -q "LISTEN.*:$1\b" && return 0
		else
			[ -n "$(${SRV_NS:+ip netns exec "$SRV_NS"} ss -Hltn "sport = :$1" 2>/dev/null)" ] && return 0
		fi
		sleep 0.1
	done
	return 0
}

# clock_failed LOG: whether perftest could not time the run: it calibrates its cycle counter
# against the system clock first and, when the two do not line up (a busy host under
# emulation), prints "inf" (latency) or figures computed from a wrong clock (bandwidth); and
# now and then a bandwidth run prints an average of 0.00 MB/s beside a count of messages that
# says otherwise (report.py's bw_contradicted).
clock_failed() {
	grep -q 'Correlation coefficient r^2' "$1" || grep -Eq '^ *[0-9]+ +[0-9]+ +inf ' "$1" ||
		awk -v secs=$((bw_secs - 2)) 'NF == 5 && $1 ~ /^[0-9]+$/ && $4 == "0.00" &&
			secs > 0 && $1 * $2 / 1048576 / secs >= 0.005 { f = 1 } END { exit !f }' "$1"
}

# result SIZE LOG: perftest's result line for SIZE.
result() {
	awk -v s="$1" '$1 == s && NF >= 5 && $3 ~ /^[0-9.]+$/ { print; exit }' "$2"
}

# counters: every hw_counter of the variant's two devices, as "DEV NAME VALUE"; one process
# reads them all (a process per file took seconds a run on the debug kernel).
counters() {
	grep -rs . /sys/class/infiniband/"$SRV_DEV"/ports/1/hw_counters \
		/sys/class/infiniband/"$CLI_DEV"/ports/1/hw_counters |
		awk -F: '{ n = split($1, p, "/"); print p[5], p[n], $2 }'
}

port=19000
# run_pair LOGBASE PROGRAM ARGS...: server on SRV_DEV (vCPU 0), client on CLI_DEV (vCPU 1); 0
# when both exited 0 and the client printed its result line. LOGBASE.counters gets the hw_counters
# that moved during the run.
run_pair() {
	local base=$1 srv crc src before sns=() cns=()
	shift
	port=$((port + 1))
	[ -z "$SRV_NS" ] || sns=(ip netns exec "$SRV_NS")
	[ -z "$CLI_NS" ] || cns=(ip netns exec "$CLI_NS")
	before=$(counters)
	# shellcheck disable=SC2086
	timeout 300 "${sns[@]}" taskset -c 0 "$@" -d "$SRV_DEV" -p "$port" $PT_FLAGS \
		> "$base.srv.log" 2>&1 &
	srv=$!
	wait_listen "$port" "$srv"
	# shellcheck disable=SC2086
	timeout 300 "${cns[@]}" taskset -c 1 "$@" -d "$CLI_DEV" -p "$port" $PT_FLAGS "$SRV_ADDR" \
		> "$base.log" 2>&1
	crc=$?
	wait "$srv"
	src=$?
	awk 'NR == FNR { was[$1 " " $2] = $3; next }
		($1 " " $2) in was && $3 != was[$1 " " $2] { print $1, $2, $3 - was[$1 " " $2] }' \
		<(echo "$before") <(counters) > "$base.counters"
	[ "$crc" = 0 ] && [ "$src" = 0 ]
}

# Every device is set up before the first run, so that runs of the devices interleave and noise
# from the host falls on all alike. rxe's module goes first: it takes UDP port 4791 in the
# initial namespace only if nothing holds it yet (srdma's devices there talk through loopback).
modprobe rdma_rxe 2>/dev/null
declare -A V_SRV V_CLI V_ADDR V_SRVNS V_CLINS V_FLAGS V_GID V_CROSS V_NA V_MODES
ready=()
for v in $variants; do
	fn=${v//-/_}
	dir=$out/raw/$v
	mkdir -p "$dir"
	SRV_NS= CLI_NS= GID_INDEX= CROSSOVER=0 NA_TESTS=
	echo "bench: $v: setting up"
	if ! "variant_${fn}_setup" > "$dir/setup.log" 2>&1; then
		echo "bench: $v: set-up failed (see $dir/setup.log); its figures are n/a"
		cat "$dir/setup.log"
		for t in $tests; do
			for s in $sizes; do
				printf '%s\t%s\tsge\t%s\t-\tn/a:set-up failed\t-\n' "$v" "$t" "$s" >> "$out/runs.tsv"
			done
		done
		continue
	fi
	# The set-up ran in this shell (only its output went to the file): its variables are set.
	V_SRV[$v]=$SRV_DEV V_CLI[$v]=$CLI_DEV V_ADDR[$v]=$SRV_ADDR V_SRVNS[$v]=$SRV_NS
	V_CLINS[$v]=$CLI_NS V_FLAGS[$v]=$PT_FLAGS V_GID[$v]=$GID_INDEX V_CROSS[$v]=$CROSSOVER
	V_NA[$v]=$NA_TESTS
	ready+=("$v")
	echo "bench: $v: server $SRV_DEV${SRV_NS:+ (namespace $SRV_NS)}, client $CLI_DEV${CLI_NS:+ (namespace $CLI_NS)} at $SRV_ADDR, perftest flags '$PT_FLAGS'"
done

# use VARIANT: its devices and flags become the current ones.
use() {
	SRV_DEV=${V_SRV[$1]} CLI_DEV=${V_CLI[$1]} SRV_ADDR=${V_ADDR[$1]} SRV_NS=${V_SRVNS[$1]}
	CLI_NS=${V_CLINS[$1]} PT_FLAGS=${V_FLAGS[$1]} GID_INDEX=${V_GID[$1]}
	CROSSOVER=${V_CROSS[$1]} NA_TESTS=${V_NA[$1]}
}

total=0
for v in "${ready[@]}"; do
	use "$v"
	dir=$out/raw/$v
	# Does perftest honour -I on this device? It turns inline off for devices it does not know.
	modes=sge
	run_pair "$dir/inline-probe" ib_send_lat -F -s 64 -n 10 -I 64
	if grep -q 'Max inline data : 64\[B\]' "$dir/inline-probe.log"; then
		modes="sge inline"
	fi
	V_MODES[$v]=$modes
	reason=$(grep -m1 -o 'Device not recognized to implement inline feature' "$dir/inline-probe.log")
	echo "bench: $v: perftest -I: ${reason:+disabled by perftest ($reason)}${modes#sge}"
	printf '%s\tinline-probe\t-\t64\t-\t%s\t%s\n' "$v" "${reason:-$modes}" "raw/$v/inline-probe.log" >> "$out/runs.tsv"
	total=$((total + $(wc -w <<<"$tests") * $(wc -w <<<"$modes") * $(wc -w <<<"$sizes") * runs))
	# Settle: a warm-up (its figures are not kept); the quick run has no figures to settle.
	[ -n "$quick" ] || run_pair "$dir/warm-up" ib_send_lat -F -s 64 -n 1000 || true
done
sleep 5

n=0
for r in $(seq "$runs"); do
	for t in $tests; do
		for s in $sizes; do
			for v in "${ready[@]}"; do
				use "$v"
				na=
				for x in $NA_TESTS; do
					[ "${x%%=*}" = "$t" ] && na=${x#*=}
				done
				for mode in ${V_MODES[$v]}; do
					n=$((n + 1))
					case $mode/$t in inline/ib_read_*) continue ;; esac
					base=$out/raw/$v/$t-$mode-$s-r$r
					if [ -n "$na" ]; then
						status="n/a:$na"
					elif [ "$mode" = inline ] && [ "$s" -gt 1024 ]; then
						status="n/a:above max inline"
					else
						read -ra how <<<"$(measure "$t" "$s")"
						args=(-F -s "$s" "${how[@]}")
						[ "$mode" = sge ] || args+=(-I "$s")
						if run_pair "$base" "$t" "${args[@]}" && ! clock_failed "$base.log" &&
							[ -n "$(result "$s" "$base.log")" ]; then
							status=ok
						elif clock_failed "$base.log" && run_pair "$base" "$t" "${args[@]}" &&
							! clock_failed "$base.log" && [ -n "$(result "$s" "$base.log")" ]; then
							# Measured on the second try: perftest's clock calibration failed on the first.
							status=ok
							echo "bench: $v $t $s B: perftest could not calibrate its clock; ran again"
						else
							status=fail
						fi
					fi
					line=$(result "$s" "$base.log" 2>/dev/null)
					case $t in
					*_lat) fig=$(awk '{ print $5 " us typical" }' <<<"$line") ;;
					*) fig=$(awk '{ print $4 " MB/s" }' <<<"$line") ;;
					esac
					printf 'bench: [%4d/%d] %-10s %-12s %-6s %8s B run %d/%d: %s\n' "$n" "$total" \
						"$v" "$t" "$mode" "$s" "$r" "$runs" "${fig:-$status}"
					printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "$t" "$mode" "$s" "$r" "$status" \
						"${base#"$out"/}.log" >> "$out/runs.tsv"
				done
			done
		done
	done
done

# Message rate: 64 B RDMA WRITEs posted one per call with every one signalled, then one
# completion per 32 (perftest -Q), then in lists of 32 (-l: one call, one doorbell per list).
msg_modes=${BENCH_MSGRATE:-"l1q1 l1q32 l32q32"}
[ -z "$quick" ] || msg_modes=
for r in $(seq "$runs"); do
	for m in $msg_modes; do
		for v in "${ready[@]}"; do
			use "$v"
			list=${m#l} list=${list%q*} mod=${m#*q}
			base=$out/raw/$v/msgrate-$m-r$r
			if run_pair "$base" ib_write_bw -F -s 64 -D "$bw_secs" -l "$list" -Q "$mod" &&
				[ -n "$(result 64 "$base.log")" ]; then
				status=ok
			else
				status=fail
			fi
			fig=$(awk '{ print $5 " Mpps" }' <<<"$(result 64 "$base.log" 2>/dev/null)")
			echo "bench: msgrate $v $m run $r/$runs: ${fig:-$status}"
			printf '%s\tmsgrate\t%s\t64\t%s\t%s\t%s\n' "$v" "$m" "$r" "$status" \
				"${base#"$out"/}.log" >> "$out/runs.tsv"
		done
	done
done

# The same WRITEs posted one per ibv_post_send, in lists, and in the extended API's batches
# (tools/bench/batch.c: perftest takes that API only for devices it knows), on the devices
# connected by GID: siw connects through rdma_cm only.
for r in $(seq "$runs"); do
	for v in "${ready[@]}"; do
		use "$v"
		[ -n "$GID_INDEX" ] || continue
		echo "bench: $v: post API batches run $r/$runs"
		# shellcheck disable=SC2086
		timeout 300 "$bin/batch" $quick "$SRV_DEV" "$CLI_DEV" "$GID_INDEX" \
			> "$out/raw/$v/batch-r$r.txt" 2>&1 ||
			echo "bench: $v: batch failed: $(tail -3 "$out/raw/$v/batch-r$r.txt")"
	done
done

for v in "${ready[@]}"; do
	use "$v"
	dir=$out/raw/$v
	if [ "$CROSSOVER" = 1 ]; then
		for r in $(seq "$runs"); do
			echo "bench: $v: inline/SGE crossover ($xsizes B) run $r/$runs"
			# shellcheck disable=SC2086
			timeout 600 "$bin/inline" $quick "$SRV_DEV" "$CLI_DEV" "$GID_INDEX" $xsizes \
				> "$dir/crossover-r$r.txt" 2>&1 ||
				echo "bench: $v: crossover failed: $(tail -3 "$dir/crossover-r$r.txt")"
		done
	fi
	"variant_${v//-/_}_teardown" >/dev/null 2>&1
done

for r in $(seq "$runs"); do
	echo "bench: limits (memcpy, shared-memory ping-pong) run $r/$runs"
	# shellcheck disable=SC2086
	"$bin/limits" $quick $(printf '%s\n' $sizes $xsizes | sort -nu) > "$out/raw/limits-r$r.txt" 2>&1
done
echo "bench: done"

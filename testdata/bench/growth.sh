#!/usr/bin/env bash
# How `viewer serve` grows with the profile (issue 18): for each shape,
# one empty server, then upload, page and first flame.json of the generated
# profile. Prints wall times, the server's CPU time (user+sys, from
# /proc/PID/stat) over the sequence and its peak RSS (VmHWM).
#
#   testdata/bench/growth.sh [SHAPE...]     # default: 200k 2m 20m
#
# Shapes (samples / unique stacks / functions, genprofile's flags):
#   200k  200,000 / 50,000 / 20,000      (the benchmark profile)
#   2m    2,000,000 / 500,000 / 100,000  (the issue's 2M profile)
#   20m   20,000,000 / 2,000,000 / 200,000
# 20m scales samples by 10 but stacks by 4 and functions by 2: a recording
# ten times longer revisits the stacks it saw rather than finding ten times
# as many (the 2M shape already has 4 samples per stack), and a linear
# 5M-stack shape would need about 10 GB in the server, more than this
# shared 24 GB machine can spare. 20m is written by genprofile -stream.
# SIZE-VARIANT (e.g. 2m-names, 20m-labels) is that size in another shape
# (issue 36, genprofile -shape VARIANT, testdata/bench/gen's Variants),
# one genprofile option changed, written by genprofile -stream (the
# tables, then the samples):
#   records  none (2m-records is 2m with its samples after the tables)
#   merged   one record per distinct stack, not one per sample
#   shallow  stacks 5–10 deep          deep     stacks 60–120 deep
#   locs     8 locations per function  names    200-byte Go and C++ names
#   inline   4 inlined calls in every location
#   labels   4 string labels and a numeric one on every sample
#   types    4 sample types
#   all      names, inline, labels, types and stacks 10-100 deep together
# gunzip_s is the CPU time of `gzip -dc` reading the same file, run after
# the server's sequence, and x_gunzip the server's CPU over it: a floor
# any reader of the file pays (the server inflates it too), and an anchor
# that moves with the machine's speed, where seconds do not.
# RESTART=1 then also stops the server, starts it again on the same data
# directory and asks for the first flame.json again, read back from the
# stored copy, as after a restart or on another replica: the line
# SHAPE-restart, whose flame_s, cpu_s and rss_MiB are that request's and
# that new server's.
# GCTRACE=1 runs the server with GODEBUG=gctrace=1 and prints, under each
# shape's line, the CPU its collections took over the sequence (the sum of
# gctrace's cpu fields: assist, background, idle and pauses).
# DEFAULT_SERVER=1 runs the server a user starts, without the flags that
# lift its limits (issue 36's "default server"; a profile over a default
# limit is then refused).
# Profiles are generated into $BENCH_CACHE (default /tmp/viewer-bench) and
# reused. INGEST_MEMORY sets serve's --ingest-memory (default 16GiB, no
# squeeze; TestHugeProfile runs under 1200MiB). PERF_RECORD=1 also records
# the server with perf (cpu-clock, call graphs) during the sequence, into
# $BENCH_CACHE/serve-SHAPE.perf.data. VIEWER=BINARY runs that viewer instead of
# building this tree's.
set -euo pipefail
cd "$(dirname "$0")/../.."

cache=${BENCH_CACHE:-/tmp/viewer-bench}
mkdir -p "$cache"
work=$(mktemp -d /tmp/growthbench.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${VIEWER:-}" ]; then
	cp "$VIEWER" "$work/viewer" # a prebuilt viewer, e.g. an older commit's
else
	go build -o "$work/viewer" ./cmd/viewer
fi
go build -o "$work/genprofile" ./testdata/bench/genprofile

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
cpu() { awk '{ print ($14 + $15) / 100 }' "/proc/$1/stat"; } # clock ticks (USER_HZ 100)
wait_http() {
	for _ in $(seq 1 3000); do
		curl -s -o /dev/null "$1" && return 0
		sleep 0.1
	done
	echo "timed out waiting for $1" >&2
	return 1
}

printf '%-10s %10s %9s %9s %11s %11s %9s %7s %9s %9s\n' shape samples gz_MB upload_s flame_s cpu_s rss_MiB load gunzip_s x_gunzip
for shape in ${@:-200k 2m 20m}; do
	case ${shape%%-*} in
	200k) args=(-samples 200000 -stacks 50000 -functions 20000); n=200000 ;;
	2m) args=(-samples 2000000 -stacks 500000 -functions 100000); n=2000000 ;;
	20m) args=(-stream -samples 20000000 -stacks 2000000 -functions 200000); n=20000000 ;;
	*) echo "unknown size in $shape (200k, 2m, 20m)" >&2; exit 2 ;;
	esac
	case $shape in
	*-*) args+=(-stream -shape "${shape#*-}") ;; # gen.Variants, written as 20m is
	esac
	f=$cache/bench-$shape.pb.gz
	[ -s "$f" ] || { "$work/genprofile" -o "$f.tmp" "${args[@]}" && mv "$f.tmp" "$f"; }
	port=$(freeport)
	limits=(--max-frames 0 --max-samples 0 --max-records 0 --max-upload 4GiB --ingest-memory "${INGEST_MEMORY:-16GiB}" --render-timeout 30m)
	gctrace=()
	[ -z "${GCTRACE:-}" ] || gctrace=(env GODEBUG=gctrace=1)
	[ -z "${DEFAULT_SERVER:-}" ] || limits=()
	serve() {
		"${gctrace[@]}" "$work/viewer" serve --addr "127.0.0.1:$port" --data "$work/data.$port" --no-debuginfod --no-local-files "${limits[@]}" \
			>>"$work/viewer.$port.log" 2>&1 &
		pid=$!
		pids+=("$pid")
		wait_http "http://127.0.0.1:$port/healthz"
	}
	serve
	if [ -n "${PERF_RECORD:-}" ]; then
		perf record -q -e cpu-clock -F 499 -g -p "$pid" -o "$cache/serve-$shape.perf.data" 2>/dev/null &
		perfpid=$!
	fi
	c0=$(cpu "$pid")
	l0=$(wc -l <"$work/viewer.$port.log")
	load=$(cut -d' ' -f1 /proc/loadavg)
	t0=$(now)
	resp=$(curl -sS -X POST -H "Content-Type: application/octet-stream" -T "$f" "http://127.0.0.1:$port/api/profiles") # -T streams the file; --data-binary @ reads it into memory, and fails past 2 GiB
	t1=$(now)
	id=$(sed -n 's/.*"id":"\([a-z2-7]*\)".*/\1/p' <<<"$resp")
	[ -n "$id" ] || { echo "$shape: upload failed: $resp" >&2; exit 1; }
	curl -sS -o /dev/null --compressed "http://127.0.0.1:$port/p/$id"
	curl -sS -o /dev/null --compressed -f "http://127.0.0.1:$port/p/$id/flame.json"
	t2=$(now)
	c1=$(cpu "$pid")
	[ -z "${PERF_RECORD:-}" ] || { kill -INT "$perfpid"; wait "$perfpid" || true; }
	rss=$(awk '/VmHWM/ { print $2 / 1024 }' "/proc/$pid/status")
	kill "$pid"; wait "$pid" 2>/dev/null || true
	gz=$( { TIMEFORMAT='%U %S'; time gzip -dc "$f" >/dev/null; } 2>&1 | awk '{ print $1 + $2 }')
	awk -v s="$shape" -v n="$n" -v sz="$(stat -c %s "$f")" -v a="$t0" -v b="$t1" -v c="$t2" -v c0="$c0" -v c1="$c1" -v r="$rss" -v l="$load" -v gz="$gz" 'BEGIN {
		printf "%-10s %10d %9.1f %9.2f %11.2f %11.2f %9.0f %7s %9.2f %9.2f\n", s, n, sz / 1e6, b - a, c - a, c1 - c0, r, l, gz, (c1 - c0) / gz }'
	[ -z "${GCTRACE:-}" ] || tail -n "+$((l0 + 1))" "$work/viewer.$port.log" | awk -v s="$shape" '
		/^gc [0-9]+ @/ { split($0, a, "clock, "); split(a[2], b, " ms cpu"); m = split(b[1], c, /[+\/]/); for (i = 1; i <= m; i++) t += c[i]; k++ }
		END { printf "%-10s gc_cpu_s %.2f in %d collections\n", s, t / 1000, k }'
	if [ -n "${RESTART:-}" ]; then
		serve
		c0=$(cpu "$pid")
		t0=$(now)
		curl -sS -o /dev/null --compressed -f "http://127.0.0.1:$port/p/$id/flame.json"
		t2=$(now)
		c1=$(cpu "$pid")
		rss=$(awk '/VmHWM/ { print $2 / 1024 }' "/proc/$pid/status")
		kill "$pid"; wait "$pid" 2>/dev/null || true
		awk -v s="$shape-restart" -v n="$n" -v a="$t0" -v c="$t2" -v c0="$c0" -v c1="$c1" -v r="$rss" -v l="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
			printf "%-10s %10d %9s %9s %11.2f %11.2f %9.0f %7s\n", s, n, "-", "-", c - a, c1 - c0, r, l }'
	fi
done

#!/usr/bin/env bash
# Side-by-side benchmark of huge inputs (issue 18), both sides in one run:
#
#   testdata/bench/huge.sh [PERF.DATA]
#
#  1. the 200k-sample benchmark profile: `viewer serve` (already running,
#     empty) upload + page + flame.json, against `go tool pprof -http`
#     launched on the file until /ui/flamegraph is served;
#  2. the 2M-sample profile (genprofile -samples 2000000 -stacks 500000
#     -functions 100000): viewer upload + first flame.json, and the server's
#     peak RSS (pprof's /ui/flamegraph is not run: it passed 21 GB);
#  3. with PERF.DATA: viewer upload + page + flame.json against
#     `perf report --stdio` on the same file, time and peak RSS.
# VIEWER=BINARY runs that viewer instead of building this tree's.
# Set SKIP_2M=1 to leave out step 2, SKIP_200K=1 step 1. Profiles are generated into
# $BENCH_CACHE (default /tmp/viewer-bench) and reused.
set -euo pipefail
cd "$(dirname "$0")/../.."

cache=${BENCH_CACHE:-/tmp/viewer-bench}
mkdir -p "$cache"
work=$(mktemp -d /tmp/hugebench.XXXXXX)
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
pprof_bin=$(go tool -n pprof)
p200k=$cache/bench-200k.pb.gz
p2m=$cache/bench-2m.pb.gz
[ -s "$p200k" ] || "$work/genprofile" -o "$p200k"
[ -n "${SKIP_2M:-}" ] || [ -s "$p2m" ] || "$work/genprofile" -o "$p2m" -samples 2000000 -stacks 500000 -functions 100000

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
hwm() { awk '/VmHWM/ {print $2 * 1024}' "/proc/$1/status"; }
now() { date +%s.%N; }
wait_http() {
	for _ in $(seq 1 3000); do
		curl -s -o /dev/null "$1" && return 0
		sleep 0.1
	done
	echo "timed out waiting for $1" >&2
	return 1
}

# serve FLAGS...: starts an empty viewer serve; sets vport and vpid.
serve() {
	vport=$(freeport)
	"$work/viewer" serve --addr "127.0.0.1:$vport" --data "$work/data.$vport" --no-debuginfod --no-local-files "$@" \
		>"$work/viewer.$vport.log" 2>&1 &
	vpid=$!
	pids+=("$vpid")
	wait_http "http://127.0.0.1:$vport/healthz"
}
# view FILE: upload, page, flame.json; prints "upload_s first_view_s".
view() {
	local t0 t1 t2 resp id
	t0=$(now)
	resp=$(curl -sS --data-binary @"$1" "http://127.0.0.1:$vport/api/profiles")
	t1=$(now)
	id=$(sed -n 's/.*"id":"\([a-z2-7]*\)".*/\1/p' <<<"$resp")
	[ -n "$id" ] || { echo "upload failed: $resp" >&2; exit 1; }
	curl -sS -o /dev/null --compressed "http://127.0.0.1:$vport/p/$id"
	curl -sS -o /dev/null --compressed -f "http://127.0.0.1:$vport/p/$id/flame.json"
	t2=$(now)
	awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "%.3f %.3f\n", b - a, c - a }'
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- 1. 200k: pprof launch + /ui/flamegraph vs viewer upload + page + flame.json
if [ -z "${SKIP_200K:-}" ]; then
serve
read -r v_up v_view < <(view "$p200k")
v_rss=$(hwm "$vpid")
kill "$vpid"; wait "$vpid" 2>/dev/null || true
pport=$(freeport)
t0=$(now)
"$pprof_bin" -http="127.0.0.1:$pport" -no_browser "$p200k" >"$work/pprof.log" 2>&1 &
ppid=$!
pids+=("$ppid")
wait_http "http://127.0.0.1:$pport/ui/top?n=1"
curl -sS -o /dev/null --compressed "http://127.0.0.1:$pport/ui/flamegraph"
t1=$(now)
p_rss=$(hwm "$ppid")
kill "$ppid"; wait "$ppid" 2>/dev/null || true
awk -v p="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" -v v="$v_view" -v vr="$v_rss" -v pr="$p_rss" 'BEGIN {
	printf "200k: pprof launch + /ui/flamegraph %.2f s, %.0f MB | viewer upload + page + flame.json %.2f s, %.0f MB | time ratio %.3f (goal <= 0.10), RSS ratio %.3f\n", p, pr / 1e6, v, vr / 1e6, v / p, vr / pr }'
fi

# --- 2. 2M: viewer upload + first flame.json, peak RSS
if [ -z "${SKIP_2M:-}" ]; then
	serve --max-frames 0 --ingest-memory 1200MiB --render-timeout 10m
	read -r v_up v_view < <(view "$p2m")
	v_rss=$(hwm "$vpid")
	kill "$vpid"; wait "$vpid" 2>/dev/null || true
	awk -v u="$v_up" -v v="$v_view" -v r="$v_rss" 'BEGIN {
		printf "2M: viewer upload %.2f s, upload + page + first flame.json %.2f s (goal <= 4 s), peak RSS %.0f MiB (goal <= 1536)\n", u, v, r / 1048576 }'
fi

# --- 3. perf.data: viewer upload + page + flame.json vs perf report --stdio
if [ -n "${1:-}" ]; then
	serve --ingest-memory 1200MiB --max-upload 2GiB --render-timeout 10m
	read -r v_up v_view < <(view "$1")
	v_rss=$(hwm "$vpid")
	kill "$vpid"; wait "$vpid" 2>/dev/null || true
	/usr/bin/time -f '%e %M' -o "$work/perf.time" perf report --stdio -i "$1" >/dev/null 2>&1
	read -r p_time p_kb <"$work/perf.time"
	awk -v p="$p_time" -v pr="$((p_kb * 1024))" -v v="$v_view" -v vr="$v_rss" 'BEGIN {
		printf "perf.data: perf report --stdio %.2f s, %.0f MB | viewer upload + page + flame.json %.2f s, %.0f MB | time ratio %.3f (goal <= 0.15), RSS ratio %.3f (goal <= 0.25)\n", p, pr / 1e6, v, vr / 1e6, v / p, vr / pr }'
fi

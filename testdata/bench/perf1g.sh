#!/usr/bin/env bash
# A perf.data of 1 GB or more against viewer's memory budget (issue 18),
# both sides in one run:
#
#   testdata/bench/perf1g.sh [PERF.DATA...]
#
# Without arguments it records two (into $BENCH_CACHE, default
# /tmp/viewer-bench, reused; about 1 GB each; delete them after):
#   prog.data  one program, 4 copies of testdata/perf/deep for 270 s,
#              `perf record -e cpu-clock -c 10000 -g` (100k samples a second
#              of CPU time): few distinct stacks;
#   sys.data   `perf record -e cpu-clock -F 20000 -a -g -- sleep 150`, both
#              CPUs kept busy by shell loops (and whatever else runs).
# For each file: a fresh `viewer serve` under GOMEMLIMIT=1536MiB with
# --ingest-memory 1200MiB (TestHugePerfData's budget) and --max-upload 2GiB,
# the upload, the page and flame.json (or the upload's refusal), the
# server's CPU and peak RSS; then `perf report --stdio` on the same file,
# its time and peak RSS.
set -euo pipefail
cd "$(dirname "$0")/../.."

cache=${BENCH_CACHE:-/tmp/viewer-bench}
mkdir -p "$cache"
work=$(mktemp -d /tmp/perf1g.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/viewer" ./cmd/viewer

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
	if [ ! -s "$cache/prog.data" ]; then
		gcc -O1 -g -fno-omit-frame-pointer -o "$work/deep" testdata/perf/deep.c -lm
		(cd "$work" && perf record -q -e cpu-clock -c 10000 -g -o "$cache/prog.data" -- \
			sh -c 'for i in 1 2 3 4; do ./deep 270 & done; wait')
	fi
	if [ ! -s "$cache/sys.data" ]; then
		sh -c 'while :; do :; done' & pids+=($!)
		sh -c 'while :; do ls -R /usr/share/doc >/dev/null; done' & pids+=($!)
		perf record -q -e cpu-clock -F 20000 -a -g -o "$cache/sys.data" -- sleep 150
		kill "${pids[@]}"; pids=()
	fi
	files=("$cache/prog.data" "$cache/sys.data")
fi

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
for file in "${files[@]}"; do
	echo "$file: $(stat -c %s "$file") bytes; load average $(cut -d' ' -f1-3 /proc/loadavg)"
	port=$(freeport)
	GOMEMLIMIT=1536MiB "$work/viewer" serve --addr "127.0.0.1:$port" --data "$work/data.$port" --no-debuginfod --no-local-files \
		--ingest-memory 1200MiB --max-upload 2GiB --render-timeout 10m >"$work/viewer.log" 2>&1 &
	vpid=$!
	pids+=("$vpid")
	for _ in $(seq 300); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
	t0=$(now)
	# -T streams the file (--data-binary reads it into curl's memory first).
	resp=$(curl -sS -X POST -H 'Content-Type: application/octet-stream' -T "$file" "http://127.0.0.1:$port/api/profiles")
	t1=$(now)
	id=$(sed -n 's/.*"id":"\([a-z2-7]*\)".*/\1/p' <<<"$resp")
	if [ -n "$id" ]; then
		curl -sS -o /dev/null --compressed "http://127.0.0.1:$port/p/$id"
		total=$(curl -sS --compressed -f "http://127.0.0.1:$port/p/$id/flame.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
		outcome="first view, flame.json total $total"
	else
		outcome="refused: $resp"
	fi
	t2=$(now)
	cpu=$(awk '{print ($14 + $15) / 100}' "/proc/$vpid/stat")
	rss=$(awk '/VmHWM/ {print $2 / 1024}' "/proc/$vpid/status")
	kill "$vpid"; wait "$vpid" 2>/dev/null || true
	awk -v a="$t0" -v b="$t1" -v c="$t2" -v cpu="$cpu" -v rss="$rss" -v o="$outcome" 'BEGIN {
		printf "  viewer: %s\n  upload %.1f s, to first view %.1f s, server CPU %.1f s, peak RSS %.0f MiB (budget 1536)\n", o, b - a, c - a, cpu, rss }'
	/usr/bin/time -f '%e %U %S %M' -o "$work/perf.time" perf report --stdio -i "$file" 2>/dev/null | grep '^# Samples' | head -1 | sed 's/^/  perf report: /'
	read -r p_wall p_user p_sys p_kb <"$work/perf.time"
	awk -v w="$p_wall" -v u="$p_user" -v s="$p_sys" -v kb="$p_kb" 'BEGIN {
		printf "  perf report --stdio: %.1f s (CPU %.1f s), peak RSS %.0f MiB; load average after: ", w, u + s, kb / 1024 }'
	cut -d' ' -f1-3 /proc/loadavg
done

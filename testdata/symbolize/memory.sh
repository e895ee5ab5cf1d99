#!/bin/bash
# The memory table of issue 17: a `viewer serve` on loopback symbolizes
# uploads of 20 distinct binaries (libc with libc6-dbg's debug file, the
# test binaries, Go binaries built by the test: the profiles
# TestMemoryWithinBudget writes) and then serves their data-type pages;
# prints its RSS (VmRSS, and the peak VmHWM) after symbolizing and after the
# data-type pages, for each --symbol-cache-size given.
#
#   testdata/symbolize/memory.sh [SIZE...]     (from the repository root; default 64MiB 4GiB)
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(64MiB 4GiB)
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
go build -o "$tmp/viewer" ./cmd/viewer
mkdir "$tmp/profiles"
VIEWER_MEMORY_PROFILES="$tmp/profiles" go test -count=1 -run TestMemoryWithinBudget ./symbolize/ >/dev/null
rssof() { awk '/VmRSS/ {r=$2} /VmHWM/ {h=$2} END {printf "%d MB (peak %d MB)", r*1024/1e6, h*1024/1e6}' "/proc/$1/status"; }
printf '| --symbol-cache-size | RSS after symbolizing | after the data-type page |\n|---|---|---|\n'
for size in "${sizes[@]}"; do
	port=$((20000 + RANDOM % 20000))
	DEBUGINFOD_URLS= "$tmp/viewer" serve --addr "127.0.0.1:$port" --data "$tmp/data-$size" --symbol-cache-size "$size" >"$tmp/log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
	ids=()
	for f in "$tmp"/profiles/*.pb.gz; do
		ids+=("$(curl -sf --data-binary "@$f" "http://127.0.0.1:$port/api/profiles" | sed 's/.*"id":"\([^"]*\)".*/\1/')")
	done
	for id in "${ids[@]}"; do
		until curl -sf "http://127.0.0.1:$port/p/$id/symbolization" | grep -q '"state":"\(done\|none\)"'; do sleep 0.2; done
	done
	sym=$(rssof "$pid")
	failed=0
	for id in "${ids[@]}"; do
		if curl -sf "http://127.0.0.1:$port/p/$id/types.json" | grep -o '"error":"[^"]*"' >"$tmp/err"; then
			failed=$((failed + 1))
			cut -c1-300 "$tmp/err" >&2
		fi
	done
	types=$(rssof "$pid")
	echo "| $size | $sym | $types |"
	[ "$failed" = 0 ] || echo "memory.sh: $failed of ${#ids[@]} data-type pages list a binary without debug info" >&2
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=""
done

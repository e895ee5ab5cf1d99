#!/usr/bin/env bash
# The memory table of issue 17, judged as the issue asks:
#
#   testdata/bench/memory.sh [SIZE...]     (default 64MiB 4GiB)
#
# A `viewer serve` on loopback symbolizes uploads of 20 distinct binaries
# (libc with libc6-dbg's debug file, the test binaries, Go binaries built
# by the test: the profiles TestMemoryWithinBudget writes), then serves
# their 20 data-type pages. For each --symbol-cache-size it prints the
# server's RSS (VmRSS, and the peak VmHWM) after symbolizing and after the
# data-type pages. The profiles' own memory is the same run on a server
# that loads no debug info (--max-debug-file 1: every binary is over it):
# the goal is RSS <= budget + 64 MiB + that.
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(64MiB 4GiB)

work=$(mktemp -d /tmp/memorybench.XXXXXX)
pid=""
cleanup() {
	[ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/viewer" ./cmd/viewer
mkdir "$work/profiles"
VIEWER_MEMORY_PROFILES="$work/profiles" go test -count=1 -run '^TestMemoryWithinBudget$' ./symbolize/ >/dev/null

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# kib FIELD: the server's VmRSS or VmHWM in KiB.
kib() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$pid/status"; }
wait_http() {
	for _ in $(seq 1 600); do
		curl -s -o /dev/null "$1" && return 0
		sleep 0.1
	done
	echo "timed out waiting for $1" >&2
	return 1
}

# run NAME FLAGS...: a fresh server given FLAGS; uploads the 20 profiles,
# waits for their symbolization, then loads their data-type pages. Sets
# sym_rss sym_hwm types_rss types_hwm (KiB) and failed (data-type pages
# naming a binary without debug info).
run() {
	local name=$1 port id
	shift
	port=$(freeport)
	DEBUGINFOD_URLS= "$work/viewer" serve --addr "127.0.0.1:$port" --data "$work/data-$name" --no-debuginfod "$@" >"$work/log-$name" 2>&1 &
	pid=$!
	wait_http "http://127.0.0.1:$port/healthz"
	local ids=()
	for f in "$work"/profiles/*.pb.gz; do
		id=$(curl -sf --data-binary "@$f" "http://127.0.0.1:$port/api/profiles" | sed -n 's/.*"id":"\([a-z2-7]*\)".*/\1/p')
		[ -n "$id" ] || { echo "upload of $f failed" >&2; exit 1; }
		ids+=("$id")
	done
	for id in "${ids[@]}"; do
		until curl -sf "http://127.0.0.1:$port/p/$id/symbolization" | grep -q '"state":"\(done\|none\)"'; do sleep 0.2; done
	done
	sym_rss=$(kib VmRSS) sym_hwm=$(kib VmHWM)
	failed=0
	for id in "${ids[@]}"; do
		if curl -sf "http://127.0.0.1:$port/p/$id/types.json" | grep -o '"error":"[^"]*"' >"$work/err"; then
			failed=$((failed + 1))
			[ "$name" = base ] || cut -c1-300 "$work/err" >&2
		fi
	done
	types_rss=$(kib VmRSS) types_hwm=$(kib VmHWM)
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=""
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
run base --max-debug-file 1
base=$types_hwm
printf 'profiles alone (--max-debug-file 1, %d of 20 data-type pages without debug info): RSS %d MiB after uploading and symbolizing, %d MiB after the data-type pages (peak %d MiB)\n' \
	"$failed" $((sym_rss >> 10)) $((types_rss >> 10)) $((types_hwm >> 10))
printf '| --symbol-cache-size | RSS after symbolizing (peak) | after the data-type page (peak) | bound: budget + 64 MiB + profiles alone | peak within |\n|---|---|---|---|---|\n'
for size in "${sizes[@]}"; do
	run "$size" --symbol-cache-size "$size"
	budget=$(python3 -c "import re,sys; m=re.fullmatch(r'(\d+)(KiB|MiB|GiB)?', sys.argv[1]); print(int(m[1]) * {None: 1, 'KiB': 1 << 10, 'MiB': 1 << 20, 'GiB': 1 << 30}[m[2]] >> 10)" "$size")
	bound=$((budget + (64 << 10) + base))
	verdict=yes
	[ "$types_hwm" -le "$bound" ] || verdict=NO
	printf '| %s | %d MiB (%d MiB) | %d MiB (%d MiB) | %d MiB | %s |\n' "$size" \
		$((sym_rss >> 10)) $((sym_hwm >> 10)) $((types_rss >> 10)) $((types_hwm >> 10)) $((bound >> 10)) "$verdict"
	[ "$failed" = 0 ] || echo "memory.sh: $failed of 20 data-type pages list a binary without debug info" >&2
done

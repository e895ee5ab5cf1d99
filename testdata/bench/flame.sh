#!/usr/bin/env bash
# Side-by-side benchmark of serving a flamegraph: `go tool pprof -http`
# versus `viewer serve`, on the same generated profile, in one run.
#
#   testdata/bench/flame.sh [PROFILE]
#
# Without PROFILE it generates the benchmark profile (200,000 samples over
# 50,000 stacks, ~7.7 MB gzipped) with testdata/bench/genprofile. For each
# server it measures, after the server has loaded the file:
#   - time from request to the flamegraph data served (pprof: /ui/flamegraph;
#     viewer: flame.json, and the page followed by flame.json),
#   - bytes sent for the page and everything it loads (curl --compressed),
#   - the server's peak RSS (VmHWM from /proc/PID/status),
# and prints viewer/pprof ratios. It also times viewer after a restart, when
# the profile must first be read back from the store.
set -euo pipefail
cd "$(dirname "$0")/../.."

work=$(mktemp -d /tmp/flamebench.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

profile=${1:-}
if [ -z "$profile" ]; then
	profile=$work/bench.pb.gz
	go run ./testdata/bench/genprofile -o "$profile"
fi
go build -o "$work/viewer" ./cmd/viewer
pprof_bin=$(go tool -n pprof)

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
hwm() { awk '/VmHWM/ {print $2 * 1024}' "/proc/$1/status"; }
# fetch URL: prints "seconds bytes" for one request (gzip accepted).
fetch() { curl -sS --compressed -o /dev/null -w '%{time_total} %{size_download}\n' "$1"; }
wait_http() {
	for _ in $(seq 1 600); do
		curl -s -o /dev/null "$1" && return 0
		sleep 0.1
	done
	echo "timed out waiting for $1" >&2
	return 1
}

echo "profile: $profile ($(stat -c %s "$profile") bytes)"

# --- pprof ---
pport=$(freeport)
"$pprof_bin" -http="127.0.0.1:$pport" -no_browser "$profile" >"$work/pprof.log" 2>&1 &
ppid=$!
pids+=("$ppid")
wait_http "http://127.0.0.1:$pport/ui/top?n=1"
read -r p_time p_bytes < <(fetch "http://127.0.0.1:$pport/ui/flamegraph")
p_rss=$(hwm "$ppid")

# --- viewer, profile loaded at startup ---
vport=$(freeport)
"$work/viewer" serve --addr "127.0.0.1:$vport" --data "$work/data" "$profile" >"$work/viewer.out" 2>"$work/viewer.err" &
vpid=$!
pids+=("$vpid")
for _ in $(seq 1 600); do grep -q '/p/' "$work/viewer.out" && break; sleep 0.1; done
link=$(grep -o 'http://[^[:space:]]*/p/[a-z2-7]*' "$work/viewer.out" | head -1)
[ -n "$link" ] || { cat "$work/viewer.err" >&2; exit 1; }
page_html=$(curl -sS --compressed "$link")
read -r v_page_time v_page_bytes < <(fetch "$link?bench=1")
read -r v_json_time v_json_bytes < <(fetch "$link/flame.json")
read -r v_json2_time _ < <(fetch "$link/flame.json")
assets_bytes=0
for a in $(grep -o '/static/[A-Za-z0-9._/-]*' <<<"$page_html" | sort -u); do
	read -r _ b < <(fetch "http://127.0.0.1:$vport$a")
	assets_bytes=$((assets_bytes + b))
done
v_rss=$(hwm "$vpid")
kill "$vpid"; wait "$vpid" 2>/dev/null || true

# --- viewer after a restart: read back from the store, parse, build ---
"$work/viewer" serve --addr "127.0.0.1:$vport" --data "$work/data" >"$work/viewer2.out" 2>>"$work/viewer.err" &
vpid2=$!
pids+=("$vpid2")
wait_http "http://127.0.0.1:$vport/healthz"
read -r v_cold_time _ < <(fetch "$link/flame.json")
v_cold_rss=$(hwm "$vpid2")

awk -v pt="$p_time" -v pb="$p_bytes" -v pr="$p_rss" \
	-v vpt="$v_page_time" -v vpb="$v_page_bytes" -v vjt="$v_json_time" -v vjb="$v_json_bytes" \
	-v vj2="$v_json2_time" -v ab="$assets_bytes" -v vr="$v_rss" -v vct="$v_cold_time" -v vcr="$v_cold_rss" '
function mb(x) { return sprintf("%.1f MB", x / 1e6) }
BEGIN {
	printf "%-46s %14s %14s %10s\n", "", "pprof -http", "viewer", "ratio"
	printf "%-46s %13.3fs %13.3fs %10.4f\n", "time to flame data (pprof page / flame.json)", pt, vjt, vjt / pt
	printf "%-46s %13.3fs %13.3fs %10.4f\n", "time to page + flame data", pt, vpt + vjt, (vpt + vjt) / pt
	printf "%-46s %14s %13.3fs %10.4f\n", "flame.json again (cached)", "", vj2, vj2 / pt
	printf "%-46s %14s %13.3fs %10.4f\n", "flame.json after restart (load+parse+build)", "", vct, vct / pt
	printf "%-46s %14s %14s %10.4f\n", "bytes sent: page + data + assets", mb(pb), mb(vpb + vjb + ab), (vpb + vjb + ab) / pb
	printf "%-46s %14s %14s\n", "  viewer: page / flame.json / assets", "", sprintf("%d/%d/%d", vpb, vjb, ab)
	printf "%-46s %14s %14s %10.4f\n", "server peak RSS (VmHWM)", mb(pr), mb(vr), vr / pr
	printf "%-46s %14s %14s %10.4f\n", "server peak RSS after restart", "", mb(vcr), vcr / pr
}'

#!/usr/bin/env bash
# Side-by-side benchmark: `viewer convert` vs `perf script > /dev/null` on the
# same perf.data of ~10,000 samples with ~16-frame call chains, recorded here
# from ./deep (not checked in: about 2 MB). Prints wall time (best and median
# of N runs) and peak RSS for each tool, and their ratios.
#   usage: [VIEWER_TAGS=...] testdata/perf/bench.sh [runs] [fp|dwarf]   (default 7 fp)
# dwarf records --call-graph=dwarf,8192 instead of frame pointers: both tools
# then unwind every sample's copied user stack with the binaries' CFI (about
# 90 MB recorded).
set -euo pipefail
cd "$(dirname "$0")"
runs=${1:-7}
mode=${2:-fp}
case $mode in
fp) callgraph=(-g) ;;
dwarf) callgraph=(--call-graph=dwarf,8192) ;;
*) echo "mode must be fp or dwarf" >&2; exit 2 ;;
esac
root=$(cd ../.. && pwd)
work=$(mktemp -d /tmp/perfbench.XXXXXX)
trap 'rm -rf "$work"' EXIT

[ -x ./deep ] || gcc -O1 -g -fno-omit-frame-pointer -o deep deep.c -lm
# VIEWER_TAGS builds viewer with those tags, e.g. "nogcs noazure" to leave
# the GCS and Azure drivers (and their start-up memory) out.
(cd "$root" && go build -tags "${VIEWER_TAGS:-}" -o /tmp/viewer ./cmd/viewer)

# About 10,000 samples: cpu-clock every 100 µs of the program's CPU time.
# deep runs for wall time, so when other work shares the CPU, run it longer.
secs=1
for _ in 1 2 3 4; do
	perf record -q -e cpu-clock -c 100000 "${callgraph[@]}" -o "$work/bench.data" ./deep "$secs" 2>/dev/null
	n=$(perf script -f -G -F ip -i "$work/bench.data" 2>/dev/null | grep -c . || true)
	((n >= 9000)) && break
	secs=$(awk -v s="$secs" -v n="$n" 'BEGIN { printf "%.2f", s * 10500 / (n > 0 ? n : 1000) }')
done
chmod 644 "$work/bench.data"
frames=$(perf script -f -F ip -i "$work/bench.data" 2>/dev/null | grep -c . || true)
echo "recording ($mode): $(stat -c %s "$work/bench.data") bytes, $n samples, $((frames / (n > 0 ? n : 1))) frames per sample on average"

# measure NAME CMD...: runs CMD $runs times under /usr/bin/time -v, prints
# "NAME best_s median_s max_rss_kb".
measure() {
	local name=$1; shift
	local times=() rss=0
	for _ in $(seq "$runs"); do
		local start=$EPOCHREALTIME wall r
		/usr/bin/time -v -o "$work/time.txt" "$@" >/dev/null 2>"$work/err.txt" || { cat "$work/err.txt" >&2; exit 1; }
		wall=$(echo "$start $EPOCHREALTIME" | awk '{ printf "%.4f", $2 - $1 }')
		r=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time.txt")
		times+=("$wall")
		((r > rss)) && rss=$r
	done
	local sorted best median
	sorted=$(printf '%s\n' "${times[@]}" | sort -g)
	best=$(echo "$sorted" | head -1)
	median=$(echo "$sorted" | sed -n "$(((runs + 1) / 2))p")
	echo "$name $best $median $rss"
}

# Alternate the two tools so background load hits both alike.
perf_line=$(measure perf-script sh -c "perf script -f -i '$work/bench.data' > /dev/null")
viewer_line=$(measure viewer-convert /tmp/viewer convert "$work/bench.data" -o "$work/out.pb.gz")
perf_line2=$(measure perf-script sh -c "perf script -f -i '$work/bench.data' > /dev/null")
viewer_line2=$(measure viewer-convert /tmp/viewer convert "$work/bench.data" -o "$work/out.pb.gz")

printf '%-16s %10s %10s %12s\n' tool best_s median_s peak_rss_kB
for l in "$perf_line" "$perf_line2" "$viewer_line" "$viewer_line2"; do
	printf '%-16s %10s %10s %12s\n' $l
done
awk -v a="$perf_line $perf_line2" -v b="$viewer_line $viewer_line2" 'BEGIN {
	split(a, p, " "); split(b, v, " ")
	pb = p[2] < p[6] ? p[2] : p[6]; vb = v[2] < v[6] ? v[2] : v[6]
	pm = (p[3] + p[7]) / 2; vm = (v[3] + v[7]) / 2
	pr = p[4] > p[8] ? p[4] : p[8]; vr = v[4] > v[8] ? v[4] : v[8]
	printf "viewer convert / perf script: best time %.3f, median time %.3f, peak RSS %.3f\n", vb / pb, vm / pm, vr / pr
}'

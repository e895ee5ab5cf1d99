#!/usr/bin/env bash
# `perf record -z` recordings through `viewer convert`, this tree against
# another build (issue 18: their records decompressed to a mapped spool
# file, not the heap), both in one run, alternately:
#
#   testdata/bench/perfz.sh [PERF.DATA...]    # BEFORE=<git rev> (default main)
#
# Without arguments it records two into $BENCH_CACHE (default
# /tmp/viewer-bench, reused; delete them after):
#   progz.data  testdata/perf/deep twice for 100 s, `perf record -z -e
#               cpu-clock -c 10000 -g` (few distinct stacks, ~400 MB of
#               records decompressed);
#   z20.data    `perf record -z -F 4999 -a -g -- sleep 20` (whatever runs).
# For each file and build: CPU (user+sys), peak RssAnon and RssFile sampled
# every 0.5 s, and the Go heap's peak and peak live size (gctrace), then
# `perf report --stdio` on the same file (time, peak RSS, its sample count).
set -euo pipefail
cd "$(dirname "$0")/../.."

cache=${BENCH_CACHE:-/tmp/viewer-bench}
before=${BEFORE:-main}
mkdir -p "$cache"
work=$(mktemp -d /tmp/perfz.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/after" ./cmd/viewer
mkdir "$work/src"
git archive "$before" | tar -x -C "$work/src"
(cd "$work/src" && go build -o "$work/before" ./cmd/viewer)

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
	if [ ! -s "$cache/progz.data" ]; then
		gcc -O1 -g -fno-omit-frame-pointer -o "$work/deep" testdata/perf/deep.c -lm
		(cd "$work" && perf record -q -z -e cpu-clock -c 10000 -g -o "$cache/progz.data" -- \
			sh -c './deep 100 & ./deep 100; wait')
	fi
	if [ ! -s "$cache/z20.data" ]; then
		perf record -q -z -F 4999 -a -g -o "$cache/z20.data" -- sleep 20
	fi
	files=("$cache/progz.data" "$cache/z20.data")
fi

# run BIN FILE: one viewer convert, measured.
run() {
	local bin=$1 file=$2 load pa=0 pf=0 a f
	load=$(cut -d' ' -f1 /proc/loadavg)
	GODEBUG=gctrace=1 /usr/bin/time -f "%U %S" -o "$work/time" "$work/$bin" convert "$file" -o "$work/out.pb.gz" --progress=false 2>"$work/trace" &
	local tpid=$!
	sleep 0.2
	local vpid
	vpid=$(pgrep -P "$tpid" | head -1 || true)
	while kill -0 "$tpid" 2>/dev/null; do
		if [ -n "$vpid" ] && read -r a f < <(awk '/RssAnon/{a=$2} /RssFile/{f=$2} END{print a+0, f+0}' "/proc/$vpid/status" 2>/dev/null); then
			[ "$a" -gt "$pa" ] && pa=$a
			[ "$f" -gt "$pf" ] && pf=$f
		fi
		sleep 0.5
	done
	wait "$tpid"
	read -r u s <"$work/time"
	grep -o '[0-9]*->[0-9]*->[0-9]* MB' "$work/trace" | awk -F'->| ' -v b="$bin" -v u="$u" -v s="$s" -v pa="$pa" -v pf="$pf" -v l="$load" \
		'{ if ($2+0 > m) m = $2+0; if ($3+0 > v) v = $3+0 } END { printf "| %s | %.2f s | %d MiB | %d MiB | %d MB | %d MB | %s |\n", b, u+s, pa/1024, pf/1024, m, v, l }'
}

for file in "${files[@]}"; do
	echo
	echo "$file: $(stat -c %s "$file") bytes"
	echo "| build | CPU | peak RssAnon | peak RssFile | Go heap peak | peak live | load |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	for bin in before after before after; do run "$bin" "$file"; done
	PAGER=cat /usr/bin/time -f "perf report --stdio: %e s wall, %U+%S s CPU, peak RSS %M KB" \
		perf report --stdio -n --no-children -g none --sort comm -i "$file" 2>"$work/report.err" >"$work/report.txt" || true
	tail -1 "$work/report.err"
	awk '!/^#/ && $1 ~ /%$/ { n += $2 } END { print "perf report -n samples:", n }' "$work/report.txt"
done

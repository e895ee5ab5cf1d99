#!/bin/sh
# Side-by-side benchmark of the annotate view: records ~100,000 cpu-clock
# samples of libcload (glibc's string functions; libc6-dbg gives the DWARF),
# then, on the same perf.data, times viewer's annotate.json for the hottest
# libc function (server time, in process: cold = first request, opening
# libc's code and DWARF; warm = binaries open, listing recomputed) and
# `perf annotate --stdio` of the same function.
#   usage: testdata/datatype/annotate-bench.sh [runs]   (default 5)
set -eu
runs=${1:-5}
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)
work=$(mktemp -d /tmp/annotatebench.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -O2 -g -o "$work/libcload" libcload.c
# cpu-clock every 20 µs of CPU time: about 100,000 samples in 2 s.
perf record -q -e cpu-clock -c 20000 -o "$work/perf.data" "$work/libcload" 1500000 2>/dev/null
fn=$(perf report -i "$work/perf.data" --stdio --sort sym -q 2>/dev/null | awk '$3 ~ /^(__)?mem|^(__)?str/ {print $3; exit}')
n=$(perf report -i "$work/perf.data" --stdio -q --sort dso 2>/dev/null | wc -l)
echo "perf.data: $(perf report -i "$work/perf.data" --stdio 2>/dev/null | awk '/^# Samples:/ {print $3}') samples; hottest libc function: $fn"
best=""
for i in $(seq "$runs"); do
	s=$(date +%s.%N)
	perf annotate --stdio -i "$work/perf.data" "$fn" >/dev/null 2>&1
	e=$(date +%s.%N)
	t=$(echo "$e - $s" | bc)
	if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
done
echo "perf annotate --stdio $fn: best of $runs: ${best} s"
cd "$root"
VIEWER_ANNOTATE_PERFDATA=$work/perf.data VIEWER_ANNOTATE_FN=$fn \
	go test -run '^$' -bench AnnotateLibc -benchtime "${runs}x" -count 1 ./web/ | grep -E 'Benchmark|ms'

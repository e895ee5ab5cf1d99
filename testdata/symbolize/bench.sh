#!/bin/bash
# Compares viewer addr2line with GNU addr2line and llvm-symbolizer, side by
# side in one run, on addresses inside the functions of this machine's libc
# (debug info from libc6-dbg): wall time, peak RSS and CPU time of the whole
# process, best of RUNS runs each, and the ratios to addr2line. viewer
# decodes on every CPU, so on a busy machine its wall time suffers most.
# "same engine alone" is testdata/symbolize/a2l: the same code without the
# start-up cost of everything else linked into the viewer binary.
#
#   testdata/symbolize/bench.sh [N_ADDRESSES] [RUNS]      (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-100000}
RUNS=${2:-5}
for tool in addr2line llvm-symbolizer /usr/bin/time; do
	command -v "$tool" >/dev/null || { echo "bench.sh: $tool is missing: run make deps" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
libc=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)
id=$(readelf -n "$libc" | awk '/Build ID/ {print $3}')
dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
[ -f "$dbg" ] || { echo "bench.sh: $dbg missing (package libc6-dbg): run make deps" >&2; exit 1; }
go build -o "$tmp/viewer" ./cmd/viewer
go build -o "$tmp/a2l" ./testdata/symbolize/a2l
go run ./testdata/symbolize/addrs -n "$N" "$dbg" >"$tmp/addrs"
go run ./testdata/symbolize/addrs -n "$N" -0x "$dbg" >"$tmp/addrs0x"
head -1 "$tmp/addrs" >"$tmp/one"
head -1 "$tmp/addrs0x" >"$tmp/one0x"

# best INPUT CMD...: runs CMD RUNS times on INPUT, prints "seconds KiB cpu" of
# the fastest run (wall), the largest peak RSS seen, and the least CPU time
# (user+sys) of a run.
best() {
	local in=$1; shift
	local bt="" bm=0 bc=""
	for _ in $(seq "$RUNS"); do
		/usr/bin/time -f "%e %M %U %S" -o "$tmp/t" "$@" <"$in" >"$tmp/out" 2>/dev/null
		read -r t m u s <"$tmp/t"
		c=$(awk "BEGIN{print $u+$s}")
		if [ -z "$bt" ] || awk "BEGIN{exit !($t < $bt)}"; then bt=$t; fi
		if [ -z "$bc" ] || awk "BEGIN{exit !($c < $bc)}"; then bc=$c; fi
		[ "$m" -gt "$bm" ] && bm=$m
	done
	echo "$bt $bm $bc"
}

printf '%s addresses in libc (%s)\n\n' "$N" "$dbg"
printf '%-30s %8s %9s %8s %9s %9s %9s\n' "tool" "wall s" "peak MiB" "cpu s" "wall/a2l" "mem/a2l" "cpu/a2l"
report() {
	local name=$1 t=$2 m=$3 c=$4 bt=$5 bm=$6 bc=$7
	awk -v n="$name" -v t="$t" -v m="$m" -v c="$c" -v bt="$bt" -v bm="$bm" -v bc="$bc" \
		'BEGIN{printf "%-30s %8.3f %9.1f %8.3f %9.2f %9.2f %9.2f\n", n, t, m/1024, c, t/bt, m/bm, (bc>0?c/bc:0)}'
}
compare() {
	local in=$1 in0x=$2
	read -r gt gm gc < <(best "$in" addr2line -f -i -e "$dbg")
	read -r vt vm vc < <(best "$in" "$tmp/viewer" addr2line -f -i -e "$dbg")
	read -r at am ac < <(best "$in" "$tmp/a2l" -f -i -e "$dbg")
	read -r lt lm lc < <(best "$in0x" llvm-symbolizer --inlining --obj="$dbg")
	report "addr2line -f -i" "$gt" "$gm" "$gc" "$gt" "$gm" "$gc"
	report "viewer addr2line -f -i" "$vt" "$vm" "$vc" "$gt" "$gm" "$gc"
	report "  same engine alone (a2l)" "$at" "$am" "$ac" "$gt" "$gm" "$gc"
	report "llvm-symbolizer --inlining" "$lt" "$lm" "$lc" "$gt" "$gm" "$gc"
}
compare "$tmp/addrs" "$tmp/addrs0x"
echo
echo "one address, fresh process:"
compare "$tmp/one" "$tmp/one0x"

# The outputs must agree with addr2line's (file names aside: binutils 2.40
# misnumbers some DWARF 5 files; llvm-symbolizer agrees with viewer there).
addr2line -f -i -e "$dbg" <"$tmp/addrs" | grep -v ':' >"$tmp/gnu.fn"
"$tmp/viewer" addr2line -f -i -e "$dbg" <"$tmp/addrs" | grep -v ':' >"$tmp/viewer.fn"
if cmp -s "$tmp/gnu.fn" "$tmp/viewer.fn"; then
	echo; echo "function names: identical to addr2line's for all $N addresses"
else
	echo; echo "function names differ from addr2line's:"; diff "$tmp/gnu.fn" "$tmp/viewer.fn" | head
fi

#!/bin/bash
# Compares viewer addr2line with GNU addr2line and llvm-symbolizer, side by
# side in one run, on addresses inside the functions of this machine's libc
# (debug info from libc6-dbg): wall time and peak RSS of the whole process,
# best of RUNS runs each, and the ratios to addr2line.
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
go run ./testdata/symbolize/addrs -n "$N" "$dbg" >"$tmp/addrs"
go run ./testdata/symbolize/addrs -n "$N" -0x "$dbg" >"$tmp/addrs0x"
head -1 "$tmp/addrs" >"$tmp/one"
head -1 "$tmp/addrs0x" >"$tmp/one0x"

# best NAME INPUT CMD...: runs CMD RUNS times on INPUT, prints "seconds KiB" of
# the fastest run and the largest peak RSS seen.
best() {
	local in=$1; shift
	local bt="" bm=0
	for _ in $(seq "$RUNS"); do
		/usr/bin/time -f "%e %M" -o "$tmp/t" "$@" <"$in" >"$tmp/out" 2>/dev/null
		read -r t m <"$tmp/t"
		if [ -z "$bt" ] || awk "BEGIN{exit !($t < $bt)}"; then bt=$t; fi
		[ "$m" -gt "$bm" ] && bm=$m
	done
	echo "$bt $bm"
}

printf '%s addresses in libc (%s)\n\n' "$N" "$dbg"
printf '%-34s %9s %10s %10s %10s\n' "tool" "wall s" "peak MiB" "time/a2l" "mem/a2l"
report() {
	local name=$1 t=$2 m=$3 bt=$4 bm=$5
	awk -v n="$name" -v t="$t" -v m="$m" -v bt="$bt" -v bm="$bm" 'BEGIN{printf "%-34s %9.3f %10.1f %10.2f %10.2f\n", n, t, m/1024, t/bt, m/bm}'
}
read -r gt gm < <(best "$tmp/addrs" addr2line -f -i -e "$dbg")
read -r vt vm < <(best "$tmp/addrs" "$tmp/viewer" addr2line -f -i -e "$dbg")
read -r lt lm < <(best "$tmp/addrs0x" llvm-symbolizer --inlining --obj="$dbg")
report "addr2line -f -i" "$gt" "$gm" "$gt" "$gm"
report "viewer addr2line -f -i" "$vt" "$vm" "$gt" "$gm"
report "llvm-symbolizer --inlining" "$lt" "$lm" "$gt" "$gm"

echo
echo "one address, fresh process:"
read -r g1 g1m < <(best "$tmp/one" addr2line -f -i -e "$dbg")
read -r v1 v1m < <(best "$tmp/one" "$tmp/viewer" addr2line -f -i -e "$dbg")
read -r l1 l1m < <(best "$tmp/one0x" llvm-symbolizer --inlining --obj="$dbg")
report "addr2line -f -i" "$g1" "$g1m" "$g1" "$g1m"
report "viewer addr2line -f -i" "$v1" "$v1m" "$g1" "$g1m"
report "llvm-symbolizer --inlining" "$l1" "$l1m" "$g1" "$g1m"

# The outputs must agree with addr2line's (file names aside: binutils 2.40
# misnumbers some DWARF 5 files; llvm-symbolizer agrees with viewer there).
addr2line -f -i -e "$dbg" <"$tmp/addrs" | grep -v ':' >"$tmp/gnu.fn"
"$tmp/viewer" addr2line -f -i -e "$dbg" <"$tmp/addrs" | grep -v ':' >"$tmp/viewer.fn"
if cmp -s "$tmp/gnu.fn" "$tmp/viewer.fn"; then
	echo; echo "function names: identical to addr2line's for all $N addresses"
else
	echo; echo "function names differ from addr2line's:"; diff "$tmp/gnu.fn" "$tmp/viewer.fn" | head
fi

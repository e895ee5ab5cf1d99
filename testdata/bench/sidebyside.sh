#!/bin/bash
# sidebyside.sh BASE [BENCH...]: runs Go benchmarks of git revision BASE
# and of the work tree side by side, alternating one run of each per
# round (ROUNDS, default 3), so that both see the same load, and prints
# benchstat's comparison (CPU per op, bytes and allocations per op).
# A benchmark is found by its name in each tree, so one that moved to
# another package is still compared with itself. With no BENCH, the
# in-process benchmarks that need neither chromium nor a file named by
# an environment variable. BENCH:TIME runs BENCH with -benchtime TIME
# (BenchmarkTopJSON:15x); BENCHTIME sets it for the others. NEW=REV
# compares BASE with revision REV instead of the work tree (one commit
# against its parent: NEW=d68780d sidebyside.sh d68780d^ ...).
#
#	testdata/bench/sidebyside.sh 6abb1da^            # before issue 35's moves
#	ROUNDS=5 testdata/bench/sidebyside.sh main~3 BenchmarkNewStacks
set -euo pipefail
cd "$(dirname "$0")/../.."
base=$(git rev-parse --verify "${1:?usage: sidebyside.sh BASE [BENCH...]}^{commit}")
shift
rounds=${ROUNDS:-3}
benches=("$@")
if [ ${#benches[@]} -eq 0 ]; then
	benches=(
		BenchmarkWarmLookup BenchmarkColdLoad BenchmarkUpload BenchmarkWriteGzipped
		BenchmarkTopJSON:15x BenchmarkSymbolizeAPI100k BenchmarkStoreUploadFirstView BenchmarkAnnotateLibc
		BenchmarkDiff BenchmarkFilter BenchmarkFlameTree BenchmarkGroupStacks2M BenchmarkNewStacks
		BenchmarkSandwich BenchmarkStacksTop BenchmarkTimeRange BenchmarkTop BenchmarkZoomTree BenchmarkFirstView2M
		BenchmarkAttribute BenchmarkAttributeZipf BenchmarkAttributeSkid BenchmarkAttributeZipfSkid
		BenchmarkSymbolizeWarm BenchmarkDecodeOnly BenchmarkColdLibc
		BenchmarkDecodePprof BenchmarkOTLPRequest BenchmarkParseFile
		BenchmarkParseFoldedPeer BenchmarkParseScriptPeer BenchmarkConvert BenchmarkParse
		BenchmarkCachedHit BenchmarkDirIntake
	)
fi

work=$(mktemp -d /tmp/sidebyside.XXXXXX)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; git worktree remove --force "$work/new" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/base" "$base"
headtree=$PWD
if [ -n "${NEW:-}" ]; then
	git worktree add -q --detach "$work/new" "$(git rev-parse --verify "$NEW^{commit}")"
	headtree=$work/new
fi

# pkgof TREE BENCH: the package directory that declares BENCH in TREE.
pkgof() {
	grep -rlE "^func $2\(b \*testing.B\)" --include='*_test.go' "$1" | head -1 | xargs -r dirname
}

declare -A bin dirs # "side bench" -> its test binary, its package directory
for side in base head; do
	tree=$headtree
	[ "$side" = head ] || tree=$work/base
	for e in "${benches[@]}"; do
		b=${e%%:*}
		dir=$(pkgof "$tree" "$b")
		[ -n "$dir" ] || { echo "$b: not in $side" >&2; continue; }
		rel=${dir#"$tree"}
		out=$work/$side/pkg${rel//\//_}.test
		mkdir -p "$work/$side"
		[ -x "$out" ] || (cd "$dir" && go test -c -o "$out" . >/dev/null)
		bin["$side $b"]=$out
		dirs["$side $b"]=$dir
	done
done

for r in $(seq "$rounds"); do
	for e in "${benches[@]}"; do
		b=${e%%:*}
		time=${BENCHTIME:-}
		[ "$e" = "$b" ] || time=${e#*:}
		for side in base head; do
			t=${bin["$side $b"]:-}
			[ -n "$t" ] || continue
			# Run from the package's directory: benchmarks read testdata/.
			(cd "${dirs["$side $b"]}" && "$t" -test.run '^$' -test.bench "^$b\$" -test.benchmem -test.count 1 \
				${time:+-test.benchtime "$time"}) | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >>"$work/$side.txt" || true
		done
	done
	echo "round $r of $rounds done, load $(cut -d' ' -f1 /proc/loadavg)" >&2
done
# Package lines differ where a benchmark moved; benchstat compares by name.
sed -i '/^pkg:/d' "$work/base.txt" "$work/head.txt"
go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da base="$work/base.txt" head="$work/head.txt"

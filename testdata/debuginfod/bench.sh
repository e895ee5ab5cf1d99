#!/bin/sh
# Benchmarks the debuginfod client against its goals in one run and prints
# them as ratios:
#   - a cached hit in process, against the 1 ms budget;
#   - a 64 MiB download from the real debuginfod (network namespace, same
#     proxy) by viewer, against curl -o /dev/null and curl -o FILE of the
#     same URL, interleaved in each iteration of one benchmark;
#   - 50 concurrent requests for one 4 MiB file: upstream requests per round.
# Usage: testdata/debuginfod/bench.sh   (ROUNDS=N for more download rounds)
set -eu
cd "$(dirname "$0")/../.."
rounds=${ROUNDS:-15}
out=$(go test -count=1 -run '^$' -bench 'CachedHit' ./symbolize/debuginfod/ &&
	go test -count=1 -run '^$' -bench 'Download|ConcurrentFetches' -benchtime "${rounds}x" ./symbolize/debuginfod/)
echo "$out" | grep '^Benchmark'
echo "$out" | awk '
	function metric(name,   i) { for (i = 1; i <= NF; i++) if ($i == name) return $(i-1); return "?" }
	/^BenchmarkCachedHit\/memo/ { memo = $3 }
	/^BenchmarkCachedHit\/disk/ { disk = $3 }
	/^BenchmarkDownload/ { v = metric("viewer-ms"); cn = metric("curl-devnull-ms"); cf = metric("curl-file-ms"); rn = metric("viewer/curl-devnull"); rf = metric("viewer/curl-file") }
	/^BenchmarkConcurrentFetches/ { up = metric("upstream-requests/op") }
	END {
		printf "cached hit (memo) / 1 ms budget:       %.4f\n", memo / 1e6
		printf "cached hit (disk) / 1 ms budget:       %.4f\n", disk / 1e6
		printf "64 MiB download, median ms: viewer %s, curl -o /dev/null %s, curl -o FILE %s\n", v, cn, cf
		printf "64 MiB download: viewer / curl -o /dev/null: %s  (goal <= 1.10)\n", rn
		printf "64 MiB download: viewer / curl -o FILE:      %s\n", rf
		printf "50 concurrent fetches of 4 MiB: %s upstream request(s) per round (goal 1)\n", up
	}'

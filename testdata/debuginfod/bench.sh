#!/bin/sh
# Benchmarks the debuginfod client against its goals in one run and prints
# them as ratios:
#   - a cached hit in process, against the 1 ms budget;
#   - a 64 MiB download from the real debuginfod (network namespace, same
#     proxy) by viewer, against curl -o /dev/null and curl -o FILE of the
#     same URL, run side by side by the same benchmark;
#   - 50 concurrent requests for one 4 MiB file: upstream requests per round.
# Usage: testdata/debuginfod/bench.sh   (ROUNDS=N for more download rounds)
set -eu
cd "$(dirname "$0")/../.."
rounds=${ROUNDS:-5}
out=$(go test -count=1 -run '^$' -bench 'CachedHit' ./symbolize/debuginfod/ &&
	go test -count=1 -run '^$' -bench 'Download|ConcurrentFetches' -benchtime "${rounds}x" ./symbolize/debuginfod/)
echo "$out" | grep '^Benchmark'
echo "$out" | awk '
	/^BenchmarkCachedHit\/memo/ { memo = $3 }
	/^BenchmarkCachedHit\/disk/ { disk = $3 }
	/^BenchmarkDownload\/viewer/ { v = $3 }
	/^BenchmarkDownload\/curl-devnull/ { cn = $3 }
	/^BenchmarkDownload\/curl-file/ { cf = $3 }
	/^BenchmarkConcurrentFetches/ { for (i = 1; i <= NF; i++) if ($i == "upstream-requests/op") up = $(i-1) }
	END {
		printf "cached hit (memo) / 1 ms budget:       %.4f\n", memo / 1e6
		printf "cached hit (disk) / 1 ms budget:       %.4f\n", disk / 1e6
		printf "64 MiB download: viewer / curl -o /dev/null: %.2f  (goal <= 1.10)\n", v / cn
		printf "64 MiB download: viewer / curl -o FILE:      %.2f\n", v / cf
		printf "50 concurrent fetches of 4 MiB: %s upstream request(s) per round (goal 1)\n", up
	}'

#!/usr/bin/env bash
# Builds the test programs and records the perf.data files the ingest tests
# read, with this machine's perf (Debian's linux-perf 6.1), plus the text
# outputs (perf script, perf data convert --to-json, folded stacks) the text
# format tests read. Rerun it from any directory; it rewrites everything here.
# The tests themselves run `perf script` on the recordings again, so only the
# text-format inputs are expectations frozen by this script.
set -euo pipefail
cd "$(dirname "$0")"

CFLAGS="-O1 -g -fno-omit-frame-pointer"
gcc $CFLAGS -o deep deep.c -lm
gcc $CFLAGS -pthread -o threads threads.c

rec() { perf record -q "$@" 2>/dev/null; }

# Frame-pointer call chains, 16-17 frames deep, through deep, libm, libc and the kernel.
rec -e cpu-clock -F 500 -g -o fp.data ./deep 0.2
# No call chains: each sample is its IP alone.
rec -e cpu-clock -F 500 -o flat.data ./deep 0.05
# DWARF mode: kernel chain + user registers and an 8 KiB stack copy per sample,
# build IDs in the MMAP2 records so that every binary unwound through has one.
rec -e cpu-clock -F 500 --call-graph=dwarf,8192 --buildid-mmap -o dwarf.data ./deep 0.2
# Pipe mode: attributes, features and build IDs arrive as records.
perf record -q -e cpu-clock -F 1000 -g -o - ./threads 2>/dev/null > pipe.data
# zstd-compressed records, in a file and in pipe mode.
rec -z -e cpu-clock -F 1000 -g -o z.data ./deep 0.1
perf record -q -z -e cpu-clock -F 1000 -g -o - ./deep 0.05 2>/dev/null > pipez.data
# Build IDs inside MMAP2 records (--buildid-mmap) instead of a BUILD_ID section.
rec -e cpu-clock -F 500 -g --buildid-mmap -o buildid.data ./deep 0.1
# Two events, sample identifier, data address, CPU, raw data, clock data.
rec -e cpu-clock,task-clock -F 1000 -g -d --sample-cpu -R --sample-identifier \
	-k CLOCK_MONOTONIC -o multi.data ./threads
# A sampled group: PERF_SAMPLE_READ with group read format.
rec -e '{cpu-clock,task-clock}:S' -F 1000 -g -o read.data ./threads
# System-wide: perf 6.1 adds a dummy:HG event for side-band records, which
# holds no samples (ingest drops it with a warning).
rec -a -e cpu-clock -F 100 -o system.data -- sleep 0.1
chmod 644 ./*.data
rm -f ./*.data.old

# Text formats.
perf script -i fp.data > fp.script 2>/dev/null
perf script -F +pid -i pipe.data > pipe.pid.script 2>/dev/null
perf data convert --to-json fp.json -i fp.data --force >/dev/null 2>&1
# Folded stacks as flamegraph's stackcollapse-perf.pl writes them: comm first,
# root to leaf, ';'-separated, then the count.
perf script -F comm,ip,sym -i fp.data 2>/dev/null | awk '
	/^[^ \t]/ { comm = $1; n = 0; next }
	/^[ \t]+[0-9a-f]+ / { sub(/^[ \t]+[0-9a-f]+ /, ""); sub(/\+0x[0-9a-f]+$/, ""); f[n++] = $0; next }
	/^$/ { if (comm == "") next; s = comm; for (i = n - 1; i >= 0; i--) s = s ";" f[i]; c[s]++; comm = "" }
	END { for (s in c) print s, c[s] }' | LC_ALL=C sort > fp.folded
ls -l ./*.data ./*.script ./*.json ./*.folded

#!/bin/sh
# Rebuilds the annotate view's test binary from inline.c (x86-64, gcc -O2
# -g). It is committed so tests do not depend on the local gcc's code
# generation; tests find its instructions by disassembly and addr2line.
set -eu
cd "$(dirname "$0")"
${CC:-gcc} -O2 -g -fno-pie -no-pie -o inline inline.c
# A recording of it for the annotate page's browser test (rerecord whenever
# the binary changes: it names it by build ID).
perf record -q -e cpu-clock -o inline.perf.data ./inline 3000000

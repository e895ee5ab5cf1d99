#!/usr/bin/env bash
# Records hot.js under node --perf-basic-prof with frame pointers
# (perf record -g), as a user profiles a JIT runtime: node.data, and the
# perf map node wrote for it, /tmp/perf-PID.map, moved here under its
# name. web's TestPerfMapRecording symbolizes node.data from that map and
# compares the names with perf script's, which reads it at
# /tmp/perf-PID.map (the test puts it there). Rerun it from any
# directory; it rewrites everything here.
set -euo pipefail
cd "$(dirname "$0")"
rm -f node.data perf-*.map isolate-*-v8.log
perf record -q -e cpu-clock -F 499 -g -o node.data node --perf-basic-prof hot.js 500 >/dev/null 2>&1
pid=$(perf script -i node.data -F pid 2>/dev/null | awk '{ print $1; exit }')
mv "/tmp/perf-$pid.map" .
rm -f isolate-*-v8.log # V8's log, which --perf-basic-prof also writes
chmod 644 node.data "perf-$pid.map"
ls -l node.data "perf-$pid.map"

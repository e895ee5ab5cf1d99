#!/usr/bin/env bash
# Regenerates testdata/screenshot-flame.png, the README's picture: a real
# perf recording of testdata (fidelity/sorter-fp.data: optimized C++ and
# the STL sorting strings, perf record -g), symbolized by viewer from the
# binary beside it and libc6-dbg's debug info, served, and drawn by
# headless chromium at 1280×1000. Nothing leaves the machine
# (--no-debuginfod); the kernel's frames stay unnamed unless this machine
# has the recording kernel's vmlinux, and the panel says so.
#
#   testdata/screenshot.sh            # from the repository root
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
pid=

go build -o "$tmp/viewer" ./cmd/viewer
"$tmp/viewer" symbolize testdata/fidelity/sorter-fp.data -o "$tmp/sorter-fp.pb.gz" \
	--debug-dir testdata/fidelity --no-debuginfod
port=$((20000 + RANDOM % 20000))
"$tmp/viewer" serve --addr "127.0.0.1:$port" --data "$tmp/data" --no-debuginfod \
	"$tmp/sorter-fp.pb.gz" >"$tmp/serve.log" 2>&1 &
pid=$!
for _ in $(seq 50); do
	url=$(awk -F'\t' '/\/p\//{print $1; exit}' "$tmp/serve.log")
	[ -n "$url" ] && break
	sleep 0.2
done
[ -n "$url" ] || { cat "$tmp/serve.log"; exit 1; }
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
	--window-size=1280,1000 --virtual-time-budget=8000 \
	--screenshot="$tmp/shot.png" "$url" 2>/dev/null
mv "$tmp/shot.png" testdata/screenshot-flame.png
ls -l testdata/screenshot-flame.png

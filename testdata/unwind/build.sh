#!/usr/bin/env bash
# Builds frames (no unwind tables: only .debug_frame describes its functions)
# and moves its debug info, .debug_frame included, to frames.debug.
set -euo pipefail
cd "$(dirname "$0")"
gcc -O2 -g -fno-asynchronous-unwind-tables -fno-unwind-tables -Wl,--build-id -o frames frames.c
objcopy --only-keep-debug frames frames.debug
objcopy --strip-debug --add-gnu-debuglink=frames.debug frames
chmod 644 frames.debug

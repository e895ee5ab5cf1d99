#!/bin/sh
# Re-makes the test binaries from prog.c: prog.stripped (code, no symbols),
# prog.debug (its separate DWARF, objcopy --only-keep-debug), both with one
# build ID. The DWARF names the source /viewer-testdata/debuginfo/prog.c.
set -eu
cd "$(dirname "$0")"
gcc -g -O1 -Wl,--build-id=sha1 -fdebug-prefix-map="$(pwd)"=/viewer-testdata/debuginfo -o prog prog.c
objcopy --only-keep-debug prog prog.debug
objcopy --strip-all --add-gnu-debuglink=prog.debug prog prog.stripped
rm prog

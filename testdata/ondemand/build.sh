#!/bin/sh
# Builds the on-demand symbolization test program: a stripped PIE executable
# (what the profile's mapping names; it has no symbols at all) and its
# separate debug file (the only place its names are, served by debuginfod).
#
#   ./build.sh                 rebuilds the checked-in bin/ondemand and
#                              debuginfo/ondemand.debug
#   ./build.sh OUTDIR N        builds variants 0..N-1 into OUTDIR/bin and
#                              OUTDIR/debuginfo (the benchmark's 20 binaries)
set -eu
cd "$(dirname "$0")"
src=$PWD/ondemand.c
build() { # build OUTDIR NAME VARIANT
	mkdir -p "$1/bin" "$1/debuginfo"
	gcc -g -O1 -fno-omit-frame-pointer -fno-inline -fPIE -pie -Wl,--build-id=sha1 \
		-DVARIANT="$3" -o "$1/$2.full" "$src"
	objcopy --only-keep-debug "$1/$2.full" "$1/debuginfo/$2.debug"
	objcopy --strip-all "$1/$2.full" "$1/bin/$2"
	rm -f "$1/$2.full"
}
if [ $# -eq 0 ]; then
	build "$PWD" ondemand 0
else
	i=0
	while [ "$i" -lt "$2" ]; do
		build "$1" "ondemand$i" "$i"
		i=$((i + 1))
	done
fi

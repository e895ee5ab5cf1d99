#!/bin/sh
# Fetches a real kernel's vmlinux with DWARF (Debian's linux-image-*-dbg,
# ~860 MB download, 630 MB unpacked) into a directory and runs the data-type
# benchmark on it:
#   testdata/datatype/vmlinux.sh [DIR]      (default /tmp/vmlinux)
set -eu
dir=${1:-/tmp/vmlinux}
root=$(cd "$(dirname "$0")/../.." && pwd)
pkg=linux-image-6.1.0-54-amd64-dbg
mkdir -p "$dir"
cd "$dir"
vmlinux=$dir/usr/lib/debug/boot/vmlinux-6.1.0-54-amd64
if [ ! -f "$vmlinux" ]; then
	apt-get download "$pkg"
	dpkg-deb --fsys-tarfile "$pkg"_*.deb | tar -x ./usr/lib/debug/boot/vmlinux-6.1.0-54-amd64
fi
cd "$root"
VIEWER_VMLINUX=$vmlinux go test -count=1 -run '^$' -bench AttributeVmlinux -benchtime 1x ./symbolize/datatype/

#!/bin/sh
# Rebuilds files/ from src/: for each program a stripped executable and its
# separate debug info (objcopy --only-keep-debug), both carrying the GNU build
# ID. Paths in DWARF are mapped to /src/viewer-testdata so the output does not
# depend on where the tree is checked out. Needs gcc and binutils.
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in hello other; do
	gcc -g -O1 -fdebug-prefix-map="$PWD/src=/src/viewer-testdata" \
		-Wl,--build-id=sha1 -o "$tmp/$p" "src/$p.c"
	objcopy --only-keep-debug "$tmp/$p" "files/$p.debug"
	strip --strip-all -o "files/$p" "$tmp/$p"
	objcopy --add-gnu-debuglink="files/$p.debug" "files/$p"
	chmod 0644 "files/$p.debug"
	chmod 0755 "files/$p"
done
for f in files/*; do
	printf '%s %s\n' "$(eu-readelf -n "$f" | awk '/Build ID:/ {print $3}')" "$f"
done > buildids.txt
cat buildids.txt

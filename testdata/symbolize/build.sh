#!/bin/sh
# Builds the test binaries in this directory from prog.c, lib.c and prog.cc.
# The outputs are checked in so tests do not depend on the compiler here;
# run this again (from this directory) after changing a source, then
# `go test ./symbolize/... -update` to refresh the golden files.
#
#   c-pie-dwarf5        PIE, DWARF 5 (gcc's default)
#   c-nopie-dwarf4      non-PIE executable, DWARF 4
#   c-zlib              DWARF sections compressed with zlib (-gz=zlib)
#   c-zstd              the same, compressed with zstd (by zstdify: binutils here cannot)
#   c-stripped          stripped executable with .gnu_debuglink to c-stripped.debug
#   c-stripped.debug    its separate debug file (objcopy --only-keep-debug)
#   libsym.so           shared library with DWARF; c-lib uses it
#   cxx-dwarf5          C++ with templates, a namespace and a class
set -eu
cd "$(dirname "$0")"
CFLAGS="-O2 -g -fno-omit-frame-pointer -ffile-prefix-map=$PWD=/src -Wl,--build-id=sha1"

gcc $CFLAGS -gdwarf-5 -fPIE -pie -o c-pie-dwarf5 prog.c
gcc $CFLAGS -gdwarf-4 -no-pie -o c-nopie-dwarf4 prog.c
gcc $CFLAGS -gdwarf-5 -gz=zlib -fPIE -pie -o c-zlib prog.c -DVARIANT='"zlib"'
(cd ../.. && go run ./testdata/symbolize/zstdify testdata/symbolize/c-pie-dwarf5 testdata/symbolize/c-zstd)

gcc $CFLAGS -gdwarf-5 -fPIE -pie -o c-stripped prog.c -DVARIANT='"stripped"'
objcopy --only-keep-debug c-stripped c-stripped.debug
objcopy --strip-all --add-gnu-debuglink=c-stripped.debug c-stripped

gcc $CFLAGS -gdwarf-5 -fPIC -shared -o libsym.so lib.c
gcc $CFLAGS -gdwarf-5 -fPIE -pie -DWITH_LIB -o c-lib prog.c -L. -lsym -Wl,-rpath,'$ORIGIN'

g++ $CFLAGS -gdwarf-5 -fPIE -pie -o cxx-dwarf5 prog.cc

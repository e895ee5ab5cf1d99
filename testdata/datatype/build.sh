#!/bin/sh
# Rebuilds the data-type attribution test binaries from datatype.c (and
# index.c, skid.c, libdatatype.c), for x86-64 and arm64.
# The binaries are committed so tests do not depend on the local gcc's code
# generation; rerun this only when datatype.c changes, then rerun the tests
# (they locate instructions by disassembly, so no expected address is stored).
#   dw5 = DWARF 5 (.debug_loclists), dw4 = DWARF 4 (.debug_loc)
#   pie / nopie = position-independent or fixed-address executable
#   libdatatype.so = shared library, globals through the GOT
#   datatype-vmlinux = stands in for a vmlinux (_text defined)
#   O0 = unoptimized, frame pointer (PIE, DWARF 5)
#   datatype-dw5-pie.stripped + datatype-dw5-pie.debug = code and debug info
#   in separate files (the .debug file's .text is NOBITS), as from debuginfod.
set -eu
cd "$(dirname "$0")"
CC=${CC:-gcc}
for dw in 5 4; do
	$CC -O2 -g -gdwarf-$dw -fPIE -pie -o datatype-dw$dw-pie datatype.c
	$CC -O2 -g -gdwarf-$dw -fno-pie -no-pie -o datatype-dw$dw-nopie datatype.c
done
# Unoptimized with a frame pointer: variables live in the frame (fbreg with
# an rbp-based CFA) and pointers are reloaded, so register tracking matters.
$CC -O0 -g -o datatype-dw5-O0 datatype.c
# A vmlinux stand-in: fixed addresses and a _text symbol, the reference
# point KASLR shifts are measured from (tests move it by a slide).
$CC -O2 -g -gdwarf-4 -fno-pie -no-pie -Wl,--defsym=_text=0x401000 -o datatype-vmlinux datatype.c
# Skid correction: instruction order fixed by inline assembly.
$CC -O2 -g -o skid skid.c
# Array accesses with a variable and a constant index, position-independent
# (a global array through lea) and not (an index-only fixed address).
$CC -O2 -g -gdwarf-5 -fPIE -pie -o index index.c
$CC -O2 -g -gdwarf-5 -fno-pie -no-pie -o index-nopie index.c
# A global defined in another compile unit than the one reading it (a lazy
# index finds it through the reader's declaration and the symbol table).
$CC -O2 -g -fno-pie -no-pie -o extern extern-use.c extern-def.c
# A shared library whose exported global is reached through the GOT.
$CC -O2 -g -shared -fPIC -o libdatatype.so libdatatype.c
objcopy --only-keep-debug datatype-dw5-pie datatype-dw5-pie.debug
objcopy --strip-debug --add-gnu-debuglink=datatype-dw5-pie.debug datatype-dw5-pie datatype-dw5-pie.stripped
# arm64 (AArch64), cross-compiled with Debian's gcc-aarch64-linux-gnu: the
# arm64 decoding and attribution test (symbolize/datatype/arm64_test.go).
${CC_ARM64:-aarch64-linux-gnu-gcc} -O2 -g -gdwarf-5 -o datatype-arm64 datatype.c
# perf.data for the end-to-end test (web/types_test.go): rerecord whenever the
# binaries change, since it names them by build ID.
perf record -q -e cpu-clock -o datatype-dw5-pie.perf.data ./datatype-dw5-pie 1000000

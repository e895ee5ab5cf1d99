#!/usr/bin/env bash
# Builds the stack fidelity test programs and records them with this
# machine's perf (Debian's linux-perf 6.1): an optimized C++ program with
# inlined templates and the STL (with frame pointers, `perf record -g`, and
# without, `--call-graph=dwarf`), a C program whose stacks go through libc
# (qsort, memcmp, strlen, snprintf; libc6-dbg has libc's debug info), a
# system-wide recording with signal handlers and vDSO calls (with the
# recording kernel's vDSO image, system-fp.vdso), Go programs (one whose
# goroutines are preempted by signal, asynchronously), a stripped binary
# whose debug file the test serves from a debuginfod server, and a
# CPython 3.11 run (python3.11-dbg has its debug info, by build ID: the
# recording needs the python3.11 of the same Debian version). cmd/viewer's TestStackFidelity compares viewer's stacks
# of each recording with `perf script`'s. Rerun it from any directory; it
# rewrites everything here. Recordings stay small: low frequency, short
# runs, zstd-compressed (-z) DWARF-mode stack copies.
set -euo pipefail
cd "$(dirname "$0")"

# Compressed DWARF (-gz) keeps the binaries small; perf and viewer read it.
g++ -O2 -g -gz=zlib -fno-omit-frame-pointer -o sorter-fp sorter.cc
g++ -O2 -g -gz=zlib -o sorter-nofp sorter.cc
gcc -O2 -g -gz=zlib -o libcwork libcwork.c
gcc -O2 -g -gz=zlib -o deeprec deeprec.c
gcc -O2 -g -gz=zlib -fno-omit-frame-pointer -o deeprec-fp deeprec.c
(cd gowork.src && go build -o ../gowork .) # as a user builds it: no flags
(cd gopreempt.src && go build -o ../gopreempt .)
gcc -O2 -g -gz=zlib -fno-omit-frame-pointer -o sigwork sigwork.c
# sorter again, stripped as a distribution strips it: the symbol table and
# DWARF go to sorter-stripped.debug (objcopy --only-keep-debug), the binary
# keeps its build ID and a .gnu_debuglink. -ffile-prefix-map, as Debian
# builds, also gives it a build ID of its own, not sorter-fp's.
g++ -O2 -g -gz=zlib -fno-omit-frame-pointer -ffile-prefix-map="$PWD"=/usr/src/sorter -o sorter-stripped sorter.cc
objcopy --only-keep-debug sorter-stripped sorter-stripped.debug
strip --strip-all sorter-stripped
objcopy --add-gnu-debuglink=sorter-stripped.debug sorter-stripped
chmod 644 sorter-stripped.debug

rec() { perf record -q -e cpu-clock "$@" 2>/dev/null; }
rec -F 999 -g -o sorter-fp.data ./sorter-fp 0.6
rec -F 499 -z --call-graph=dwarf,8192 --buildid-mmap -o sorter-dwarf.data ./sorter-nofp 0.6
rec -F 499 -z --call-graph=dwarf,8192 --buildid-mmap -o libc-dwarf.data ./libcwork 0.6
rec -F 499 -z --call-graph=dwarf,32768 --buildid-mmap -o deeprec-dwarf.data ./deeprec 1
# The kernel cuts these chains at kernel.perf_event_max_stack (127).
rec -F 499 -g -o deeprec-fp.data ./deeprec-fp 0.5
# A program replaced at its path while recording (mv over it): perf.data
# keeps one build ID for the path, the second file's.
tmp=$(mktemp -d)
gcc -O2 -g -o "$tmp/p" libcwork.c
gcc -O1 -g -o "$tmp/p.b" libcwork.c
(cd "$tmp" && rec -F 199 -g -o "$OLDPWD/replaced.data" -- sh -c './p 0.2; mv p.b p; ./p 0.2')
chmod 644 replaced.data
rm -rf "$tmp"
# The same with the limit raised (as root): chains of 322 frames, none cut.
old=$(cat /proc/sys/kernel/perf_event_max_stack)
sysctl -qw kernel.perf_event_max_stack=1024
rec -F 99 -g -o deeprec-fp-raised.data ./deeprec-fp 0.5 || true
sysctl -qw kernel.perf_event_max_stack="$old"
chmod 644 deeprec-fp-raised.data
# The kernel finds no build ID in a Go binary (--buildid-mmap) and perf 6.1
# writes none for a compressed (-z) recording: uncompressed, then gzipped
# (the test unpacks it).
rec -F 499 --call-graph=dwarf,16384 -o go-dwarf.data ./gowork 1s
rec -F 499 -g -o go-fp.data ./gowork 1s
# Goroutines preempted by signal thousands of times a second: samples in
# runtime.asyncPreempt (and under it, in the kernel's rt_sigreturn) are
# about 1 in 500, so these sample at 20 kHz; the goroutine stacks are
# shallow, a 1 KiB copy holds them.
rec -F 20000 --call-graph=dwarf,1024 -o gopreempt-dwarf.data ./gopreempt 2s
rec -F 20000 -g -o gopreempt-fp.data ./gopreempt 2s
rec -F 499 -z --call-graph=dwarf,16384 --buildid-mmap -o python-dwarf.data /usr/bin/python3.11 work.py 60
# CPython's start-up, from ld.so's _start on: relocation, the interpreter's
# initialization and the site imports (-m 1024: no samples lost at 8 kHz).
rec -F 8000 -m 1024 -z --call-graph=dwarf,8192 --buildid-mmap -o python-start-dwarf.data /usr/bin/python3.11 -c pass
# The whole machine (-a) for 2 s while sigwork takes a SIGALRM every
# millisecond and reads the clock through the vDSO: stacks through glibc's
# __restore_rt and [vdso], ld.so's start-up of short-lived commands, kernel
# frames, and whatever else runs (frames of binaries gone since, such as
# go test's, compare as unnamed on both sides).
rec -F 499 -a -g -o system-fp.data ./sigwork 2
# The running kernel's vDSO, which perf record put in its build-ID cache:
# with it the test names [vdso] frames on any machine, not only on this
# kernel.
vdso=$(perf buildid-list -i system-fp.data | awk '$2 == "[vdso]" { print $1 }')
cp "${HOME}/.debug/[vdso]/$vdso/vdso" system-fp.vdso
# The stripped binary runs from a directory outside the checkout, as an
# installed program does: no debug file lies beside its recorded path.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp sorter-stripped "$tmp"/
rec -F 999 -g -o stripped-fp.data "$tmp"/sorter-stripped 0.6
rec -F 499 -z --call-graph=dwarf,8192 --buildid-mmap -o stripped-dwarf.data "$tmp"/sorter-stripped 0.6
chmod 644 ./*.data system-fp.vdso
rm -f ./*.data.old
gzip -9 -f go-dwarf.data gopreempt-dwarf.data gopreempt-fp.data system-fp.data
ls -l ./*.data ./*.data.gz sorter-fp sorter-nofp sorter-stripped sorter-stripped.debug system-fp.vdso libcwork deeprec deeprec-fp gowork gopreempt sigwork

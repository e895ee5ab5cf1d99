package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// releaseStartupPages unmaps from this process the pages of its own
// executable's code and read-only data that are resident now, typically
// after package initialization, so that only what runs afterwards comes
// back. A command-line tool linked into a large binary (viewer links cloud
// storage SDKs whose init registers thousands of protobuf descriptors)
// otherwise keeps tens of MiB of code and descriptors it never uses again
// in its resident set: the kernel maps 64 KiB around each page init
// touches. The pages stay in the page cache, so the ones needed again fault
// back without I/O. Writable mappings (data, heap) are not touched.
func releaseStartupPages() {
	var exe syscall.Stat_t
	if syscall.Stat("/proc/self/exe", &exe) != nil {
		return
	}
	path, _ := os.Readlink("/proc/self/exe")
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 00400000-01a4f000 r-xp 00000000 fd:00 1234 /path/to/exe
		fl := strings.Fields(sc.Text())
		if len(fl) < 6 || (fl[1] != "r-xp" && fl[1] != "r--p") {
			continue
		}
		ino, err := strconv.ParseUint(fl[4], 10, 64)
		if !(err == nil && ino == exe.Ino && sameDev(fl[3], exe.Dev)) && (path == "" || fl[5] != path) {
			continue
		}
		lo, hi, ok := strings.Cut(fl[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || b <= a {
			continue
		}
		syscall.Syscall(syscall.SYS_MADVISE, uintptr(a), uintptr(b-a), syscall.MADV_DONTNEED)
	}
}

// sameDev reports whether a /proc/self/maps device ("fd:00", hex major and
// minor) is dev.
func sameDev(s string, dev uint64) bool {
	maj, min, ok := strings.Cut(s, ":")
	if !ok {
		return false
	}
	M, err1 := strconv.ParseUint(maj, 16, 32)
	m, err2 := strconv.ParseUint(min, 16, 32)
	if err1 != nil || err2 != nil {
		return false
	}
	// Linux's new_encode_dev / huge_encode_dev layout, as glibc's makedev.
	enc := (m & 0xff) | (M&0xfff)<<8 | (m&^0xff)<<12 | (M&^0xfff)<<32
	return enc == dev
}

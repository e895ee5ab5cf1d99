package elfsym

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// mappingAt returns the /proc/self/maps line of the mapping holding p, or "".
func mappingAt(t *testing.T, p uintptr) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		r, _, _ := strings.Cut(line, " ")
		lo, hi, ok := strings.Cut(r, "-")
		if !ok {
			continue
		}
		a, _ := strconv.ParseUint(lo, 16, 64)
		z, _ := strconv.ParseUint(hi, 16, 64)
		if uint64(p) >= a && uint64(p) < z {
			return line
		}
	}
	return ""
}

// The decoded .debug_info of libc lives outside the Go heap while its File
// is in use, and its mapping goes away once the File is dropped, so a
// server that opens and evicts many files does not leak them.
func TestSectionBuffersLeaveWithTheirFile(t *testing.T) {
	path := libcDebug(t)
	start := func() uintptr {
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		addrs := libcAddrs(t, f, 50, 1)
		f.Prefetch(addrs)
		frames, err := f.Lookup(addrs[0], nil)
		if err != nil || len(frames) == 0 || frames[0].Name == "" {
			t.Fatalf("Lookup(%#x) = %v, %v; want a named frame", addrs[0], frames, err)
		}
		l, ok := f.dw.(*fastLiner)
		if !ok {
			t.Fatalf("libc's DWARF is read by %T, want *fastLiner", f.dw)
		}
		if len(l.info.data) < offHeapMin {
			t.Fatalf(".debug_info is %d bytes, too small to test", len(l.info.data))
		}
		p := uintptr(unsafe.Pointer(&l.info.data[0]))
		m := mappingAt(t, p)
		if fields := strings.Fields(m); len(fields) != 5 || fields[1] != "rw-p" {
			t.Fatalf(".debug_info at %#x is in %q, want an anonymous mapping of its own", p, m)
		}
		return p
	}
	p := start()
	for i := 0; i < 50; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		// mincore fails with ENOMEM on a page that is not mapped.
		var vec [1]byte
		_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, p, 4096, uintptr(unsafe.Pointer(&vec[0])))
		if errno == syscall.ENOMEM {
			return
		}
	}
	t.Fatalf(".debug_info's mapping at %#x is still there after its File was dropped: %s", p, mappingAt(t, p))
}

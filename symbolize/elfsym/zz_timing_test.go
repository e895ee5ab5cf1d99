package elfsym

import (
	"bufio"
	"os"
	"strconv"
	"testing"
	"time"
)

func TestTiming(t *testing.T) {
	t0 := time.Now()
	fh, _ := os.Open("/tmp/addrs100k")
	sc := bufio.NewScanner(fh)
	var addrs []uint64
	for sc.Scan() {
		v, _ := strconv.ParseUint(sc.Text(), 16, 64)
		addrs = append(addrs, v)
	}
	f, _ := Open("/usr/lib/debug/.build-id/93/ac61ec5a8eb1396f9fbd350e3169a558528a40.debug")
	f.dwarf()
	t1 := time.Now()
	f.Prefetch(addrs)
	t2 := time.Now()
	var fr []Frame
	for _, a := range addrs {
		fr, _ = f.Lookup(a, fr)
	}
	t.Log(t1.Sub(t0), t2.Sub(t1), time.Since(t2), f.Size())
}

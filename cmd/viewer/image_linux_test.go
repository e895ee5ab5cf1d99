package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// imageRSS returns the resident KiB of this executable's read-only mappings
// (code and constant data), and whether /proc/self/maps named the file with
// the device and inode that stat gives.
func imageRSS(t *testing.T) (kib int, devOK bool) {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			in = len(f) >= 6 && f[5] == exe && (f[1] == "r-xp" || f[1] == "r--p")
			if in && sameDev(f[3], st.Dev) && f[4] == strconv.FormatUint(st.Ino, 10) {
				devOK = true
			}
			continue
		}
		if in && len(f) == 3 && f[0] == "Rss:" {
			n, _ := strconv.Atoi(f[1])
			kib += n
		}
	}
	return kib, devOK
}

// After releaseStartupPages the binary's code and read-only data hold fewer
// resident pages, and the program goes on running: what a test binary then
// runs faults back in.
func TestReleaseStartupPages(t *testing.T) {
	before, devOK := imageRSS(t)
	if !devOK {
		t.Fatalf("/proc/self/maps does not name the executable by the device and inode stat gives")
	}
	if before == 0 {
		t.Fatalf("no resident pages in the executable's read-only mappings")
	}
	releaseStartupPages()
	after, _ := imageRSS(t)
	if after >= before {
		t.Errorf("resident KiB of the executable's code and constants: %d before, %d after; want fewer after", before, after)
	}
	t.Logf("executable's resident code and constants: %d KiB -> %d KiB", before, after)
	// The program still works after its pages are dropped.
	var out strings.Builder
	if err := runWith(t.Context(), []string{"addr2line", "-e", os.Args[0], "0"}, stdio{in: strings.NewReader(""), out: &out, err: &out}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "??:0\n" {
		t.Errorf("addr2line -e %s 0 = %q after releasing pages, want \"??:0\\n\"", os.Args[0], out.String())
	}
}

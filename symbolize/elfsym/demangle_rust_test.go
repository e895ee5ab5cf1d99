package elfsym

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestDemangleRustV0AsCxxfilt demangles every Rust v0 symbol of a real
// perf recording of a Rust program (speedscope's test input) as c++filt
// does, less the crate hashes c++filt adds (rand[d84ddbd723c8780d]) and
// rustfilt leaves out: main printed THREAD_RNG_KEY::::{closure#0}.
func TestDemangleRustV0AsCxxfilt(t *testing.T) {
	cxxfilt, err := exec.LookPath("c++filt")
	if err != nil {
		t.Fatal("c++filt is not installed (package binutils): run make deps")
	}
	text, err := os.ReadFile("../../testdata/peers/speedscope/linux-perf-rust-mangled.linux-perf.txt")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range regexp.MustCompile(`\b_R[A-Za-z0-9_]+`).FindAllString(string(text), -1) {
		seen[s] = true
	}
	var syms []string
	for s := range seen {
		syms = append(syms, s)
	}
	sort.Strings(syms)
	if len(syms) < 10 {
		t.Fatalf("%d v0 symbols in the recording", len(syms))
	}
	cmd := exec.Command(cxxfilt)
	cmd.Stdin = strings.NewReader(strings.Join(syms, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("c++filt: %v", err)
	}
	want := strings.Split(strings.TrimSuffix(string(bytes.ReplaceAll(out, []byte("\r"), nil)), "\n"), "\n")
	if len(want) != len(syms) {
		t.Fatalf("c++filt printed %d lines for %d symbols", len(want), len(syms))
	}
	hash := regexp.MustCompile(`\[[0-9a-f]{8,}\]`) // a crate hash, not [f64]
	for i, s := range syms {
		w := hash.ReplaceAllString(want[i], "")
		if got := Demangle(s, true); got != w {
			t.Errorf("Demangle(%s) = %q, c++filt %q", s, got, w)
		}
	}
}

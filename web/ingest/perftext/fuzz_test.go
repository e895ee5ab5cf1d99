package perftext

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// fuzzParse checks that a parser returns a valid profile or an error, and
// that sniffing any prefix never panics.
func fuzzParse(t *testing.T, data []byte, sniff func([]byte) bool, parse func([]byte, int) (*profile.Profile, error)) {
	sniff(data[:min(len(data), 4096)])
	p, err := parse(data, 10000)
	if err != nil {
		if err.Error() == "" {
			t.Fatal("empty error")
		}
		return
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("invalid profile: %v", err)
	}
}

// seedPeer adds the start of a peer input (testdata/peers) as a seed.
func seedPeer(f *testing.F, name string, max int) {
	b, err := os.ReadFile(filepath.Join(peers, filepath.FromSlash(name)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b[:min(len(b), max)])
}

func seedText(f *testing.F, name string, max int) {
	b := read(f, name)
	f.Add(b[:min(len(b), max)])
}

func FuzzScript(f *testing.F) {
	seedText(f, "fp.script", 8192)
	seedText(f, "pipe.pid.script", 8192)
	f.Add([]byte("deep 1 1.000000: 10 cpu-clock:  401000 main+0x4 (/bin/deep)\n"))
	seedPeer(f, "flamegraph/perf-java-stacks-02.txt", 8192) // unindented frames, no time
	seedPeer(f, "flamegraph/perf-funcab-pid-01.txt", 4096)  // comm pid event only
	seedPeer(f, "speedscope/linux-perf-simple-with-header.linux-perf.txt", 8192)
	f.Add([]byte("\n\t  70fe1 __cos_fma\n\t   12af level\n\n\n\t  70aef __cos_fma\n\n")) // -F ip,sym
	f.Add([]byte("deep 14766    2000000 \n\t  70fe1 __cos_fma (/lib/libm.so.6)\n  s_sin.c:116\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, SniffScript, ParseScript) })
}

func FuzzFolded(f *testing.F) {
	seedText(f, "fp.folded", 8192)
	f.Add([]byte("a;b;c 1.5\na 2\n"))
	seedPeer(f, "speedscope/stackcollapse-simple-utf16-le.txt", 4096)
	seedPeer(f, "speedscope/stackcollapse-simple-utf16-be.txt", 4096)
	seedPeer(f, "speedscope/stackcollapse-simple-with-invalids.txt", 4096)
	seedPeer(f, "speedscope/stackcollapse-simple-crlf.txt", 4096)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, SniffFolded, ParseFolded) })
}

func FuzzJSON(f *testing.F) {
	b := read(f, "fp.json")
	// The headers and first two samples, closed again.
	cut := b[:strings.Index(string(b), "\n\t\t},\n\t\t{\n\t\t\t\"timestamp\"")+4]
	f.Add(append(cut, "]}\n"...))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, SniffJSON, ParseJSON) })
}

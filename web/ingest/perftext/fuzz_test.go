package perftext

import (
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

func seedText(f *testing.F, name string, max int) {
	b := read(f, name)
	f.Add(b[:min(len(b), max)])
}

func FuzzScript(f *testing.F) {
	seedText(f, "fp.script", 8192)
	seedText(f, "pipe.pid.script", 8192)
	f.Add([]byte("deep 1 1.000000: 10 cpu-clock:  401000 main+0x4 (/bin/deep)\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, SniffScript, ParseScript) })
}

func FuzzFolded(f *testing.F) {
	seedText(f, "fp.folded", 8192)
	f.Add([]byte("a;b;c 1.5\na 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, SniffFolded, ParseFolded) })
}

func FuzzJSON(f *testing.F) {
	b := read(f, "fp.json")
	// The headers and first two samples, closed again.
	cut := b[:strings.Index(string(b), "\n\t\t},\n\t\t{\n\t\t\t\"timestamp\"")+4]
	f.Add(append(cut, "]}\n"...))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, SniffJSON, ParseJSON) })
}

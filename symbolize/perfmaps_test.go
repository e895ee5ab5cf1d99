package symbolize

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/pprof/profile"
)

// perfMapProfile is a profile with one mapping named /tmp/perf-PID.map
// holding a raw address for each of addrs.
func perfMapProfile(pid string, addrs ...uint64) (*profile.Profile, []*profile.Location) {
	// perf records a JIT's anonymous memory with its address as the file
	// offset: the lookup must not subtract it.
	m := &profile.Mapping{Start: 0x7f0000000000, Limit: 0x7f0000100000, Offset: 0x7f0000000000, File: "/tmp/perf-" + pid + ".map"}
	p := newProfile(m)
	var locs []*profile.Location
	for i, a := range addrs {
		l := &profile.Location{ID: uint64(i + 1), Mapping: m, Address: a}
		p.Location = append(p.Location, l)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l}, Value: []int64{1}})
		locs = append(locs, l)
	}
	return p, locs
}

func locName(l *profile.Location) string {
	if len(l.Line) == 0 || l.Line[0].Function == nil {
		return ""
	}
	return l.Line[0].Function.Name
}

// TestPerfMapNamesFrames: a perf map's names become the functions of its
// absolute addresses, as perf script shows them (no file, no line), and a
// line perf would not take is reported, not fatal.
func TestPerfMapNamesFrames(t *testing.T) {
	dir := t.TempDir()
	text := "7f0000001000 40 JS:*rec hot.js:3:13\n0x7f0000002000 0x20 LazyCompile:~loop hot.js:4:14\nnot a line\n"
	if err := os.WriteFile(filepath.Join(dir, "perf-4242.map"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := hermetic()
	cfg.PerfMapDir = dir
	p, locs := perfMapProfile("4242", 0x7f0000001010, 0x7f000000201f, 0x7f0000003000)
	if !NeedsSymbolization(p) {
		t.Fatal("a perf map's raw addresses are no work to do")
	}
	rep, err := New(cfg).Symbolize(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Mappings) != 1 {
		t.Fatalf("report %+v", rep.Mappings)
	}
	r := rep.Mappings[0]
	if r.State != StateSymbolized || r.Resolved != 2 || r.Unresolved != 1 || !strings.Contains(r.Source, "perf-4242.map") || !strings.Contains(r.Reason, "1 of its 3 lines") {
		t.Errorf("report %+v", r)
	}
	for i, want := range []string{"JS:*rec hot.js:3:13", "LazyCompile:~loop hot.js:4:14", ""} {
		if got := locName(locs[i]); got != want {
			t.Errorf("location %#x named %q, want %q", locs[i].Address, got, want)
		}
		if len(locs[i].Line) > 0 && (locs[i].Line[0].Line != 0 || locs[i].Line[0].Function.Filename != "") {
			t.Errorf("location %#x has a file or line: %+v %+v", locs[i].Address, locs[i].Line[0], locs[i].Line[0].Function)
		}
	}
	if m := p.Mapping[0]; !m.HasFunctions || m.HasFilenames || m.HasLineNumbers {
		t.Errorf("mapping flags %+v", m)
	}
}

// TestPerfMapNotRead: the frames keep their addresses, with the reason,
// when the policy forbids reading the files profiles name, when the map
// is missing, a symbolic link, not a regular file or over the size bound;
// a path only like a perf map's is a pseudo mapping, never opened.
func TestPerfMapNotRead(t *testing.T) {
	dir := t.TempDir()
	line := "7f0000001000 40 JS:*rec hot.js:3:13\n"
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("perf-1.map", line)
	write("secret", line)
	write("perf-5.map", strings.Repeat(line, 100))
	if err := os.Symlink(filepath.Join(dir, "secret"), filepath.Join(dir, "perf-2.map")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "perf-3.map"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, pid string
		adjust    func(*Config)
		want      string
	}{
		{"local files off", "1", func(c *Config) { c.IgnoreMappingPaths = true }, "was not read: this server does not open the files profiles name"},
		// The cause the server knows, not both it might have.
		{"--no-local-files", "1", func(c *Config) { c.IgnoreMappingPaths, c.MappingPathsOff = true, "it runs with --no-local-files" }, "the files profiles name (it runs with --no-local-files); run viewer serve"},
		{"missing", "4", nil, "/tmp/perf-4.map is not on this machine"},
		{"symlink", "2", nil, "symbolic link"},
		{"fifo", "3", nil, "not a regular file"},
		{"over the bound", "5", func(c *Config) { c.MaxDebugFile = int64(len(line)) }, "over --max-debug-file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := hermetic()
			cfg.PerfMapDir = dir
			if c.adjust != nil {
				c.adjust(&cfg)
			}
			p, locs := perfMapProfile(c.pid, 0x7f0000001010)
			rep, err := New(cfg).Symbolize(context.Background(), p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Mappings) != 1 {
				t.Fatalf("report %+v", rep.Mappings)
			}
			if r := rep.Mappings[0]; r.State != StateNotFound || !strings.Contains(r.Reason, c.want) {
				t.Errorf("state %q reason %q; want no symbols, the reason saying %q", r.State, r.Reason, c.want)
			}
			if n := locName(locs[0]); n != "" || p.Mapping[0].HasFunctions {
				t.Errorf("named %q although the map was not to be read", n)
			}
		})
	}
	cfg := hermetic()
	cfg.PerfMapDir = dir
	p, _ := perfMapProfile("01", 0x7f0000001010)
	if NeedsSymbolization(p) {
		t.Error("/tmp/perf-01.map, not perf's spelling, needs symbolization")
	}
	if rep, _ := New(cfg).Symbolize(context.Background(), p, Options{}); len(rep.Mappings) != 0 {
		t.Errorf("/tmp/perf-01.map was worked on: %+v", rep.Mappings)
	}
}

// TestPerfMapNoAddressNamed: a map that names none of the profile's
// addresses (another process of the same PID wrote it) leaves them
// unnamed with the reason, and the run goes on (a perf map has no store
// entry to discard, as a stripped binary's is).
func TestPerfMapNoAddressNamed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "perf-4243.map"), []byte("7f0000009000 40 JS:*other x.js:1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := hermetic()
	cfg.PerfMapDir = dir
	p, locs := perfMapProfile("4243", 0x7f0000001010, 0x7f0000002000)
	rep, err := New(cfg).Symbolize(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Mappings) != 1 || rep.Mappings[0].State != StateNotFound || !strings.Contains(rep.Mappings[0].Reason, "none of its 2 addresses is in") {
		t.Fatalf("report %+v", rep.Mappings)
	}
	for _, l := range locs {
		if locName(l) != "" {
			t.Errorf("location %#x named %q", l.Address, locName(l))
		}
	}
}

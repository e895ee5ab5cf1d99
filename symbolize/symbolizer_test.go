package symbolize

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize/debuginfod"
	"viewer/symbolize/elfsym"
)

const testdata = "../testdata/symbolize"

func td(name string) string {
	p, _ := filepath.Abs(filepath.Join(testdata, name))
	return p
}

// hermetic is a Config that looks nowhere on this machine but where a test says.
func hermetic() Config {
	return Config{SystemDebugDir: "-", BuildIDCacheDir: "-", DebuginfodCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-"}
}

// mapped describes one binary loaded into a fake process: its executable
// segment mapped at base, as the kernel (and perf) would map it.
type mapped struct {
	m       *profile.Mapping
	base    uint64
	objSyms string // file whose symbols pick the test addresses
}

func mapBinary(t *testing.T, path, buildID string, base uint64) *profile.Mapping {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			start := base + p.Vaddr&^0xfff
			return &profile.Mapping{
				Start:   start,
				Limit:   (base + p.Vaddr + p.Memsz + 0xfff) &^ 0xfff,
				Offset:  p.Off &^ 0xfff,
				File:    path,
				BuildID: buildID,
			}
		}
	}
	t.Fatalf("%s has no executable segment", path)
	return nil
}

func buildID(t *testing.T, path string) string {
	t.Helper()
	f, err := elfsym.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return f.BuildID()
}

// addLocations adds a location for every 7th byte of each function of
// symsFrom, at its runtime address in m (base + object address), and
// returns the object address of each new location.
func addLocations(t *testing.T, p *profile.Profile, m *profile.Mapping, base uint64, symsFrom string) map[*profile.Location]uint64 {
	t.Helper()
	f, err := elfsym.Open(symsFrom)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[*profile.Location]uint64{}
	for _, s := range f.Symbols() {
		if s.Size == 0 {
			continue
		}
		for a := s.Addr; a < s.Addr+s.Size; a += 7 {
			l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: base + a}
			p.Location = append(p.Location, l)
			out[l] = a
		}
	}
	if len(out) == 0 {
		t.Fatalf("no function symbols in %s", symsFrom)
	}
	return out
}

func newProfile(ms ...*profile.Mapping) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}}
	for i, m := range ms {
		m.ID = uint64(i + 1)
		p.Mapping = append(p.Mapping, m)
	}
	return p
}

// wantFrames is what elfsym (checked against llvm-symbolizer in its tests)
// says is at object address a of file.
func wantFrames(t *testing.T, file string, a uint64) []elfsym.Frame {
	f, err := elfsym.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.UseSymbolTableNames(true)
	fr, _ := f.Lookup(a, nil)
	return fr
}

func checkLocations(t *testing.T, name string, locs map[*profile.Location]uint64, debugFile string) {
	t.Helper()
	df, err := elfsym.Open(debugFile)
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	df.UseSymbolTableNames(true)
	bad := 0
	for l, a := range locs {
		want, _ := df.Lookup(a, nil)
		if l.Address == 0 {
			t.Fatalf("%s: address lost", name)
		}
		got := make([]string, len(l.Line))
		for i, ln := range l.Line {
			got[i] = fmt.Sprintf("%s|%s|%s:%d", ln.Function.Name, ln.Function.SystemName, ln.Function.Filename, ln.Line)
		}
		exp := make([]string, len(want))
		for i, fr := range want {
			file := fr.FuncFile
			if file == "" {
				file = fr.File
			}
			exp[i] = fmt.Sprintf("%s|%s|%s:%d", elfsym.Demangle(fr.Name, false), fr.Name, file, fr.Line)
		}
		if strings.Join(got, " / ") != strings.Join(exp, " / ") {
			bad++
			if bad < 5 {
				t.Errorf("%s %#x:\n  got  %v\n  want %v", name, a, got, exp)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d locations wrong", name, bad, len(locs))
	}
}

// TestSymbolizeProcess symbolizes a profile of a fake process with a PIE, a
// non-PIE executable, a shared library, a C++ binary and a stripped binary
// whose debug info is found through .gnu_debuglink, each mapped where the
// kernel would map it.
func TestSymbolizeProcess(t *testing.T) {
	pie := mapBinary(t, td("c-pie-dwarf5"), buildID(t, td("c-pie-dwarf5")), 0x555555554000)
	nopie := mapBinary(t, td("c-nopie-dwarf4"), buildID(t, td("c-nopie-dwarf4")), 0)
	lib := mapBinary(t, td("libsym.so"), buildID(t, td("libsym.so")), 0x7f0012340000)
	cxx := mapBinary(t, td("cxx-dwarf5"), buildID(t, td("cxx-dwarf5")), 0x560000000000)
	stripped := mapBinary(t, td("c-stripped"), buildID(t, td("c-stripped")), 0x561000000000)
	p := newProfile(pie, nopie, lib, cxx, stripped)
	locs := map[string]map[*profile.Location]uint64{
		"pie":      addLocations(t, p, pie, 0x555555554000, td("c-pie-dwarf5")),
		"nopie":    addLocations(t, p, nopie, 0, td("c-nopie-dwarf4")),
		"lib":      addLocations(t, p, lib, 0x7f0012340000, td("libsym.so")),
		"cxx":      addLocations(t, p, cxx, 0x560000000000, td("cxx-dwarf5")),
		"stripped": addLocations(t, p, stripped, 0x561000000000, td("c-stripped.debug")),
	}
	if !NeedsSymbolization(p) {
		t.Fatal("NeedsSymbolization = false for a profile of bare addresses")
	}
	var mu sync.Mutex
	states := map[string][]State{}
	s := New(hermetic())
	rep, err := s.Symbolize(context.Background(), p, Options{Progress: func(ev Event) {
		mu.Lock()
		states[filepath.Base(ev.File)] = append(states[filepath.Base(ev.File)], ev.State)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("symbolized profile is invalid: %v", err)
	}
	checkLocations(t, "pie", locs["pie"], td("c-pie-dwarf5"))
	checkLocations(t, "nopie", locs["nopie"], td("c-nopie-dwarf4"))
	checkLocations(t, "lib", locs["lib"], td("libsym.so"))
	checkLocations(t, "cxx", locs["cxx"], td("cxx-dwarf5"))
	checkLocations(t, "stripped", locs["stripped"], td("c-stripped.debug"))
	for _, m := range p.Mapping {
		// libsym.so's one inlined call may fall between sampled addresses.
		inl := m.HasInlineFrames || filepath.Base(m.File) == "libsym.so"
		if !m.HasFunctions || !m.HasLineNumbers || !m.HasFilenames || !inl {
			t.Errorf("%s: Has* flags %v %v %v %v, want all true", m.File, m.HasFunctions, m.HasFilenames, m.HasLineNumbers, m.HasInlineFrames)
		}
	}
	if NeedsSymbolization(p) {
		t.Error("NeedsSymbolization = true after symbolizing")
	}
	if len(rep.Mappings) != 5 || rep.Symbolized() != 5 {
		t.Fatalf("report: %+v", rep.Mappings)
	}
	for _, r := range rep.Mappings {
		if r.Unresolved != 0 || r.Resolved == 0 {
			t.Errorf("%s: %d resolved, %d unresolved", r.File, r.Resolved, r.Unresolved)
		}
		if filepath.Base(r.File) == "c-stripped" && !strings.Contains(r.Source, "c-stripped.debug (.gnu_debuglink)") {
			t.Errorf("stripped binary's source %q, want its debuglink file", r.Source)
		}
	}
	want := []State{StateQueued, StateSearching, StateLoading, StateSymbolized}
	for name, st := range states {
		if fmt.Sprint(dedup(st)) != fmt.Sprint(want) {
			t.Errorf("%s: states %v, want %v", name, dedup(st), want)
		}
	}
	// C++: demangled names without parameters, mangled in SystemName.
	found := false
	for _, fn := range p.Function {
		if strings.HasPrefix(fn.Name, "shapes::Accumulator<") && !strings.Contains(fn.Name, "(") && strings.HasPrefix(fn.SystemName, "_ZN6shapes11Accumulator") {
			found = true
		}
	}
	if !found {
		t.Error("no inlined shapes::Accumulator<T> method named without parameters, with its mangled system name")
	}
}

func dedup(s []State) []State {
	var out []State
	for _, x := range s {
		if len(out) == 0 || out[len(out)-1] != x {
			out = append(out, x)
		}
	}
	return out
}

// TestSymbolizeBadMappingsDoNotFailProfile: a binary nowhere to be found and
// one with corrupt DWARF are reported; the others are symbolized.
func TestSymbolizeBadMappingsDoNotFailProfile(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "c-corrupt")
	corruptDWARF(t, td("c-pie-dwarf5"), corrupt)
	good := mapBinary(t, td("c-nopie-dwarf4"), buildID(t, td("c-nopie-dwarf4")), 0)
	gone := &profile.Mapping{Start: 0x7f0000000000, Limit: 0x7f0000100000, File: "/nonexistent/libgone.so", BuildID: "0123456789abcdef0123456789abcdef01234567"}
	bad := mapBinary(t, corrupt, buildID(t, corrupt), 0x555555554000)
	p := newProfile(good, gone, bad)
	goodLocs := addLocations(t, p, good, 0, td("c-nopie-dwarf4"))
	goneLoc := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: gone, Address: 0x7f0000001234}
	p.Location = append(p.Location, goneLoc)
	badLocs := addLocations(t, p, bad, 0x555555554000, td("c-pie-dwarf5"))

	rep, err := New(hermetic()).Symbolize(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkLocations(t, "good", goodLocs, td("c-nopie-dwarf4"))
	byFile := map[string]MappingReport{}
	for _, r := range rep.Mappings {
		byFile[filepath.Base(r.File)] = r
	}
	r := byFile["libgone.so"]
	if r.State != StateNotFound || !strings.Contains(r.Reason, "no debug info found") || !strings.Contains(r.Reason, "--debug-dir") {
		t.Errorf("missing binary: state %q, reason %q", r.State, r.Reason)
	}
	if len(goneLoc.Line) != 0 || goneLoc.Address != 0x7f0000001234 || gone.HasFunctions {
		t.Errorf("missing binary's location changed: %+v", goneLoc)
	}
	// Corrupt DWARF: names from the symbol table, and the reason says so.
	r = byFile["c-corrupt"]
	if r.State != StateSymbolized || !strings.Contains(r.Reason, "DWARF") {
		t.Errorf("corrupt DWARF: state %q, reason %q; want symbolized from symbols with a DWARF caveat", r.State, r.Reason)
	}
	named := 0
	for l := range badLocs {
		if len(l.Line) > 0 && l.Line[0].Function.Name != "??" {
			named++
		}
	}
	if named < len(badLocs)/2 {
		t.Errorf("corrupt DWARF: only %d of %d locations named from the symbol table", named, len(badLocs))
	}
}

// corruptDWARF copies an ELF file with its .debug_info overwritten by junk.
func corruptDWARF(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".debug_info")
	for i := s.Offset + 12; i < s.Offset+s.FileSize; i++ {
		data[i] = byte(i*7) | 0x80
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestFindDebugInfoByBuildID puts c-stripped's debug file in each place the
// search knows, with the mapped file itself gone, and checks it is found
// there and only with the right build ID.
func TestFindDebugInfoByBuildID(t *testing.T) {
	bid := buildID(t, td("c-stripped"))
	debug, err := os.ReadFile(td("c-stripped.debug"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, rel, source string
		cfg               func(c *Config, dir string)
	}{
		{"debug-dir build-ID tree", ".build-id/" + bid[:2] + "/" + bid[2:] + ".debug", "--debug-dir build-ID tree", func(c *Config, d string) { c.DebugDirs = []string{d} }},
		{"debug-dir plain file", "c-stripped.debug", "--debug-dir", func(c *Config, d string) { c.DebugDirs = []string{d} }},
		// Found by the build ID read from each file under the directory,
		// whatever its name and depth (main matched names only).
		{"debug-dir any name and depth", "opt/app/app-1.2.dbg", "--debug-dir, by build ID", func(c *Config, d string) { c.DebugDirs = []string{d} }},
		{"debug-dir debuginfod layout", bid + "/debuginfo", "--debug-dir debuginfod layout", func(c *Config, d string) { c.DebugDirs = []string{d} }},
		{"system debug dir", ".build-id/" + bid[:2] + "/" + bid[2:] + ".debug", "system build-ID tree", func(c *Config, d string) { c.SystemDebugDir = d }},
		{"perf build-ID cache", ".build-id/" + bid[:2] + "/" + bid[2:] + "/debug", "perf build-ID cache", func(c *Config, d string) { c.BuildIDCacheDir = d }},
		{"debuginfod client cache", bid + "/debuginfo", "debuginfod cache", func(c *Config, d string) { c.DebuginfodCacheDir = d }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, tc.rel)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, debug, 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := hermetic()
			tc.cfg(&cfg, dir)
			rep, locs := symbolizeAway(t, cfg, bid)
			if r := rep.Mappings[0]; r.State != StateSymbolized || !strings.Contains(r.Source, "("+tc.source+")") {
				t.Fatalf("state %q source %q reason %q; want symbolized from %s", r.State, r.Source, r.Reason, tc.source)
			}
			// Without the executable, addresses are translated with the
			// debug file's program headers.
			checkLocations(t, tc.name, locs, td("c-stripped.debug"))
		})
	}
	t.Run("debug-dir file added later", func(t *testing.T) {
		// One Symbolizer: its index of the directory is read again once
		// the directory changed, as after a user copies a file and Retries.
		dir := t.TempDir()
		cfg := hermetic()
		cfg.DebugDirs = []string{dir}
		s := New(cfg)
		symbolize := func() MappingReport {
			m := mapBinary(t, td("c-stripped"), bid, 0x561000000000)
			m.File = "/nonexistent/c-stripped"
			prof := newProfile(m)
			addLocations(t, prof, m, 0x561000000000, td("c-stripped.debug"))
			rep, _ := s.Symbolize(context.Background(), prof, Options{})
			return rep.Mappings[0]
		}
		if r := symbolize(); r.State != StateNotFound {
			t.Fatalf("empty debug dir: state %q", r.State)
		}
		os.MkdirAll(filepath.Join(dir, "x"), 0o755)
		if err := os.WriteFile(filepath.Join(dir, "x", "renamed"), debug, 0o644); err != nil {
			t.Fatal(err)
		}
		if r := symbolize(); r.State != StateSymbolized || !strings.Contains(r.Source, "by build ID") {
			t.Errorf("after adding the file: state %q source %q reason %q", r.State, r.Source, r.Reason)
		}
	})
	t.Run("wrong build ID is not used", func(t *testing.T) {
		dir := t.TempDir()
		other, _ := os.ReadFile(td("c-pie-dwarf5"))
		os.WriteFile(filepath.Join(dir, "c-stripped"), other, 0o644)
		cfg := hermetic()
		cfg.DebugDirs = []string{dir}
		m := mapBinary(t, td("c-stripped"), bid, 0x561000000000)
		m.File = "/nonexistent/c-stripped"
		prof := newProfile(m)
		addLocations(t, prof, m, 0x561000000000, td("c-stripped.debug"))
		rep, _ := New(cfg).Symbolize(context.Background(), prof, Options{})
		if r := rep.Mappings[0]; r.State != StateNotFound || !strings.Contains(r.Reason, "build ID mismatch") {
			t.Errorf("state %q reason %q; want not found, naming the mismatch", r.State, r.Reason)
		}
	})
}

// fetcher serves c-stripped.debug for its build ID, as a debuginfod client.
type fetcher struct {
	mu    sync.Mutex
	calls []debuginfod.Kind
	files map[string]string
	block bool // wait until the context ends
}

func (f *fetcher) Fetch(ctx context.Context, bid string, kind debuginfod.Kind, progress func(debuginfod.Progress)) (string, error) {
	f.mu.Lock()
	f.calls = append(f.calls, kind)
	f.mu.Unlock()
	if f.block {
		<-ctx.Done()
		return "", ctx.Err()
	}
	p, ok := f.files[bid+"/"+string(kind)]
	if !ok {
		return "", fmt.Errorf("%s: %w", bid, debuginfod.ErrNotFound)
	}
	progress(debuginfod.Progress{BuildID: bid, Kind: kind, Phase: debuginfod.PhaseDownloading, Bytes: 100, Total: 200})
	progress(debuginfod.Progress{BuildID: bid, Kind: kind, Phase: debuginfod.PhaseDone, Bytes: 200, Total: 200, Path: p})
	return p, nil
}

func TestFetchThroughDebuginfod(t *testing.T) {
	bid := buildID(t, td("c-stripped"))
	newProf := func() *profile.Profile {
		m := mapBinary(t, td("c-stripped"), bid, 0x561000000000)
		m.File = "/nonexistent/c-stripped"
		p := newProfile(m)
		addLocations(t, p, m, 0x561000000000, td("c-stripped.debug"))
		return p
	}
	f := &fetcher{files: map[string]string{bid + "/debuginfo": td("c-stripped.debug")}}
	cfg := hermetic()
	cfg.Fetcher = f
	s := New(cfg)

	// Opted out for this profile: not asked.
	rep, _ := s.Symbolize(context.Background(), newProf(), Options{NoDebuginfod: true})
	if r := rep.Mappings[0]; r.State != StateNotFound || !strings.Contains(r.Reason, "debuginfod not asked") || len(f.calls) != 0 {
		t.Fatalf("NoDebuginfod: state %q reason %q, %d fetches", r.State, r.Reason, len(f.calls))
	}

	var progress []debuginfod.Progress
	var mu sync.Mutex
	rep, _ = s.Symbolize(context.Background(), newProf(), Options{Progress: func(ev Event) {
		if ev.State == StateFetching && ev.Fetch != nil {
			mu.Lock()
			progress = append(progress, *ev.Fetch)
			mu.Unlock()
		}
	}})
	if r := rep.Mappings[0]; r.State != StateSymbolized || !strings.Contains(r.Source, "debuginfod debuginfo") {
		t.Fatalf("state %q source %q reason %q", r.State, r.Source, r.Reason)
	}
	if len(progress) < 2 || progress[len(progress)-1].Phase != debuginfod.PhaseDone || progress[len(progress)-2].Bytes != 100 {
		t.Errorf("fetch progress forwarded: %+v", progress)
	}
	// Loaded once, then served from the store: no second fetch.
	n := len(f.calls)
	rep, _ = s.Symbolize(context.Background(), newProf(), Options{})
	if rep.Mappings[0].State != StateSymbolized || len(f.calls) != n {
		t.Errorf("second profile: state %q, %d new fetches; want symbolized from the store", rep.Mappings[0].State, len(f.calls)-n)
	}
}

// TestSkipOneMapping cancels one binary's context (the page's Skip button)
// while its fetch hangs; the rest of the profile is symbolized.
func TestSkipOneMapping(t *testing.T) {
	hang := &profile.Mapping{Start: 0x7f0000000000, Limit: 0x7f0000100000, File: "/nonexistent/libslow.so", BuildID: "00112233445566778899aabbccddeeff00112233"}
	good := mapBinary(t, td("c-nopie-dwarf4"), buildID(t, td("c-nopie-dwarf4")), 0)
	p := newProfile(hang, good)
	p.Location = append(p.Location, &profile.Location{ID: 1, Mapping: hang, Address: 0x7f0000000100})
	addLocations(t, p, good, 0, td("c-nopie-dwarf4"))
	cfg := hermetic()
	cfg.Fetcher = &fetcher{block: true}
	s := New(cfg)
	// Mappings are handed out concurrently, so keep each one's cancel by file.
	cancels := map[string]context.CancelFunc{}
	var mu sync.Mutex
	rep, err := s.Symbolize(context.Background(), p, Options{
		Binary: func(ctx context.Context, _ string, m *profile.Mapping) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			mu.Lock()
			cancels[m.File] = cancel
			mu.Unlock()
			return ctx, cancel
		},
		Progress: func(ev Event) {
			if ev.State == StateFetching && ev.File == hang.File {
				mu.Lock()
				cancels[hang.File]()
				mu.Unlock()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cancels {
		c()
	}
	states := map[string]State{}
	for _, r := range rep.Mappings {
		states[filepath.Base(r.File)] = r.State
	}
	if states["libslow.so"] != StateSkipped || states["c-nopie-dwarf4"] != StateSymbolized {
		t.Errorf("states %v; want the hanging binary skipped and the other symbolized", states)
	}
}

func TestAlreadySymbolizedMappingsLeftAlone(t *testing.T) {
	m := mapBinary(t, td("c-nopie-dwarf4"), buildID(t, td("c-nopie-dwarf4")), 0)
	m.HasFunctions = true
	p := newProfile(m)
	fn := &profile.Function{ID: 1, Name: "mine"}
	p.Function = append(p.Function, fn)
	p.Location = append(p.Location, &profile.Location{ID: 1, Mapping: m, Address: 0x401136, Line: []profile.Line{{Function: fn, Line: 7}}})
	if NeedsSymbolization(p) {
		t.Error("NeedsSymbolization = true for a symbolized profile")
	}
	rep, err := New(hermetic()).Symbolize(context.Background(), p, Options{})
	if err != nil || len(rep.Mappings) != 0 || p.Location[0].Line[0].Function != fn || len(p.Function) != 1 {
		t.Errorf("symbolized profile changed: err %v, report %+v, functions %d", err, rep.Mappings, len(p.Function))
	}
}

// kernelNotes is /sys/kernel/notes holding a build ID.
func kernelNotes(id string) []byte {
	desc, _ := hex.DecodeString(id)
	b := make([]byte, 12, 16+len(desc))
	binary.LittleEndian.PutUint32(b, 4)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(desc)))
	binary.LittleEndian.PutUint32(b[8:], 3)
	b = append(b, "GNU\x00"...)
	return append(b, desc...)
}

func TestKernel(t *testing.T) {
	dir := t.TempDir()
	const running = "4a5a9b0affb66c437abcd455d2738af879985fa9"
	notes := filepath.Join(dir, "notes")
	os.WriteFile(notes, kernelNotes(running), 0o644)
	kallsyms := filepath.Join(dir, "kallsyms")
	os.WriteFile(kallsyms, []byte("ffffffff81000000 T _text\nffffffff81000000 T _stext\nffffffff81001000 t do_one_initcall\nffffffff81002000 T schedule\nffffffff81003000 d some_data\nffffffff81004000 T ext4_sync_fs\t[ext4]\nffffffff81005000 T zzz_end\n"), 0o644)
	kernelProfile := func(bid string) (*profile.Profile, []*profile.Location) {
		m := &profile.Mapping{Start: 0xffffffff81000000, Limit: 0xffffffff82000000, File: "[kernel.kallsyms]_text", BuildID: bid}
		p := newProfile(m)
		var locs []*profile.Location
		for i, a := range []uint64{0xffffffff81001010, 0xffffffff81002fff, 0xffffffff81004004} {
			l := &profile.Location{ID: uint64(i + 1), Mapping: m, Address: a}
			p.Location = append(p.Location, l)
			locs = append(locs, l)
		}
		return p, locs
	}
	cfg := hermetic()
	cfg.KallsymsPath, cfg.KernelNotesPath = kallsyms, notes

	p, locs := kernelProfile(running)
	rep, _ := New(cfg).Symbolize(context.Background(), p, Options{})
	if r := rep.Mappings[0]; r.State != StateSymbolized || !strings.Contains(r.Source, "build ID matches") {
		t.Fatalf("running kernel: state %q source %q reason %q", r.State, r.Source, r.Reason)
	}
	var names []string
	for _, l := range locs {
		names = append(names, l.Line[0].Function.Name)
	}
	if got := strings.Join(names, ","); got != "do_one_initcall,schedule,ext4_sync_fs [ext4]" {
		t.Errorf("kernel names %s", got)
	}

	// Another kernel: this machine's kallsyms must not be used.
	p, locs = kernelProfile("ffeeddccbbaa99887766554433221100ffeeddcc")
	rep, _ = New(cfg).Symbolize(context.Background(), p, Options{})
	if r := rep.Mappings[0]; r.State != StateNotFound || !strings.Contains(r.Reason, "does not apply") || len(locs[0].Line) != 0 {
		t.Errorf("other kernel: state %q reason %q", r.State, r.Reason)
	}

	// A vmlinux found by build ID gives lines; --ignore-vmlinux falls back
	// to kallsyms. (c-nopie-dwarf4 stands in for a vmlinux: ET_EXEC, absolute.)
	vm := td("c-nopie-dwarf4")
	vbid := buildID(t, vm)
	vdir := t.TempDir()
	os.MkdirAll(filepath.Join(vdir, ".build-id", vbid[:2]), 0o755)
	data, _ := os.ReadFile(vm)
	os.WriteFile(filepath.Join(vdir, ".build-id", vbid[:2], vbid[2:]+".debug"), data, 0o644)
	m := &profile.Mapping{Start: 0x400000, Limit: 0x500000, File: "[kernel.kallsyms]", BuildID: vbid}
	kp := newProfile(m)
	klocs := addLocations(t, kp, m, 0, vm)
	vcfg := hermetic()
	vcfg.DebugDirs = []string{vdir}
	rep, _ = New(vcfg).Symbolize(context.Background(), kp, Options{})
	if r := rep.Mappings[0]; r.State != StateSymbolized {
		t.Fatalf("vmlinux: state %q reason %q", r.State, r.Reason)
	}
	checkLocations(t, "vmlinux", klocs, vm)
	vcfg.IgnoreVmlinux = true
	m2 := &profile.Mapping{Start: 0x400000, Limit: 0x500000, File: "[kernel.kallsyms]", BuildID: vbid}
	kp2 := newProfile(m2)
	addLocations(t, kp2, m2, 0, vm)
	rep, _ = New(vcfg).Symbolize(context.Background(), kp2, Options{})
	if r := rep.Mappings[0]; r.State != StateNotFound {
		t.Errorf("--ignore-vmlinux: state %q source %q; want the vmlinux ignored", r.State, r.Source)
	}
}

// TestKernelKASLR: a kernel moved by KASLR is symbolized at the right
// addresses, whether the profile records where _text was (perf's kernel
// mapping offset, so a profile from another machine needs nothing from it)
// or this machine runs that kernel (the shift from /proc/kallsyms).
// datatype-vmlinux stands in for a vmlinux: ET_EXEC with a _text symbol.
func TestKernelKASLR(t *testing.T) {
	vm := filepath.Join("..", "testdata", "datatype", "datatype-vmlinux")
	vbid := buildID(t, vm)
	vdir := t.TempDir()
	os.MkdirAll(filepath.Join(vdir, ".build-id", vbid[:2]), 0o755)
	data, err := os.ReadFile(vm)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(vdir, ".build-id", vbid[:2], vbid[2:]+".debug"), data, 0o644)
	f, err := elfsym.Open(vm)
	if err != nil {
		t.Fatal(err)
	}
	text, ok := f.KernelText()
	f.Close()
	if !ok {
		t.Fatalf("%s has no _text symbol", vm)
	}

	const shift = 0x3a200000 // a 2 MiB-aligned KASLR slide
	// The profile records _text's runtime address; this machine runs
	// another kernel.
	cfg := hermetic()
	cfg.DebugDirs = []string{vdir}
	m := &profile.Mapping{Start: text + shift, Limit: text + shift + 0x100000, Offset: text + shift, File: "[kernel.kallsyms]_text", BuildID: vbid}
	p := newProfile(m)
	locs := addLocations(t, p, m, shift, vm)
	rep, _ := New(cfg).Symbolize(context.Background(), p, Options{})
	if r := rep.Mappings[0]; r.State != StateSymbolized {
		t.Fatalf("KASLR from the mapping: state %q reason %q", r.State, r.Reason)
	}
	checkLocations(t, "KASLR from the mapping", locs, vm)

	// No offset recorded, but this machine runs the kernel: its kallsyms
	// says where _text is.
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes")
	os.WriteFile(notes, kernelNotes(vbid), 0o644)
	kallsyms := filepath.Join(dir, "kallsyms")
	os.WriteFile(kallsyms, []byte(fmt.Sprintf("%x T _text\n", text+shift)), 0o644)
	cfg.KallsymsPath, cfg.KernelNotesPath = kallsyms, notes
	m2 := &profile.Mapping{Start: text + shift, Limit: text + shift + 0x100000, File: "[kernel.kallsyms]_text", BuildID: vbid}
	p2 := newProfile(m2)
	locs2 := addLocations(t, p2, m2, shift, vm)
	rep, _ = New(cfg).Symbolize(context.Background(), p2, Options{})
	if r := rep.Mappings[0]; r.State != StateSymbolized {
		t.Fatalf("KASLR from kallsyms: state %q reason %q", r.State, r.Reason)
	}
	checkLocations(t, "KASLR from the running kernel's kallsyms", locs2, vm)
}

func TestLookupAndHandle(t *testing.T) {
	m := mapBinary(t, td("c-pie-dwarf5"), buildID(t, td("c-pie-dwarf5")), 0x555555554000)
	s := New(hermetic())
	want := wantFrames(t, td("c-pie-dwarf5"), 0x11c5)
	got, err := s.Lookup(context.Background(), m, 0x555555554000+0x11c5)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) < 2 {
		t.Errorf("Lookup: %v, want %v (inlined frames)", got, want)
	}
	if _, err := s.Lookup(context.Background(), m, 0x1000); err == nil {
		t.Error("an address outside the mapping gave no error")
	}
	_, err = s.Lookup(context.Background(), &profile.Mapping{File: "/nonexistent", BuildID: "abcdef0123456789"}, 1)
	if !errors.Is(err, errNotFound) {
		t.Errorf("missing binary: %v", err)
	}
}

// A mapping without a build ID (perf sometimes records none) is resolved from
// the file at its path, whose own build ID then finds its debug file; the
// report says nothing verified the file.
func TestMappingWithoutBuildID(t *testing.T) {
	m := mapBinary(t, td("c-stripped"), "", 0x561000000000)
	p := newProfile(m)
	locs := addLocations(t, p, m, 0x561000000000, td("c-stripped.debug"))
	rep, err := New(hermetic()).Symbolize(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Mappings[0]
	if r.State != StateSymbolized || !strings.Contains(r.Source, ".gnu_debuglink") || !strings.Contains(r.Reason, "unverified") {
		t.Fatalf("state %q source %q reason %q", r.State, r.Source, r.Reason)
	}
	checkLocations(t, "no build ID", locs, td("c-stripped.debug"))
}

// Addresses that fall outside their mapping resolve to nothing: the binary
// is reported as an error, not as symbolized, and left for another try.
func TestNothingResolvedIsAnError(t *testing.T) {
	m := mapBinary(t, td("c-nopie-dwarf4"), buildID(t, td("c-nopie-dwarf4")), 0)
	p := newProfile(m)
	p.Location = append(p.Location, &profile.Location{ID: 1, Mapping: m, Address: m.Limit + 0x100})
	rep, err := New(hermetic()).Symbolize(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Mappings[0]; r.State != StateError || !strings.Contains(r.Reason, "outside mapping") || m.HasFunctions {
		t.Errorf("state %q reason %q HasFunctions %v", r.State, r.Reason, m.HasFunctions)
	}
}

// Build IDs and paths from an uploaded profile must not steer the search
// outside the places it knows.
func TestUntrustedMappings(t *testing.T) {
	m := &profile.Mapping{Start: 0x1000, Limit: 0x2000, File: "/etc/passwd", BuildID: "../../../../etc/passwd"}
	p := newProfile(m)
	p.Location = append(p.Location, &profile.Location{ID: 1, Mapping: m, Address: 0x1010})
	rep, _ := New(hermetic()).Symbolize(context.Background(), p, Options{})
	if r := rep.Mappings[0]; r.State != StateNotFound || !strings.Contains(r.Reason, "not hexadecimal") {
		t.Errorf("path as build ID: state %q reason %q", r.State, r.Reason)
	}
	// With IgnoreMappingPaths the mapped file itself is not read, even when
	// it is the right one.
	cfg := hermetic()
	cfg.IgnoreMappingPaths = true
	good := mapBinary(t, td("c-nopie-dwarf4"), buildID(t, td("c-nopie-dwarf4")), 0)
	p = newProfile(good)
	addLocations(t, p, good, 0, td("c-nopie-dwarf4"))
	rep, _ = New(cfg).Symbolize(context.Background(), p, Options{})
	if r := rep.Mappings[0]; r.State != StateNotFound {
		t.Errorf("IgnoreMappingPaths: state %q source %q; want the mapped file left unread", r.State, r.Source)
	}
}

type failingFetcher struct{}

func (failingFetcher) Fetch(context.Context, string, debuginfod.Kind, func(debuginfod.Progress)) (string, error) {
	return "", errors.New("connection refused")
}

// A debuginfod failure (not a plain miss) is an error naming it, and the
// rest of the profile still resolves.
func TestFetchFailure(t *testing.T) {
	cfg := hermetic()
	cfg.Fetcher = failingFetcher{}
	gone := &profile.Mapping{Start: 0x7f0000000000, Limit: 0x7f0000100000, File: "/nonexistent/libgone.so", BuildID: "0123456789abcdef0123456789abcdef01234567"}
	good := mapBinary(t, td("c-nopie-dwarf4"), buildID(t, td("c-nopie-dwarf4")), 0)
	p := newProfile(gone, good)
	p.Location = append(p.Location, &profile.Location{ID: 1, Mapping: gone, Address: 0x7f0000000010})
	addLocations(t, p, good, 0, td("c-nopie-dwarf4"))
	rep, err := New(cfg).Symbolize(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Mappings[0]; r.State != StateError || !strings.Contains(r.Reason, "connection refused") || !strings.Contains(r.Reason, "candidate files checked") {
		t.Errorf("state %q reason %q", r.State, r.Reason)
	}
	if rep.Mappings[1].State != StateSymbolized {
		t.Errorf("the other binary: %q", rep.Mappings[1].State)
	}
}

// panickingFetcher panics, as a client choking on a hostile server's answer
// might, for one build ID.
type panickingFetcher struct{ bad string }

func (f panickingFetcher) Fetch(_ context.Context, bid string, _ debuginfod.Kind, _ func(debuginfod.Progress)) (string, error) {
	if bid == f.bad {
		panic("hostile debug info for " + bid)
	}
	return "", fmt.Errorf("%s: %w", bid, debuginfod.ErrNotFound)
}

// A panic while one binary is looked for or read (in the engine's worker
// goroutines, where no caller's recover reaches) fails that binary only:
// the process survives and the rest of the profile resolves.
func TestPanicOnOneBinaryFailsOnlyThatBinary(t *testing.T) {
	bad := "0123456789abcdef0123456789abcdef01234567"
	cfg := hermetic()
	cfg.Fetcher = panickingFetcher{bad: bad}
	gone := &profile.Mapping{Start: 0x7f0000000000, Limit: 0x7f0000100000, File: "/nonexistent/libhostile.so", BuildID: bad}
	good := mapBinary(t, td("c-nopie-dwarf4"), buildID(t, td("c-nopie-dwarf4")), 0)
	p := newProfile(gone, good)
	p.Location = append(p.Location, &profile.Location{ID: 1, Mapping: gone, Address: 0x7f0000000010})
	addLocations(t, p, good, 0, td("c-nopie-dwarf4"))
	var mu sync.Mutex
	var errEvent error
	rep, err := New(cfg).Symbolize(context.Background(), p, Options{Progress: func(ev Event) {
		if ev.BuildID == bad && ev.State == StateError {
			mu.Lock()
			errEvent = ev.Err
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Mappings[0]; r.State != StateError || !strings.Contains(r.Reason, "hostile debug info for "+bad) {
		t.Errorf("the panicking binary: state %q reason %q", r.State, r.Reason)
	}
	if errEvent == nil || !strings.Contains(errEvent.Error(), "stays unsymbolized") {
		t.Errorf("error event for the panicking binary: %v", errEvent)
	}
	if rep.Mappings[1].State != StateSymbolized {
		t.Errorf("the other binary: %q", rep.Mappings[1].State)
	}
}

// A panic inside a debug file's load (run by singleflight in a goroutine of
// its own) is that load's error.
func TestPanicWhileLoadingIsAnError(t *testing.T) {
	st := newStore(1 << 20)
	_, _, err := st.acquire(context.Background(), "k", facetSymbols, func(context.Context) (part, error) {
		var l *loaded
		return l, errors.New(l.source) // nil dereference
	})
	if err == nil || !strings.Contains(err.Error(), "loading the debug info panicked") {
		t.Errorf("err = %v", err)
	}
}

// A debug file found on this machine over MaxDebugFile is not opened: the
// binary's reason names it, its size and the limit, and the rest of the
// profile still resolves.
func TestLocalDebugFileOverLimitIsSkipped(t *testing.T) {
	big, small := td("cxx-dwarf5"), td("c-nopie-dwarf4")
	bigSize, smallSize := fileSize(t, big), fileSize(t, small)
	if bigSize <= smallSize {
		t.Fatalf("%s (%d bytes) should be larger than %s (%d)", big, bigSize, small, smallSize)
	}
	cfg := hermetic()
	cfg.MaxDebugFile = smallSize
	mb := mapBinary(t, big, buildID(t, big), 0x555500000000)
	ms := mapBinary(t, small, buildID(t, small), 0)
	p := newProfile(mb, ms)
	addLocations(t, p, mb, 0x555500000000, big)
	addLocations(t, p, ms, 0, small)
	rep, err := New(cfg).Symbolize(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("debug file %s is %d bytes, over --max-debug-file %d", big, bigSize, smallSize)
	if r := rep.Mappings[0]; r.State != StateNotFound || !strings.Contains(r.Reason, want) {
		t.Errorf("the binary over the limit: state %q reason %q; want not found naming %q", r.State, r.Reason, want)
	}
	if r := rep.Mappings[1]; r.State != StateSymbolized {
		t.Errorf("the binary within the limit: state %q reason %q", r.State, r.Reason)
	}
	// Without a limit the same file is used.
	cfg.MaxDebugFile = 0
	p = newProfile(mapBinary(t, big, buildID(t, big), 0x555500000000))
	addLocations(t, p, p.Mapping[0], 0x555500000000, big)
	if rep, _ := New(cfg).Symbolize(context.Background(), p, Options{}); rep.Mappings[0].State != StateSymbolized {
		t.Errorf("no limit: state %q reason %q", rep.Mappings[0].State, rep.Mappings[0].Reason)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A stripped binary found at its mapping's path, with no debug info
// anywhere, is "no symbols"; once its debug file appears (here in a
// --debug-dir; likewise uploaded, or on a debuginfod server once the miss
// expires), the next run must look again rather than reuse the stripped
// file loaded for the first: Retry and the arrival of a debug file
// otherwise changed nothing until the store evicted it.
func TestNoSymbolsFromMappedFileLooksAgain(t *testing.T) {
	bid := buildID(t, td("c-stripped"))
	debug, err := os.ReadFile(td("c-stripped.debug"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "app") // no debug file beside it for its .gnu_debuglink
	copyFile(t, td("c-stripped"), bin)
	dir := t.TempDir()
	cfg := hermetic()
	cfg.DebugDirs = []string{dir}
	s := New(cfg)
	symbolize := func() MappingReport {
		m := mapBinary(t, bin, bid, 0x561000000000) // the stripped file exists at its path
		prof := newProfile(m)
		addLocations(t, prof, m, 0x561000000000, td("c-stripped.debug"))
		rep, _ := s.Symbolize(context.Background(), prof, Options{})
		return rep.Mappings[0]
	}
	if r := symbolize(); r.State != StateNotFound || !strings.Contains(r.Reason, "(the mapped file)") {
		t.Fatalf("no debug info yet: state %q reason %q; want no symbols from the mapped file", r.State, r.Reason)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.debug"), debug, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := symbolize(); r.State != StateSymbolized || !strings.Contains(r.Source, "--debug-dir") {
		t.Errorf("after adding the debug file: state %q source %q reason %q; want symbolized from --debug-dir", r.State, r.Source, r.Reason)
	}
}

// cacheFetcher downloads into the debuginfod cache as the real client
// does: at BID/debuginfo, where an expired miss left an empty file.
type cacheFetcher struct{ dir, src string }

func (f cacheFetcher) Fetch(_ context.Context, bid string, kind debuginfod.Kind, _ func(debuginfod.Progress)) (string, error) {
	if kind != debuginfod.KindDebuginfo {
		return "", fmt.Errorf("%s: %w", bid, debuginfod.ErrNotFound)
	}
	p := filepath.Join(f.dir, bid, "debuginfo")
	data, err := os.ReadFile(f.src)
	if err != nil {
		return "", err
	}
	os.Remove(p)
	return p, os.WriteFile(p, data, 0o644)
}

// The file a fetch just stored is used even when the search saw the same
// path before: the empty file of a debuginfod miss (its negative cache
// entry), which the fetch replaced once the miss expired. It was skipped
// as seen, so a Retry downloaded the debug info and still said no symbols.
func TestFetchReplacingMissEntryIsUsed(t *testing.T) {
	bid := buildID(t, td("c-stripped"))
	cache := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cache, bid), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, bid, "debuginfo"), nil, 0o644); err != nil { // the miss
		t.Fatal(err)
	}
	cfg := hermetic()
	cfg.DebuginfodCacheDir = cache
	cfg.Fetcher = cacheFetcher{dir: cache, src: td("c-stripped.debug")}
	rep, locs := symbolizeAway(t, cfg, bid)
	if r := rep.Mappings[0]; r.State != StateSymbolized || !strings.Contains(r.Source, "debuginfod debuginfo") {
		t.Fatalf("state %q source %q reason %q; want symbolized from the fetched file", r.State, r.Source, r.Reason)
	}
	checkLocations(t, "fetched over a miss", locs, td("c-stripped.debug"))
}

// A debuginfod failure is named even when the stripped binary was found at
// its mapping's path: the row said only "the only file found for it
// (stripped, no separate debug info)" while the server had answered 500,
// and its help sent the user to set DEBUGINFOD_URLS, already set.
func TestFetchFailureNamedBesideMappedFile(t *testing.T) {
	bid := buildID(t, td("c-stripped"))
	bin := filepath.Join(t.TempDir(), "app") // no debug file beside it for its .gnu_debuglink
	copyFile(t, td("c-stripped"), bin)
	cfg := hermetic()
	cfg.Fetcher = failingFetcher{}
	m := mapBinary(t, bin, bid, 0x561000000000)
	prof := newProfile(m)
	addLocations(t, prof, m, 0x561000000000, td("c-stripped.debug"))
	rep, err := New(cfg).Symbolize(context.Background(), prof, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Mappings[0]; r.State != StateNotFound || !strings.Contains(r.Reason, "(the mapped file)") || !strings.Contains(r.Reason, "debuginfod failed: connection refused") {
		t.Errorf("state %q reason %q; want no symbols, naming the mapped file and debuginfod's failure", r.State, r.Reason)
	}
}

// A debug file passed over for its build ID is named when the stripped file
// at the mapping's path is used instead, as gdb warns of a .gnu_debuglink
// file that "does not match" (CRC mismatch): the row said only "no
// separate debug info".
func TestMismatchedDebugLinkNamedBesideMappedFile(t *testing.T) {
	bid := buildID(t, td("c-stripped"))
	dir := t.TempDir()
	bin := filepath.Join(dir, "c-stripped")
	copyFile(t, td("c-stripped"), bin)
	copyFile(t, td("c-pie-dwarf5"), filepath.Join(dir, "c-stripped.debug")) // its .gnu_debuglink name, another build
	m := mapBinary(t, bin, bid, 0x561000000000)
	prof := newProfile(m)
	addLocations(t, prof, m, 0x561000000000, td("c-stripped.debug"))
	rep, err := New(hermetic()).Symbolize(context.Background(), prof, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Mappings[0]; r.State != StateNotFound || !strings.Contains(r.Reason, "(the mapped file)") || !strings.Contains(r.Reason, "build ID mismatch: "+filepath.Join(dir, "c-stripped.debug")) {
		t.Errorf("state %q reason %q; want no symbols, naming the mismatched debug file", r.State, r.Reason)
	}
}

// A miss answered from debuginfod's negative cache says so and until when
// it is remembered: the row said "debuginfod servers do not have it" as if
// they had been asked, and gave no hint that they would be asked again.
func TestRememberedMissSaysUntilWhen(t *testing.T) {
	bid := buildID(t, td("c-stripped"))
	cache := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cache, bid), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"debuginfo", "executable"} { // fresh misses
		if err := os.WriteFile(filepath.Join(cache, bid, k), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { asked.Add(1); http.NotFound(w, r) }))
	defer srv.Close()
	client, err := debuginfod.New(debuginfod.Config{URLs: []string{srv.URL}, CacheDir: cache, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg := hermetic()
	cfg.DebuginfodCacheDir = cache
	cfg.Fetcher = client
	rep, _ := symbolizeAway(t, cfg, bid)
	r := rep.Mappings[0]
	if r.State != StateNotFound || !strings.Contains(r.Reason, "when last asked") || !strings.Contains(r.Reason, "remembered until") || asked.Load() != 0 {
		t.Errorf("state %q reason %q, server asked %d times; want a remembered miss named, with its end, and no server asked", r.State, r.Reason, asked.Load())
	}
}

// symbolizeAway symbolizes c-stripped (build ID bid) mapped from a path
// that does not exist, so only cfg's search finds its debug info; it
// returns the report and the locations.
func symbolizeAway(t *testing.T, cfg Config, bid string) (*Report, map[*profile.Location]uint64) {
	t.Helper()
	m := mapBinary(t, td("c-stripped"), bid, 0x561000000000)
	m.File = "/nonexistent/c-stripped"
	prof := newProfile(m)
	locs := addLocations(t, prof, m, 0x561000000000, td("c-stripped.debug"))
	rep, err := New(cfg).Symbolize(context.Background(), prof, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep, locs
}

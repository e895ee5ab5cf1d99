package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/symbolize/elfsym"
	"viewer/web/ingest/perfdata"
)

const fidelityDir = "../../testdata/fidelity"

// fidelityRecordings are testdata/fidelity/record.sh's thirteen recordings; fp
// says the stacks are frame-pointer call chains (perf 6.1 prints no inlined
// frames for those); vdso, that its samples go through the vDSO, whose
// frames perf and viewer must both name (the recording kernel's image is
// checked in beside it); debuginfod, that viewer gets the program's debug
// file from a debuginfod server only.
var fidelityRecordings = []struct {
	name       string
	fp         bool
	vdso       bool
	debuginfod bool
}{
	{name: "sorter-fp", fp: true},
	{name: "sorter-dwarf"},
	{name: "libc-dwarf"},
	{name: "python-dwarf"},
	// Its 2 samples at the process's exit in _fini (python3.11's and
	// libexpat's .fini, which no CFI covers) differ: viewer takes the
	// return address at the stack pointer (_dl_fini, then exit), perf's
	// libunwind guesses from rbp and skips _dl_fini.
	{name: "python-start-dwarf"},
	{name: "deeprec-dwarf"},
	// perf 6.1 (built with libunwind) unwinds none of a Go program's
	// --call-graph=dwarf stacks past the sampled function (Go binaries
	// have no .eh_frame), so go-dwarf holds viewer's callers to nothing
	// and its leaves, inlined frames and kernel frames to perf's.
	{name: "go-dwarf"},
	{name: "go-fp", fp: true},
	// gopreempt's goroutines are preempted by signal thousands of times
	// a second: about 1 sample in 500 is in runtime.asyncPreempt, so it
	// samples at 20 kHz. The DWARF recording follows go-dwarf's rule.
	// The DWARF one also passes checkPreempted: the frame under
	// asyncPreempt is the interrupted instruction, named at its own address
	// (this test expands other callers at address−1), then its callers, as
	// Go's traceback gives them (59 samples). Without that, 13 of them
	// named the instruction before it (main.mix for main.fold, or no
	// inlined call for one), and a DWARF walk could read that
	// instruction's CFI (TestUnwindGoAsyncPreempt). Its few samples that
	// differ (6 of 38,259) are the kernel setting up a signal frame or
	// faulting in the Go runtime, matched to another sample. In the
	// frame-pointer chains viewer still names that frame as any caller's,
	// at address−1 (12 of its 39 such samples differ from perf's, which
	// names it at its address): telling it apart at ingest needs each
	// program's symbol table, and loading it per process doubled a
	// system-wide -g upload's CPU (540 to 1,070 ms), so it was left out.
	{name: "gopreempt-dwarf"},
	{name: "gopreempt-fp", fp: true},
	// perf record -a -g of the whole machine while sigwork ran: its
	// SIGALRM handler's stacks go through glibc's signal trampoline
	// (__restore_rt), its clock reads through the vDSO (system-fp.vdso is
	// the recording kernel's: cacheVDSO); the other processes' binaries
	// (go, its compiler and vet) compare as unnamed on both sides where
	// another Go is installed. Most [vdso] leaves are in a static function
	// of the vDSO (its clock read, rdtsc), which no symbol covers (it has
	// .dynsym only): both leave them unnamed, and name their callers
	// __vdso_clock_gettime. On the recording's kernel (6.18) its kernel
	// frames are compared by name too, all alike since an interrupt taken
	// at native_set_pte's first instruction is named there, not one byte
	// back in its __pfx_ padding (TestKallsymsPaddingNamesItsFunction).
	{name: "system-fp", fp: true, vdso: true},
	// sorter with frame pointers, stripped (strip --strip-all), run from
	// outside the checkout: perf reads sorter-stripped.debug from its
	// build-ID cache, viewer has the stripped binary in its own and a
	// debuginfod server that serves the debug file (debuginfodSetup).
	{name: "stripped-fp", fp: true, debuginfod: true},
	// The same with --call-graph=dwarf: viewer unwinds with the stripped
	// binary's .eh_frame and names frames from the fetched debug file.
	{name: "stripped-dwarf", debuginfod: true},
}

// needTool finds a tool the test cannot do without; missing, it fails.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed (Debian package %s): run make deps", name, pkg)
	}
	return p
}

// TestStackFidelity converts and symbolizes each recording of
// testdata/fidelity as a user would (viewer convert, then viewer symbolize
// with the checked-in binaries, the built viewer binary) and compares every sample's whole stack,
// inlined frames included, with the one perf script -F ip,sym prints for
// the same file. perf prints inlined frames only for DWARF-unwound stacks;
// for frame-pointer chains each frame perf prints is expanded with
// addr2line -i at the address perf's DWARF path looks up (ip−1 for a
// caller), the ELF address of the file offset perf prints. A Go binary's
// frames are expanded so in both modes, with llvm-addr2line: GNU
// addr2line, which perf itself runs, reads no inlining from Go's DWARF 5
// (addr2lines). At least 99% of each recording's samples must have the same
// stack; the ones that differ are logged with both stacks.
//
//	go test -run StackFidelity -v ./cmd/viewer/   # prints the match per recording
func TestStackFidelity(t *testing.T) {
	if testing.Short() {
		t.Skip("runs perf script and viewer on thirteen recordings")
	}
	if raceDetector {
		t.Skip("its work is in perf script and the viewer binary, not this process: make test runs it without -race")
	}
	perf := needTool(t, "perf", "linux-perf")
	a2l := addr2lines{
		gnu:  needTool(t, "addr2line", "binutils"),
		llvm: needTool(t, "llvm-addr2line", "llvm"),
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	abs, err := filepath.Abs(fidelityDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"sorter-fp", "sorter-nofp", "sorter-stripped", "libcwork", "deeprec", "gowork", "gopreempt", "sigwork"} {
		// perf recorded them elsewhere: its build-ID cache gives perf script
		// and viewer's unwinder these very files.
		if out, err := exec.Command(perf, "buildid-cache", "-a", filepath.Join(abs, b)).CombinedOutput(); err != nil {
			t.Fatalf("perf buildid-cache -a %s: %v\n%s", b, err, out)
		}
	}
	// perf script reads a stripped binary's debug file from the cache
	// entry's "debug" file; viewer, which runs with another HOME for
	// stripped-fp, must fetch it from debuginfod.
	cacheDebugFile(t, home, filepath.Join(abs, "sorter-stripped.debug"))
	// The built binary, not runWith: as a user runs it, and without the
	// race detector's slowdown on unwinding and loading libc's DWARF.
	viewer := buildViewer(t)
	for _, rec := range fidelityRecordings {
		t.Run(rec.name, func(t *testing.T) {
			data := fidelityData(t, filepath.Join(abs, rec.name+".data"))
			bins := recordedBinaries(t, perf, data, abs)
			names := newAliases(bins)
			kernelOK := bins["[kernel.kallsyms]"] != "" && bins["[kernel.kallsyms]"] == runningKernelBuildID()
			vdsoNamed := false
			if id := bins["[vdso]"]; id != "" {
				vdsoNamed = cacheVDSO(t, home, id, abs)
			}
			if rec.vdso && !vdsoNamed {
				t.Errorf("no vDSO image with the recorded build ID %s in %s: re-record with record.sh", bins["[vdso]"], fidelityDir)
			}
			if !kernelOK {
				t.Logf("no kernel build ID recorded, or this machine runs another kernel: kernel frames compare as [kernel]")
			}
			// Frames of these binaries are counted by name on both sides.
			wantFrames, gotFrames := dsoFrames{"[vdso]": {}}, dsoFrames{"[vdso]": {}}
			vs := viewerSetup{debugDir: abs}
			var stripped string
			if rec.debuginfod {
				vs, stripped = debuginfodSetup(t, perf, bins, abs)
				wantFrames[stripped], gotFrames[stripped] = map[string]int{}, map[string]int{}
			}
			want := perfStacks(t, perf, a2l, data, rec.fp, bins, names, kernelOK, wantFrames)
			got := viewerStacks(t, viewer, data, vs, names, kernelOK, gotFrames)
			if rec.vdso {
				checkNamedFrames(t, "[vdso]", wantFrames["[vdso]"], gotFrames["[vdso]"], false)
			}
			if rec.debuginfod {
				checkNamedFrames(t, stripped, wantFrames[stripped], gotFrames[stripped], true)
				id := bins[stripped]
				if n := vs.server.Requests(id); n == 0 {
					t.Errorf("viewer asked the debuginfod server nothing for %s (build ID %s)", stripped, id)
				}
				if _, err := os.Stat(filepath.Join(vs.cache, id, "debuginfo")); err != nil {
					t.Errorf("viewer fetched no debug file from debuginfod for %s: %v", stripped, err)
				}
			}
			total, same, missed := matchStacks(want, got)
			gotTotal := 0
			for _, n := range got {
				gotTotal += n
			}
			pct := 100 * float64(same) / float64(max(total, 1))
			t.Logf("%s: %d of %d samples (%.1f%%) have perf script's stack; viewer has %d samples", rec.name, same, total, pct, gotTotal)
			if total < 100 {
				t.Errorf("perf script printed %d samples; want at least 100", total)
			}
			if gotTotal != total {
				t.Errorf("viewer has %d samples, perf script %d", gotTotal, total)
			}
			if pct < 99 {
				t.Errorf("%.1f%% of the samples have perf's stack; want at least 99%%", pct)
			}
			logDifferences(t, missed, got)
			if strings.HasPrefix(rec.name, "gopreempt") && !rec.fp {
				checkPreempted(t, a2l, data, bins, names, got)
			}
			if d := os.Getenv("VIEWER_FIDELITY_DUMP"); d != "" { // both sides' stacks, to diff
				for side, m := range map[string]map[string]int{"perf": want, "viewer": got, "missed": missed} {
					var b strings.Builder
					for k, n := range m {
						fmt.Fprintf(&b, "%d %s\n", n, k)
					}
					os.WriteFile(filepath.Join(d, rec.name+"."+side), []byte(b.String()), 0o644)
				}
			}
		})
	}
}

// fidelityData is the recording at path, or, when only path.gz is
// there, path.gz unpacked to a temporary file (a recording perf could
// not both compress and give build IDs).
func fidelityData(t *testing.T, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return path
	}
	in, err := os.Open(path + ".gz")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, zr); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// matchStacks counts perf's samples (want) and how many of them viewer
// has the same stack for (got), stacks keyed leaf first. A viewer stack
// that goes on past the root of perf's, with named frames only, counts
// as the same: perf's unwinder may stop where viewer's goes on (an
// unnamed frame there is more likely invented); each viewer sample stands
// for one of perf's only once. Exact matches are taken first. missed
// counts perf's samples per stack that viewer has no match for.
func matchStacks(want, got map[string]int) (total, same int, missed map[string]int) {
	left := maps.Clone(got)
	missed = map[string]int{}
	for k, n := range want {
		total += n
		m := min(n, left[k])
		same += m
		left[k] -= m
	}
	deeper := slices.Sorted(maps.Keys(got))
	for _, k := range slices.Sorted(maps.Keys(want)) {
		n := want[k] - min(want[k], got[k])
		for _, g := range deeper {
			if n == 0 {
				break
			}
			if ln := left[g]; ln > 0 && (k == "" && !slices.Contains(strings.Split(g, ";"), "?") ||
				strings.HasPrefix(g, k+";") && !slices.Contains(strings.Split(g[len(k)+1:], ";"), "?")) {
				m := min(n, ln)
				same += m
				left[g] -= m
				n -= m
			}
		}
		if n > 0 {
			missed[k] = n
		}
	}
	return total, same, missed
}

// recordedBinaries maps each file perf recorded a build ID for (perf
// buildid-list) to that build ID; a program of testdata/fidelity is named by
// its recorded path too.
func recordedBinaries(t *testing.T, perf, data, dir string) map[string]string {
	t.Helper()
	out, err := exec.Command(perf, "buildid-list", "-i", data).Output()
	if err != nil {
		t.Fatalf("perf buildid-list -i %s: %v", data, err)
	}
	bins := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// A binary whose build ID the kernel did not find (--buildid-mmap
		// on a Go program) is listed with blanks for its ID.
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		id, file := "", fs[len(fs)-1]
		if len(fs) == 2 {
			id = fs[0]
		}
		bins[file] = id
		if !strings.HasPrefix(file, "[") && len(elfFiles(file, id, dir)) == 0 {
			// Neither perf nor viewer can name its frames: the comparison
			// below then says little about them.
			t.Logf("warning: %s (build ID %s) is not on this machine, nor its debug file: install the Debian version the recording was made with, or re-record with testdata/fidelity/record.sh", file, id)
		}
	}
	return bins
}

// runningKernelBuildID is this machine's kernel build ID.
func runningKernelBuildID() string {
	b, err := os.ReadFile("/sys/kernel/notes")
	if err != nil {
		return ""
	}
	return elfsym.ParseBuildIDNotes(b)
}

// cacheVDSO puts the vDSO image with build ID id into perf's build-ID
// cache under home, where perf record put it on the recording machine:
// perf script then names [vdso] frames (__vdso_clock_gettime), and viewer,
// which reads that cache too, does. The image is a checked-in one of dir
// (*.vdso, record.sh's copy of the recording kernel's) or this process's,
// the running kernel's; it reports whether one had the build ID. Without
// one, neither names [vdso] frames.
func cacheVDSO(t *testing.T, home, id, dir string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.vdso"))
	var img []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if vdsoBuildID(t, b) == id {
			img = b
			break
		}
	}
	if img == nil {
		img = runningVDSO(t)
		if img == nil {
			t.Logf("this process has no [vdso] mapping: perf names no [vdso] frame")
			return false
		}
		if got := vdsoBuildID(t, img); got != id {
			t.Logf("the recording's vDSO (build ID %s) is not in %s nor this kernel's (%s): perf and viewer name no [vdso] frame", id, dir, got)
			return false
		}
	}
	cdir := filepath.Join(home, ".debug", "[vdso]", id)
	link := filepath.Join(home, ".debug", ".build-id", id[:2], id[2:])
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cdir, "vdso"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "..", "[vdso]", id), link); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	return true
}

func vdsoBuildID(t *testing.T, img []byte) string {
	t.Helper()
	ef, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		t.Fatalf("a vDSO image: %v", err)
	}
	return elfsym.BuildIDNote(ef)
}

// runningVDSO is this process's vDSO image, the running kernel's, or nil.
func runningVDSO(t *testing.T) []byte {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[5] != "[vdso]" {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, _ := strconv.ParseUint(lo, 16, 64)
		end, _ := strconv.ParseUint(hi, 16, 64)
		mem, err := os.Open("/proc/self/mem")
		if err != nil {
			t.Fatal(err)
		}
		defer mem.Close()
		img := make([]byte, end-start)
		if _, err := mem.ReadAt(img, int64(start)); err != nil {
			t.Fatalf("reading this process's vDSO: %v", err)
		}
		return img
	}
	return nil
}

// cacheDebugFile puts a separate debug file into perf's build-ID cache
// under home, as the "debug" file of the entry perf buildid-cache -a made
// for its binary: perf script reads its symbols there.
func cacheDebugFile(t *testing.T, home, debug string) {
	t.Helper()
	id, err := debuginfodtest.BuildID(debug)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(debug)
	if err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(home, ".debug", ".build-id", id[:2], id[2:])
	if _, err := os.Stat(filepath.Join(entry, "elf")); err != nil {
		t.Fatalf("perf buildid-cache -a made no entry for %s: %v", debug, err)
	}
	if err := os.WriteFile(filepath.Join(entry, "debug"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// viewerSetup is how viewerStacks runs viewer: with debugDir as
// --debug-dir and debuginfod off, or, with server set, with env (its
// own HOME, DEBUGINFOD_URLS the server, its debuginfod cache in cache)
// and no --debug-dir.
type viewerSetup struct {
	debugDir string
	env      []string
	server   *debuginfodtest.Server
	cache    string
}

// debuginfodSetup starts Debian's debuginfod serving the stripped program
// of a recording and its debug file, and returns how viewer runs against
// it: with a HOME of its own whose perf build-ID cache holds the stripped
// binary alone, as perf record leaves it on the recording machine (viewer
// convert unwinds with it), not the debug file perf script reads from
// the test's cache; so the debug file comes from the server or not at
// all. It returns the program's recorded path too.
func debuginfodSetup(t *testing.T, perf string, bins map[string]string, dir string) (viewerSetup, string) {
	t.Helper()
	var prog string
	for file := range bins {
		if filepath.Base(file) == "sorter-stripped" {
			prog = file
		}
	}
	if prog == "" {
		t.Fatalf("the recording has no sorter-stripped: %v", bins)
	}
	served := t.TempDir()
	for _, f := range []string{"sorter-stripped", "sorter-stripped.debug"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(served, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv := debuginfodtest.Start(t, served)
	home, cache := t.TempDir(), filepath.Join(t.TempDir(), "debuginfod")
	env := append(os.Environ(), "HOME="+home, "DEBUGINFOD_URLS="+srv.URL, "DEBUGINFOD_CACHE_PATH="+cache, "XDG_CACHE_HOME="+home)
	add := exec.Command(perf, "buildid-cache", "-a", filepath.Join(dir, "sorter-stripped"))
	add.Env = env
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("perf buildid-cache -a sorter-stripped: %v\n%s", err, out)
	}
	return viewerSetup{env: env, server: srv, cache: cache}, prog
}

// dsoFrames counts, per binary, the frames perfStacks or viewerStacks saw
// in it by name ("?": unnamed); inlined frames are not counted.
type dsoFrames map[string]map[string]int

// checkNamedFrames compares perf's and viewer's frames in one binary: both
// must name some, and name at least 99% of them alike (as many frames of
// each name; a stack that differs may shift a few); with all, both must
// name every one.
func checkNamedFrames(t *testing.T, dso string, perf, viewer map[string]int, all bool) {
	t.Helper()
	t.Logf("%s frames: perf %v, viewer %v", dso, perf, viewer)
	named := func(m map[string]int) int {
		n := 0
		for k, c := range m {
			if k != "?" {
				n += c
			}
		}
		return n
	}
	if named(perf) == 0 || named(viewer) == 0 {
		t.Errorf("%s: perf names %d frames, viewer %d; want both to name some", dso, named(perf), named(viewer))
	}
	if all && (perf["?"] > 0 || viewer["?"] > 0) {
		t.Errorf("%s: perf leaves %d frames unnamed, viewer %d; want none", dso, perf["?"], viewer["?"])
	}
	total, same := 0, 0
	for k, n := range perf {
		total += n
		same += min(n, viewer[k])
	}
	if same*100 < total*99 {
		t.Errorf("%s: %d of perf's %d frames have a frame of the same name in viewer's; want at least 99%%", dso, same, total)
	}
}

// elfFiles lists the files holding a recorded binary's symbols: the binary
// (the checked-in copy for testdata's programs) and its debug file by
// build ID, when their build IDs are the recorded one.
func elfFiles(file, id, dir string) []string {
	var out []string
	local := filepath.Join(dir, filepath.Base(file))
	if strings.Contains(file, "/testdata/fidelity/") {
		file = local
	}
	files := []string{file}
	if id != "" && local != file {
		// Recorded outside the checkout (sorter-stripped): the checked-in
		// copy, taken only for its build ID.
		files = append(files, local)
	}
	if len(id) > 2 {
		files = append(files, local+".debug", filepath.Join("/usr/lib/debug/.build-id", id[:2], id[2:]+".debug"))
	}
	for _, f := range files {
		if ef, err := elf.Open(f); err == nil {
			if id == "" || elfsym.BuildIDNote(ef) == id {
				out = append(out, f)
			}
			ef.Close()
		}
	}
	return out
}

// aliases makes names equal that are one function of one binary: symbols
// at one address (memcpy/memmove variants, __GI_ and versioned aliases) and
// a function's DWARF name, which is one of its symbols.
type aliases map[string]map[string]string // DSO → name → a name nearer the class's first

func newAliases(bins map[string]string) aliases {
	a := aliases{}
	for file, id := range bins {
		if strings.HasPrefix(file, "[") {
			continue
		}
		parent := map[string]string{}
		a[file] = parent
		for _, f := range elfFiles(file, id, fidelityDir) {
			ef, err := elf.Open(f)
			if err != nil {
				continue
			}
			syms, _ := ef.Symbols()
			dyn, _ := ef.DynamicSymbols()
			at := map[uint64]string{}
			add := func(addr uint64, name string) {
				n := normName(name)
				if _, ok := parent[n]; !ok {
					parent[n] = n
				}
				if first, ok := at[addr]; ok {
					union(parent, first, n)
				} else {
					at[addr] = n
				}
			}
			for _, s := range append(syms, dyn...) {
				if elf.ST_TYPE(s.Info) == elf.STT_FUNC || elf.ST_TYPE(s.Info) == elf.STT_GNU_IFUNC {
					if s.Value != 0 {
						add(s.Value, elfsym.Demangle(s.Name, false))
					}
				}
			}
			if d, err := ef.DWARF(); err == nil {
				r := d.Reader()
				for {
					e, err := r.Next()
					if err != nil || e == nil {
						break
					}
					if e.Tag != dwarf.TagSubprogram {
						continue
					}
					name, _ := e.Val(dwarf.AttrName).(string)
					lo, ok := e.Val(dwarf.AttrLowpc).(uint64)
					if name != "" && ok && lo != 0 {
						if _, sym := at[lo]; sym {
							add(lo, name)
						}
					}
				}
			}
			ef.Close()
		}
	}
	return a
}

func find(parent map[string]string, n string) string {
	for {
		p, ok := parent[n]
		if !ok || p == n {
			return n
		}
		n = p
	}
}

func union(parent map[string]string, x, y string) {
	x, y = find(parent, x), find(parent, y)
	if x == y {
		return
	}
	if y < x {
		x, y = y, x
	}
	parent[y] = x
}

// canon is a frame's name, in binary dso, as the comparison sees it. An
// unknown dso (perf prints none for an inlined frame) is the first binary
// that names it.
func (a aliases) canon(dso, name string) string {
	n := normName(name)
	if t, ok := a[dso]; ok {
		return find(t, n)
	}
	files := make([]string, 0, len(a))
	for f := range a {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		if _, ok := a[f][n]; ok {
			return find(a[f], n)
		}
	}
	return n
}

var (
	cloneSuffix = regexp.MustCompile(`(\.(constprop|isra|part|cold|lto_priv|localalias)(\.\d+)?)+$|\s*\[clone [^]]*\]$`)
	space       = regexp.MustCompile(`\s+`)
)

// normName drops what perf and viewer print differently for one function:
// " (inlined)", a symbol version (@GLIBC_2.2.5), the parameter list,
// GCC's clone suffixes, and spaces. Unresolved frames are "?".
func normName(n string) string {
	n = strings.TrimSuffix(strings.TrimSpace(n), " (inlined)")
	if i := strings.IndexByte(n, '@'); i > 0 {
		n = n[:i]
	}
	for {
		m := cloneSuffix.ReplaceAllString(n, "")
		if m == n {
			break
		}
		n = m
	}
	n = strings.TrimSuffix(n, " const")
	if strings.HasSuffix(n, ")") {
		depth := 0
		for i := len(n) - 1; i >= 0; i-- {
			switch n[i] {
			case ')':
				depth++
			case '(':
				depth--
			}
			if depth == 0 {
				if head := n[:i]; head != "" && !strings.HasSuffix(head, "operator") {
					n = head
				}
				break
			}
		}
	}
	n = space.ReplaceAllString(n, "")
	if n == "" || n == "[unknown]" || n == "??" || strings.HasPrefix(n, "0x") {
		return "?"
	}
	return n
}

func isKernelAddr(a uint64) bool { return a >= 0xffff800000000000 }

// perfFrame is one line of perf script -F ip,sym,dso's call chains.
type perfFrame struct {
	addr    uint64
	sym     string
	dso     string
	inlined bool
}

// perfStacks runs perf script on a recording and counts its stacks (root
// last, names canonical, ";"-joined).
func perfStacks(t *testing.T, perf string, a2l addr2lines, data string, fp bool, bins map[string]string, names aliases, kernelOK bool, frames dsoFrames) map[string]int {
	t.Helper()
	samples := perfScript(t, perf, data)
	if !fp {
		// perf prints the function a frame's address is in, once other
		// functions are inlined there, as "(inlined)" too, without its
		// binary (perf 6.1: "f8011 __libc_open64 (inlined)"); perf script
		// --no-inline prints the same frames, one per address, each with
		// its binary.
		whole := perfScript(t, perf, data, "--no-inline")
		if len(whole) != len(samples) {
			t.Fatalf("perf script prints %d samples, with --no-inline %d", len(samples), len(whole))
		}
		for i, s := range samples {
			w, j := whole[i], 0
			for k := range s {
				for j < len(w) && w[j].addr != s[k].addr {
					j++
				}
				if j == len(w) {
					break
				}
				if s[k].dso == "" {
					s[k].dso = w[j].dso
				}
				if k+1 < len(s) && s[k+1].addr != s[k].addr {
					j++
				}
			}
		}
	}
	if !fp {
		// perf's DWARF unwinder (libunwind) ends a stack whose copy ran
		// out before the outermost frame with a return address of 0, which
		// it prints less one, as 0xffffffffffffffff [unknown]: no frame.
		// viewer ends the stack at its last frame and counts it in the
		// profile's "stacks end early" warning.
		for i, s := range samples {
			if n := len(s); n > 1 && s[n-1].addr == ^uint64(0) {
				samples[i] = s[:n-1]
			}
		}
	}
	for _, s := range samples { // an inlined frame is in the binary of the function it is inlined into
		for i := len(s) - 2; i >= 0; i-- {
			if s[i].inlined && s[i].dso == "" && s[i+1].addr == s[i].addr {
				s[i].dso = s[i+1].dso
			}
		}
	}
	// Frame-pointer chains: perf prints each frame without the functions
	// inlined there; addr2line -i gives them at the address perf's DWARF
	// path looks up. A Go binary's frames get them so in DWARF-unwound
	// stacks too: perf 6.1 finds inlined frames with GNU addr2line, which
	// does not read the Go toolchain's DWARF 5 (see addr2lines).
	goBins := map[string]bool{}
	for file, id := range bins {
		if fs := elfFiles(file, id, fidelityDir); len(fs) > 0 && isGoBinary(fs[0]) {
			goBins[file] = true
		}
	}
	expand := func(f perfFrame) bool {
		return !isKernelAddr(f.addr) && (fp || goBins[f.dso])
	}
	pre := findPreempts(bins)
	inl := inlineChains(t, a2l, samples, bins, goBins, expand, pre)
	stacks := map[string]int{}
	for _, s := range samples {
		var fs []string
		for i, f := range s {
			switch {
			case isKernelAddr(f.addr) && !kernelOK:
				fs = append(fs, "[kernel]")
				continue
			case f.inlined && goBins[f.dso]:
				continue // given by llvm-addr2line below
			case expand(f):
				for _, n := range inl[a2lKey(s, i, pre)] {
					fs = append(fs, names.canon(f.dso, n))
				}
			}
			fs = append(fs, names.canon(f.dso, f.sym))
			if m := frames[f.dso]; m != nil && !f.inlined {
				m[fs[len(fs)-1]]++
			}
		}
		stacks[strings.Join(fs, ";")]++
	}
	return stacks
}

// perfScript runs perf script -F ip,sym,dso (and args) on a recording and
// returns its samples' frames, leaf first.
func perfScript(t *testing.T, perf, data string, args ...string) [][]perfFrame {
	t.Helper()
	cmd := exec.Command(perf, append([]string{"script", "-f", "--max-stack=4096", "-F", "ip,sym,dso", "-i", data}, args...)...)
	cmd.Env = append(os.Environ(), "PAGER=cat")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("perf script -i %s %v: %v", data, args, err)
	}
	// Each sample is an empty header line (no header fields), its frames
	// and a blank line. A sample perf prints no frame for (a thread's
	// first instruction after clone, whose stack copy is empty and whose
	// frame-pointer chain has no entries) is two blank lines more: an empty
	// stack, which any viewer stack of named frames matches (matchStacks).
	var samples [][]perfFrame
	var cur []perfFrame
	blanks := 0
	flush := func() {
		if len(cur) > 0 {
			samples = append(samples, cur)
		}
		cur = nil
	}
	frameLine := regexp.MustCompile(`^\s*([0-9a-f]+) (.*?)(?: \(([^()]*)\))?$`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			blanks++
			continue
		}
		if len(samples) > 0 {
			for ; blanks >= 4; blanks -= 2 {
				samples = append(samples, []perfFrame{})
			}
		}
		blanks = 0
		m := frameLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("perf script line %q", line)
		}
		a, _ := strconv.ParseUint(m[1], 16, 64)
		f := perfFrame{addr: a, sym: m[2], dso: m[3]}
		if strings.HasSuffix(f.sym, " (inlined)") {
			f.inlined = true
		} else if m[3] == "inlined" { // "(inlined)" is no DSO
			f.dso, f.inlined = "", true
		}
		cur = append(cur, f)
	}
	flush()
	return samples
}

// addr2lines are the tools that expand a frame into the functions inlined
// at its address: GNU addr2line -i, as issue 32 defines the comparison,
// and llvm-addr2line -i for Go binaries. GNU addr2line 2.40 (and
// eu-addr2line 0.188) do not read the DWARF 5 that Go 1.2x writes: they
// name the outer function only, in file "go.go:?", where llvm-addr2line
// and Go's own tables (go tool objdump) give the inlined calls, e.g.
// runtime.sysUnused inlined at 0x4310a8 in runtime.(*pageAlloc).scavengeOne.
type addr2lines struct{ gnu, llvm string }

// isGoBinary reports whether the ELF file at path was built by the Go
// toolchain (it has Go's build ID note or build information).
func isGoBinary(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return f.Section(".note.go.buildid") != nil || f.Section(".go.buildinfo") != nil
}

// fileVaddr turns an offset into the ELF file at path, as perf script
// prints a user frame's address, into the link-time address addr2line
// looks up: they differ for a non-PIE executable (a Go program's text is
// linked at 0x400000 on, at file offset 0).
func fileVaddr(path string) func(uint64) uint64 {
	f, err := elf.Open(path)
	if err != nil {
		return func(a uint64) uint64 { return a }
	}
	defer f.Close()
	var loads []elf.ProgHeader
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			loads = append(loads, p.ProgHeader)
		}
	}
	return func(a uint64) uint64 {
		for _, p := range loads {
			if a >= p.Off && a < p.Off+p.Filesz {
				return a - p.Off + p.Vaddr
			}
		}
		return a
	}
}

// a2lKey names frame i of a perf stack for inlineChains: DSO and the
// address to look up, the call instruction of a caller; the instruction
// itself for the frame a signal preempted under Go's asyncPreempt.
func a2lKey(s []perfFrame, i int, pre preempts) string {
	a := s[i].addr
	if i > 0 && isKernelAddr(s[i].addr) == isKernelAddr(s[i-1].addr) && !pre.interrupted(s, i) {
		a--
	}
	return fmt.Sprintf("%s:%x", s[i].dso, a)
}

// preempts are the file offsets [lo, hi) of runtime.asyncPreempt in the
// Go binaries a recording maps, by perf's name of the binary.
type preempts map[string][2]uint64

func findPreempts(bins map[string]string) preempts {
	p := preempts{}
	for file, id := range bins {
		fs := elfFiles(file, id, fidelityDir)
		if len(fs) == 0 || !isGoBinary(fs[0]) {
			continue
		}
		if lo, hi := symbolRange(fs[0], "runtime.asyncPreempt.abi0"); hi > lo {
			p[file] = [2]uint64{fileOffset(fs[0], lo), fileOffset(fs[0], hi)}
		}
	}
	return p
}

// interrupted reports whether frame i of perf's frame-pointer stack s is
// the instruction a signal preempted: the frame runtime.asyncPreempt
// returns to (the handler pushed that pc as if a call had), when
// asyncPreempt's frame is linked in (a return address into it, or a
// sampled pc past its PUSHQ BP; MOVQ SP, BP and before its RET; else the
// chain's next frame is the interrupted function's caller). Go's traceback
// names it at its pc (runtime/traceback.go: no call); so does perf 6.1,
// which prints no inlined frames for a frame-pointer chain, but this test
// expands every other caller at its address−1, the instruction before.
func (p preempts) interrupted(s []perfFrame, i int) bool {
	if i == 0 || isKernelAddr(s[i].addr) || isKernelAddr(s[i-1].addr) {
		return false
	}
	r, ok := p[s[i-1].dso]
	if a := s[i-1].addr; !ok || a < r[0] || a >= r[1] {
		return false
	}
	sampled := i == 1 || isKernelAddr(s[i-2].addr)
	return !sampled || s[i-1].addr >= r[0]+4 && s[i-1].addr < r[1]-1
}

// symbolRange is the address range of the function symbol name in the ELF
// file at path (zero when it has none).
func symbolRange(path, name string) (lo, hi uint64) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name == name {
			return s.Value, s.Value + s.Size
		}
	}
	return 0, 0
}

// fileOffset turns a link-time address of the ELF file at path into its
// file offset, as perf script prints user frames (fileVaddr's inverse).
func fileOffset(path string, v uint64) uint64 {
	f, err := elf.Open(path)
	if err != nil {
		return v
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && v >= p.Vaddr && v < p.Vaddr+p.Filesz {
			return v - p.Vaddr + p.Off
		}
	}
	return v
}

// inlineChains returns, per a2lKey of the frames expand picks, the
// functions addr2line -i finds inlined at that address (innermost first,
// without the function they are inlined into).
func inlineChains(t *testing.T, a2l addr2lines, samples [][]perfFrame, bins map[string]string, goBins map[string]bool, expand func(perfFrame) bool, pre preempts) map[string][]string {
	t.Helper()
	byDSO := map[string]map[string]bool{}
	for _, s := range samples {
		for i, f := range s {
			if !expand(f) || f.dso == "" || strings.HasPrefix(f.dso, "[") {
				continue
			}
			k := a2lKey(s, i, pre)
			if byDSO[f.dso] == nil {
				byDSO[f.dso] = map[string]bool{}
			}
			byDSO[f.dso][k[strings.LastIndexByte(k, ':')+1:]] = true
		}
	}
	out := map[string][]string{}
	for dso, addrs := range byDSO {
		files := elfFiles(dso, bins[dso], fidelityDir)
		if len(files) == 0 {
			t.Logf("%s: no file with its recorded build ID here; its frames get no inlined functions", dso)
			continue
		}
		file := files[len(files)-1] // the debug file when there is one
		vaddr := fileVaddr(files[0])
		list := make([]string, 0, len(addrs))
		offset := map[uint64]string{} // link-time address → perf's
		for a := range addrs {
			off, _ := strconv.ParseUint(a, 16, 64)
			v := vaddr(off)
			offset[v] = a
			list = append(list, fmt.Sprintf("%#x", v))
		}
		sort.Strings(list)
		tool := a2l.gnu
		if goBins[dso] {
			tool = a2l.llvm
		}
		res, err := exec.Command(tool, append([]string{"-i", "-f", "-a", "-e", file}, list...)...).Output()
		if err != nil {
			t.Fatalf("%s -e %s: %v", tool, file, err)
		}
		var cur string
		var fns []string
		done := func() {
			if cur != "" && len(fns) > 1 {
				out[dso+":"+cur] = fns[:len(fns)-1]
			}
		}
		lines := strings.Split(strings.TrimSpace(string(res)), "\n")
		for i := 0; i < len(lines); i++ {
			if strings.HasPrefix(lines[i], "0x") {
				done()
				a, _ := strconv.ParseUint(lines[i][2:], 16, 64)
				cur, fns = offset[a], nil
				continue
			}
			if lines[i] == "" {
				continue
			}
			fns = append(fns, elfsym.Demangle(lines[i], false))
			i++ // its file:line
		}
		done()
	}
	return out
}

// viewerStacks converts and symbolizes a recording with viewer's CLI, as a
// user on the recording machine would, and counts its stacks as
// perfStacks does.
func viewerStacks(t *testing.T, viewer, data string, vs viewerSetup, names aliases, kernelOK bool, frames dsoFrames) map[string]int {
	t.Helper()
	tmp := t.TempDir()
	conv, sym := filepath.Join(tmp, "c.pb.gz"), filepath.Join(tmp, "s.pb.gz")
	symbolize := []string{"symbolize", conv, "-o", sym}
	if vs.server == nil {
		symbolize = append(symbolize, "--debug-dir", vs.debugDir, "--no-debuginfod")
	}
	for _, args := range [][]string{{"convert", data, "-o", conv}, symbolize} {
		cmd := exec.Command(viewer, args...)
		cmd.Env = vs.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("viewer %v: %v\n%s", args, err, out)
		}
	}
	f, err := os.Open(sym)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	stacks := map[string]int{}
	for _, s := range p.Sample {
		var fs []string
		for _, l := range s.Location {
			if isKernelAddr(l.Address) && !kernelOK {
				fs = append(fs, "[kernel]")
				continue
			}
			if len(l.Line) == 0 {
				fs = append(fs, "?")
			}
			dso := ""
			if l.Mapping != nil {
				dso = l.Mapping.File
			}
			for _, ln := range l.Line {
				fs = append(fs, names.canon(dso, ln.Function.Name))
			}
			if m := frames[dso]; m != nil {
				m[fs[len(fs)-1]] += int(s.Value[0])
			}
		}
		stacks[strings.Join(fs, ";")] += int(s.Value[0])
	}
	return stacks
}

// logDifferences logs perf's stacks viewer has no match for (missed, as
// matchStacks counts them), each beside viewer's stack that shares the
// most frames from the root, and where they part.
func logDifferences(t *testing.T, missed, got map[string]int) {
	type miss struct {
		k string
		n int
	}
	var ms []miss
	for k, n := range missed {
		ms = append(ms, miss{k, n})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].n > ms[j].n || ms[i].n == ms[j].n && ms[i].k < ms[j].k })
	for i, m := range ms {
		if i == 10 {
			t.Logf("... and %d more stacks", len(ms)-i)
			break
		}
		w := reverse(strings.Split(m.k, ";"))
		best, bestN := "", -1
		for k := range got {
			g := reverse(strings.Split(k, ";"))
			n := 0
			for n < len(g) && n < len(w) && g[n] == w[n] {
				n++
			}
			if n > bestN || n == bestN && k < best {
				best, bestN = k, n
			}
		}
		g := reverse(strings.Split(best, ";"))
		why := "viewer's stack is shorter"
		switch {
		case bestN < len(w) && bestN < len(g):
			why = fmt.Sprintf("frame %d from the root: perf %q, viewer %q", bestN, w[bestN], g[bestN])
		case bestN < len(g):
			why = fmt.Sprintf("viewer has more frames, from %q", g[bestN])
		}
		from := max(0, bestN-2)
		t.Logf("%d× differ at %s\n  perf:   … %s\n  viewer: … %s", m.n, why, strings.Join(w[from:], " > "), strings.Join(g[min(from, len(g)):], " > "))
	}
}

func reverse(s []string) []string {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
	return s
}

// checkPreempted holds viewer's stacks of gopreempt's samples in Go's
// runtime.asyncPreempt to Go's own traceback: the frame asyncPreempt
// returns to is the interrupted function at the very instruction the
// signal stopped (the handler pushed that pc as if a call had, and
// runtime/traceback.go looks it up as no call site), named and expanded
// with llvm-addr2line -i at that pc, then its callers, each at its return
// address−1. perf 6.1 unwinds no Go DWARF stack past the sampled
// function, so for the DWARF recording the truth is read from each
// sample's registers and stack copy through Go's frame pointers, as
// asyncPreempt lays out its frame. Every such sample must have viewer's
// stack from the asyncPreempt frame on. (Frame-pointer recordings are not
// held to it: viewer names that frame at address−1 there, see
// fidelityRecordings.)
func checkPreempted(t *testing.T, a2l addr2lines, data string, bins map[string]string, names aliases, got map[string]int) {
	t.Helper()
	var exe, dso string
	for file, id := range bins {
		if fs := elfFiles(file, id, fidelityDir); len(fs) > 0 && filepath.Base(fs[0]) == "gopreempt" {
			exe, dso = fs[0], file
		}
	}
	if exe == "" {
		t.Fatal("no gopreempt binary with the recorded build ID")
	}
	ap := names.canon(dso, "runtime.asyncPreempt.abi0")
	preempted, skipped := preemptedDWARF(t, a2l, data, exe, dso, names)
	t.Logf("%d samples in runtime.asyncPreempt stopped its caller where the frame pointer is not yet or no longer set up: not checked", skipped)
	suffix := map[string]int{} // viewer's stacks from the asyncPreempt frame on
	for k, n := range got {
		fs := strings.Split(k, ";")
		if i := slices.Index(fs, ap); i >= 0 {
			suffix[strings.Join(fs[i:], ";")] += n
		}
	}
	total, same, missed := matchStacks(preempted, suffix)
	t.Logf("%d of %d samples preempted in runtime.asyncPreempt have Go's stack from there on", same, total)
	if total < 10 {
		t.Errorf("%d samples with an interrupted frame under runtime.asyncPreempt; want at least 10", total)
	}
	if same != total {
		t.Errorf("%d samples under runtime.asyncPreempt have another stack than Go's", total-same)
		logDifferences(t, missed, suffix)
	}
}

// preemptedDWARF counts, for a --call-graph=dwarf recording of gopreempt
// (exe; dso as perf names it), the stacks from runtime.asyncPreempt on of
// the samples whose user pc is in it, as Go's traceback gives them: the
// interrupted pc is at the stack pointer before asyncPreempt's PUSHQ BP
// and at its RET, one word up before its MOVQ SP, BP, and above its frame
// pointer after; the callers follow the frame-pointer chain. Samples whose
// interrupted function has no frame pointer set up at that pc (no
// PUSHQ BP; MOVQ SP, BP before it, or at a RET after POPQ BP) are skipped
// and counted: their caller is not on the chain.
func preemptedDWARF(t *testing.T, a2l addr2lines, data, exe, dso string, names aliases) (map[string]int, int) {
	t.Helper()
	raw, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	f, err := perfdata.ReadRecords(raw, perfdata.Options{UserStacks: true})
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	code, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	byte1 := func(a uint64) byte {
		if a < text.Addr || a-text.Addr >= uint64(len(code)) {
			return 0
		}
		return code[a-text.Addr]
	}
	syms, _ := ef.Symbols()
	var funcs []elf.Symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
			funcs = append(funcs, s)
		}
	}
	fnAt := func(pc uint64) (elf.Symbol, bool) {
		for _, s := range funcs {
			if pc >= s.Value && pc < s.Value+s.Size {
				return s, true
			}
		}
		return elf.Symbol{}, false
	}
	// framed: pc is past the function's PUSHQ BP; MOVQ SP, BP (55 48 89 e5,
	// after its stack check) and not at the RET after its POPQ BP.
	framed := func(pc uint64) bool {
		fn, ok := fnAt(pc)
		if !ok {
			return false
		}
		for i := fn.Value; i < fn.Value+24 && i+4 <= fn.Value+fn.Size; i++ {
			if byte1(i) == 0x55 && byte1(i+1) == 0x48 && byte1(i+2) == 0x89 && byte1(i+3) == 0xe5 {
				return pc >= i+4 && !(byte1(pc) == 0xc3 && byte1(pc-1) == 0x5d)
			}
		}
		return false
	}
	lo, hi := symbolRange(exe, "runtime.asyncPreempt.abi0")
	type stack struct{ pcs []uint64 } // the interrupted pc, then return addresses
	var stacks []stack
	skipped := 0
	for _, r := range f.Records {
		s, ok := r.(*perfdata.Sample)
		if !ok || !s.HasRegsUser || len(s.RegsUser) == 0 {
			continue
		}
		regs := map[int]uint64{}
		i := 0
		for bit := 0; bit < 64 && i < len(s.RegsUser); bit++ {
			if f.Attrs[s.Attr].SampleRegsUser&(1<<bit) != 0 {
				regs[bit] = s.RegsUser[i]
				i++
			}
		}
		ip, sp, bp := regs[8], regs[7], regs[6] // perf_regs.h: IP, SP, BP
		if ip < lo || ip >= hi {
			continue
		}
		read := func(a uint64) (uint64, bool) {
			if a < sp || a-sp+8 > uint64(len(s.Stack)) {
				return 0, false
			}
			return binary.LittleEndian.Uint64(s.Stack[a-sp:]), true
		}
		var pc, fbp uint64
		switch {
		case ip == lo || ip == hi-1: // before PUSHQ BP, at RET
			pc, ok = read(sp)
			fbp = bp
		case ip < lo+4: // between PUSHQ BP and MOVQ SP, BP
			pc, ok = read(sp + 8)
			fbp = bp
		default:
			pc, ok = read(bp + 8)
			if ok {
				fbp, ok = read(bp)
			}
		}
		if !ok {
			t.Fatalf("sample at %#x: the stack copy does not hold asyncPreempt's frame", ip)
		}
		if !framed(pc) {
			skipped++
			continue
		}
		st := stack{pcs: []uint64{pc}}
		for len(st.pcs) < 64 {
			ret, ok := read(fbp + 8)
			if !ok || ret == 0 {
				break
			}
			st.pcs = append(st.pcs, ret)
			if fbp, ok = read(fbp); !ok {
				break
			}
		}
		stacks = append(stacks, st)
	}
	// Name them: the interrupted pc itself, callers at the call.
	look := map[uint64]bool{}
	for _, st := range stacks {
		look[st.pcs[0]] = true
		for _, r := range st.pcs[1:] {
			look[r-1] = true
		}
	}
	at := a2lNames(t, a2l.llvm, exe, look)
	out := map[string]int{}
	ap := names.canon(dso, "runtime.asyncPreempt.abi0")
	for _, st := range stacks {
		fs := []string{ap}
		for k, pc := range st.pcs {
			if k > 0 {
				pc--
			}
			for _, n := range at[pc] {
				fs = append(fs, names.canon(dso, n))
			}
		}
		out[strings.Join(fs, ";")]++
	}
	return out, skipped
}

// a2lNames runs addr2line tool -i on the link-time addresses of the ELF
// file at path and returns each one's functions, innermost first.
func a2lNames(t *testing.T, tool, path string, addrs map[uint64]bool) map[uint64][]string {
	t.Helper()
	list := make([]string, 0, len(addrs))
	for a := range addrs {
		list = append(list, fmt.Sprintf("%#x", a))
	}
	sort.Strings(list)
	res, err := exec.Command(tool, append([]string{"-i", "-f", "-a", "-e", path}, list...)...).Output()
	if err != nil {
		t.Fatalf("%s -e %s: %v", tool, path, err)
	}
	out := map[uint64][]string{}
	var cur uint64
	lines := strings.Split(strings.TrimSpace(string(res)), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "0x") {
			cur, _ = strconv.ParseUint(lines[i][2:], 16, 64)
			continue
		}
		out[cur] = append(out[cur], elfsym.Demangle(lines[i], false))
		i++ // its file:line
	}
	return out
}

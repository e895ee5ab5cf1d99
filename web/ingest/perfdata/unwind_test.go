package perfdata

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"viewer/symbolize"
	"viewer/symbolize/unwind"
)

// perfHome makes a HOME whose perf build-ID cache holds the checked-in
// deep, so that perf script and the unwinder's Finder read exactly the files
// in testdata/perf wherever the repository is checked out (libc and libm
// are the system's, found by path and checked by build ID).
func perfHome(t *testing.T) (home string, finder *unwind.Finder) {
	t.Helper()
	perf := needPerf(t)
	home = t.TempDir()
	deep, err := filepath.Abs(filepath.Join(dir, "deep"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(perf, "buildid-cache", "-a", deep)
	cmd.Env = append(os.Environ(), "HOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("perf buildid-cache -a %s: %v\n%s", deep, err, out)
	}
	return home, unwind.NewFinder(symbolize.New(symbolize.Config{SystemDebugDir: "/usr/lib/debug", BuildIDCacheDir: filepath.Join(home, ".debug"), DebuginfodCacheDir: "-"}))
}

// isKernelDSO tells kernel frames in perf script's output from user ones.
func isKernelDSO(dso string) bool {
	return dso == KernelFile || strings.HasSuffix(dso, ".ko") || strings.HasPrefix(dso, "[kernel")
}

// convertUnwound reads a recording keeping user stacks and converts it with
// the real Finder.
func convertUnwound(t *testing.T, data []byte, finder Binaries, edit func(*File)) ([]string, map[string]int) {
	t.Helper()
	f, err := Read(data, Options{UserStacks: true})
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(f)
	}
	p, err := Convert(f, ConvertOptions{Binaries: finder})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	return p.Comments, profileSamples(t, p, false, false)
}

// TestUnwindAgainstPerfScript unwinds the --call-graph=dwarf recording and
// checks that every sample's call chain, kernel and user frames as DSO +
// file-relative address, is the one perf script prints for the same file
// with the same binaries. perf script prints a caller's return address less
// one; the profile keeps return addresses, as for frame-pointer chains.
func TestUnwindAgainstPerfScript(t *testing.T) {
	home, finder := perfHome(t)
	n := compareWithPerfScript(t, filepath.Join(dir, "dwarf.data"), finder, "HOME="+home)
	if n < 20 {
		t.Errorf("%d samples compared", n)
	}
	// Any other recording of this machine: VIEWER_UNWIND_DATA=/tmp/x.data go test -run AgainstPerfScript
	if extra := os.Getenv("VIEWER_UNWIND_DATA"); extra != "" {
		t.Run(filepath.Base(extra), func(t *testing.T) {
			t.Logf("%d samples compared", compareWithPerfScript(t, extra, unwind.NewFinder(symbolize.New(symbolize.Config{}))))
		})
	}
}

// compareWithPerfScript unwinds file with finder and compares every
// sample's call chain with the one perf script (run with env) prints.
func compareWithPerfScript(t *testing.T, file string, finder Binaries, env ...string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	comments, got := convertUnwound(t, data, finder, nil)
	cm := strings.Join(comments, "\n")
	if strings.Contains(cm, "not unwound") || !strings.Contains(cm, "unwound ") {
		t.Errorf("comments do not report unwinding:\n%s", cm)
	}
	t.Log(cm)
	want := map[string]int{}
	ss := perfScript(t, file, env...)
	userFrames := 0
	for _, s := range ss {
		seenUser := false
		for i, fr := range s.frames {
			j := strings.LastIndexByte(fr, ':')
			if isKernelDSO(fr[:j]) {
				continue
			}
			userFrames++
			if seenUser {
				a, err := strconv.ParseUint(fr[j+1:], 16, 64)
				if err != nil {
					t.Fatal(err)
				}
				s.frames[i] = fr[:j+1] + strconv.FormatUint(a+1, 16)
			}
			seenUser = true
		}
		want[s.key()]++
	}
	if userFrames < 15*len(ss) {
		t.Fatalf("perf script unwound %d user frames in %d samples; want at least 15 per sample (is the checked-in deep found?)", userFrames, len(ss))
	}
	compareSamples(t, want, got)
	return len(ss)
}

// TestUnwindDamagedStack cuts every sample's stack copy short, and then
// replaces it with random bytes: unwinding must stop cleanly, a cut stack
// giving the frames of the whole one up to where the copy ends, and the
// profile must say why stacks end early.
func TestUnwindDamagedStack(t *testing.T) {
	_, finder := perfHome(t)
	data := readFile(t, "dwarf.data")
	_, full := convertUnwound(t, data, finder, nil)
	for _, keep := range []int{0, 7, 64, 300} {
		comments, got := convertUnwound(t, data, finder, func(f *File) {
			for _, r := range f.Records {
				if s, ok := r.(*Sample); ok && len(s.Stack) > keep {
					s.Stack = s.Stack[:keep]
				}
			}
		})
		n := 0
		for k, c := range got {
			n += c
			prefix := false
			for fk := range full {
				if strings.HasPrefix(fk, k) {
					prefix = true
					break
				}
			}
			if !prefix {
				t.Errorf("stack cut to %d bytes: %s is not the start of any stack of the whole copy", keep, k)
			}
		}
		if n < 20 {
			t.Errorf("stack cut to %d bytes: %d samples", keep, n)
		}
		if cm := strings.Join(comments, "\n"); !strings.Contains(cm, unwind.ErrStackEnd.Error()) {
			t.Errorf("stack cut to %d bytes: comments do not say the stack copy ended:\n%s", keep, cm)
		}
	}
	maxCopy := 0 // the longest stack copy: no walk goes past its words
	f, err := Read(data, Options{UserStacks: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Records {
		if s, ok := r.(*Sample); ok {
			maxCopy = max(maxCopy, len(s.Stack))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		comments, got := convertUnwound(t, data, finder, func(f *File) {
			for _, r := range f.Records {
				if s, ok := r.(*Sample); ok {
					b := make([]byte, len(s.Stack))
					for i := range b {
						b[i] = byte(rng.Uint32())
					}
					if rng.IntN(2) == 0 { // plausible return addresses into the same stack
						copy(b, s.Stack[:len(s.Stack)/2])
					}
					s.Stack = b
				}
			}
		})
		for k := range got {
			if d := strings.Count(k, ";"); d > unwindBound(maxCopy)+128 {
				t.Errorf("garbage stack unwound to %d frames", d)
			}
		}
		if len(got) == 0 || len(comments) == 0 {
			t.Error("garbage stacks: empty profile")
		}
	}
}

// TestUnwindByInode converts dwarf.data as if perf had recorded no build
// IDs, only inode numbers (perf record's default for binaries no sample
// fell in): the MMAP2 records of deep, libc and libm are rewritten to name
// the files of this checkout and system by inode. The stacks must be the
// ones unwound with build IDs, and the mappings get the build IDs of the
// files the inodes vouched for; a wrong inode stops at the sampled pc.
func TestUnwindByInode(t *testing.T) {
	_, finder := perfHome(t)
	data := readFile(t, "dwarf.data")
	_, want := convertUnwound(t, data, finder, nil)
	deep, err := filepath.Abs(filepath.Join(dir, "deep"))
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]string{} // path → build ID perf recorded
	rewrite := func(inoDelta uint64) func(*File) {
		return func(f *File) {
			for _, r := range f.Records {
				m, ok := r.(*Mmap)
				if !ok || len(m.BuildID) == 0 || strings.HasPrefix(m.Filename, "[") {
					continue
				}
				name := m.Filename
				if filepath.Base(name) == "deep" {
					name = deep // this checkout's, wherever it is
				}
				recorded[name] = fmt.Sprintf("%x", m.BuildID)
				m.Filename = name
				var st syscall.Stat_t
				if err := syscall.Stat(name, &st); err != nil {
					t.Fatal(err)
				}
				m.BuildID, m.Ino = nil, st.Ino+inoDelta
			}
			f.Features.BuildIDs = nil
		}
	}
	f, err := Read(data, Options{UserStacks: true})
	if err != nil {
		t.Fatal(err)
	}
	rewrite(0)(f)
	p, err := Convert(f, ConvertOptions{Binaries: finder})
	if err != nil {
		t.Fatal(err)
	}
	got := profileSamples(t, p, false, false)
	// deep's path differs (recorded path, this checkout's): compare with it normalised.
	n := 0
	norm := func(m map[string]int) map[string]int {
		out := map[string]int{}
		for k, c := range m {
			out[strings.ReplaceAll(strings.ReplaceAll(k, deep, "DEEP"), "/work/main/testdata/perf/deep", "DEEP")] += c
		}
		return out
	}
	for _, c := range want {
		n += c
	}
	wn, gn := norm(want), norm(got)
	for k, c := range wn {
		if gn[k] != c {
			t.Errorf("with build IDs %d× %s\n  by inode %d×", c, k, gn[k])
			break
		}
	}
	if len(wn) != len(gn) || n < 20 {
		t.Errorf("%d distinct stacks by inode, %d with build IDs (%d samples)", len(gn), len(wn), n)
	}
	for _, m := range p.Mapping {
		if m.File == KernelFile || strings.HasPrefix(m.File, "[") {
			continue
		}
		if w := recorded[m.File]; w == "" || m.BuildID != w {
			t.Errorf("mapping %s: build ID %q, want %q from the file the inode names", m.File, m.BuildID, w)
		}
	}
	comments, _ := convertUnwound(t, data, finder, rewrite(1))
	if cm := strings.Join(comments, "\n"); !strings.Contains(cm, "replaced since the recording") {
		t.Errorf("a wrong inode: comments do not say the file was replaced:\n%s", cm)
	}
}

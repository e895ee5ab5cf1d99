package symbolize

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"viewer/symbolize/buildid"
	"viewer/symbolize/debuginfod"
	"viewer/symbolize/elfsym"
)

// kernelRelease is `uname -r`.
func kernelRelease() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}

// runningKernelBuildID reads the build ID of the running kernel from its notes.
func (s *Symbolizer) runningKernelBuildID() string {
	if s.cfg.KernelNotesPath == "" {
		return ""
	}
	d, err := os.ReadFile(s.cfg.KernelNotesPath)
	if err != nil {
		return ""
	}
	return elfsym.ParseBuildIDNotes(d)
}

// loadKernel finds the kernel of build ID bid: a vmlinux with that build ID
// (unless IgnoreVmlinux), else a kallsyms copy in perf's build-ID cache, else
// this machine's /proc/kallsyms when the running kernel has that build ID.
func (s *Symbolizer) loadKernel(ctx context.Context, bid string, opt Options, ev func(State, string, *debuginfod.Progress)) (*loaded, error) {
	running := s.runningKernelBuildID()
	var why []string
	if !s.cfg.IgnoreVmlinux && bid != "" {
		for _, c := range s.vmlinuxCandidates(bid) {
			if l := s.openVmlinux(c, bid, running); l != nil {
				return l, nil
			}
		}
		why = append(why, "no vmlinux with this build ID")
	}
	// The last resort, once nothing local names the kernel: a vmlinux is
	// hundreds of MiB, so it is fetched only when kallsyms cannot do.
	fetchVmlinux := func() (*loaded, error) {
		if s.cfg.IgnoreVmlinux || bid == "" || s.fetcher(opt) == nil || opt.NoDebuginfod {
			return nil, nil
		}
		ev(StateFetching, "", &debuginfod.Progress{BuildID: bid, Kind: debuginfod.KindDebuginfo, Phase: debuginfod.PhaseConnecting, Total: -1})
		p, err := s.fetcher(opt).Fetch(ctx, bid, debuginfod.KindDebuginfo, func(p debuginfod.Progress) { ev(StateFetching, "", &p) })
		if err == nil {
			if l := s.openVmlinux(candidate{path: p, how: "debuginfod debuginfo"}, bid, running); l != nil {
				return l, nil
			}
			why = append(why, "the vmlinux from debuginfod does not fit")
		} else if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, nil
	}
	if bid != "" && s.cfg.BuildIDCacheDir != "" {
		for _, c := range buildid.Paths(s.cfg.BuildIDCacheDir, bid, buildid.Perf, buildid.Kallsyms) {
			if k, err := loadKallsyms(c.Path); err == nil {
				return &loaded{obj: k, source: c.Path + " (perf build-ID cache)", note: "kernel symbols only, no lines"}, nil
			}
		}
	}
	switch {
	case s.cfg.KallsymsPath == "":
	case bid == "":
		why = append(why, "the kernel mapping has no build ID, so this machine's kallsyms cannot be checked against it")
	case running != bid:
		why = append(why, fmt.Sprintf("this machine runs kernel %s, not %s, so its kallsyms does not apply", orNone(running), bid))
	default:
		k, err := loadKallsyms(s.cfg.KallsymsPath)
		if err == nil {
			return &loaded{obj: k, source: s.cfg.KallsymsPath + " (running kernel, build ID matches)", note: "kernel symbols only, no lines"}, nil
		}
		why = append(why, err.Error())
	}
	if l, err := fetchVmlinux(); l != nil || err != nil {
		return l, err
	}
	return nil, fmt.Errorf("%w for the kernel (%s); add its vmlinux with --debug-dir", errNotFound, strings.Join(why, "; "))
}

// vmlinuxCandidates lists, in order, the local files that may be the
// vmlinux of build ID bid (lowercase hex).
func (s *Symbolizer) vmlinuxCandidates(bid string) []candidate {
	var cands []candidate
	add := func(cs []buildid.Candidate, how string) {
		for _, c := range cs {
			cands = append(cands, candidate{path: c.Path, how: how})
		}
	}
	for _, d := range s.cfg.DebugDirs {
		for _, c := range buildid.Paths(d, bid, debugDirLayouts|buildid.Vmlinux, buildid.Debuginfo|buildid.Kernel) {
			cands = append(cands, candidate{path: c.Path, how: debugDirHow(c.Layout)})
		}
		for _, p := range s.debugDirs.lookup(d, bid) { // debugdir.go
			cands = append(cands, candidate{p, "--debug-dir, by build ID", false})
		}
	}
	if s.cfg.SystemDebugDir != "" {
		add(buildid.Paths(s.cfg.SystemDebugDir, bid, buildid.Tree, buildid.Debuginfo), "system build-ID tree")
	}
	if s.cfg.BuildIDCacheDir != "" {
		add(buildid.Paths(s.cfg.BuildIDCacheDir, bid, buildid.Perf, buildid.Debuginfo|buildid.Executable), "perf build-ID cache")
	}
	for _, p := range buildid.KernelPaths(s.cfg.KernelRelease) {
		cands = append(cands, candidate{path: p, how: "standard vmlinux path"})
	}
	if s.cfg.DebuginfodCacheDir != "" {
		add(buildid.Paths(s.cfg.DebuginfodCacheDir, bid, buildid.Debuginfod, buildid.Debuginfo), "debuginfod cache")
	}
	return cands
}

func orNone(s string) string {
	if s == "" {
		return "with unknown build ID"
	}
	return s
}

// openVmlinux opens a vmlinux candidate if its build ID is bid. When it is
// the running kernel, the KASLR shift is taken from /proc/kallsyms.
func (s *Symbolizer) openVmlinux(c candidate, bid, running string) *loaded {
	if fi, err := os.Stat(c.path); err != nil || overLimit(c.path, fi.Size(), s.cfg.MaxDebugFile) != nil {
		return nil
	}
	f, err := elfsym.Open(c.path)
	if err != nil || f.BuildID() != bid {
		if f != nil {
			f.Close()
		}
		return nil
	}
	f.UseSymbolTableNames(true)
	k := &kernelELF{File: f}
	k.text, k.hasText = f.KernelText()
	if k.hasText && bid == running && s.cfg.KallsymsPath != "" {
		if ks, err := loadKallsyms(s.cfg.KallsymsPath); err == nil {
			if rt, ok := ks.addr("_text"); ok {
				k.shift, _ = elfsym.KASLRShift(k.text, rt)
			}
		}
	}
	return &loaded{obj: k, source: c.path + " (" + c.how + ")", local: c.local()}
}

// kernelELF is a vmlinux: kernel addresses are absolute, less the KASLR
// shift. The shift comes from the mapping when it records where _text was
// (perf does), so a profile of another machine's kernel is placed right;
// otherwise from this machine's kallsyms when it runs the same kernel.
type kernelELF struct {
	*elfsym.File
	text    uint64 // _text in the vmlinux
	hasText bool
	shift   uint64 // the running kernel's, when it is this one
}

// ObjAddr implements the symbolizer's address translation; offset is the
// mapping's, which perf sets to _text's runtime address.
func (k *kernelELF) ObjAddr(addr, _, _, offset uint64) (uint64, error) {
	if k.hasText {
		if shift, ok := elfsym.KASLRShift(k.text, offset); ok {
			return addr - shift, nil
		}
	}
	return addr - k.shift, nil
}

// Lookup names addr as the vmlinux does, its __pfx_ padding as
// unpadded says.
func (k *kernelELF) Lookup(addr uint64, frames []elfsym.Frame) ([]elfsym.Frame, error) {
	frames, err := k.File.Lookup(addr, frames)
	return unpadded(k.File.Lookup, addr, frames), err
}

// unpadded is frames, lookup's naming of a kernel address addr, unless
// addr is the last byte of a function's __pfx_ padding (the NOPs kernels
// since 6.2 put before each function, which no call ends in): that is
// CallSites' address − 1 of a pc an interrupt stopped at the function's
// first instruction, named by that function, as perf names the pc.
func unpadded(lookup func(uint64, []elfsym.Frame) ([]elfsym.Frame, error), addr uint64, frames []elfsym.Frame) []elfsym.Frame {
	if len(frames) != 1 || !strings.HasPrefix(frames[0].Name, "__pfx_") {
		return frames
	}
	if next, err := lookup(addr+1, nil); err == nil && len(next) > 0 && !strings.HasPrefix(next[len(next)-1].Name, "__pfx_") {
		return append(frames[:0], next...)
	}
	return frames
}

// kallsyms is a kernel symbol list (/proc/kallsyms format): names, no lines.
type kallsyms struct {
	syms []ksym // sorted by address
}

type ksym struct {
	addr uint64
	name string
}

func loadKallsyms(path string) (*kallsyms, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	k := &kallsyms{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	zero := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		switch fields[1] {
		case "t", "T", "w", "W":
		default:
			continue
		}
		a, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil {
			continue
		}
		if a == 0 {
			zero++
			continue
		}
		name := fields[2]
		if len(fields) > 3 {
			name += " " + fields[3] // [module]
		}
		k.syms = append(k.syms, ksym{a, name})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(k.syms) == 0 {
		if zero > 0 {
			return nil, errors.New(path + " shows all addresses as 0 (kernel.kptr_restrict); run as root or set kernel.kptr_restrict=0")
		}
		return nil, errors.New(path + " holds no text symbols")
	}
	sort.SliceStable(k.syms, func(i, j int) bool { return k.syms[i].addr < k.syms[j].addr })
	return k, nil
}

func (k *kallsyms) addr(name string) (uint64, bool) {
	for _, s := range k.syms {
		if s.name == name {
			return s.addr, true
		}
	}
	return 0, false
}

func (k *kallsyms) ObjAddr(addr, _, _, _ uint64) (uint64, error) { return addr, nil }

// Lookup names addr by the symbol it is in, its __pfx_ padding as
// unpadded says.
func (k *kallsyms) Lookup(addr uint64, frames []elfsym.Frame) ([]elfsym.Frame, error) {
	frames, err := k.symbol(addr, frames)
	return unpadded(k.symbol, addr, frames), err
}

// symbol names addr by the symbol it is in.
func (k *kallsyms) symbol(addr uint64, frames []elfsym.Frame) ([]elfsym.Frame, error) {
	frames = frames[:0]
	i := sort.Search(len(k.syms), func(i int) bool { return k.syms[i].addr > addr }) - 1
	// Past the last symbol nothing bounds it: leave it unknown.
	if i < 0 || i == len(k.syms)-1 {
		return frames, nil
	}
	// Among aliases at one address, the last listed wins, as in perf.
	return append(frames, elfsym.Frame{Name: k.syms[i].name}), nil
}

func (k *kallsyms) Size() int64  { return int64(len(k.syms)) * 40 }
func (k *kallsyms) Close() error { return nil }

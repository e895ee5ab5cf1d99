package symbolize

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize/datatype"
	"viewer/symbolize/elfsym"
	"viewer/symbolize/localfile"
)

// DataTypeProfile is a profile's samples attributed to the data types and
// members their instructions access (perf report -s type).
type DataTypeProfile = datatype.Profile

// DataTypeStat is one data type's line in a DataTypeProfile, with its
// members and cache lines.
type DataTypeStat = datatype.TypeStat

// DefaultCacheLine is the cache line size members are grouped by when the
// recording does not give the machine's.
const DefaultCacheLine = datatype.DefaultCacheLine

// DataTypeDSO is one binary's line in a DataTypeProfile: where its debug
// info came from, or why there is none.
type DataTypeDSO = datatype.DSO

// DataTypeOptions are one data-type attribution's choices.
type DataTypeOptions struct {
	// Skid counts samples on instructions that touch no memory on the
	// access before them (datatype.Aggregator.Skid).
	Skid bool
	// NoDebuginfod: ask no debuginfod server (the upload's opt-out or the
	// server's --no-debuginfod); NoDebuginfodWhy says which, for the
	// reasons shown next to a binary that was not found.
	NoDebuginfod    bool
	NoDebuginfodWhy string
	// Timeout bounds the search and downloads for one binary
	// (--symbolize-timeout; 0: none).
	Timeout time.Duration
}

// DataTypeLeaf names the data a sample's leaf instruction accesses.
type DataTypeLeaf struct{ Type, Member string }

// DataTypeResult is a profile's data-type attribution.
type DataTypeResult struct {
	Profile *DataTypeProfile
	// Leaves is what each sample's leaf location accesses, for the types
	// flame graph; a leaf not listed is "(unknown)".
	Leaves map[*profile.Location]DataTypeLeaf
	// Transient: a binary's search timed out or was cancelled, so the
	// result should not be kept; the next request looks again.
	Transient bool
}

// noAddressDSO collects samples whose leaf has no address to attribute.
const noAddressDSO = "(no address)"

// leafFunc is the profile's name of the innermost function at loc ("" when
// it has none): the data-type page names the unattributed share's
// functions with it.
func leafFunc(loc *profile.Location) string {
	if len(loc.Line) > 0 && loc.Line[0].Function != nil {
		return loc.Line[0].Function.Name
	}
	return ""
}

// typesBinary is a binary's data-type facet in the store: its code and
// DWARF indexed for attribution, and how its addresses map.
type typesBinary struct {
	bin  *datatype.Binary
	file *elfsym.File // closed: its program headers translate addresses
	// text is _text's address when the file is a vmlinux: kernel samples
	// are moved back by the KASLR shift the mapping records.
	text    uint64
	hasText bool
	source  string
	// exec and debug are the files found: the code, and the DWARF.
	exec, debug string
}

func (tb *typesBinary) Size() int64  { return tb.bin.Size() + tb.file.Size() }
func (tb *typesBinary) Close() error { return nil } // nothing open; memory goes with the last reference

// objAddr turns a sample's runtime address in mapping m into an address in
// the file. The kernel's is absolute, less the KASLR shift when the mapping
// records where _text was (perf's does), exactly as symbolization places it.
func (tb *typesBinary) objAddr(m *profile.Mapping, pc uint64) (uint64, error) {
	if IsKernel(m.File) && tb.file.Type() == elf.ET_EXEC {
		if tb.hasText {
			if shift, ok := elfsym.KASLRShift(tb.text, m.Offset); ok {
				return pc - shift, nil
			}
		}
		return pc, nil
	}
	return tb.file.ObjAddr(pc, m.Start, m.Limit, m.Offset)
}

// typesBinary returns m's data-type facet, held until the lease is
// released: from the store, or located (Locate, NeedTypes) and opened once
// however many ask at the same time.
func (s *Symbolizer) typesBinary(ctx context.Context, m *profile.Mapping, opt DataTypeOptions) (*entry, *typesBinary, error) {
	if opt.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opt.Timeout)
		defer cancel()
	}
	e, p, err := s.store.acquire(ctx, BinaryKey(m), facetTypes, func(ctx context.Context) (part, error) {
		loc, err := s.Locate(ctx, m, Options{NoDebuginfod: opt.NoDebuginfod}, NeedTypes)
		if err != nil {
			return nil, err
		}
		for _, path := range []string{loc.Exec, loc.Debug} {
			if err := overLimit(path, fileSizeOf(path), s.cfg.MaxDebugFile); err != nil {
				return nil, err
			}
		}
		f, err := elfsym.OpenContext(ctx, loc.Exec, trustOf(m, loc.Exec))
		if err != nil {
			return nil, err
		}
		tb := &typesBinary{file: f, source: loc.Source, exec: loc.Exec, debug: loc.Debug}
		if f.Type() == elf.ET_EXEC { // a vmlinux is one
			tb.text, tb.hasText = f.KernelText()
		}
		f.Close() // ObjAddr needs only the program headers read by Open
		if tb.bin, err = datatype.Open(loc.Exec, loc.Debug); err != nil {
			return nil, err
		}
		return tb, nil
	})
	if err != nil {
		switch {
		case errors.Is(err, context.DeadlineExceeded) && opt.Timeout > 0:
			return nil, nil, fmt.Errorf("timed out after %v looking for its debug info (--symbolize-timeout); reload the page to look again: %w", opt.Timeout, err)
		case opt.NoDebuginfodWhy != "":
			return nil, nil, fmt.Errorf("not found: %w (%s)", err, opt.NoDebuginfodWhy)
		}
		return nil, nil, fmt.Errorf("not found: %w", err)
	}
	return e, p.(*typesBinary), nil
}

// trustOf is how a located file is opened: the mapping's own path is named
// by the profile (its last symlink is not followed), the others configured.
func trustOf(m *profile.Mapping, path string) localfile.Trust {
	if path == m.File {
		return localfile.Named
	}
	return localfile.Configured
}

// fileSizeOf is the size of the file at path, 0 when it cannot be read.
func fileSizeOf(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// DataTypes attributes the leaf address of every sample of p with a value
// for sample type si to the data type and member its instruction accesses,
// per binary, with the binaries held in the store (one owner, one budget
// with symbolization). A binary without code or debug info is listed with
// the reason and its samples count as unknown: one bad binary never fails
// the page.
func (s *Symbolizer) DataTypes(ctx context.Context, p *profile.Profile, si int, opt DataTypeOptions) *DataTypeResult {
	type group struct {
		m       *profile.Mapping
		samples []datatype.Sample
		locs    []*profile.Location // the leaf of each sample
	}
	groups := map[*profile.Mapping]*group{}
	var order []*profile.Mapping
	var noAddr []datatype.Sample
	for _, s := range p.Sample {
		if si >= len(s.Value) || s.Value[si] == 0 {
			continue
		}
		w := s.Value[si]
		if len(s.Location) == 0 || s.Location[0].Mapping == nil || s.Location[0].Address == 0 {
			noAddr = append(noAddr, datatype.Sample{Weight: w})
			continue
		}
		loc := s.Location[0]
		g := groups[loc.Mapping]
		if g == nil {
			g = &group{m: loc.Mapping}
			groups[loc.Mapping] = g
			order = append(order, loc.Mapping)
		}
		g.samples = append(g.samples, datatype.Sample{PC: loc.Address, Weight: w, Func: leafFunc(loc)})
		g.locs = append(g.locs, loc)
	}
	agg := datatype.NewAggregator()
	agg.KeepAccesses = true
	agg.Skid = opt.Skid
	res := &DataTypeResult{Leaves: map[*profile.Location]DataTypeLeaf{}}
	unknownLeaf := DataTypeLeaf{Type: "(unknown)"}
	names := dsoNames(order)
	for _, m := range order {
		g := groups[m]
		d := datatype.DSO{Name: names[m], BuildID: m.BuildID}
		e, tb, err := s.typesBinary(ctx, m, opt)
		if err != nil {
			d.Error = err.Error()
			res.Transient = res.Transient || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
			agg.AddDSO(d)
			agg.Add(d.Name, nil, g.samples)
			for _, loc := range g.locs {
				res.Leaves[loc] = unknownLeaf
			}
			continue
		}
		d.DebugSource = tb.source
		agg.AddDSO(d)
		// Runtime addresses → object addresses; one unmappable address
		// only loses that sample.
		samples := make([]datatype.Sample, 0, len(g.samples))
		objAddr := map[*profile.Location]uint64{}
		var bad []datatype.Sample
		var badErr error
		for i, smp := range g.samples {
			a, err := tb.objAddr(m, smp.PC)
			if err != nil {
				bad = append(bad, smp)
				badErr = err
				res.Leaves[g.locs[i]] = unknownLeaf
				continue
			}
			objAddr[g.locs[i]] = a
			samples = append(samples, datatype.Sample{PC: a, Weight: smp.Weight})
		}
		agg.Add(d.Name, tb.bin, samples)
		if len(bad) > 0 {
			agg.AddUnknown(d.Name, "address not in the binary's loadable segments ("+badErr.Error()+")", bad)
		}
		for loc, a := range objAddr {
			if acc, ok := agg.Access(d.Name, a); ok {
				res.Leaves[loc] = DataTypeLeaf{Type: acc.Type, Member: acc.Member}
			}
		}
		s.store.release(e) // measured again: its remembered results grew
	}
	if len(noAddr) > 0 {
		agg.AddDSO(datatype.DSO{Name: noAddressDSO, Error: "samples without an address (a profile symbolized without addresses, e.g. Go's pprof output, cannot be attributed to data types)"})
		agg.Add(noAddressDSO, nil, noAddr)
	}
	prof := agg.Profile()
	res.Profile = &prof
	return res
}

// dsoNames names each mapping by its file's base name, as perf does, or by
// its full path when two mappings share a base name.
func dsoNames(ms []*profile.Mapping) map[*profile.Mapping]string {
	count := map[string]int{}
	base := func(m *profile.Mapping) string {
		if m.File == "" {
			if m.BuildID != "" {
				return "[build ID " + m.BuildID + "]"
			}
			return fmt.Sprintf("[mapping %#x]", m.Start)
		}
		return filepath.Base(m.File)
	}
	for _, m := range ms {
		count[base(m)]++
	}
	out := map[*profile.Mapping]string{}
	for _, m := range ms {
		n := base(m)
		if count[n] > 1 && m.File != "" {
			n = m.File
			if count[n] > 1 || n == "" {
				n = fmt.Sprintf("%s [%s]", m.File, m.BuildID)
			}
		}
		out[m] = n
	}
	return out
}

// DSONames names each mapping as the data-type page does: its file's base
// name, the full path or build ID where two would read alike.
func DSONames(ms []*profile.Mapping) map[*profile.Mapping]string { return dsoNames(ms) }

// CodeHandle is one binary's code and DWARF as the data-type page holds
// them in the store, for views that list a function's instructions (the
// annotate view). Close gives it back to the store.
type CodeHandle struct {
	s  *Symbolizer
	e  *entry
	tb *typesBinary
}

// OpenCode finds and opens m's code and DWARF as DataTypes does (Locate,
// NeedTypes; once however many ask), held until Close.
func (s *Symbolizer) OpenCode(ctx context.Context, m *profile.Mapping, opt DataTypeOptions) (*CodeHandle, error) {
	e, tb, err := s.typesBinary(ctx, m, opt)
	if err != nil {
		return nil, err
	}
	return &CodeHandle{s: s, e: e, tb: tb}, nil
}

// Binary is the decoded code and its DWARF indexed for attribution.
func (h *CodeHandle) Binary() *datatype.Binary { return h.tb.bin }

// ObjAddr turns a runtime address of mapping m into an address in the file.
func (h *CodeHandle) ObjAddr(m *profile.Mapping, pc uint64) (uint64, error) {
	return h.tb.objAddr(m, pc)
}

// Exec and Debug are the files found for the code and the DWARF (the same
// file when the binary is not stripped); Source says how they were found.
func (h *CodeHandle) Exec() string   { return h.tb.exec }
func (h *CodeHandle) Debug() string  { return h.tb.debug }
func (h *CodeHandle) Source() string { return h.tb.source }

// Close gives the binary back to the store.
func (h *CodeHandle) Close() {
	if h.e != nil {
		h.s.store.release(h.e)
		h.e = nil
	}
}

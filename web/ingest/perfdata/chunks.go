package perfdata

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/google/pprof/profile"
	"golang.org/x/sync/errgroup"
)

// A large Scan is converted on several cores: its records, in time order,
// are cut into chunks at time bucket boundaries, so that no pprof sample
// gathers records of two chunks. Each chunk is converted on a goroutine of
// its own by a converter that first replays the mappings, names and forks
// of the records before it (so every sample resolves against the address
// spaces as of its time), and the chunks are then merged in time order
// into the first: mappings by file, build ID and load bias, locations by
// mapping and address, each numbered where a sequential conversion would
// have first met it. The profile is the one Convert makes sequentially.

// convertWorkers is how many chunks a large conversion is cut into at
// most: one per core, up to 4 (a variable for tests).
var convertWorkers = func() int { return min(4, runtime.GOMAXPROCS(0)) }

// minChunkRecords is the fewest records a chunk holds (a variable for tests).
var minChunkRecords = 1 << 17

// exeChange is a change of a process's program mapping (v nil: forgotten)
// after at samples of a chunk.
type exeChange struct {
	at  int
	pid uint32
	v   *vmap
}

// chunkShared is what the converters of one conversion's chunks share.
type chunkShared struct {
	kept   atomic.Int64 // pprof samples made, for MaxSamples
	frames atomic.Int64 // their frames, for MaxFrames
	stop   atomic.Bool  // a chunk failed

	mu       sync.Mutex // serializes Evict and Progress
	done     int64      // records converted, for Progress
	progress func(phase string, done, total int64)
}

// chunks cuts c's records into chunks: chunk k is refs[bounds[k]:bounds[k+1]].
// It returns nil when the records are converted in one: a Read File, a
// recording without sample times, an unwinding or PERF_SAMPLE_READ
// conversion (whose samples depend on all those before), or one too small.
func (c *converter) chunks() []int {
	f := c.f
	if f.keep || c.bucket == 0 || c.opt.Binaries != nil {
		return nil
	}
	for _, a := range f.Attrs {
		if a.SampleType&sRead != 0 {
			return nil
		}
	}
	n := min(convertWorkers(), len(f.refs)/max(minChunkRecords, 1))
	if n < 2 {
		return nil
	}
	refs := f.sortedRefs()
	bounds := []int{0}
	for k := 1; k < n; k++ {
		i := max(k*len(refs)/n, bounds[len(bounds)-1]+1)
		for i < len(refs) && c.bucketOf(refs[i].time) == c.bucketOf(refs[i-1].time) {
			i++
		}
		if i >= len(refs) {
			break
		}
		bounds = append(bounds, i)
	}
	return append(bounds, len(refs))
}

// bucketOf is the time bucket (its start, -1 for none) of a sample taken at t.
func (c *converter) bucketOf(t uint64) int64 {
	if c.bucket == 0 || t < c.t0 {
		return -1
	}
	return int64((t - c.t0) / c.bucket * c.bucket)
}

// convertChunks converts the chunks bounds gives, c the first, and merges
// the others into c.
func (c *converter) convertChunks(bounds []int) error {
	f := c.f
	refs := f.refs
	n := len(bounds) - 1
	sh := &chunkShared{progress: f.progress}
	ws := make([]*converter, n)
	initExe := make([]map[uint32]*vmap, n)
	ws[0] = c
	c.shared = sh
	c.f = chunkFile(f)
	mi := 0 // f.meta before chunk k
	for k := 1; k < n; k++ {
		w := newConverter(chunkFile(f), c.opt)
		w.p.SampleType = c.p.SampleType
		w.shared = sh
		// The state as of the chunk's first record, from every record before it that changes it.
		first := refs[bounds[k]]
		for mi < len(f.meta) && byTime(f.meta[mi], first) < 0 {
			mi++
		}
		for _, ref := range f.meta[:mi] {
			r, err := f.at(ref.pos)
			if err != nil {
				return fmt.Errorf("perf.data: decoding a record again: %w", err)
			}
			w.meta(r)
		}
		initExe[k] = maps.Clone(w.exe)
		w.pids = []uint32{}
		ws[k] = w
	}
	// Each chunk evicts the pages below its next record, but none a
	// record of another chunk is in: above the last of the chunks before,
	// below the first of the chunks after, in the data section and in the
	// decompressed records alike.
	lens := f.spaceLens()
	lo, hi := make([][2]uint64, n), make([][2]uint64, n)
	for k := range n {
		lo[k] = lens
		for _, r := range refs[bounds[k]:bounds[k+1]] {
			s, p := spaceOf(r.pos)
			lo[k][s], hi[k][s] = min(lo[k][s], p), max(hi[k][s], p)
		}
	}
	var g errgroup.Group
	var panicked atomic.Value // a chunk's panic, raised again below for the caller to recover
	for k, w := range ws {
		var floor [2]uint64
		ceil := lens
		for j := range n {
			for s := range 2 {
				if j < k { // records are shorter than 64 KiB
					floor[s] = max(floor[s], hi[j][s]+1<<16)
				} else if j > k {
					ceil[s] = min(ceil[s], lo[j][s])
				}
			}
		}
		g.Go(func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					panicked.CompareAndSwap(nil, fmt.Sprintf("%v (converting chunk %d of %d)\n%s", r, k+1, n, debug.Stack()))
					err = errChunkPanic
				}
				if err != nil {
					sh.stop.Store(true)
				}
			}()
			return w.walk(refs[bounds[k]:bounds[k+1]], len(refs), floor, ceil)
		})
	}
	err := g.Wait()
	if r := panicked.Load(); r != nil {
		panic(r)
	}
	if err != nil {
		return err
	}
	if sh.progress != nil {
		sh.progress(PhaseAggregatingStacks, int64(len(refs)), int64(len(refs)))
	}
	c.f = f
	for k := 1; k < n; k++ {
		c.merge(ws[k], initExe[k])
	}
	return nil
}

var errChunkPanic = errors.New("a conversion chunk panicked")

// chunkFile is a copy of f to decode a chunk's samples with: a Scan
// decodes each sample into the File's one scratch record.
func chunkFile(f *File) *File {
	fc := *f
	fc.scratch = Sample{}
	return &fc
}

// walk converts one chunk's records, of total in all chunks, evicting
// the pages in [floor, ceil) below its next record as each does.
func (c *converter) walk(refs []recRef, total int, floor, ceil [2]uint64) error {
	f, sh := c.f, c.shared
	var low [][2]uint64
	if f.evicts() {
		low = f.lowPositions(refs)
	}
	ev := f.newEvictor(floor, ceil)
	for i, ref := range refs {
		if i%evictRefs == 0 && i > 0 {
			if sh.stop.Load() {
				return nil // another chunk failed: its error is the conversion's
			}
			sh.mu.Lock()
			if sh.progress != nil {
				sh.done += int64(evictRefs)
				sh.progress(PhaseAggregatingStacks, sh.done, int64(total))
			}
			if low != nil {
				ev.upTo(low[i/evictRefs])
			}
			sh.mu.Unlock()
		}
		r, err := f.at(ref.pos)
		if err != nil { // Scan decoded it once already
			return fmt.Errorf("perf.data: decoding a record again: %w", err)
		}
		if err := c.record(r); err != nil {
			return err
		}
	}
	return nil
}

// merge adds chunk w, converted after c's records, to c: its mappings,
// locations and samples, each after c's and in w's order, its counts, and
// its processes' samples, counted in order.
func (c *converter) merge(w *converter, exe map[uint32]*vmap) {
	byID := make([]*mappingAcc, len(w.p.Mapping))
	for _, a := range w.accs {
		byID[a.m.ID-1] = a
	}
	byMapping := make(map[*profile.Mapping]*mappingAcc, len(byID))
	for _, a := range byID {
		byMapping[a.m] = a
		g := c.accs[a.key]
		if g == nil { // a mapping c's records never reached
			a.m.ID = uint64(len(c.p.Mapping) + 1)
			c.p.Mapping = append(c.p.Mapping, a.m)
			c.accs[a.key] = a
			continue
		}
		if a.m.Start < g.m.Start {
			g.m.Start, g.m.Offset = a.m.Start, a.m.Offset
		}
		g.m.Limit = max(g.m.Limit, a.m.Limit)
		a.merged = g
	}
	// trans[i] is c's location for w's location ID i+1; fresh are w's
	// locations c has not, kept (renumbered) after c's.
	trans := make([]*profile.Location, len(w.p.Location))
	var fresh []*profile.Location
	for i, l := range w.p.Location {
		locs := c.unmapped
		if l.Mapping != nil {
			locs = byMapping[l.Mapping].into().locs
		}
		g := locs[l.Address]
		if g == nil {
			locs[l.Address] = l
			g = l
		}
		if g == l {
			fresh = append(fresh, l)
		}
		trans[i] = g
	}
	for _, st := range w.stackLocs { // the samples of one stack share the slice
		for j, l := range st {
			st[j] = trans[l.ID-1]
		}
	}
	for _, l := range fresh {
		l.ID = uint64(len(c.p.Location) + 1)
		if l.Mapping != nil {
			l.Mapping = byMapping[l.Mapping].into().m
		}
		c.p.Location = append(c.p.Location, l)
	}
	for _, s := range w.p.Sample {
		if s.Label != nil {
			name := s.Label["comm"][0]
			if g := c.commLabels[name]; g != nil {
				s.Label = g
			} else {
				c.commLabels[name] = s.Label
			}
		}
		if s.NumUnit != nil {
			s.NumUnit = c.timeUnit
		}
	}
	c.p.Sample = append(c.p.Sample, w.p.Sample...)

	c.nSamples += w.nSamples
	c.noMapping += w.noMapping
	c.kernelCut += w.kernelCut
	c.kernelLimit = max(c.kernelLimit, w.kernelLimit)
	c.longest = max(c.longest, w.longest)
	for file, inos := range w.inodes {
		for _, ino := range inos {
			if !slices.Contains(c.inodes[file], ino) {
				c.inodes[file] = append(c.inodes[file], ino)
			}
		}
	}
	c.lost += w.lost
	c.dwarf += w.dwarf
	if w.first != 0 && (c.first == 0 || w.first < c.first) {
		c.first = w.first
	}
	c.last = max(c.last, w.last)
	j := 0
	for i, pid := range w.pids {
		for ; j < len(w.exes) && w.exes[j].at == i; j++ {
			if e := w.exes[j]; e.v == nil {
				delete(exe, e.pid)
			} else {
				exe[e.pid] = e.v
			}
		}
		c.countPid(pid, exe[pid])
	}
}

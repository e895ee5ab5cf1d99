package perfdata

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/sampling"
)

// KernelFile is the mapping file name of the kernel's text, as perf names it.
const KernelFile = "[kernel.kallsyms]"

// Callchain context markers: PERF_CONTEXT_* values are at or above perfContextMax.
const (
	contextHV          = ^uint64(32) + 1
	contextKernel      = ^uint64(128) + 1
	contextUser        = ^uint64(512) + 1
	contextGuest       = ^uint64(2048) + 1
	contextGuestKernel = ^uint64(2176) + 1
	contextGuestUser   = ^uint64(2560) + 1
	contextMax         = ^uint64(4095) + 1
)

// kernelMode reports whether perf's cpumode (misc & 7) is the host's or a
// guest's kernel.
func kernelMode(cpumode uint16) bool { return cpumode == 1 || cpumode == 4 }

// switchContext gives whether the frames after call chain entry ip are
// the kernel's, for a context marker ip (ip >= contextMax), from kernel,
// whether the frames before it were.
func switchContext(ip uint64, kernel bool) bool {
	switch ip {
	case contextKernel, contextGuestKernel, contextHV:
		return true
	case contextUser, contextGuestUser:
		return false
	}
	return kernel
}

// ConvertOptions bound the profile Convert builds.
type ConvertOptions struct {
	// MaxSamples caps the distinct pprof samples (stack × thread × event); 0 means no cap.
	MaxSamples int
	// MaxFrames caps the frames of those samples' stacks together, each
	// stack counted up to MaxStackDepth frames (0: not cut), as the
	// ingest limits count them; 0 means no cap. Both are checked as each
	// sample is first kept, so a conversion over them stops there.
	MaxFrames, MaxStackDepth int
	// TimeBucket, when positive, is the time label's bucket width in
	// nanoseconds instead of the one Convert picks (sampling.TimeBucket of the
	// recording's span): Estimates says what each width keeps.
	TimeBucket int64
	// Binaries, when set, unwinds the user stacks of --call-graph=dwarf
	// samples with the call frame information of the profiled binaries. The
	// File must have been read with Options.UserStacks.
	Binaries Binaries
	// NoUnwind says why Binaries is nil, for the warning on DWARF-mode
	// samples (for example "this server does not read the binaries profiles name").
	NoUnwind string
}

// Binaries gives the call frame information of a binary perf saw mapped at
// path, with the build ID perf recorded ("" if none) and the inode number of
// its MMAP2 record (0 if none). *unwind.Finder is the real one (cmd gives
// it); this reader names only symbolize's CFI and walks stacks with
// symbolize.UnwindUserStack. The CFI's build ID becomes the mapping's when
// perf recorded none.
type Binaries interface {
	Object(path, buildID string, inode uint64) (*symbolize.CFI, error)
}

// unwindBound is the most frames a DWARF-mode stack copy of n bytes can
// unwind to: each caller's return address is a word of the copy (the
// sampled pc and a leaf's return address may be registers). The depth
// limit cuts stacks later, under a "[truncated N frames]" frame that
// counts what it cut, so unwinding does not stop at it.
func unwindBound(n int) int { return n/8 + 2 }

// vmap is one executable mapping of a process (or of the kernel) at some time.
type vmap struct {
	start, end, pgoff uint64
	file              string
	buildID           string
	ino               uint64
	kernel            bool
	acc               *mappingAcc // the pprof mapping, made when a sample first lands here

	obj    *symbolize.CFI // the binary's CFI, looked up when a stack first unwinds through it
	objErr error
	objSet bool
}

// mappingAcc is one pprof Mapping: every vmap of one file with one build ID
// and one load bias (start - pgoff) shares it, so address - Start + Offset
// is the file offset perf itself computes for each of them.
type mappingAcc struct {
	m    *profile.Mapping
	bias uint64
	locs map[uint64]*profile.Location // by address
	key  string                       // in converter.accs
	// merged is the mapping of the whole conversion that a chunk's
	// mapping was merged into (chunks.go), nil until then.
	merged *mappingAcc
}

// into is the mapping a is, or was merged into.
func (a *mappingAcc) into() *mappingAcc {
	if a.merged != nil {
		return a.merged
	}
	return a
}

// addrSpace is a sorted, non-overlapping set of vmaps. Its generation
// changes with every insert, and only then: two spaces of one generation
// (a fork's copy and its parent) resolve every address alike.
type addrSpace struct {
	maps []*vmap
	gen  uint32
}

// generation is a's generation (0 for none: no mappings).
func (a *addrSpace) generation() uint32 {
	if a == nil {
		return 0
	}
	return a.gen
}

func (a *addrSpace) find(addr uint64) *vmap {
	i := sort.Search(len(a.maps), func(i int) bool { return a.maps[i].end > addr })
	if i < len(a.maps) && a.maps[i].start <= addr {
		return a.maps[i]
	}
	return nil
}

// insert adds m, cutting what it overlaps out of the maps already there.
func (a *addrSpace) insert(m *vmap) {
	out := make([]*vmap, 0, len(a.maps)+2)
	for _, o := range a.maps {
		if o.end <= m.start || o.start >= m.end {
			out = append(out, o)
			continue
		}
		if o.start < m.start {
			l := *o
			l.end = m.start
			out = append(out, &l)
		}
		if o.end > m.end {
			r := *o
			r.pgoff += m.end - o.start
			r.start = m.end
			out = append(out, &r)
		}
	}
	i := sort.Search(len(out), func(i int) bool { return out[i].start >= m.start })
	out = append(out, nil)
	copy(out[i+1:], out[i:])
	out[i] = m
	a.maps = out
}

func (a *addrSpace) clone() *addrSpace {
	return &addrSpace{maps: append([]*vmap(nil), a.maps...), gen: a.gen}
}

// converter holds the state of one conversion.
type converter struct {
	f        *File
	p        *profile.Profile
	opt      ConvertOptions
	buildIDs map[string]string // file name → hex build ID, from the BUILD_ID feature
	kernel   addrSpace
	kmain    *vmap // the kernel text mapping
	procs    map[uint32]*addrSpace
	gens     uint32 // the last generation given to an address space
	comms    map[uint32]comm
	commIDs  map[string]uint32
	accs     map[string]*mappingAcc
	unmapped map[uint64]*profile.Location // locations in no mapping, by address
	// samples are the pprof samples of the time bucket at, and numLabels
	// their numeric labels: Convert visits records in time order, so a
	// bucket's samples are all made before the next bucket's, and the maps
	// stay as small as a bucket.
	samples map[sampleKey]*profile.Sample
	at      int64
	// chains caches the stack of each call chain as recorded, in the
	// address spaces of its generations: most samples repeat a chain, and
	// are then counted without resolving each frame again.
	chains      map[chainKey]chainStack
	seed, check maphash.Seed
	// stacks numbers each distinct stack by its location IDs (4 bytes
	// each, leaf first); key is the buffer its keys are made in.
	stacks map[string]uint32
	key    []byte
	// stackLocs is each stack's locations: the samples of one stack (of
	// other threads, comms or time buckets) share the slice, which saved a
	// third of a busy system-wide recording's live heap.
	stackLocs [][]*profile.Location
	// Samples of one comm, or one thread and time bucket, share their
	// label maps (nothing changes one sample's labels alone).
	commLabels map[string]map[string][]string
	numLabels  map[numKey]map[string][]int64
	timeUnit   map[string][]string
	locBuf     []*profile.Location
	lastRead   map[uint64]uint64 // PERF_SAMPLE_READ: the last value per event ID
	exe        map[uint32]*vmap  // each process's program mapping
	perPid     map[uint32]int    // samples per process

	topPid uint32
	topExe *vmap // the program of the most sampled process
	// A chunk after the first (chunks.go) logs its samples' processes and
	// the changes of their programs for the first to count in order.
	pids                      []uint32
	exes                      []exeChange
	shared                    *chunkShared // nil: the conversion is in one chunk
	nSamples, noMapping, lost uint64
	// kernelCut counts the samples whose chain has kernelLimit frames, the
	// kernel's limit (chainStack.full).
	kernelCut   uint64
	kernelLimit int
	longest     int // the most frames of a chain
	// inodes are the files mapped at each path perf gave one build ID
	// (no build ID in the mmap record): two mean the file was replaced
	// while recording, and the build ID is the last one's.
	inodes        map[string][]uint64
	dwarf         uint64 // samples with a copied user stack (--call-graph=dwarf)
	unwound       uint64 // of those, unwound to their outermost frame
	unwindStops   map[string]uint64
	unwindBinErrs map[string]error // binaries the unwinder could not use
	frameBuf      []uint64
	frames        int // of the kept samples, as MaxFrames counts them
	first, last   uint64
	t0, bucket    uint64 // the time label's origin and bucket width (ns); bucket 0: no label
}

// sampleKey is what keeps pprof samples apart: the event, the thread,
// its comm (by its ID), the time bucket and the stack.
type sampleKey struct {
	attr     int
	pid, tid uint32
	comm     uint32
	at       int64
	stack    uint32
}

// comm is a thread's name and the name's ID (1 on: 0 is no name).
type comm struct {
	name string
	id   uint32
}

// chainKey is a recorded call chain (a hash of its bytes) in the address
// spaces it was resolved in: its process's generation, and the kernel's
// shifted left by one above whether the sample was taken in kernel mode.
type chainKey struct {
	hash       uint64
	user, kern uint32
}

// chainStack is the stack of a chainKey: check is a second, independent
// hash of the chain's bytes (a key whose check differs is not used),
// unmapped its frames in no mapping and user its user-space frames.
type chainStack struct {
	check          uint64
	stack          uint32
	unmapped, user uint32
	full           bool // the chain has the kernel's most frames (kernelCut)
}

// defaultMaxStack is kernel.perf_event_max_stack's default: the frames
// the kernel records in a call chain unless told otherwise.
const defaultMaxStack = 127

type numKey struct {
	pid, tid uint32
	at       int64
}

// Convert builds a pprof profile from a decoded perf.data: one count and one
// period sample type per event, frames as raw addresses in mappings that
// carry the DSO path and build ID, and comm, pid and tid as labels.
// It drops a Scan's estimate (Estimates is nil after): its counters are
// garbage once the conversion is planned.
func Convert(f *File, opt ConvertOptions) (*profile.Profile, error) {
	f.est, f.code = nil, nil
	c := newConverter(f, opt)
	for _, a := range f.Attrs {
		unit := "count"
		if a.Type == 1 && (a.Config == 0 || a.Config == 1) { // cpu-clock, task-clock
			unit = "nanoseconds"
		}
		c.p.SampleType = append(c.p.SampleType,
			&profile.ValueType{Type: a.Name + "_count", Unit: "count"},
			&profile.ValueType{Type: a.Name, Unit: unit})
	}
	c.p.PeriodType = &profile.ValueType{Type: c.p.SampleType[1].Type, Unit: c.p.SampleType[1].Unit}
	if !f.Attrs[0].Freq() {
		c.p.Period = int64(f.Attrs[0].SamplePeriod)
	}
	c.p.DefaultSampleType = c.p.SampleType[1].Type

	var err error
	if bounds := c.chunks(); len(bounds) > 2 {
		err = c.convertChunks(bounds)
	} else {
		err = f.each(c.record)
	}
	if err != nil {
		return nil, err
	}
	if c.nSamples == 0 {
		return nil, fmt.Errorf("perf.data holds no samples (%d records read); was perf record stopped before the program ran?", f.NumRecords())
	}
	c.finish()
	return c.p, nil
}

// newConverter starts the conversion of f: the state before its first record.
func newConverter(f *File, opt ConvertOptions) *converter {
	c := &converter{
		f: f, opt: opt,
		p:        &profile.Profile{},
		buildIDs: map[string]string{},
		procs:    map[uint32]*addrSpace{},
		comms:    map[uint32]comm{},
		commIDs:  map[string]uint32{},
		accs:     map[string]*mappingAcc{},
		unmapped: map[uint64]*profile.Location{},
		samples:  map[sampleKey]*profile.Sample{},
		at:       -1,
		stacks:   map[string]uint32{},
		chains:   map[chainKey]chainStack{},
		seed:     maphash.MakeSeed(),
		check:    maphash.MakeSeed(),

		commLabels: map[string]map[string][]string{},
		numLabels:  map[numKey]map[string][]int64{},
		timeUnit:   map[string][]string{sampling.TimeLabel: {"nanoseconds"}},
		lastRead:   map[uint64]uint64{},
		exe:        map[uint32]*vmap{},
		perPid:     map[uint32]int{},
		inodes:     map[string][]uint64{},
	}
	// perf names the idle task, pid 0, "swapper": no COMM record does.
	c.setComm(0, "swapper")
	for _, b := range f.Features.BuildIDs {
		id := hex.EncodeToString(b.ID)
		c.buildIDs[b.Filename] = id
		if kernelMode(b.CPUMode) { // kernel: modules may be mapped as [name]
			base := path.Base(b.Filename)
			if i := strings.Index(base, ".ko"); i > 0 {
				c.buildIDs["["+strings.ReplaceAll(base[:i], "-", "_")+"]"] = id
			}
		}
	}
	if t0 := f.sampleFirst; t0 != 0 {
		c.t0, c.bucket = t0, sampling.TimeBucket(f.sampleLast-t0)
		if opt.TimeBucket > 0 {
			c.bucket = uint64(opt.TimeBucket)
		}
	}
	return c
}

// record converts one record, in time order.
func (c *converter) record(r Record) error {
	switch r := r.(type) {
	case *Sample:
		return c.sample(r)
	case *Lost:
		c.lost += r.Lost
	default:
		c.meta(r)
	}
	return nil
}

// meta applies a record that changes what later samples resolve to:
// mappings, names, forks, kernel symbols.
func (c *converter) meta(r Record) {
	switch r := r.(type) {
	case *Mmap:
		c.mmap(r)
	case *Comm:
		c.setComm(r.Tid, r.Comm)
		if r.Exec {
			c.setExe(r.Pid, nil)
		}
	case *Fork:
		c.fork(r)
	case *Ksymbol:
		c.ksymbol(r)
	}
}

// setComm names thread tid.
func (c *converter) setComm(tid uint32, name string) {
	id, ok := c.commIDs[name]
	if !ok {
		id = uint32(len(c.commIDs) + 1)
		c.commIDs[name] = id
	}
	c.comms[tid] = comm{name, id}
}

// newGen is a new address space generation.
func (c *converter) newGen() uint32 {
	c.gens++
	return c.gens
}

func (c *converter) space(pid uint32) *addrSpace {
	s := c.procs[pid]
	if s == nil {
		s = &addrSpace{}
		c.procs[pid] = s
	}
	return s
}

func (c *converter) mmap(m *Mmap) {
	if !m.Executable || m.Len == 0 || m.Start+m.Len < m.Start {
		return
	}
	v := &vmap{start: m.Start, end: m.Start + m.Len, pgoff: m.PgOff, file: m.Filename, ino: m.Ino}
	kernel := m.Pid == ^uint32(0) || kernelMode(m.CPUMode)
	if kernel && strings.HasPrefix(v.file, KernelFile) {
		v.file = KernelFile // perf appends the reference symbol: [kernel.kallsyms]_text
	}
	if len(m.BuildID) > 0 {
		v.buildID = hex.EncodeToString(m.BuildID)
	} else {
		v.buildID = c.buildIDs[v.file]
		if v.buildID != "" && m.Ino != 0 && !slices.Contains(c.inodes[v.file], m.Ino) {
			c.inodes[v.file] = append(c.inodes[v.file], m.Ino)
		}
	}
	if kernel {
		v.kernel = true
		c.kernel.insert(v)
		c.kernel.gen = c.newGen()
		if v.file == KernelFile {
			c.kmain = v
		}
		return
	}
	if jitMemory(m) {
		// perf names a process's anonymous executable memory after the
		// map a JIT writes for it, and reads its names from there
		// (symbolize.IsPerfMap).
		v.file = symbolize.PerfMapFile(int(m.Pid))
	}
	s := c.space(m.Pid)
	s.insert(v)
	s.gen = c.newGen()
	if _, ok := c.exe[m.Pid]; !ok {
		c.setExe(m.Pid, v) // the first executable mapping of a process is its program
	}
}

// jitMemory reports whether perf names an executable mapping's memory
// /tmp/perf-PID.map: anonymous memory (//anon, /dev/zero, huge pages),
// the stack, the heap or System V shared memory (perf's map__new).
func jitMemory(m *Mmap) bool {
	const mapHugeTLB = 0x40000
	f := m.Filename
	return f == "//anon" || strings.HasPrefix(f, "/dev/zero") || strings.HasPrefix(f, "/anon_hugepage") ||
		m.V2 && m.Flags&mapHugeTLB != 0 ||
		strings.HasPrefix(f, "[stack") || strings.HasPrefix(f, "/SYSV") || f == "[heap]"
}

func (c *converter) fork(r *Fork) {
	if r.Exit {
		return
	}
	if r.Pid != r.PPid { // a new process starts with a copy of its parent's mappings
		if parent := c.procs[r.PPid]; parent != nil {
			c.procs[r.Pid] = parent.clone()
		}
	}
	if name, ok := c.comms[r.PTid]; ok {
		if _, has := c.comms[r.Tid]; !has || r.Pid != r.PPid {
			c.comms[r.Tid] = name
		}
	}
}

func (c *converter) ksymbol(k *Ksymbol) {
	if k.Unregister || k.Len == 0 {
		return
	}
	c.kernel.insert(&vmap{start: k.Addr, end: k.Addr + uint64(k.Len), file: k.Name, kernel: true})
	c.kernel.gen = c.newGen()
}

// lookup finds the mapping of a frame address in the kernel or the process.
func (c *converter) lookup(pid uint32, addr uint64, kernel bool) *vmap {
	return c.lookupIn(c.procs[pid], addr, kernel)
}

// lookupIn finds the mapping of a frame address in the kernel or in the
// address space of its process (nil: none known).
func (c *converter) lookupIn(space *addrSpace, addr uint64, kernel bool) *vmap {
	if kernel {
		if v := c.kernel.find(addr); v != nil {
			return v
		}
		// perf stretches the kernel map over kernel addresses no module claims.
		if c.kmain != nil && addr >= c.kmain.start {
			return c.kmain
		}
		return nil
	}
	if space != nil {
		return space.find(addr)
	}
	return nil
}

// accKey keeps pprof mappings apart: every vmap of one file, build ID and
// load bias is one.
func accKey(v *vmap) string {
	return v.file + "\x00" + v.buildID + "\x00" + strconv.FormatUint(v.start-v.pgoff, 16)
}

func (c *converter) accFor(v *vmap) *mappingAcc {
	if v.acc != nil {
		return v.acc
	}
	bias := v.start - v.pgoff
	key := accKey(v)
	a := c.accs[key]
	if a == nil {
		a = &mappingAcc{bias: bias, key: key, locs: map[uint64]*profile.Location{}, m: &profile.Mapping{
			ID: uint64(len(c.p.Mapping) + 1), Start: v.start, Limit: v.end, Offset: v.pgoff,
			File: v.file, BuildID: v.buildID,
		}}
		c.p.Mapping = append(c.p.Mapping, a.m)
		c.accs[key] = a
	}
	if v.start < a.m.Start {
		a.m.Start, a.m.Offset = v.start, v.pgoff
	}
	a.m.Limit = max(a.m.Limit, v.end)
	v.acc = a
	return a
}

// location is the location of a frame address in the kernel or in the
// process's address space.
func (c *converter) location(space *addrSpace, addr uint64, kernel bool) *profile.Location {
	locs := c.unmapped
	var acc *mappingAcc
	if v := c.lookupIn(space, addr, kernel); v != nil {
		acc = c.accFor(v)
		if addr >= acc.m.Limit && addr < ^uint64(0) { // the stretched kernel map
			acc.m.Limit = addr + 1
		}
		locs = acc.locs
	} else {
		c.noMapping++
	}
	if l := locs[addr]; l != nil {
		return l
	}
	l := &profile.Location{ID: uint64(len(c.p.Location) + 1), Address: addr}
	if acc != nil {
		l.Mapping = acc.m
	}
	c.p.Location = append(c.p.Location, l)
	locs[addr] = l
	return l
}

func (c *converter) sample(s *Sample) error {
	a := c.f.Attrs[s.Attr]
	period := s.Period
	if a.SampleType&sPeriod == 0 {
		period = a.SamplePeriod
	}
	stack, userFrames := c.stack(s, a)
	comm := c.comms[s.Tid]
	if comm.name == "" {
		// A thread no COMM record names, as perf names it: ":TID".
		c.setComm(s.Tid, ":"+strconv.Itoa(int(int32(s.Tid))))
		comm = c.comms[s.Tid]
	}

	var at int64 = -1 // the sample's time bucket start
	if c.bucket > 0 && s.Time >= c.t0 {
		at = int64((s.Time - c.t0) / c.bucket * c.bucket)
	}
	if at != c.at {
		clear(c.samples)
		clear(c.numLabels)
		c.at = at
	}
	key := sampleKey{attr: s.Attr, pid: s.Pid, tid: s.Tid, comm: comm.id, at: at, stack: stack}
	ps := c.samples[key]
	if ps == nil {
		kept := len(c.p.Sample) + 1
		if c.shared != nil {
			kept = int(c.shared.kept.Add(1))
		}
		if c.opt.MaxSamples > 0 && kept > c.opt.MaxSamples {
			return &LimitError{What: "samples", Max: c.opt.MaxSamples}
		}
		n := len(c.stackLocs[stack])
		if d := c.opt.MaxStackDepth; d > 0 && n > d {
			n = d
		}
		c.frames += n
		frames := c.frames
		if c.shared != nil {
			frames = int(c.shared.frames.Add(int64(n)))
		}
		if c.opt.MaxFrames > 0 && frames > c.opt.MaxFrames {
			return &LimitError{What: "frames", Max: c.opt.MaxFrames}
		}
		ps = &profile.Sample{
			Location: c.stackLocs[stack],
			Value:    make([]int64, len(c.p.SampleType)),
		}
		if comm.name != "" {
			lab := c.commLabels[comm.name]
			if lab == nil {
				lab = map[string][]string{"comm": {comm.name}}
				c.commLabels[comm.name] = lab
			}
			ps.Label = lab
		}
		nk := numKey{s.Pid, s.Tid, at}
		num := c.numLabels[nk]
		if num == nil {
			num = map[string][]int64{"pid": {int64(int32(s.Pid))}, "tid": {int64(int32(s.Tid))}} // pid_t: -1 is none
			if at >= 0 {
				num[sampling.TimeLabel] = []int64{at}
			}
			c.numLabels[nk] = num
		}
		ps.NumLabel = num
		if at >= 0 {
			ps.NumUnit = c.timeUnit
		}
		c.p.Sample = append(c.p.Sample, ps)
		c.samples[key] = ps
	}
	if a.SampleType&sRead != 0 && len(s.Read) > 0 && a.ReadFormat&rfID != 0 {
		// As perf does: each counter read is a sample of its own event whose
		// period is the counter's growth since the last read of the same ID.
		for _, v := range s.Read {
			j, ok := c.f.byID[v.ID]
			if !ok {
				continue
			}
			d := v.Value - c.lastRead[v.ID]
			c.lastRead[v.ID] = v.Value
			if d == 0 {
				continue
			}
			ps.Value[2*j]++
			ps.Value[2*j+1] += int64(d)
			c.nSamples++
		}
	} else {
		ps.Value[2*s.Attr]++
		ps.Value[2*s.Attr+1] += int64(period)
		c.nSamples++
	}
	if (s.HasRegsUser || s.StackUser > 0) && userFrames == 0 { // a copied user stack is the only user call chain
		c.dwarf++
	}
	if c.pids != nil {
		c.pids = append(c.pids, s.Pid)
	} else {
		c.countPid(s.Pid, c.exe[s.Pid])
	}
	if s.Time != 0 {
		if c.first == 0 || s.Time < c.first {
			c.first = s.Time
		}
		c.last = max(c.last, s.Time)
	}
	return nil
}

// stack numbers the stack of sample s of event a, resolving its frames
// unless its call chain was seen before in the same address spaces, and
// counts its user-space frames.
func (c *converter) stack(s *Sample, a *Attr) (stack uint32, userFrames int) {
	kernel := kernelMode(s.CPUMode)
	space := c.procs[s.Pid]
	// A chain without frames takes the sampled IP; one with no user
	// frames may be unwound: both are resolved each time.
	cached := len(s.chain) > 0 && (s.RegsUser == nil || c.opt.Binaries == nil)
	var ck chainKey
	var check uint64
	if cached {
		kern := c.kernel.gen << 1
		if kernel {
			kern |= 1
		}
		ck = chainKey{hash: maphash.Bytes(c.seed, s.chain), user: space.generation(), kern: kern}
		check = maphash.Bytes(c.check, s.chain)
		if e, ok := c.chains[ck]; ok && e.check == check {
			c.noMapping += uint64(e.unmapped)
			if e.full {
				c.kernelCut++
			}
			return e.stack, int(e.user)
		}
	}
	unmapped := c.noMapping
	locs := c.locBuf[:0]
	for _, ip := range s.Callchain {
		if ip >= contextMax {
			kernel = switchContext(ip, kernel)
			continue
		}
		if !kernel {
			userFrames++
		}
		locs = append(locs, c.location(space, ip, kernel))
	}
	// The kernel stops a chain at its limit and says nothing: one that
	// long was most likely cut.
	limit := int(a.SampleMaxStack)
	if limit == 0 {
		limit = defaultMaxStack
	}
	// A chain of exactly the limit's frames; one longer shows that the
	// limit was raised past the default (longest).
	full := len(locs) == limit
	if full {
		c.kernelCut++
		c.kernelLimit = max(c.kernelLimit, limit)
	}
	c.longest = max(c.longest, len(locs))
	if userFrames == 0 && s.RegsUser != nil && c.opt.Binaries != nil {
		frames := c.unwind(s, a)
		for _, pc := range frames {
			locs = append(locs, c.location(space, pc, false))
		}
	}
	if len(locs) == 0 {
		cached = false
		if a.SampleType&sIP != 0 {
			locs = append(locs, c.location(space, s.IP, kernelMode(s.CPUMode)))
		}
	}
	c.locBuf = locs
	k := c.key[:0]
	for _, l := range locs {
		k = binary.LittleEndian.AppendUint32(k, uint32(l.ID))
	}
	c.key = k
	stack, ok := c.stacks[string(k)]
	if !ok {
		stack = uint32(len(c.stacks))
		c.stacks[string(k)] = stack
		c.stackLocs = append(c.stackLocs, slices.Clip(slices.Clone(locs)))
	}
	if cached {
		if _, taken := c.chains[ck]; !taken {
			c.chains[ck] = chainStack{check: check, stack: stack, unmapped: uint32(c.noMapping - unmapped), user: uint32(userFrames), full: full}
		}
	}
	return stack, userFrames
}

// setExe sets (v nil: forgets) the program mapping of process pid.
func (c *converter) setExe(pid uint32, v *vmap) {
	if v == nil {
		delete(c.exe, pid)
	} else {
		c.exe[pid] = v
	}
	if c.pids != nil {
		c.exes = append(c.exes, exeChange{len(c.pids), pid, v})
	}
}

// countPid counts a sample of process pid, whose program is exe, and
// keeps the program of the most sampled process.
func (c *converter) countPid(pid uint32, exe *vmap) {
	c.perPid[pid]++
	if c.perPid[pid] == 1 || c.perPid[pid] > c.perPid[c.topPid] {
		if c.perPid[pid] > c.perPid[c.topPid] || c.topExe == nil {
			c.topPid = pid
			c.topExe = exe
		}
	}
}

// unwind walks the user stack of a --call-graph=dwarf sample: the sampled
// pc, then each caller's return address, as frame-pointer call chains give
// them; ingest.Parse then makes callers call sites (symbolize.CallSites).
func (c *converter) unwind(s *Sample, a *Attr) []uint64 {
	lookup := func(pc uint64) (*symbolize.CFI, uint64, error) {
		v := c.lookup(s.Pid, pc, false)
		if v == nil {
			return nil, 0, errNoMapping
		}
		if !v.objSet {
			v.obj, v.objErr = c.opt.Binaries.Object(v.file, v.buildID, v.ino)
			v.objSet = true
			if v.objErr != nil {
				if c.unwindBinErrs == nil {
					c.unwindBinErrs = map[string]error{}
				}
				c.unwindBinErrs[v.file] = v.objErr
			}
		}
		if v.objErr != nil {
			return nil, 0, errNoBinary
		}
		if v.buildID == "" && v.acc == nil {
			// perf recorded no build ID (it does only for binaries samples
			// fell in) but the Finder checked this file by inode: keep its
			// build ID so the profile can be symbolized elsewhere.
			v.buildID = v.obj.BuildID()
		}
		vaddr, ok := v.obj.Vaddr(pc - v.start + v.pgoff)
		if !ok {
			return nil, 0, symbolize.ErrNoFDE
		}
		return v.obj, vaddr, nil
	}
	frames, err := symbolize.UnwindUserStack(a.SampleRegsUser, s.RegsUser, s.Stack, lookup, unwindBound(len(s.Stack)), c.frameBuf[:0])
	c.frameBuf = frames
	if err == nil {
		c.unwound++
	} else {
		if c.unwindStops == nil {
			c.unwindStops = map[string]uint64{}
		}
		reason := err.Error()
		for _, e := range []error{symbolize.ErrUnknownCFIOp, symbolize.ErrExprCFA} {
			if errors.Is(err, e) {
				reason = e.Error()
			}
		}
		c.unwindStops[reason]++
	}
	if errors.Is(err, errNoMapping) {
		// The last frame is in no mapping of the process, so it is no code:
		// a sampled pc at exec, before the new program's mmap records (as
		// perf script, no user frame; a user-mode sample still gets its pc,
		// sample's fallback), or a word read past the outermost frame, where
		// the CFI does not mark it (Go's rt0_go, clone, and systemstack on
		// the g0 stack read stale stack addresses such as 0x7fff3508aea8).
		frames = frames[:len(frames)-1]
		if len(frames) == 0 {
			return nil
		}
	}
	return frames
}

// LimitError is Convert's error when the samples it keeps pass
// ConvertOptions.MaxSamples ("samples") or MaxFrames ("frames"); it
// wraps ErrLimit.
type LimitError struct {
	What string
	Max  int
}

func (e *LimitError) Error() string {
	if e.What == "frames" {
		return fmt.Sprintf("perf.data's distinct stacks per thread hold more than %d frames in all; record fewer threads or a shorter run", e.Max)
	}
	return fmt.Sprintf("perf.data has more than %d distinct stacks per thread; record fewer threads or a shorter run", e.Max)
}

func (e *LimitError) Unwrap() error { return ErrLimit }

var (
	errNoMapping = errors.New("an address fell in no recorded mapping")
	errNoBinary  = errors.New("a binary was not found")
)

// finish puts the main program's mapping first (where pprof looks for it)
// and sets the profile's times and comments. The program's pprof mapping
// is found by its key, not its vmap's: a chunk's copy of the vmap
// (chunks.go) knows only its own chunk's samples.
func (c *converter) finish() {
	var top *mappingAcc
	if v := c.topExe; v != nil {
		top = c.accs[accKey(v)]
	}
	if top != nil && top.m.ID != 1 {
		ms := c.p.Mapping
		m := top.m
		i := int(m.ID - 1)
		copy(ms[1:i+1], ms[:i])
		ms[0] = m
		for j, m := range ms {
			m.ID = uint64(j + 1)
		}
	}
	ft := c.f.Features
	first, last := c.first, c.last
	if first == 0 && ft.FirstSample != 0 && ft.LastSample >= ft.FirstSample {
		first, last = ft.FirstSample, ft.LastSample
	}
	c.p.DurationNanos = int64(last - first)
	if cd := ft.ClockData; cd != nil && first != 0 {
		c.p.TimeNanos = int64(cd.WallClockNanos + first - cd.ClockIDNanos)
	}
	var cm []string
	add := func(format string, args ...any) { cm = append(cm, fmt.Sprintf(format, args...)) }
	if ft.Hostname != "" {
		add("hostname: %s", ft.Hostname)
	}
	if ft.OSRelease != "" {
		add("os release: %s", ft.OSRelease)
	}
	if ft.Arch != "" {
		add("arch: %s", ft.Arch)
	}
	if ft.CPUDesc != "" {
		add("cpu: %s", ft.CPUDesc)
	}
	if ft.NrCPUsOnline != 0 {
		add("cpus online: %d of %d", ft.NrCPUsOnline, ft.NrCPUsAvail)
	}
	if ft.Version != "" {
		add("perf version: %s", ft.Version)
	}
	if ft.CacheLineSize != 0 {
		add("%s%d", sampling.CacheLineComment, ft.CacheLineSize)
	}
	if len(ft.Cmdline) > 0 {
		add("cmdline: %s", strings.Join(ft.Cmdline, " "))
	}
	add("perf.data: %d samples", c.nSamples)
	if c.lost > 0 {
		add("warning: the kernel dropped %d samples (LOST records); the profile undercounts", c.lost)
	}
	switch {
	case c.dwarf > 0 && c.opt.Binaries == nil:
		why := c.opt.NoUnwind
		if why == "" {
			why = "unwinding needs the profiled binaries, which only the machine that recorded it has"
		}
		add("warning: %d samples were recorded with --call-graph=dwarf; their user-space stacks were not unwound here (%s), so they show the sampled instruction and kernel frames only: run `viewer convert perf.data -o profile.pb.gz` (or `viewer upload perf.data`) on the machine that recorded it, or record with --call-graph=fp", c.dwarf, why)
	case c.dwarf > 0:
		add("perf.data: unwound %d of %d --call-graph=dwarf user stacks to their outermost frame", c.unwound, c.dwarf)
		names := make([]string, 0, len(c.unwindBinErrs))
		for n := range c.unwindBinErrs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			add("warning: cannot unwind through %s: %v; stacks end there (run `viewer convert` on the machine that recorded the profile, with the binaries it ran)", n, c.unwindBinErrs[n])
		}
		reasons := make([]string, 0, len(c.unwindStops))
		for r, k := range c.unwindStops {
			reasons = append(reasons, fmt.Sprintf("%s ×%d", r, k))
		}
		sort.Strings(reasons)
		if len(reasons) > 0 {
			add("warning: %d --call-graph=dwarf stacks end early: %s", c.dwarf-c.unwound, strings.Join(reasons, "; "))
		}
	}
	if c.noMapping > 0 {
		add("warning: %d frame addresses fall in no recorded mapping", c.noMapping)
	}
	var replaced []string
	for file, inos := range c.inodes {
		if len(inos) > 1 {
			replaced = append(replaced, file)
		}
	}
	if len(replaced) > 0 {
		sort.Strings(replaced)
		add("warning: %s was replaced while recording (mapped from %s): perf.data keeps one build ID for a path, the file's at the end of the recording, so the frames of processes that ran an earlier file there may be named from the later one, as perf report names them; record with --buildid-mmap (perf 5.12+) to keep each mapping's own build ID",
			strings.Join(replaced, ", "), sampling.CountOf(len(c.inodes[replaced[0]]), "files"))
	}
	// No warning when a chain is longer than the limit assumed: the
	// recording machine's kernel.perf_event_max_stack was raised.
	if c.kernelCut > 0 && c.longest <= c.kernelLimit {
		add("warning: %d samples' call chains hold %d frames, the most the kernel records (kernel.perf_event_max_stack when recorded, 127 by default): their root-most frames were probably cut while recording and are not in the file; raise it on the recording machine (sysctl kernel.perf_event_max_stack=1024) and record again, or record with --call-graph=dwarf,32768",
			c.kernelCut, c.kernelLimit)
	}
	for _, w := range c.f.Warnings { // damaged or cut input: warnings, as the others
		add("warning: %s", w)
	}
	if len(c.f.Skipped) > 0 {
		names := make([]string, 0, len(c.f.Skipped))
		for n, k := range c.f.Skipped {
			names = append(names, fmt.Sprintf("%s×%d", n, k))
		}
		sort.Strings(names)
		add("records not converted: %s", strings.Join(names, ", "))
	}
	c.p.Comments = cm
}

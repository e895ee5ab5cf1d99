package perfdata

import (
	"fmt"
	"slices"
)

// Feature IDs (perf's HEADER_* bits).
const (
	featBuildID   = 2
	featHostname  = 3
	featOSRelease = 4
	featVersion   = 5
	featArch      = 6
	featNrCPUs    = 7
	featCPUDesc   = 8
	featCPUID     = 9
	featTotalMem  = 10
	featCmdline   = 11
	featEventDesc = 12
	featCache     = 20
	featSampleTim = 21
	featCompress  = 27
	featClockData = 29
)

var featureNames = map[int]string{
	1: "TRACING_DATA", 2: "BUILD_ID", 3: "HOSTNAME", 4: "OSRELEASE", 5: "VERSION", 6: "ARCH",
	7: "NRCPUS", 8: "CPUDESC", 9: "CPUID", 10: "TOTAL_MEM", 11: "CMDLINE", 12: "EVENT_DESC",
	13: "CPU_TOPOLOGY", 14: "NUMA_TOPOLOGY", 15: "BRANCH_STACK", 16: "PMU_MAPPINGS",
	17: "GROUP_DESC", 18: "AUXTRACE", 19: "STAT", 20: "CACHE", 21: "SAMPLE_TIME",
	22: "MEM_TOPOLOGY", 23: "CLOCKID", 24: "DIR_FORMAT", 25: "BPF_PROG_INFO", 26: "BPF_BTF",
	27: "COMPRESSED", 28: "CPU_PMU_CAPS", 29: "CLOCK_DATA", 30: "HYBRID_TOPOLOGY", 31: "PMU_CAPS",
}

func featureName(id int) string {
	if n, ok := featureNames[id]; ok {
		return n
	}
	return fmt.Sprintf("feature %d", id)
}

// eventDesc is one EVENT_DESC entry: an event's name and IDs.
type eventDesc struct {
	name string
	ids  []uint64
}

// readFeature decodes one feature section; damaged sections are reported and ignored.
func (f *File) readFeature(id int, b []byte) {
	d := dec{b: b, o: f.ByteOrder}
	ft := &f.Features
	switch id {
	case featHostname:
		ft.Hostname = d.str()
	case featOSRelease:
		ft.OSRelease = d.str()
	case featVersion:
		ft.Version = d.str()
	case featArch:
		ft.Arch = d.str()
	case featCPUDesc:
		ft.CPUDesc = d.str()
	case featCPUID:
		ft.CPUID = d.str()
	case featNrCPUs:
		ft.NrCPUsAvail, ft.NrCPUsOnline = d.u32(), d.u32()
	case featTotalMem:
		ft.TotalMemKB = d.u64()
	case featCmdline:
		n := d.u32()
		if uint64(n) > uint64(len(d.b))/4 {
			d.bad = true
			break
		}
		args := make([]string, 0, n)
		for range n {
			args = append(args, d.str())
		}
		if !d.bad {
			ft.Cmdline = args
		}
	case featEventDesc:
		n, asize := d.u32(), d.u32()
		if uint64(n) > uint64(len(d.b))/uint64(max(asize, 1)) {
			d.bad = true
			break
		}
		var descs []eventDesc
		for range n {
			d.skip(uint64(asize))
			nids := d.u32()
			name := d.str()
			if uint64(nids) > uint64(len(d.b))/8 {
				d.bad = true
				break
			}
			e := eventDesc{name: name, ids: make([]uint64, nids)}
			for i := range e.ids {
				e.ids[i] = d.u64()
			}
			descs = append(descs, e)
		}
		if !d.bad {
			f.descs = descs
		}
	case featBuildID:
		f.readBuildIDs(b, 0, false)
		return
	case featSampleTim:
		ft.FirstSample, ft.LastSample = d.u64(), d.u64()
	case featCompress:
		d.u32() // version
		ft.Compression = d.u32()
	case featCache:
		// The recording machine's /sys/devices/system/cpu/cpu0/cache:
		// per level, its line size (the data-type page's cache lines).
		d.u32() // version
		n := d.u32()
		if uint64(n) > uint64(len(d.b))/16 {
			d.bad = true
			break
		}
		for range n {
			level, line := d.u32(), d.u32()
			d.u32() // sets
			d.u32() // ways
			typ := d.str()
			d.str() // size
			d.str() // shared CPU map
			if d.bad {
				break
			}
			if level == 1 && (typ == "Data" || typ == "Unified") || ft.CacheLineSize == 0 {
				ft.CacheLineSize = line
			}
		}
	case featClockData:
		d.u32() // version
		c := &ClockData{ClockID: d.u32(), WallClockNanos: d.u64(), ClockIDNanos: d.u64()}
		if !d.bad {
			ft.ClockData = c
		}
	default:
		return
	}
	if d.bad {
		f.Warnings = append(f.Warnings, fmt.Sprintf("the %s feature section is damaged; ignored what could not be read", featureName(id)))
	}
}

// readBuildIDs decodes build_id_event entries: the whole BUILD_ID section, or
// (single) the body of one pipe-mode HEADER_BUILD_ID record whose misc is given.
func (f *File) readBuildIDs(b []byte, misc uint16, single bool) {
	parse := func(misc uint16, body []byte) bool {
		d := dec{b: body, o: f.ByteOrder}
		pid := int32(d.u32())
		raw := d.bytes(24)
		if d.bad {
			return false
		}
		n := 20
		if misc&(1<<15) != 0 { // PERF_RECORD_MISC_BUILD_ID_SIZE
			n = min(int(raw[20]), 20)
		}
		f.Features.BuildIDs = append(f.Features.BuildIDs, BuildID{
			CPUMode: misc & 7, Pid: pid, ID: slices.Clone(raw[:n]), Filename: cstr(d.b),
		})
		return true
	}
	if single {
		if !parse(misc, b) {
			f.bad(recHeaderBuild, 0, fmt.Errorf("build ID record of %d bytes is too short", len(b)))
		}
		return
	}
	for len(b) > 0 {
		if len(b) < 8 {
			break
		}
		misc := f.ByteOrder.Uint16(b[4:])
		size := int(f.ByteOrder.Uint16(b[6:]))
		if size < 8+4+24 || size > len(b) {
			f.Warnings = append(f.Warnings, fmt.Sprintf("the BUILD_ID feature section has a damaged entry of %d bytes; later build IDs were not read", size))
			return
		}
		parse(misc, b[8:size])
		b = b[size:]
	}
}

// nameEvents gives every attribute a name, from EVENT_DESC when the file has
// it (matched by event ID, else by position), else from its type and config.
func (f *File) nameEvents() {
	for i, a := range f.Attrs {
		for _, e := range f.descs {
			if len(a.IDs) > 0 && len(e.ids) > 0 && slices.Contains(e.ids, a.IDs[0]) {
				a.Name = e.name
				break
			}
		}
		if a.Name == "" && len(f.descs) == len(f.Attrs) {
			a.Name = f.descs[i].name
		}
		if a.Name == "" {
			a.Name = defaultEventName(a.Type, a.Config)
		}
	}
}

// defaultEventName is perf's name for the generic hardware and software events.
func defaultEventName(typ uint32, config uint64) string {
	hw := []string{"cycles", "instructions", "cache-references", "cache-misses", "branches",
		"branch-misses", "bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend", "ref-cycles"}
	sw := []string{"cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations",
		"minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy", "bpf-output", "cgroup-switches"}
	switch {
	case typ == 0 && config < uint64(len(hw)):
		return hw[config]
	case typ == 1 && config < uint64(len(sw)):
		return sw[config]
	}
	return fmt.Sprintf("event-%d-%#x", typ, config)
}

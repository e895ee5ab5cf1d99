package perfdata

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// pipeWriter builds little-endian pipe-mode perf.data for cases the
// recordings on this machine cannot hold (it has no kernel modules or BPF).
type pipeWriter struct{ b []byte }

func newPipeWriter() *pipeWriter {
	w := &pipeWriter{b: binary.LittleEndian.AppendUint64(nil, magicLE)}
	w.b = binary.LittleEndian.AppendUint64(w.b, pipeHeaderSize)
	return w
}

func (w *pipeWriter) rec(typ uint32, misc uint16, body []byte) {
	for len(body)%8 != 0 {
		body = append(body, 0)
	}
	w.b = binary.LittleEndian.AppendUint32(w.b, typ)
	w.b = binary.LittleEndian.AppendUint16(w.b, misc)
	w.b = binary.LittleEndian.AppendUint16(w.b, uint16(8+len(body)))
	w.b = append(w.b, body...)
}

func u64s(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

func pidTid(pid, tid uint32) uint64 { return uint64(tid)<<32 | uint64(pid) }

func cstring(s string) []byte {
	b := append([]byte(s), 0)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

// TestKernelModulesAndKsymbols checks that kernel module and BPF frames get
// their own mappings, module build IDs come from HEADER_BUILD_ID records,
// MMAP (version 1) maps user code, sample_id_all trailers with IDENTIFIER
// are read, and an unknown record type is skipped and reported.
func TestKernelModulesAndKsymbols(t *testing.T) {
	const st = sIdentifier | sIP | sTID | sTime | sPeriod | sCallchain
	w := newPipeWriter()
	attr := make([]byte, 128)
	binary.LittleEndian.PutUint32(attr[0:], 0) // PERF_TYPE_HARDWARE
	binary.LittleEndian.PutUint32(attr[4:], 128)
	binary.LittleEndian.PutUint64(attr[8:], 0) // cycles
	binary.LittleEndian.PutUint64(attr[16:], 100000)
	binary.LittleEndian.PutUint64(attr[24:], st)
	binary.LittleEndian.PutUint64(attr[40:], 1<<18) // sample_id_all
	w.rec(recHeaderAttr, 0, append(attr, u64s(77)...))
	trailer := func(pid, tid uint32, time uint64) []byte { return u64s(pidTid(pid, tid), time, 77) }

	kernelID := []byte{0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	modID := []byte{0x11, 0x22, 0x33, 0x44, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	buildID := func(id []byte, name string) []byte {
		b := binary.LittleEndian.AppendUint32(nil, ^uint32(0))
		raw := make([]byte, 24)
		copy(raw, id)
		return append(append(b, raw...), cstring(name)...)
	}
	w.rec(recHeaderBuild, 1, buildID(kernelID, "[kernel.kallsyms]"))
	w.rec(recHeaderBuild, 1, buildID(modID, "/lib/modules/6.1.0/kernel/drivers/net/e1000e.ko"))

	mmap := func(pid uint32, start, length, pgoff uint64, name string, misc uint16) {
		body := append(u64s(pidTid(pid, pid), start, length, pgoff), cstring(name)...)
		w.rec(recMmap, misc, append(body, trailer(pid, pid, 0)...))
	}
	mmap(^uint32(0), 0xffffffff81000000, 0x1000000, 0xffffffff81000000, "[kernel.kallsyms]_text", 1)
	mmap(^uint32(0), 0xffffffffc0000000, 0x10000, 0, "[e1000e]", 1)
	mmap(42, 0x400000, 0x1000, 0, "/usr/bin/app", 2)
	ks := append(u64s(0xffffffffc1000000), binary.LittleEndian.AppendUint32(nil, 0x100)...)
	ks = binary.LittleEndian.AppendUint16(ks, 1) // BPF
	ks = binary.LittleEndian.AppendUint16(ks, 0)
	ks = append(append(ks, cstring("bpf_prog_6deef7357e7b4530_sd_fw_ingress")...), trailer(0, 0, 0)...)
	w.rec(recKsymbol, 1, ks)
	comm := append(u64s(pidTid(42, 42)), cstring("app")...)
	w.rec(recComm, 0, append(comm, trailer(42, 42, 1)...))
	w.rec(200, 0, []byte("something new")) // an unknown record type

	sample := u64s(77, 0xffffffffc0001234, pidTid(42, 42), 10, 100000, 6,
		contextKernel, 0xffffffffc0001234, 0xffffffffc1000010, 0xffffffff81001000,
		contextUser, 0x400100)
	w.rec(recSample, 1, sample)

	p, err := Parse(w.b, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	s := p.Sample[0]
	var got []string
	for _, l := range s.Location {
		got = append(got, l.Mapping.File+" "+l.Mapping.BuildID)
	}
	want := []string{
		"[e1000e] 112233440102030405060708090a0b0c0d0e0f10",
		"bpf_prog_6deef7357e7b4530_sd_fw_ingress ",
		"[kernel.kallsyms] aabbccdd0102030405060708090a0b0c0d0e0f10",
		"/usr/bin/app ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("frames' mappings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s.Label["comm"][0] != "app" || p.SampleType[1].Type != "cycles" || p.SampleType[1].Unit != "count" || s.Value[1] != 100000 {
		t.Errorf("comm %v, type %v, values %v", s.Label["comm"], p.SampleType[1], s.Value)
	}
	if p.Mapping[0].File != "/usr/bin/app" {
		t.Errorf("first mapping is %s, want the program", p.Mapping[0].File)
	}
	if cm := strings.Join(p.Comments, "\n"); !strings.Contains(cm, "type 200×1") {
		t.Errorf("comments do not report the unknown record: %s", cm)
	}
}

// TestUnfinishedRecording converts a perf.data whose header still says the
// data section is empty, as when perf record is killed: the records up to
// the end of the file are read and a warning says why.
func TestUnfinishedRecording(t *testing.T) {
	data := bytes.Clone(readFile(t, "fp.data"))
	// data section size lives at offset 48 (magic, size, attr_size, attrs{off,size}, data{off,size}).
	end := binary.LittleEndian.Uint64(data[40:]) + binary.LittleEndian.Uint64(data[48:])
	binary.LittleEndian.PutUint64(data[48:], 0)
	p, err := Parse(data[:end], 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	full, err := Parse(readFile(t, "fp.data"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total(p) != total(full) {
		t.Errorf("%d samples, the finished file has %d", total(p), total(full))
	}
	if cm := strings.Join(p.Comments, "\n"); !strings.Contains(cm, "data size is 0") {
		t.Errorf("no warning about the unfinished header: %s", cm)
	}
}

func total(p *profile.Profile) int64 {
	var n int64
	for _, s := range p.Sample {
		n += s.Value[0]
	}
	return n
}

// TestJITMemoryNamedAfterPerfMap: a process's anonymous executable memory
// (//anon, /dev/zero, the heap) gets the mapping perf gives it,
// /tmp/perf-PID.map, the JIT's map its names are read from; files keep
// their names.
func TestJITMemoryNamedAfterPerfMap(t *testing.T) {
	const st = sIdentifier | sIP | sTID | sTime | sPeriod | sCallchain
	w := newPipeWriter()
	attr := make([]byte, 128)
	binary.LittleEndian.PutUint32(attr[4:], 128)
	binary.LittleEndian.PutUint64(attr[16:], 100000)
	binary.LittleEndian.PutUint64(attr[24:], st)
	binary.LittleEndian.PutUint64(attr[40:], 1<<18) // sample_id_all
	w.rec(recHeaderAttr, 0, append(attr, u64s(77)...))
	trailer := func(pid uint32) []byte { return u64s(pidTid(pid, pid), 0, 77) }
	mmap := func(pid uint32, start, length uint64, name string) {
		body := append(u64s(pidTid(pid, pid), start, length, start), cstring(name)...)
		w.rec(recMmap, 2, append(body, trailer(pid)...))
	}
	mmap(42, 0x400000, 0x1000, "/usr/bin/node")
	mmap(42, 0x7f0000000000, 0x10000, "//anon")
	mmap(42, 0x7f0000100000, 0x10000, "/dev/zero (deleted)")
	mmap(42, 0x7f0000200000, 0x10000, "[heap]")
	mmap(43, 0x7f0000000000, 0x10000, "//anon")
	w.rec(recSample, 2, u64s(77, 0x7f0000000010, pidTid(42, 42), 10, 100000, 5,
		contextUser, 0x7f0000000010, 0x7f0000100020, 0x7f0000200030, 0x400100))
	w.rec(recSample, 2, u64s(77, 0x7f0000000010, pidTid(43, 43), 11, 100000, 2, contextUser, 0x7f0000000010))
	p, err := Parse(w.b, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range p.Sample {
		for _, l := range s.Location {
			got = append(got, l.Mapping.File)
		}
	}
	want := "/tmp/perf-42.map /tmp/perf-42.map /tmp/perf-42.map /usr/bin/node /tmp/perf-43.map"
	if strings.Join(got, " ") != want {
		t.Errorf("frames' mappings: %s\nwant: %s", strings.Join(got, " "), want)
	}
}

package perfdata

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// userStackRecording is a pipe-mode perf.data with DWARF-mode samples
// (PERF_SAMPLE_REGS_USER of BP, SP, IP and a 64-byte PERF_SAMPLE_STACK_USER):
// a whole one with 40 valid bytes, one without user registers (a kernel
// thread), one whose dyn_size claims more than was copied, and one cut in
// its stack copy. It is also a seed of FuzzPerfData.
func userStackRecording() []byte {
	const st = sIP | sTID | sPeriod | sRegsUser | sStackUser
	w := newPipeWriter()
	attr := make([]byte, 128)
	binary.LittleEndian.PutUint32(attr[0:], 1) // PERF_TYPE_SOFTWARE
	binary.LittleEndian.PutUint32(attr[4:], 128)
	binary.LittleEndian.PutUint64(attr[16:], 100000)
	binary.LittleEndian.PutUint64(attr[24:], st)
	binary.LittleEndian.PutUint64(attr[80:], 1<<6|1<<7|1<<8) // BP SP IP
	binary.LittleEndian.PutUint32(attr[88:], 64)
	w.rec(recHeaderAttr, 0, attr)
	mmap := append(u64s(pidTid(7, 7), 0x400000, 0x1000, 0), cstring("/usr/bin/app")...)
	w.rec(recMmap, 2, mmap)
	stack := make([]byte, 64)
	for i := range stack {
		stack[i] = byte(i)
	}
	sample := func(regs bool, dyn uint64, cut int) []byte {
		b := u64s(0x400100, pidTid(7, 7), 100000)
		if regs {
			b = append(b, u64s(2, 0x7ffc0010, 0x7ffc0000, 0x400100)...)
		} else {
			b = append(b, u64s(0)...)
		}
		b = append(b, u64s(64)...)
		b = append(b, stack...)
		b = append(b, u64s(dyn)...)
		return b[:len(b)-cut]
	}
	w.rec(recSample, 2, sample(true, 40, 0))
	w.rec(recSample, 2, sample(false, 0, 0))
	w.rec(recSample, 2, sample(true, 1000, 0))
	w.rec(recSample, 2, sample(true, 40, 40))
	return w.b
}

// TestUserStackRecords reads DWARF-mode samples with and without
// Options.UserStacks: kept, the registers and the valid part of the stack
// copy are there; skipped, only their presence and size are.
func TestUserStackRecords(t *testing.T) {
	data := userStackRecording()
	for _, keep := range []bool{true, false} {
		f, err := Read(data, Options{UserStacks: keep})
		if err != nil {
			t.Fatal(err)
		}
		var ss []*Sample
		for _, r := range f.Records {
			if s, ok := r.(*Sample); ok {
				ss = append(ss, s)
			}
		}
		if len(ss) != 4 {
			t.Fatalf("UserStacks %v: %d samples, want 4", keep, len(ss))
		}
		type want struct {
			regs  bool
			size  uint64
			stack int
		}
		for i, w := range []want{{true, 40, 40}, {false, 0, 0}, {true, 1000, 64}, {true, 0, 0}} {
			s := ss[i]
			if s.HasRegsUser != w.regs || s.StackUser != w.size {
				t.Errorf("UserStacks %v, sample %d: HasRegsUser %v StackUser %d, want %v %d", keep, i, s.HasRegsUser, s.StackUser, w.regs, w.size)
			}
			switch {
			case !keep:
				if s.RegsUser != nil || s.Stack != nil {
					t.Errorf("sample %d kept user state without UserStacks", i)
				}
			case i == 0:
				if len(s.RegsUser) != 3 || s.RegsUser[1] != 0x7ffc0000 || s.RegsUser[2] != 0x400100 {
					t.Errorf("sample 0 registers %#x", s.RegsUser)
				}
				if !bytes.Equal(s.Stack, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39}) {
					t.Errorf("sample 0 stack % x", s.Stack)
				}
			case len(s.Stack) != w.stack:
				t.Errorf("sample %d: %d stack bytes, want %d", i, len(s.Stack), w.stack)
			}
		}
	}
	// Converting with unwinding: the binary is not on this machine, so
	// each stack is its sampled address and the profile says why.
	f, err := Read(data, Options{UserStacks: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Convert(f, ConvertOptions{Binaries: fuzzFinder})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range p.Comments {
		found = found || bytes.Contains([]byte(c), []byte("cannot unwind through /usr/bin/app"))
	}
	if !found {
		t.Errorf("comments do not name the missing binary: %q", p.Comments)
	}
}

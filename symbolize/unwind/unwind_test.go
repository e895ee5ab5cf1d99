package unwind

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"testing"
)

// deepObject is the CFI of testdata/perf/deep, loaded at its link-time
// addresses (lookup returns pc itself).
func deepObject(t *testing.T) Lookup {
	t.Helper()
	ef, err := elf.Open(deepPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	o, err := NewObject(ef, nil)
	if err != nil {
		t.Fatal(err)
	}
	return func(pc uint64) (*Object, uint64, error) { return o, pc, nil }
}

// TestUnwindStops walks hand-made stacks through deep's CFI (see readelf
// -wF testdata/perf/deep): a frame of level (CFA rbp+16 after its
// prologue) returns into main, and each way a walk can end is reported.
func TestUnwindStops(t *testing.T) {
	lookup := deepObject(t)
	const sp = 0x7ffd0000
	regs := func(pc, bp uint64) Regs {
		var r Regs
		r.Set(RegRA, pc)
		r.Set(RegRSP, sp)
		r.Set(RegRBP, bp)
		return r
	}
	// plt is a stack whose top word is ra.
	plt := func(ra uint64) []byte {
		b := make([]byte, 64)
		binary.LittleEndian.PutUint64(b, ra)
		return b
	}
	stack := make([]byte, 64)
	// level at 0x1280: CFA = rbp+16, rbp saved at CFA-16, ra at CFA-8.
	binary.LittleEndian.PutUint64(stack[16:], sp+48)  // saved rbp
	binary.LittleEndian.PutUint64(stack[24:], 0x1352) // return into main
	// main at 0x1351 (the call): CFA = rbp+16 with the caller's rbp, ra at CFA-8 = 0 ends the walk.
	frames, err := Unwind(regs(0x1280, sp+16), stack, lookup, 256, nil)
	if err != nil || len(frames) != 2 || frames[1] != 0x1352 {
		t.Errorf("level → main: frames %#x, err %v; want [0x1280 0x1352] and the outermost frame", frames, err)
	}
	// The same walk with the copy cut before the return address.
	frames, err = Unwind(regs(0x1280, sp+16), stack[:20], lookup, 256, nil)
	if !errors.Is(err, ErrStackEnd) || len(frames) != 1 {
		t.Errorf("cut stack: frames %#x, err %v; want the leaf and ErrStackEnd", frames, err)
	}
	// deep's .fini (crti's _fini, 0x1370) has no FDE: sampled at its
	// first instruction, the return address is at the stack pointer; a
	// byte further in, nothing says where it is.
	frames, err = Unwind(regs(0x1370, sp+16), plt(0x1352), lookup, 256, nil)
	if err != nil || len(frames) != 2 || frames[1] != 0x1352 {
		t.Errorf("_fini at its entry 0x1370: frames %#x, err %v; want [0x1370 0x1352]", frames, err)
	}
	frames, err = Unwind(regs(0x1374, sp+16), plt(0x1352), lookup, 256, nil)
	if !errors.Is(err, ErrNoFDE) || len(frames) != 1 {
		t.Errorf("_fini at 0x1374: frames %#x, err %v; want the leaf and ErrNoFDE", frames, err)
	}
	// The PLT's CFA is an expression, rsp+8 plus 8 past the stub's push
	// ((rip&15) >= 11): the return address is at the stack pointer here.
	frames, err = Unwind(regs(0x1030, sp), plt(0x1352), lookup, 256, nil)
	if err != nil || len(frames) != 2 || frames[1] != 0x1352 {
		t.Errorf("PLT at 0x1030: frames %#x, err %v; want [0x1030 0x1352]", frames, err)
	}
	pushed := plt(0x1352)
	binary.LittleEndian.PutUint64(pushed[8:], 0x1352)
	frames, err = Unwind(regs(0x103b, sp+32), pushed, lookup, 256, nil)
	if err != nil || len(frames) != 2 || frames[1] != 0x1352 {
		t.Errorf("PLT at 0x103b: frames %#x, err %v; want the return address one slot up", frames, err)
	}
	// An expression with an op the evaluator does not know is reported.
	if _, err := eval([]byte{0x97}, &Regs{}, nil); err == nil {
		t.Error("eval of DW_OP_push_object_address succeeded")
	}
	// No FDE (between functions) and no registers.
	if _, err := Unwind(regs(0x10, sp), stack, lookup, 256, nil); !errors.Is(err, ErrNoFDE) {
		t.Errorf("no FDE: err %v", err)
	}
	if _, err := Unwind(Regs{}, stack, lookup, 256, nil); !errors.Is(err, ErrNoRegs) {
		t.Errorf("no registers: err %v", err)
	}
	// A frame that returns to itself with the same stack pointer loops:
	// bounded by the depth limit or stopped as a loop.
	loop := make([]byte, 4096)
	for i := 0; i+8 <= len(loop); i += 8 {
		binary.LittleEndian.PutUint64(loop[i:], 0x1286)
	}
	frames, err = Unwind(regs(0x1286, sp), loop, lookup, 256, nil)
	if err == nil || len(frames) > 256 {
		t.Errorf("self-recursive garbage: %d frames, err %v", len(frames), err)
	}
}

// objectAndSymbols is the unwinding Object of the binary at path and its
// symbols' addresses by name.
func objectAndSymbols(t *testing.T, path string) (*Object, map[string]uint64) {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	o, err := NewObject(ef, nil)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]uint64{}
	for _, s := range syms {
		at[s.Name] = s.Value
	}
	return o, at
}

// TestUnwindGoSignalFrame walks a stack of testdata/fidelity/gowork (a Go
// program built normally: no .eh_frame, Go's .debug_frame) sampled at the
// first instruction of runtime.sigtramp, whose return address is Go's
// signal return trampoline runtime.sigreturn__sigaction (no CFI). The walk
// goes on through the signal frame to the interrupted main.spin, each
// frame given so that pc-1 falls in its function (the trampoline's start,
// the interrupted instruction), and ends where the copy does.
func TestUnwindGoSignalFrame(t *testing.T) {
	o, at := objectAndSymbols(t, "../../testdata/fidelity/gowork")
	sigtramp, restorer, spin := at["runtime.sigtramp.abi0"], at["runtime.sigreturn__sigaction.abi0"], at["main.spin"]
	if sigtramp == 0 || restorer == 0 || spin == 0 {
		t.Fatalf("gowork lacks runtime.sigtramp.abi0, runtime.sigreturn__sigaction.abi0 or main.spin: %#x %#x %#x", sigtramp, restorer, spin)
	}
	const sp = 0x7ffd0000
	stack := make([]byte, 512)
	binary.LittleEndian.PutUint64(stack[0:], restorer) // sigtramp's return address
	// The rt_sigframe's ucontext starts at sp+8; its mcontext 40 bytes in.
	mc := stack[8+40:]
	binary.LittleEndian.PutUint64(mc[120:], 0x7ffe0000) // rsp: the goroutine stack, not copied
	binary.LittleEndian.PutUint64(mc[128:], spin+5)     // rip
	var r Regs
	r.Set(RegRA, sigtramp)
	r.Set(RegRSP, sp)
	lookup := func(pc uint64) (*Object, uint64, error) { return o, pc, nil }
	frames, err := Unwind(r, stack, lookup, 256, nil)
	want := []uint64{sigtramp, restorer + 1, spin + 6}
	if len(frames) != len(want) || frames[0] != want[0] || frames[1] != want[1] || frames[2] != want[2] || !errors.Is(err, ErrStackEnd) {
		t.Errorf("frames %#x, err %v; want %#x and the copy's end", frames, err, want)
	}
}

// TestUnwindGoAsyncPreempt walks a stack of testdata/fidelity/gopreempt
// sampled at the first instruction of runtime.asyncPreempt: a signal
// preempted main.spinner just past its prologue's SUBQ $0x58, SP, and the
// handler pushed that pc as asyncPreempt's return address. The frame
// above is main.spinner stopped at that very instruction, not after a
// call (Go's traceback: the frame above funcID_asyncPreempt is no call
// site), so its CFI row is the one at the pc (CFA rsp+104; the row at pc-1,
// inside the SUBQ, says rsp+16 and finds a garbage return address) and it
// is given as pc+1, so that CallSites' pc-1 names the instruction itself.
// The walk goes on to main.spinner's caller.
func TestUnwindGoAsyncPreempt(t *testing.T) {
	o, at := objectAndSymbols(t, "../../testdata/fidelity/gopreempt")
	ap, spinner, wrap := at["runtime.asyncPreempt.abi0"], at["main.spinner"], at["main.main.gowrap1"]
	if ap == 0 || spinner == 0 || wrap == 0 {
		t.Fatalf("gopreempt lacks runtime.asyncPreempt.abi0, main.spinner or main.main.gowrap1: %#x %#x %#x", ap, spinner, wrap)
	}
	if !o.AsyncPreempt(ap) || !o.AsyncPreempt(ap+100) || o.AsyncPreempt(spinner) {
		t.Fatalf("AsyncPreempt does not tell runtime.asyncPreempt (%#x) from main.spinner", ap)
	}
	interrupted := spinner + 0x12 // after PUSHQ BP; MOVQ SP, BP; SUBQ $0x58, SP
	row, err := o.Row(interrupted)
	before, err2 := o.Row(interrupted - 1)
	if err != nil || err2 != nil || row.CFA.Off != 104 || before.CFA.Off != 16 {
		t.Fatalf("main.spinner's CFA at %#x: %+v %v, a byte before: %+v %v; want rsp+104 and rsp+16 (was gopreempt rebuilt?)", interrupted, row.CFA, err, before.CFA, err2)
	}
	const sp = 0x7ffd0000
	stack := make([]byte, 256)
	binary.LittleEndian.PutUint64(stack[0:], interrupted)     // pushed by the signal handler
	binary.LittleEndian.PutUint64(stack[8+96:], wrap+0x25)    // main.spinner's return address, at its CFA-8
	binary.LittleEndian.PutUint64(stack[8+16-8:], 0xdeadbeef) // where the row at pc-1 would look
	var r Regs
	r.Set(RegRA, ap)
	r.Set(RegRSP, sp)
	lookup := func(pc uint64) (*Object, uint64, error) { return o, pc, nil }
	frames, err := Unwind(r, stack, lookup, 3, nil)
	want := []uint64{ap, interrupted + 1, wrap + 0x25}
	if len(frames) != len(want) || frames[0] != want[0] || frames[1] != want[1] || frames[2] != want[2] {
		t.Errorf("frames %#x, err %v; want %#x", frames, err, want)
	}
}

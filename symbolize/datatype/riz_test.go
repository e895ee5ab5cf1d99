package datatype

import (
	"debug/elf"
	"testing"
)

// TestSIBWithoutIndexAsObjdump decodes every instruction of this machine's
// libc whose memory operand has a SIB byte without an index register, as
// objdump -d writes it: (%r12) and 0x8(%rsp), where the SIB byte is how
// those bases are encoded, and %fs:0x0 (a TLS access), where there is no
// base either. Main wrote (%r12,%riz) and %fs: (1858 of 29437).
func TestSIBWithoutIndexAsObjdump(t *testing.T) {
	const lib = "/lib/x86_64-linux-gnu/libc.so.6"
	funcs := disasm(t, lib)
	ef, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	code, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	checked, bad := 0, 0
	for fn, ins := range funcs {
		for _, in := range ins {
			if in.addr < text.Addr || in.addr >= text.Addr+uint64(len(code)) {
				continue
			}
			b := code[in.addr-text.Addr:]
			inst, err := x86Decode(b)
			if err != nil {
				continue
			}
			m, ok := memArg(inst)
			if !ok || m.Index != 0 || m.Scale != 1 {
				continue // no SIB byte without an index
			}
			checked++
			got := NormalizeAsm(objdumpText(inst, in.addr, b[:inst.Len]))
			if want := NormalizeAsm(in.text); got != want {
				if bad++; bad <= 10 {
					t.Errorf("%s %#x: %q, objdump %q", fn, in.addr, got, want)
				}
			}
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d instructions of %s have a SIB byte without an index", checked, lib)
	}
	if bad > 0 {
		t.Errorf("%d of %d instructions written unlike objdump", bad, checked)
	}
}

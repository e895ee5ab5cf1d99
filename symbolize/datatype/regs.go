package datatype

import "golang.org/x/arch/x86/x86asm"

// DWARF register numbers of the x86-64 general-purpose registers (System V
// psABI), which differ from the hardware encoding order.
const (
	dwRAX = 0
	dwRDX = 1
	dwRCX = 2
	dwRBX = 3
	dwRSI = 4
	dwRDI = 5
	dwRBP = 6
	dwRSP = 7
	dwR8  = 8
	dwR11 = 11
	dwRIP = 16
	// numGPR is the number of general-purpose registers tracked.
	numGPR = 16
)

var dwarfRegNames = [...]string{"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"}

func dwarfRegName(n int) string {
	if n >= 0 && n < len(dwarfRegNames) {
		return dwarfRegNames[n]
	}
	return "reg" + itoa(int64(n))
}

// hwToDwarf maps the hardware register number (rax=0, rcx=1, rdx=2, rbx=3,
// rsp=4, rbp=5, rsi=6, rdi=7, r8..r15) to the DWARF register number.
var hwToDwarf = [16]int{dwRAX, dwRCX, dwRDX, dwRBX, dwRSP, dwRBP, dwRSI, dwRDI, 8, 9, 10, 11, 12, 13, 14, 15}

// dwarfReg returns the DWARF number of the 64-bit general-purpose register
// that r is part of (eax, ax, al are all rax), or -1 for other registers.
// RIP maps to dwRIP.
func dwarfReg(r x86asm.Reg) int {
	switch {
	case r >= x86asm.RAX && r <= x86asm.R15:
		return hwToDwarf[r-x86asm.RAX]
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return hwToDwarf[r-x86asm.EAX]
	case r >= x86asm.AX && r <= x86asm.R15W:
		return hwToDwarf[r-x86asm.AX]
	case r >= x86asm.AL && r <= x86asm.R15B:
		i := int(r - x86asm.AL)
		if i >= 4 { // AH..BH are 4..7 (rax..rbx), SPB..DIB 8..11, R8B.. 12..
			i -= 4
		}
		return hwToDwarf[i]
	case r == x86asm.RIP || r == x86asm.EIP:
		return dwRIP
	}
	return -1
}

func itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	neg := v < 0
	if neg {
		v = -v
	}
	var b [24]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

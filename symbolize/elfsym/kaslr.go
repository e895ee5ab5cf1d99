package elfsym

import "debug/elf"

// KernelText returns the link-time address of _text in this file (a
// vmlinux), the reference point perf relocates the kernel by. _text is a
// linker-script symbol, not a function, so Symbols does not list it. The
// symbol table is read on the first call, which must come before Close.
func (f *File) KernelText() (uint64, bool) {
	f.textOnce.Do(func() {
		syms, err := f.elf.Symbols()
		if err != nil {
			return
		}
		for _, s := range syms {
			if s.Name == "_text" && s.Section != elf.SHN_UNDEF {
				f.text, f.hasTextSym = s.Value, true
				return
			}
		}
	})
	return f.text, f.hasTextSym
}

// KASLRShift returns how far KASLR moved a kernel whose _text is at
// linkText in its vmlinux and was at runtimeText when it was profiled. perf
// records runtimeText as the page offset of the kernel's mapping (the MMAP
// record "[kernel.kallsyms]_text" @ pgoff) and perf report relocates by the
// same difference, so a profile from another machine's kernel needs nothing
// from that machine. ok is false when runtimeText cannot be _text's runtime
// address (0, as in profiles that do not record it, or below linkText).
func KASLRShift(linkText, runtimeText uint64) (shift uint64, ok bool) {
	if runtimeText == 0 || runtimeText < linkText {
		return 0, false
	}
	return runtimeText - linkText, true
}

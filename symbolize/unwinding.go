package symbolize

import "viewer/symbolize/unwind"

// Unwinding the user stacks of perf.data --call-graph=dwarf samples while
// they are read (web/ingest/perfdata): the format reader reaches the
// unwinder (symbolize/unwind) through these names, as web reaches the rest
// of symbolization through this package, so the unwinder's internals stay
// symbolize's to change.

// CFI is one binary's call frame information as the unwinder reads it: what
// Symbolizer.CFI and the perf.data reader's Binaries (an unwind.Finder) give.
type CFI = unwind.Object

// Why an unwinding step failed; a stack walk's error wraps one of these, or
// says another reason in its text.
var (
	ErrNoFDE        = unwind.ErrNoFDE     // no call frame information covers the address
	ErrExprCFA      = unwind.ErrExprCFA   // a DWARF expression of the CFI could not be evaluated
	ErrUnknownCFIOp = unwind.ErrUnknownOp // the CFI holds an instruction the unwinder does not know
)

// UnwindUserStack walks the user stack of a --call-graph=dwarf sample: regs
// are its PERF_SAMPLE_REGS_USER values, one per bit set in mask (perf's
// register numbers, x86-64), and stack the bytes perf copied from the stack
// pointer up. lookup gives the CFI of the binary mapped at pc and pc's
// link-time address in it. It appends the sampled pc and then each caller's
// return address to out, at most max frames, and says why the walk ended:
// nil at the outermost frame, else an error naming the reason.
func UnwindUserStack(mask uint64, regs []uint64, stack []byte, lookup func(pc uint64) (*CFI, uint64, error), max int, out []uint64) ([]uint64, error) {
	return unwind.Unwind(unwind.PerfRegs(mask, regs), stack, lookup, max, out)
}

// SampledUserPC is the user-mode pc among a sample's PERF_SAMPLE_REGS_USER
// values (one per bit set in mask); false when the registers do not hold it.
func SampledUserPC(mask uint64, regs []uint64) (uint64, bool) {
	r := unwind.PerfRegs(mask, regs)
	return r.V[unwind.RegRA], r.Valid&(1<<unwind.RegRA) != 0
}

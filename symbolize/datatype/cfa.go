package datatype

import (
	"viewer/symbolize/unwind"
)

// cfaTable answers "how is the CFA computed at pc" from call frame
// information (.eh_frame of the executable or .debug_frame of the debug
// file), parsed by symbolize/unwind, the codebase's one CFI reader.
// Data-type attribution needs it because GCC describes stack variables
// relative to DW_OP_call_frame_cfa, while the code addresses them relative
// to %rsp.
type cfaTable struct {
	t     *unwind.Table
	bytes int // the section's, for Binary.Size
}

// cfaRule is CFA = reg + off.
type cfaRule struct {
	reg int
	off int64
	ok  bool
}

// newCFATable indexes the FDEs of an .eh_frame (ehFrame) or .debug_frame section.
func newCFATable(sec []byte, secAddr uint64, ehFrame bool) *cfaTable {
	t := unwind.NewTable(sec, secAddr, ehFrame)
	return &cfaTable{t: t, bytes: len(sec)}
}

// cfaAt returns the CFA rule in effect at pc; not ok when no FDE covers pc
// or the CFA is not a register plus an offset.
func (t *cfaTable) cfaAt(pc uint64) cfaRule {
	if t == nil {
		return cfaRule{}
	}
	row, err := t.t.Row(pc)
	if err != nil || row.CFA.Kind != unwind.RegOffset {
		return cfaRule{}
	}
	return cfaRule{reg: int(row.CFA.Reg), off: row.CFA.Off, ok: true}
}

// empty reports whether the table describes no function.
func (t *cfaTable) empty() bool { return t == nil || t.t.Len() == 0 }

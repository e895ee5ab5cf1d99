package datatype

import (
	"sort"
	"strings"
)

// DefaultCacheLine is the cache line size of x86-64 and of most arm64
// cores, used when the recording does not say.
const DefaultCacheLine = 64

// CacheLine is one cache line of a type's layout (false-sharing hunting):
// the samples that touched members starting in it and which members.
type CacheLine struct {
	Index    int64    `json:"index"`
	Lo       int64    `json:"lo"` // byte offsets [Lo, Hi) inside the type
	Hi       int64    `json:"hi"`
	Weight   int64    `json:"weight"`
	Members  []string `json:"members"`  // accessed members in the line, by offset
	Crossing []string `json:"crossing"` // members that start here and end in a later line
}

// CacheLines groups t's accessed members by the cache line of size line
// their offset falls in (every line of the type is listed). A member's own
// weight (MemberStat.Weight) counts on its line.
func (t TypeStat) CacheLines(line int64) []CacheLine {
	if line <= 0 || t.Size <= 0 || len(t.Members) == 0 {
		return nil
	}
	n := (t.Size + line - 1) / line
	if n > 1<<12 {
		return nil // a huge array: the layout is not a struct's
	}
	out := make([]CacheLine, n)
	for i := range out {
		out[i] = CacheLine{Index: int64(i), Lo: int64(i) * line, Hi: min(int64(i+1)*line, t.Size)}
	}
	for _, m := range t.Members {
		if m.Offset < 0 || m.Offset >= t.Size {
			continue
		}
		l := &out[m.Offset/line]
		l.Weight += m.Weight
		if m.Weight > 0 && m.Name != "" {
			l.Members = append(l.Members, m.Name)
		}
		if m.Size > 0 && m.Name != "" && (m.Offset+m.Size-1)/line != m.Offset/line && !strings.ContainsAny(m.Name, ".[") {
			l.Crossing = append(l.Crossing, m.Name)
		}
	}
	return out
}

// Type-stat categories: why samples did not resolve, named as perf
// annotate --type-stat names them where it has the same case.
const (
	StatNoDebugInfo = "no_dbginfo"  // no debug info for the binary
	StatNoSym       = "no_sym"      // no function (symbol or DWARF) covers the address
	StatNoInsn      = "no_insn"     // the instruction could not be decoded
	StatNoMemOps    = "no_mem_ops"  // the instruction has no memory operand
	StatNoVar       = "no_var"      // no variable holds the base register or address
	StatNoTypeInfo  = "no_typeinfo" // the variable is not a pointer, or its type has no size
	StatBadReg      = "bad_reg"     // the base register is not a general-purpose one
	StatBadOffset   = "bad_offset"  // the offset is outside the type
	StatTLS         = "tls"         // thread-local storage
	StatGOT         = "got"         // a GOT slot, not data
	StatNoAddress   = "no_address"  // the sample has no address
	StatOther       = "other"
)

// ReasonCategory classifies an unknown access's reason into a type-stat
// category.
func ReasonCategory(reason string) string {
	has := func(s ...string) bool {
		for _, x := range s {
			if strings.Contains(reason, x) {
				return true
			}
		}
		return false
	}
	switch {
	case has("samples without an address"):
		return StatNoAddress
	case has("no debug info", "no usable DWARF", "malformed debug info", "not found", "debuginfod", "no executable", "no vmlinux", "-dbg"):
		return StatNoDebugInfo
	case has("outside the executable's code", "no DWARF function covers", "not in the binary's loadable segments"):
		return StatNoSym
	case has("cannot decode"):
		return StatNoInsn
	case has("no memory operand", "computes an address", "does not access data"):
		return StatNoMemOps
	case has("GOT slot"):
		return StatGOT
	case has("thread-local"):
		return StatTLS
	case has("not a general-purpose register"):
		return StatBadReg
	case has("not a pointer", "size is unknown"):
		return StatNoTypeInfo
	case has("is outside", "past its end"):
		return StatBadOffset
	case has("no pointer variable", "no global variable"):
		return StatNoVar
	}
	return StatOther
}

// StatRow is one type-stat category and its weight.
type StatRow struct {
	Category string `json:"category"`
	Weight   int64  `json:"weight"`
}

// TypeStats is `perf annotate --type-stat`: the unknown samples' weight by
// category, heaviest first. They add up to the "(unknown)" types' weight.
func (p *Profile) TypeStats() []StatRow {
	w := map[string]int64{}
	for _, r := range p.Unknown {
		w[ReasonCategory(r.Reason)] += r.Weight
	}
	out := make([]StatRow, 0, len(w))
	for c, v := range w {
		out = append(out, StatRow{c, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Weight != out[j].Weight {
			return out[i].Weight > out[j].Weight
		}
		return out[i].Category < out[j].Category
	})
	return out
}

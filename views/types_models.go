package views

import (
	"strconv"
	"strings"
)

// TypesPage is the data-type page at /p/ID/types: which data types and
// members the samples' instructions access, like `perf report -s
// type,typeoff` and `perf annotate --data-type`.
type TypesPage struct {
	Page
	ID          string
	SampleTypes []SampleType
	SI          string
	Unit        string
	Total       string
	Attributed  string // share of samples attributed to a real type
	JSONURL     string
	FlameURL    string
	// TypesFlameURL is the flame graph whose leaves are the data types and
	// members each stack touched.
	TypesFlameURL string
	// Skid says samples on instructions that touch no memory count on the
	// access just before them (?skid=0 turns it off); SkidShare is the
	// share of samples counted that way.
	Skid      bool
	SkidShare string
	Types     []TypeRow
	Funcs     []TypeFuncRow
	Unknown   []UnknownRow
	DSOs      []TypeDSO

	// CacheLine is the line size members are grouped by and CacheLineFrom
	// where it comes from.
	CacheLine, CacheLineFrom string
	// TypeStat is `perf annotate --type-stat`: the unresolved samples by
	// category, adding up to Unresolved.
	TypeStat                       []TypeStatRow
	Unresolved                     int64
	UnresolvedValue, UnresolvedPct string
	// Note says what the lists leave out to fit the server's rendering
	// budget; "" when they hold everything.
	Note string
}

// TypeRow is one data type; Members is its layout with shares.
type TypeRow struct {
	Anchor  string // element id, for links from functions
	Name    string
	Size    string // bytes, "" when unknown
	SizeNum int64  // for sorting
	DSO     string
	Value   string
	Pct     string
	Frac    float64
	Special bool // "(stack operation)" or "(unknown)"
	Members []MemberRow
	Funcs   []TypeFuncLink
	// MoreFuncs is how many functions touching the type are not linked,
	// over the rendering budget.
	MoreFuncs int
	// CacheLines is the layout grouped by cache line (nil for a type
	// within one line).
	CacheLines []CacheLineRow
}

// CacheLineRow is one cache line of a type: its byte range, share and the
// accessed members in it; Crossing names members that straddle into the
// next line.
type CacheLineRow struct {
	Index, Range, Members, Crossing string
	Value, Pct                      string
	Frac                            float64
}

// TypeStatRow is one reason category of unresolved samples.
type TypeStatRow struct {
	Category, Value, Pct string
	Frac                 float64
}

// MemberRow is one line of a type's layout. Pct/Frac include nested
// members; Self is the member's own share when it differs.
type MemberRow struct {
	Offset, Size int64
	Field        string
	Type         string
	Depth        int
	Value        string
	Pct          string
	Self         string
	Frac         float64
	Accessed     bool
}

// TypeFuncLink links a type to a function touching it (the flame graph
// searched for it).
type TypeFuncLink struct{ Name, Href, Pct string }

// TypeFuncRow is a function with the types its instructions access.
type TypeFuncRow struct {
	Name, Href, Value, Pct string
	AnnotateHref           string // the function's annotate view
	Frac                   float64
	Types                  []TypeLink
}

// TypeLink points at a type's row on the page.
type TypeLink struct{ Name, Anchor, Pct string }

// UnknownRow is one reason samples were not attributed (the debug view).
type UnknownRow struct {
	Reason, Func, Insn, PC, DSO string
	Value, Pct                  string
	Frac                        float64
}

// TypeDSO is a binary that contributed samples, with where its debug info
// came from or why there is none.
type TypeDSO struct {
	Name, BuildID, Source, Error string
	Samples, Pct                 string
}

// collapsedMembers is a type's layout with the elements of each array left
// out when none of them (nor anything inside them) was hit: the array's
// own row (`char comm[16]`) stands for them, as one row. An array with a
// hit element keeps all its element rows, so the hit one shows in place.
func collapsedMembers(rows []MemberRow) []MemberRow {
	out := make([]MemberRow, 0, len(rows))
	for i := 0; i < len(rows); {
		r := rows[i]
		if !strings.HasPrefix(r.Field, "[") {
			out = append(out, r)
			i++
			continue
		}
		// The run of this array's elements: rows at its depth or deeper.
		j, hit := i, false
		for j < len(rows) && rows[j].Depth >= r.Depth && (rows[j].Depth > r.Depth || strings.HasPrefix(rows[j].Field, "[")) {
			hit = hit || rows[j].Accessed
			j++
		}
		if hit {
			out = append(out, rows[i:j]...)
		}
		i = j
	}
	return out
}

// Plural is n and noun, with an s unless n is 1 ("1 reason", "3 reasons").
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

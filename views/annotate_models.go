package views

// AnnotatePage is the annotate view at /p/ID/annotate?fn=NAME: one
// function's instructions with their self samples, source lines, branch
// targets and the data type each instruction touches.
type AnnotatePage struct {
	Page
	ID, Fn  string
	Symbol  string // the symbol listed (fn itself, or the function fn is inlined in)
	DSO     string
	BuildID string
	Arch    string
	Source  string // where the code and debug info came from
	Range   string // the symbol's address range
	Unit    string
	// ValueHead heads the column of self values ("CPU time", "Samples"),
	// ValueTitle says its unit.
	ValueHead, ValueTitle string
	Total                 string // the function's self samples
	Share                 string // of the profile's (filtered) samples
	JSONURL               string
	// FlameURL searches the flame graph for the function; SourceURL is its
	// source view.
	FlameURL, SourceURL string
	// Skid says samples on instructions that touch no memory are shown as
	// counted on the access before them too (?skid=0 turns it off).
	Skid          bool
	SkidToggleURL string
	Filtered      bool // focus or ignore filters select the samples
	// Others lists the other functions holding inlined copies of Fn.
	Others []NavLink
	// Merged says the listing is every copy of an inlined Fn merged by
	// its source lines (?inline=merge), from the symbols in Copies;
	// MergeToggleURL switches between that and one copy ("" when Fn has
	// one copy).
	Merged         bool
	Copies         []string
	MergeToggleURL string
	Rows           []AnnotateRow
}

// AnnotateRow is an instruction, or (Source set) the source line the
// instructions below it come from.
type AnnotateRow struct {
	Source *AnnotateSource
	Anchor string // element id, the target of jumps to it
	Addr   string
	Text   string
	// TargetLabel names a direct branch's or call's target; TargetHref
	// links to it when it is inside the function.
	TargetLabel, TargetHref string
	Count, Pct              string // self samples; "" when none
	Frac                    float64
	Hot                     bool // one of the heaviest instructions
	Label                   string
	Kind                    string // member, global, stack operation, unknown
	Reason                  string
	// SkidNote says the instruction's samples count on an earlier access
	// (SkidHref); SkidIn says how many later samples count on this one.
	SkidNote, SkidHref, SkidIn string
}

// AnnotateSource is a source line heading a run of instructions: file:line
// of the innermost frame, and the inlined calls it is reached through.
type AnnotateSource struct {
	Where   string
	Inlined []string // innermost first
	Copy    string   // the copy (symbol) the instructions are in, in a merged listing
}

// kindClass is the CSS class of an access kind ("stack operation" → "stack").
func kindClass(kind string) string {
	switch kind {
	case "member", "global":
		return "k-" + kind
	case "stack operation":
		return "k-stack"
	}
	return "k-unknown"
}

// AnnotateMissingPage is the annotate view of a function whose executable
// is absent: the instructions cannot be listed, so the page says which file
// is missing and how to provide it, and lists what the profile itself
// records: the function's self samples per address, with source lines when
// the profile has them.
type AnnotateMissingPage struct {
	Page
	ID, Fn   string
	DSO      string
	BuildID  string
	Why      string // the locator's reasons, for the curious
	Unit     string
	Total    string // the function's self samples
	Share    string // of the profile's (filtered) samples
	FlameURL string
	// SourceURL is the function's source view.
	SourceURL string
	Filtered  bool
	Addrs     []AnnotateAddr
}

// AnnotateAddr is one sampled address of the function in the process.
type AnnotateAddr struct {
	Addr       string // hex, as the profile records it
	Count, Pct string
	Frac       float64
	Where      string   // file:line of the innermost frame, "" when unknown
	Inlined    []string // the calls it is inlined through, innermost first
}

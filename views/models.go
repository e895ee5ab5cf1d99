// Package views holds the templ components of the web pages and the plain
// view-model structs they render. It imports no project package: handlers in
// web build these structs and pass them in.
package views

// Page is what every page's layout needs.
type Page struct {
	Title string // shown in <title> and the header
	// Nav links shown in the header, e.g. Flame graph, Top, Types.
	Nav []NavLink
	// Warnings of the profile the page shows, on a line under the header.
	Warnings Warnings
	// Help is the manual's section (a /docs/ URL) that explains the page,
	// linked under it; empty for none.
	Help string
}

// Warnings are what a profile's conversion skipped, cut or could not do:
// each page of the profile shows their count on a quiet line under the
// header, expanding to the list.
type Warnings struct {
	List    []string // the text of each, shown as text
	Omitted int      // warnings past those listed
}

// Count is how many warnings there are, listed or not.
func (w Warnings) Count() int { return len(w.List) + w.Omitted }

// Summary is the line's text: "3 warnings".
func (w Warnings) Summary() string { return Plural(w.Count(), "warning") }

// NavLink is one header link; Active marks the current page.
type NavLink struct {
	Label, Href string
	Active      bool
	// Keep is the query parameters the link follows when the page changes
	// them in place ("si t"): the header's links (common.js keepNav).
	Keep string
}

// navLinks is links with one link per label, in first-seen order: a page
// that adds a link its profile's navigation already has (Types) marks
// that one active instead of repeating it.
func navLinks(links []NavLink) []NavLink {
	out := make([]NavLink, 0, len(links))
	for _, l := range links {
		dup := false
		for i := range out {
			if out[i].Label == l.Label {
				out[i].Active = out[i].Active || l.Active
				if l.Active {
					out[i].Href = l.Href
				}
				dup = true
			}
		}
		if !dup {
			out = append(out, l)
		}
	}
	return out
}

// IndexPage is the upload page at /.
type IndexPage struct {
	Page
	MaxUpload string // human-readable upload limit, e.g. "512 MiB"
	// DebuginfodServers lists the servers build IDs would be sent to; empty
	// means debuginfod is off.
	DebuginfodServers []string
}

// SampleType is one choice of the sample-type selector (pprof's si).
type SampleType struct {
	Index    int
	Name     string // e.g. "cpu"
	Unit     string // e.g. "nanoseconds"
	Selected bool
}

// FlamePage is the flamegraph page at /p/ID.
type FlamePage struct {
	Page
	ID          string
	Name        string // original file name, if known
	SampleTypes []SampleType
	SI          string // selected sample type name
	// DataURL is flame.json for the selected sample type; the page's script
	// fetches it and draws on a canvas.
	DataURL  string
	SVGURL   string
	PprofURL string
	TopURL   string
	// SpeedscopeURL opens the profile in speedscope's web app (a redirect
	// there), which fetches the server's speedscope.json of it; empty
	// where the app could not.
	SpeedscopeURL string
	// FirefoxURL opens the profile's selected sample type in the Firefox
	// Profiler (a redirect there), which fetches the server's firefox.json
	// of it and asks the server's /symbolicate/v5 for unnamed frames;
	// empty where the app could not fetch it.
	FirefoxURL string
	// Exact says the server answers top.json and flame.json?z= next to
	// DataURL: the page's top table, search share and zoomed trees come
	// from every sample rather than from the drawn tree.
	Exact bool
	// EventsURL is the SSE stream of symbolization progress, empty when the
	// profile needs no symbolization.
	EventsURL string
	// StatusURL is the job's status as JSON (outcome, Retry), empty when
	// the server does not symbolize: the page then asks for nothing.
	StatusURL string
	Binaries  []Binary
	Stats     []Stat // short facts: samples, total, duration, mappings
	// Filter is the focus/ignore/hide/show form and compare picker
	// (compare.templ).
	Filter FilterBar
}

// Binary is one mapping's row in the symbolization panel.
type Binary struct {
	File    string
	BuildID string
	State   string // e.g. "symbolized", "fetching", "no symbols"
	Source  string // where the debug info came from or is being fetched from
	Detail  string // reason for a failure, bytes so far, etc.
	// Help is the next step when State is StateNoSymbols; the row links it
	// to the manual's section on where debug info comes from (HelpURL).
	Help string
}

// Neutral states: neither a success nor a failure to fix.
const (
	// StatePseudo is a mapping that is no file with debug info ([vdso]
	// without a build ID, [stack], //anon, a JIT map): it is not counted as
	// a binary.
	StatePseudo = "pseudo"
	// StateNoSymbols is a real binary left without names (stripped, no
	// debug info found); Help says what to do.
	StateNoSymbols = "no symbols"
)

// HelpURL is the manual's section explaining where debug info comes from
// (static/docs/symbolization.md, served at /docs/symbolization).
const HelpURL = "/docs/symbolization#where-debug-info-comes-from"

// Stat is a labelled value shown under the title.
type Stat struct{ Label, Value string }

// TopPage is the top-functions table at /p/ID/top.
type TopPage struct {
	Page
	ID          string
	SampleTypes []SampleType
	SI          string
	Unit        string
	Total       string
	Rows        []TopRow
	// FlatTitle and CumTitle name what the value columns hold and their
	// one unit ("Self CPU time, in ms").
	FlatTitle, CumTitle string
	FlameURL            string
	Filter              FilterBar // compare.templ
	// Note says how many of the functions Rows lists when not all, and
	// AllURL, when set, lists them all (as many as the server's budget
	// allows).
	Note, AllURL string
	// Empty says why no function is listed: a time range or filters that
	// keep no sample, or a sample type with none ("" is the latter).
	Empty string
}

// TopRow is one function's flat and cumulative value, already formatted.
type TopRow struct {
	Name              string
	Flat, FlatPct     string
	Cum, CumPct       string
	FlatFrac, CumFrac float64 // 0..1, for the bars
	// AnnotateHref links to the function's annotate view.
	AnnotateHref string
}

// ErrorPage is shown for 404s and other failures.
type ErrorPage struct {
	Page
	Status  int
	Message string
	// Heading names the cause when the handler knows it; empty: a title
	// for Status.
	Heading string
}

package views

import (
	"strconv"
	"strings"
)

// flameConfig is what static/page.js reads from the "flame-config" JSON
// script element.
type flameConfig struct {
	ID          string       `json:"id"`
	DataURL     string       `json:"dataURL"`
	SVGURL      string       `json:"svgURL,omitempty"`
	PprofURL    string       `json:"pprofURL,omitempty"`
	TopURL      string       `json:"topURL,omitempty"`
	Exact       bool         `json:"exact,omitempty"`
	EventsURL   string       `json:"eventsURL,omitempty"`
	StatusURL   string       `json:"statusURL,omitempty"`
	SI          string       `json:"si"`
	SampleTypes []SampleType `json:"sampleTypes"`
}

func newFlameConfig(m FlamePage) flameConfig {
	st := m.SampleTypes
	if st == nil {
		st = []SampleType{}
	}
	return flameConfig{
		ID: m.ID, DataURL: m.DataURL, SVGURL: m.SVGURL, PprofURL: m.PprofURL,
		TopURL: m.TopURL, Exact: m.Exact, EventsURL: m.EventsURL, StatusURL: m.StatusURL, SI: m.SI, SampleTypes: st,
	}
}

// flameTitle is the page heading: the file name, else the profile ID.
func flameTitle(m FlamePage) string {
	if m.Name != "" {
		return m.Name
	}
	if m.ID != "" {
		return "Profile " + m.ID
	}
	return "Profile"
}

// shortBuildID keeps the first 12 hex digits, enough to tell binaries apart;
// the full ID is in the cell's title.
func shortBuildID(id string) string {
	if len(id) > 16 {
		return id[:12] + "…"
	}
	return id
}

// stateClass turns a state such as "no symbols" into a CSS class suffix.
func stateClass(state string) string {
	s := strings.ToLower(strings.TrimSpace(state))
	var b strings.Builder
	b.WriteString("state-")
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// binariesSummary says how many binaries are symbolized, e.g. "2 of 5
// symbolized"; pseudo mappings are not binaries and are not counted.
func binariesSummary(bins []Binary) string {
	if len(bins) == 0 {
		return ""
	}
	n, real := 0, 0
	for _, b := range bins {
		if b.State == StatePseudo {
			continue // not a binary (static/symbolize.js counts the same way)
		}
		real++
		if strings.EqualFold(b.State, "symbolized") {
			n++
		}
	}
	if real == 0 {
		return "no binaries to symbolize"
	}
	return strconv.Itoa(n) + " of " + strconv.Itoa(real) + " symbolized"
}

// allResolved reports whether every binary (pseudo files aside) is
// symbolized: the panel is then rendered collapsed to its one-line summary.
func allResolved(bins []Binary) bool {
	for _, b := range bins {
		if b.State != StatePseudo && !strings.EqualFold(b.State, "symbolized") {
			return false
		}
	}
	return true
}

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

// binariesSummary says how many binaries are symbolized and how many were
// left without symbols, e.g. "2 of 5 symbolized · 3 without symbols":
// the line the panel folds to. Pseudo mappings are not binaries and are not
// counted (static/symbolize.js counts the same way).
func binariesSummary(bins []Binary) string {
	if len(bins) == 0 {
		return ""
	}
	n, real, missed := 0, 0, 0
	for _, b := range bins {
		if b.State == StatePseudo {
			continue
		}
		real++
		switch strings.ToLower(b.State) {
		case "symbolized":
			n++
		case StateNoSymbols, "skipped", "error":
			missed++
		}
	}
	if real == 0 {
		return "no binaries to symbolize"
	}
	s := strconv.Itoa(n) + " of " + strconv.Itoa(real) + " symbolized"
	if missed > 0 {
		s += " · " + strconv.Itoa(missed) + " without symbols"
	}
	return s
}

// panelOpen says whether the symbolization panel is rendered open: only
// while a job is to be followed. Once it ended, the panel is its one-line
// summary (which counts the binaries left without symbols) and the flame
// graph has the room; the user may open it.
func panelOpen(bins []Binary, following bool) bool {
	return following && len(bins) > 0
}

package profiles

import (
	"time"
	"unicode/utf8"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/sampling"
)

// Meta is the small description stored next to a profile (meta.json), enough
// to render its page without parsing it.
type Meta struct {
	Name              string        `json:"name,omitempty"`
	Format            string        `json:"format"`
	Size              int64         `json:"size"`
	Uploaded          time.Time     `json:"uploaded"`
	SampleTypes       []SampleType  `json:"sampleTypes"`
	DefaultSampleType string        `json:"defaultSampleType,omitempty"`
	Samples           int           `json:"samples"` // sample records (distinct stacks); samples are counted by ingest.CountIndex
	DurationNanos     int64         `json:"durationNanos,omitempty"`
	Mappings          []MappingMeta `json:"mappings,omitempty"`
	// Warnings are what the conversion skipped, cut or could not do (the
	// profile's "warning: " comments, sampling.Warnings), shown on every
	// page of the profile. Never nil in a Meta made by NewMeta ("[]" in
	// meta.json): nil is a meta.json written before warnings were kept.
	// At most MaxMetaWarnings, each cut to MaxWarningBytes;
	// WarningsOmitted counts the others.
	Warnings        []string `json:"warnings"`
	WarningsOmitted int      `json:"warningsOmitted,omitempty"`
}

// SampleType is a profile's sample type with the sum of its values.
type SampleType struct {
	Type  string `json:"type"`
	Unit  string `json:"unit"`
	Total int64  `json:"total"`
}

// MappingMeta is one binary of the profile.
type MappingMeta struct {
	File         string `json:"file"`
	BuildID      string `json:"buildID,omitempty"`
	HasFunctions bool   `json:"hasFunctions"`
}

// MaxMetaMappings bounds the mappings listed in meta.json; a Meta listing
// this many may have left some out.
const MaxMetaMappings = 1000

// MaxMetaWarnings bounds the warnings meta.json lists, and MaxWarningBytes
// each one's length: a pprof upload's comments are the uploader's text, and
// every page of the profile shows them.
const (
	MaxMetaWarnings = 100
	MaxWarningBytes = 4096
)

// SetWarnings sets m's warnings to those of p, within MaxMetaWarnings and
// MaxWarningBytes.
func (m *Meta) SetWarnings(p *profile.Profile) {
	all := sampling.Warnings(p)
	m.Warnings = make([]string, 0, min(len(all), MaxMetaWarnings))
	m.WarningsOmitted = max(len(all)-MaxMetaWarnings, 0)
	for _, w := range all[:len(all)-m.WarningsOmitted] {
		if len(w) > MaxWarningBytes {
			cut := MaxWarningBytes
			for cut > 0 && !utf8.RuneStart(w[cut]) {
				cut--
			}
			w = w[:cut] + "…"
		}
		m.Warnings = append(m.Warnings, w)
	}
}

// NewMeta describes p, uploaded as name in format, of size bytes.
func NewMeta(p *profile.Profile, name, format string, size int64) *Meta {
	m := &Meta{
		Name:              name,
		Format:            format,
		Size:              size,
		Uploaded:          time.Now().UTC().Truncate(time.Second),
		DefaultSampleType: p.DefaultSampleType,
		Samples:           len(p.Sample),
		DurationNanos:     p.DurationNanos,
	}
	for _, st := range p.SampleType {
		m.SampleTypes = append(m.SampleTypes, SampleType{Type: st.Type, Unit: st.Unit})
	}
	for _, s := range p.Sample {
		for i := range min(len(s.Value), len(m.SampleTypes)) {
			m.SampleTypes[i].Total += s.Value[i]
		}
	}
	for _, mp := range p.Mapping {
		if len(m.Mappings) == MaxMetaMappings {
			break
		}
		m.Mappings = append(m.Mappings, MappingMeta{File: mp.File, BuildID: mp.BuildID, HasFunctions: mp.HasFunctions})
	}
	m.SetWarnings(p)
	return m
}

// AllNamed reports whether meta.json says every mapping that is a real file
// has names (pseudo mappings such as [stack] have none to get;
// symbolize.IsPseudoBinary). A Meta with
// no mappings, or one whose list may be cut (MaxMetaMappings), does not say.
func (m *Meta) AllNamed() bool {
	if m == nil || len(m.Mappings) == 0 || len(m.Mappings) >= MaxMetaMappings {
		return false
	}
	return m.Unnamed() == 0
}

// Unnamed counts the mappings of meta.json that are real files without
// names.
func (m *Meta) Unnamed() int {
	n := 0
	for _, mp := range m.Mappings {
		if !mp.HasFunctions && !symbolize.IsPseudoBinary(mp.File, mp.BuildID) {
			n++
		}
	}
	return n
}

// ProfileStub is a profile holding only the meta's sample types, so that
// flame.SampleIndex can resolve si without parsing the stored profile.
func (m *Meta) ProfileStub() *profile.Profile {
	p := &profile.Profile{DefaultSampleType: m.DefaultSampleType}
	for _, st := range m.SampleTypes {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: st.Type, Unit: st.Unit})
	}
	return p
}

// Loaded is a parsed profile with its metadata.
type Loaded struct {
	ID      string
	Meta    *Meta
	Profile *profile.Profile
	// Symbolized is true when Profile was read from symbolized.pb.gz
	// rather than the converted upload.
	Symbolized bool
	// Version is a hash of the stored bytes Profile was parsed from: each
	// rewrite of the symbolized copy changes it.
	Version string
}

// Variant names the bytes a cached result came from: which copy, and its
// content hash. Cache keys and ETags include it, so a second symbolization
// pass that rewrites the copy gets new keys and new ETags.
func (l *Loaded) Variant() string {
	if l.Symbolized {
		return "symbolized-" + l.Version
	}
	return "original-" + l.Version
}

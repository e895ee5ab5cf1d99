package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"google.golang.org/protobuf/encoding/protowire"

	"viewer/symbolize"
)

// otlpFormat reads OpenTelemetry profiles: an OTLP export request or a
// ProfilesData file (the same message), as protobuf or as OTLP JSON. An
// input holding several profiles of one sample type is merged into one;
// the OTLP endpoint keeps them apart (FromOTLP).
var otlpFormat = Format{Name: "OTLP profiles", Sniff: sniffOTLP, Parse: parseOTLP}

// Attribute keys viewer reads from OTLP profiles (OTel semantic conventions).
const (
	// AttrBuildIDGNU is a mapping's GNU build ID, as the OTel eBPF
	// profiler writes it.
	AttrBuildIDGNU = "process.executable.build_id.gnu"
	// AttrService names the service a resource belongs to.
	AttrService = "service.name"
)

// titleAttrs are the resource attributes a profile's title is made of.
var titleAttrs = []string{AttrService, "host.name", "process.executable.name"}

// sniffOTLP accepts OTLP JSON (an object whose first key is
// resourceProfiles or dictionary) and a protobuf whose first field is 1
// (resource_profiles) or 2 (dictionary) and holds a message whose own
// first field is length-delimited too: in a pprof Profile, field 1 is a
// ValueType of varints and a valid one always has a string table.
func sniffOTLP(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n")
	if len(t) > 0 && t[0] == '{' {
		t = bytes.TrimLeft(t[1:], " \t\r\n")
		return bytes.HasPrefix(t, []byte(`"resourceProfiles"`)) || bytes.HasPrefix(t, []byte(`"dictionary"`))
	}
	num, typ, n := protowire.ConsumeTag(head)
	if n < 0 || (num != 1 && num != 2) || typ != protowire.BytesType {
		return false
	}
	rest := head[n:]
	if _, m := protowire.ConsumeVarint(rest); m > 0 {
		_, typ, k := protowire.ConsumeTag(rest[m:])
		return k > 0 && typ == protowire.BytesType
	}
	return false
}

// parseOTLP reads an OTLP profiles input (a file, an upload) into one
// profile: profiles of one sample type are merged, and profiles of
// different types (OTLP has one per profile) become the sample types of
// the one pprof profile, each sample zero in the others.
func parseOTLP(data []byte, lim Limits) (*profile.Profile, error) {
	r := lim.reserve
	if r == nil {
		r = &reservation{b: lim.Memory, ctx: context.Background()}
	}
	// ParseFile took at least the bytes (estimate).
	ps, release, err := decodeOTLP(data, isJSON(data), lim, r, int64(len(data)))
	if err != nil {
		return nil, err
	}
	defer release()
	got, err := FromOTLP(ps, lim)
	if err != nil {
		return nil, err
	}
	if len(got.Profiles) == 0 {
		msg := "the OTLP input holds no profiles"
		if m := got.Message(); m != "" {
			msg += " that can be read: " + m
		}
		return nil, fmt.Errorf("%w: %s", ErrEmpty, msg)
	}
	var types []*profile.ValueType
	index := map[profile.ValueType]int{}
	for _, op := range got.Profiles {
		vt := *op.Profile.SampleType[0]
		if _, ok := index[vt]; !ok {
			index[vt] = len(types)
			types = append(types, &vt)
		}
	}
	all := make([]*profile.Profile, len(got.Profiles))
	for i, op := range got.Profiles {
		p := op.Profile
		at := index[*p.SampleType[0]]
		for _, s := range p.Sample {
			v := make([]int64, len(types))
			v[at] = s.Value[0]
			s.Value = v
		}
		p.SampleType = types
		if p.PeriodType == nil && len(got.Profiles) > 1 {
			p.PeriodType = &profile.ValueType{}
		}
		all[i] = p
	}
	p, err := profile.Merge(all)
	if err != nil {
		return nil, fmt.Errorf("%w: its profiles cannot be merged into one (%v); send them to the OTLP endpoint, which keeps each profile apart", ErrCorrupt, err)
	}
	p.Comments = got.Profiles[0].Profile.Comments
	return p, nil
}

// UnmarshalOTLP decodes an OTLP profiles request or ProfilesData file,
// as OTLP JSON when it starts with '{' and as protobuf otherwise.
func UnmarshalOTLP(data []byte) (pprofile.Profiles, error) {
	var (
		ps  pprofile.Profiles
		err error
	)
	if isJSON(data) {
		ps, err = (&pprofile.JSONUnmarshaler{}).UnmarshalProfiles(data)
	} else {
		ps, err = (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(data)
	}
	if err != nil {
		return pprofile.Profiles{}, fmt.Errorf("%w: not a valid OTLP profiles message: %v", ErrCorrupt, err)
	}
	return ps, nil
}

// decodeOTLP pre-scans an OTLP request (prescanOTLP), refusing it over
// lim before anything is decoded, takes from r's budget what decoding and
// converting it is estimated to allocate (the bytes included) beyond
// covered, what its caller took, and decodes it. release gives back what
// it took, once the converted profiles are stored.
func decodeOTLP(data []byte, json bool, lim Limits, r *reservation, covered int64) (ps pprofile.Profiles, release func(), err error) {
	c, err := prescanOTLP(data, json, lim)
	if err != nil {
		return ps, nil, err
	}
	extra := c.memory(int64(len(data))) - covered
	mine := &reservation{b: r.b, ctx: r.ctx}
	if err := mine.grow(extra, "OTLP request"); err != nil {
		return ps, nil, err
	}
	if ps, err = UnmarshalOTLP(data); err != nil {
		mine.release()
		return ps, nil, err
	}
	return ps, mine.release, nil
}

// OTLPProfile is one OTLP profile converted to pprof, with what its
// resource says about where it came from.
type OTLPProfile struct {
	Profile *profile.Profile
	// Title names the profile from its resource ("checkout on host-1
	// (checkout-svc)"); "" when the resource names nothing.
	Title string
	// Service is the resource's service.name, "" when unset.
	Service string
}

// OTLPResult is what FromOTLP made of a request: the profiles it
// converted, and the ones it rejected with why, for the OTLP partial
// success answer.
type OTLPResult struct {
	Profiles []OTLPProfile
	Rejected int
	Reasons  []string
	// release gives back the memory ParseOTLP took for the request's
	// decoding and its profiles (Release).
	release func()
}

// Release gives back the memory ParseOTLP took for the request beyond
// what its caller reserved: call it once the profiles are stored.
func (r *OTLPResult) Release() {
	if r != nil && r.release != nil {
		r.release()
		r.release = nil
	}
}

// maxOTLPMessage bounds the partial-success message (Message): each
// rejected profile may give a reason of its own (an index out of its
// table names the index).
const maxOTLPMessage = 4 << 10

// Message is the partial-success message: the distinct reasons profiles
// were rejected, or "" when none was, up to maxOTLPMessage bytes, then
// how many more reasons there were.
func (r *OTLPResult) Message() string {
	seen := map[string]bool{}
	var b strings.Builder
	more := 0
	for _, s := range r.Reasons {
		if seen[s] {
			continue
		}
		seen[s] = true
		if b.Len()+len(s)+2 > maxOTLPMessage {
			more++
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(s)
	}
	if more > 0 {
		fmt.Fprintf(&b, "; and %d other reasons", more)
	}
	return b.String()
}

// FromOTLP converts each profile of ps to a pprof profile, checked and
// with its caller addresses made call sites as Parse leaves every format's. A profile that
// is malformed (an index out of its table) or over lim is rejected and
// counted, and the others are kept: one bad profile never fails the
// request. Resource, scope and profile attributes become labels of every
// sample, beside each sample's own; mappings keep their GNU build ID.
// It fails only when lim.MaxBytes-style limits make the whole request
// too large (ErrTooLarge).
func FromOTLP(ps pprofile.Profiles, lim Limits) (*OTLPResult, error) {
	res := &OTLPResult{}
	dict := ps.Dictionary()
	samples, profiles := 0, 0
	rps := ps.ResourceProfiles()
	for i := range rps.Len() {
		for j := range rps.At(i).ScopeProfiles().Len() {
			profiles += rps.At(i).ScopeProfiles().At(j).Profiles().Len()
		}
	}
	if lim.MaxOTLPProfiles > 0 && profiles > lim.MaxOTLPProfiles {
		return nil, fmt.Errorf("%w: the OTLP request holds more than %d profiles (%d; restart the server with a larger --max-otlp-profiles to accept it, or send fewer per request)", ErrTooLarge, lim.MaxOTLPProfiles, profiles)
	}
	// One converter for the request: its index of each dictionary table
	// is made once, not once per profile.
	c := newOTLPConverter(dict, lim)
	for i := range rps.Len() {
		rp := rps.At(i)
		resLabels := stringAttrs(rp.Resource().Attributes())
		sps := rp.ScopeProfiles()
		for j := range sps.Len() {
			sp := sps.At(j)
			prs := sp.Profiles()
			for k := range prs.Len() {
				pr := prs.At(k)
				samples += pr.Samples().Len()
				if lim.MaxSamples > 0 && samples > lim.MaxSamples {
					return nil, fmt.Errorf("%w: the request holds more than %d samples (--max-samples); send fewer profiles per request", ErrTooLarge, lim.MaxSamples)
				}
				p, err := c.profile(pr, resLabels, sp.Scope())
				if err != nil {
					if errors.Is(err, ErrTooLarge) {
						return nil, err
					}
					res.Rejected++
					res.Reasons = append(res.Reasons, err.Error())
					continue
				}
				if len(p.Sample) == 0 {
					res.Rejected++
					res.Reasons = append(res.Reasons, "a profile has no samples")
					continue
				}
				// What Parse does to every format's profile (ingest.go).
				if err := lim.checkCounts(p); err != nil {
					return nil, err
				}
				if err := lim.limitFrames(p); err != nil {
					return nil, err
				}
				symbolize.CallSites(p)
				res.Profiles = append(res.Profiles, OTLPProfile{Profile: p, Title: otlpTitle(resLabels), Service: resLabels[AttrService]})
			}
		}
	}
	return res, nil
}

// otlpTitle joins what the resource says: "service on host (executable)".
func otlpTitle(attrs map[string]string) string {
	svc, host, exe := attrs[titleAttrs[0]], attrs[titleAttrs[1]], attrs[titleAttrs[2]]
	var b strings.Builder
	b.WriteString(svc)
	if host != "" {
		if b.Len() > 0 {
			b.WriteString(" on ")
		}
		b.WriteString(host)
	}
	if exe != "" && exe != svc {
		if b.Len() > 0 {
			fmt.Fprintf(&b, " (%s)", exe)
		} else {
			b.WriteString(exe)
		}
	}
	return b.String()
}

// stringAttrs renders an attribute map as strings (pcommon's AsString).
func stringAttrs(m pcommon.Map) map[string]string {
	out := make(map[string]string, m.Len())
	for k, v := range m.All() {
		out[k] = v.AsString()
	}
	return out
}

// otlpConverter converts one profile against the request's dictionary,
// creating each mapping, function and location the first time a sample
// names it.
type otlpConverter struct {
	dict pprofile.ProfilesDictionary
	lim  Limits
	p    *profile.Profile

	// What each dictionary index became, made the first time a sample
	// names it; slices indexed by the dictionary's indices, as a map
	// lookup per frame was a fifth of the conversion.
	mappings  []*profile.Mapping
	functions []*profile.Function
	locations []*profile.Location
	// slab is where the next locations are made, a few hundred at a time
	// rather than one allocation each.
	slab []profile.Location
	// frames are the frames the request's samples made so far, each
	// location's lines each (limitFrames' count), against MaxFrames.
	frames int64
	// made are the dictionary indices the profile being converted made
	// an entry for, cleared before the next profile (reset).
	madeLocations, madeFunctions, madeMappings []int32
	// labels are the label maps of samples with attributes, by their
	// attributes (canonical indices): samples with the same attributes
	// share one, as samples without share the profile's.
	labels map[string]sampleLabels
	// canon is, by attribute index, the first index of an equal attribute
	// (key, unit and value) plus one, 0 when not yet looked up; attrIDs
	// finds it. An exporter that repeats an attribute in the table for
	// each sample still has its samples share their labels.
	canon   []int32
	attrIDs map[attrID]int32
}

// newOTLPConverter is the converter of a request with dictionary dict.
func newOTLPConverter(dict pprofile.ProfilesDictionary, lim Limits) *otlpConverter {
	return &otlpConverter{
		dict:      dict,
		lim:       lim,
		mappings:  make([]*profile.Mapping, dict.MappingTable().Len()),
		functions: make([]*profile.Function, dict.FunctionTable().Len()),
		locations: make([]*profile.Location, dict.LocationTable().Len()),
		canon:     make([]int32, dict.AttributeTable().Len()),
		attrIDs:   map[attrID]int32{},
	}
}

// reset clears what the last profile made, so that the next one makes
// its own locations, functions and mappings: a cost of what it made, not
// of the dictionary's size.
func (c *otlpConverter) reset() {
	for _, i := range c.madeLocations {
		c.locations[i] = nil
	}
	for _, i := range c.madeFunctions {
		c.functions[i] = nil
	}
	for _, i := range c.madeMappings {
		c.mappings[i] = nil
	}
	c.madeLocations, c.madeFunctions, c.madeMappings = c.madeLocations[:0], c.madeFunctions[:0], c.madeMappings[:0]
	c.slab = nil
	c.labels = map[string]sampleLabels{}
}

// attrID is what makes two attribute table entries the same label.
type attrID struct {
	key, unit int32
	typ       pcommon.ValueType
	val       string
}

// canonAttr is the first index of the attribute table holding the same
// attribute as index i, which is in the table.
func (c *otlpConverter) canonAttr(i int32) int32 {
	if c.canon[i] != 0 {
		return c.canon[i] - 1
	}
	kv := c.dict.AttributeTable().At(int(i))
	id := attrID{kv.KeyStrindex(), kv.UnitStrindex(), kv.Value().Type(), kv.Value().AsString()}
	first, ok := c.attrIDs[id]
	if !ok {
		first = i
		c.attrIDs[id] = i
	}
	c.canon[i] = first + 1
	return first
}

// sampleLabels are the labels of samples with the same attributes.
type sampleLabels struct {
	str   map[string][]string
	num   map[string][]int64
	units map[string][]string
}

// errIndex is a dictionary index out of its table.
func errIndex(table string, i int32, n int) error {
	return fmt.Errorf("%s index %d is outside the dictionary's %d entries", table, i, n)
}

func (c *otlpConverter) str(i int32) (string, error) {
	st := c.dict.StringTable()
	if i < 0 || int(i) >= st.Len() {
		return "", errIndex("string", i, st.Len())
	}
	return st.At(int(i)), nil
}

func (c *otlpConverter) valueType(vt pprofile.ValueType) (*profile.ValueType, error) {
	t, err := c.str(vt.TypeStrindex())
	if err != nil {
		return nil, err
	}
	u, err := c.str(vt.UnitStrindex())
	if err != nil {
		return nil, err
	}
	return &profile.ValueType{Type: t, Unit: u}, nil
}

// attrs resolves attribute indices into string labels and numeric labels
// (int values, with their unit).
func (c *otlpConverter) attrs(idx pcommon.Int32Slice, str map[string][]string, num map[string][]int64, units map[string][]string) error {
	table := c.dict.AttributeTable()
	for _, i := range idx.All() {
		if i < 0 || int(i) >= table.Len() {
			return errIndex("attribute", i, table.Len())
		}
		kv := table.At(int(i))
		key, err := c.str(kv.KeyStrindex())
		if err != nil {
			return err
		}
		v := kv.Value()
		if v.Type() == pcommon.ValueTypeInt && num != nil {
			unit, err := c.str(kv.UnitStrindex())
			if err != nil {
				return err
			}
			num[key] = append(num[key], v.Int())
			units[key] = append(units[key], unit)
			continue
		}
		str[key] = append(str[key], v.AsString())
	}
	return nil
}

func (c *otlpConverter) profile(pr pprofile.Profile, resLabels map[string]string, scope pcommon.InstrumentationScope) (*profile.Profile, error) {
	st, err := c.valueType(pr.SampleType())
	if err != nil {
		return nil, err
	}
	if st.Type == "" {
		st.Type, st.Unit = "samples", "count"
	}
	c.p = &profile.Profile{
		SampleType:    []*profile.ValueType{st},
		TimeNanos:     int64(pr.Time()),
		DurationNanos: int64(pr.DurationNano()),
		Period:        pr.Period(),
	}
	if pt, err := c.valueType(pr.PeriodType()); err == nil && pt.Type != "" {
		c.p.PeriodType = pt
	}
	c.reset()

	// Labels every sample carries: the resource's, the scope's and the
	// profile's own attributes.
	base := map[string][]string{}
	for k, v := range resLabels {
		base[k] = []string{v}
	}
	for k, v := range stringAttrs(scope.Attributes()) {
		base[k] = []string{v}
	}
	if err := c.attrs(pr.AttributeIndices(), base, nil, nil); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(base))
	for k := range base {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c.p.Comments = append(c.p.Comments, k+"="+strings.Join(base[k], ","))
	}

	stacks := c.dict.StackTable()
	samples := pr.Samples()
	// Samples, their values and their stacks' location lists are
	// allocated together, a few arrays per profile rather than three
	// objects per sample.
	c.p.Sample = make([]*profile.Sample, 0, samples.Len())
	recs := make([]profile.Sample, samples.Len())
	values := make([]int64, samples.Len())
	nframes := 0
	for i := range samples.Len() {
		if si := samples.At(i).StackIndex(); si >= 0 && int(si) < stacks.Len() {
			nframes += stacks.At(int(si)).LocationIndices().Len()
		}
	}
	// The request's frames are bounded before this profile's are
	// allocated: a stack of a million locations named by each of a
	// million samples is 10^12 frames in a few megabytes.
	if c.lim.MaxFrames > 0 && c.frames+int64(nframes) > int64(c.lim.MaxFrames) {
		return nil, fmt.Errorf("%w: the request's stacks hold more than %d frames (--max-frames)", ErrTooLarge, c.lim.MaxFrames)
	}
	frames := make([]*profile.Location, nframes)
	// As many locations as the stacks can name, at most: no growth.
	c.p.Location = make([]*profile.Location, 0, min(len(c.locations), nframes))
	var key []byte
	for i := range samples.Len() {
		s := samples.At(i)
		si := s.StackIndex()
		if si < 0 || int(si) >= stacks.Len() {
			return nil, errIndex("stack", si, stacks.Len())
		}
		// A sample counts its values; one with only timestamps counts
		// one per timestamp, and one with neither counts once.
		var v int64
		vals := s.Values()
		for _, x := range vals.All() {
			v += x
		}
		if vals.Len() == 0 {
			v = int64(max(1, s.TimestampsUnixNano().Len()))
		}
		values[i] = v
		ps := &recs[i]
		ps.Value, ps.Label = values[i:i+1:i+1], base
		if ai := s.AttributeIndices(); ai.Len() > 0 {
			key = key[:0]
			for j := range ai.Len() {
				a := ai.At(j)
				if a < 0 || int(a) >= len(c.canon) {
					return nil, errIndex("attribute", a, len(c.canon))
				}
				key = binary.LittleEndian.AppendUint32(key, uint32(c.canonAttr(a)))
			}
			sl, ok := c.labels[string(key)]
			if !ok {
				sl.str = make(map[string][]string, len(base)+ai.Len())
				for k, v := range base {
					sl.str[k] = v
				}
				num, units := map[string][]int64{}, map[string][]string{}
				if err := c.attrs(ai, sl.str, num, units); err != nil {
					return nil, err
				}
				if len(num) > 0 {
					sl.num, sl.units = num, units
				}
				c.labels[string(key)] = sl
			}
			ps.Label, ps.NumLabel, ps.NumUnit = sl.str, sl.num, sl.units
		}
		lis := stacks.At(int(si)).LocationIndices()
		ps.Location, frames = frames[:lis.Len():lis.Len()], frames[lis.Len():]
		for j := range lis.Len() {
			loc, err := c.location(lis.At(j))
			if err != nil {
				return nil, err
			}
			ps.Location[j] = loc
			c.frames += int64(max(1, len(loc.Line)))
		}
		if c.lim.MaxFrames > 0 && c.frames > int64(c.lim.MaxFrames) {
			return nil, fmt.Errorf("%w: the request's stacks hold more than %d frames (--max-frames)", ErrTooLarge, c.lim.MaxFrames)
		}
		c.p.Sample = append(c.p.Sample, ps)
	}
	for _, l := range c.p.Location {
		if m := l.Mapping; m != nil && len(l.Line) > 0 {
			m.HasFunctions = true
			m.HasFilenames = m.HasFilenames || l.Line[0].Function.Filename != ""
			m.HasLineNumbers = m.HasLineNumbers || l.Line[0].Line != 0
			m.HasInlineFrames = m.HasInlineFrames || len(l.Line) > 1
		}
	}
	// Valid by construction, so pprof's CheckValid (its maps of every
	// ID, 3% of the intake's CPU) is not run: one value per sample for
	// the one sample type, IDs that are positions + 1, and each location's
	// mapping and functions made here and listed once.
	return c.p, nil
}

func (c *otlpConverter) location(i int32) (*profile.Location, error) {
	if i < 0 || int(i) >= len(c.locations) {
		return nil, errIndex("location", i, len(c.locations))
	}
	if l := c.locations[i]; l != nil {
		return l, nil
	}
	table := c.dict.LocationTable()
	if c.lim.MaxLocations > 0 && len(c.p.Location) >= c.lim.MaxLocations {
		return nil, fmt.Errorf("%w: a profile has more than %d locations (--max-locations)", ErrTooLarge, c.lim.MaxLocations)
	}
	ol := table.At(int(i))
	if len(c.slab) == 0 {
		c.slab = make([]profile.Location, min(256, len(c.locations)-len(c.p.Location)))
	}
	l := &c.slab[0]
	c.slab = c.slab[1:]
	l.ID, l.Address = uint64(len(c.p.Location)+1), ol.Address()
	// Index 0 of the mapping table is the zero mapping: no mapping.
	if mi := ol.MappingIndex(); mi > 0 {
		m, err := c.mapping(mi)
		if err != nil {
			return nil, err
		}
		l.Mapping = m
	}
	lines := ol.Lines()
	for j := range lines.Len() {
		ln := lines.At(j)
		f, err := c.function(ln.FunctionIndex())
		if err != nil {
			return nil, err
		}
		l.Line = append(l.Line, profile.Line{Function: f, Line: ln.Line(), Column: ln.Column()})
	}
	c.locations[i] = l
	c.madeLocations = append(c.madeLocations, i)
	c.p.Location = append(c.p.Location, l)
	return l, nil
}

func (c *otlpConverter) mapping(i int32) (*profile.Mapping, error) {
	if int(i) >= len(c.mappings) {
		return nil, errIndex("mapping", i, len(c.mappings))
	}
	if m := c.mappings[i]; m != nil {
		return m, nil
	}
	table := c.dict.MappingTable()
	if c.lim.MaxMappings > 0 && len(c.p.Mapping) >= c.lim.MaxMappings {
		return nil, fmt.Errorf("%w: a profile has more than %d mappings (--max-mappings)", ErrTooLarge, c.lim.MaxMappings)
	}
	om := table.At(int(i))
	file, err := c.str(om.FilenameStrindex())
	if err != nil {
		return nil, err
	}
	attrs := map[string][]string{}
	if err := c.attrs(om.AttributeIndices(), attrs, nil, nil); err != nil {
		return nil, err
	}
	m := &profile.Mapping{
		ID:     uint64(len(c.p.Mapping) + 1),
		Start:  om.MemoryStart(),
		Limit:  om.MemoryLimit(),
		Offset: om.FileOffset(),
		File:   file,
	}
	if b := attrs[AttrBuildIDGNU]; len(b) > 0 {
		m.BuildID = strings.ToLower(b[0])
	}
	c.mappings[i] = m
	c.madeMappings = append(c.madeMappings, i)
	c.p.Mapping = append(c.p.Mapping, m)
	return m, nil
}

func (c *otlpConverter) function(i int32) (*profile.Function, error) {
	if i < 0 || int(i) >= len(c.functions) {
		return nil, errIndex("function", i, len(c.functions))
	}
	if f := c.functions[i]; f != nil {
		return f, nil
	}
	table := c.dict.FunctionTable()
	if c.lim.MaxFunctions > 0 && len(c.p.Function) >= c.lim.MaxFunctions {
		return nil, fmt.Errorf("%w: a profile has more than %d functions (--max-functions)", ErrTooLarge, c.lim.MaxFunctions)
	}
	of := table.At(int(i))
	name, err := c.str(of.NameStrindex())
	if err != nil {
		return nil, err
	}
	sys, err := c.str(of.SystemNameStrindex())
	if err != nil {
		return nil, err
	}
	file, err := c.str(of.FilenameStrindex())
	if err != nil {
		return nil, err
	}
	f := &profile.Function{ID: uint64(len(c.p.Function) + 1), Name: name, SystemName: sys, Filename: file, StartLine: of.StartLine()}
	c.functions[i] = f
	c.madeFunctions = append(c.madeFunctions, i)
	c.p.Function = append(c.p.Function, f)
	return f, nil
}

// otlpMemoryFactor is what decoding and converting an OTLP input of n
// bytes is estimated to allocate, as a multiple of n (pdata's decoded
// messages, then the pprof profile).
const otlpMemoryFactor = 8

// ParseOTLPFile reads an OTLP profiles request spooled to f (gzip or not;
// OTLP JSON when json is set, else protobuf) within lim and its memory budget, and converts
// each of its profiles (FromOTLP).
func ParseOTLPFile(ctx context.Context, f *os.File, json bool, lim Limits) (*OTLPResult, error) {
	// Its tables are counted as it inflates: one over a limit stops there.
	lim.otlpStream = func(r io.Reader) error { return countOTLP(r, json, lim) }
	in, err := inflateLayers(ctx, f, lim, false)
	if err != nil {
		return nil, err
	}
	defer in.remove()
	// The inflated request is mapped, not read into memory, while it is
	// pre-scanned and decoded (pdata copies what it keeps): a request
	// refused for its tables costs no memory for its bytes, and one
	// accepted takes its estimate, its bytes included, once counted.
	data, _, unmap, err := mapFile(in.src, in.size)
	if err != nil {
		release, err := lim.Memory.take(ctx, in.size, "OTLP request")
		if err != nil {
			return nil, err
		}
		defer release()
		data = make([]byte, in.size)
		if _, err := in.src.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
	} else {
		defer unmap()
	}
	return parseOTLPData(ctx, data, json, lim, 0)
}

// OTLPInMemory is the largest OTLP request body, as sent, that the
// endpoint reads into memory (ReadOTLP) rather than spooling it to a
// file: a profiler's request is a few hundred kilobytes, and spooling it
// was a twentieth of the intake's CPU time.
const OTLPInMemory = 4 << 20

// ReadOTLP reads an OTLP request body of exactly size bytes (its
// Content-Length) into memory, reserving from lim.Memory as its bytes
// arrive (the buffer they fill, and what decoding them takes, as
// ParseOTLPFile reckons it), so that a client trickling its body holds
// memory for what it sent, not for what it announced: ErrBusy when the
// budget stays taken, ErrTooLarge when it is too small for size. Other
// errors are the body's. release gives the memory back, and data's buffer
// to the next request (pdata's decoder copies what it keeps,
// TestParseOTLPKeepsNoBody): data must not be used after it.
func ReadOTLP(ctx context.Context, r io.Reader, size int64, lim Limits) (data []byte, release func(), err error) {
	if lim.MaxBytes > 0 && size > lim.MaxBytes {
		return nil, nil, fmt.Errorf("%w: %d bytes is over the %d-byte limit", ErrTooLarge, size, lim.MaxBytes)
	}
	if err := lim.Memory.fits(size+otlpMemoryFactor*size, "OTLP request"); err != nil {
		return nil, nil, err
	}
	res := &reservation{b: lim.Memory, ctx: ctx}
	var buf []byte
	put := func() {}
	release = func() {
		put()
		res.release()
	}
	var n int64
	for n < size {
		end := min(size, n+otlpReadStep)
		if int64(len(buf)) < end {
			nb, nput := otlpBody(min(size, max(end, 2*int64(len(buf)))))
			if err := res.grow(int64(cap(nb))+otlpMemoryFactor*end-res.held, "OTLP request"); err != nil {
				nput()
				release()
				return nil, nil, err
			}
			copy(nb, buf[:n])
			put()
			buf, put = nb[:cap(nb)], nput
		} else if err := res.grow(int64(cap(buf))+otlpMemoryFactor*end-res.held, "OTLP request"); err != nil {
			release()
			return nil, nil, err
		}
		m, err := io.ReadFull(r, buf[n:end])
		n += int64(m)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			release()
			return nil, nil, fmt.Errorf("%w: the body holds %d bytes, its Content-Length says %d", ErrCorrupt, n, size)
		}
		if err != nil {
			release()
			return nil, nil, err
		}
	}
	// Exactly size bytes: the body must end here.
	var one [1]byte
	m, err := io.ReadFull(r, one[:])
	switch {
	case err == io.EOF:
		return buf[:size], release, nil
	case m > 0:
		err = fmt.Errorf("%w: the body holds more than %d bytes, its Content-Length", ErrCorrupt, size)
	}
	release()
	return nil, nil, err
}

// otlpReadStep is how many more bytes of an OTLP body ReadOTLP reserves
// memory for before reading them.
const otlpReadStep = 64 << 10

// otlpBodies keep ReadOTLP's buffers, one pool per power of two from
// 64 KiB to OTLPInMemory: a new buffer per request (zeroed, then
// reclaimed) was a sixteenth of what the intake allocated.
var otlpBodies [7]sync.Pool

// otlpBody is a buffer of at least size bytes, and put, which hands it
// back: pooled up to OTLPInMemory, allocated beyond.
func otlpBody(size int64) (buf []byte, put func()) {
	c := max(0, bits.Len64(uint64(max(size, 1)-1))-16)
	if c >= len(otlpBodies) {
		return make([]byte, size), func() {}
	}
	bp, _ := otlpBodies[c].Get().(*[]byte)
	if bp == nil {
		b := make([]byte, 1<<(16+c))
		bp = &b
	}
	return *bp, func() { otlpBodies[c].Put(bp) }
}

// ParseOTLP converts each profile of an OTLP request in data (not
// gzipped; OTLP JSON when json is set, else protobuf), whose bytes and
// otlpMemoryFactor × their size the caller reserved (ReadOTLP,
// ParseOTLPFile). Its tables are counted first (prescanOTLP) and the
// request refused over lim; what decoding and converting them takes
// beyond that is taken from lim.Memory and held until res.Release.
func ParseOTLP(ctx context.Context, data []byte, json bool, lim Limits) (*OTLPResult, error) {
	size := int64(len(data))
	return parseOTLPData(ctx, data, json, lim, size+otlpMemoryFactor*size)
}

// parseOTLPData is ParseOTLP for a request whose caller took covered
// bytes of lim.Memory for it.
func parseOTLPData(ctx context.Context, data []byte, json bool, lim Limits, covered int64) (*OTLPResult, error) {
	if isGzip(data) {
		return nil, fmt.Errorf("%w: the body is gzip-compressed without Content-Encoding: gzip; send that header with it", ErrCorrupt)
	}
	if json != isJSON(data) {
		if json {
			return nil, fmt.Errorf("%w: the body is sent as application/json but is not a JSON object", ErrCorrupt)
		}
		return nil, fmt.Errorf("%w: the body is sent as application/x-protobuf but looks like JSON; send Content-Type: application/json", ErrCorrupt)
	}
	ps, release, err := decodeOTLP(data, json, lim, &reservation{b: lim.Memory, ctx: ctx}, covered)
	if err != nil {
		return nil, err
	}
	res, err := FromOTLP(ps, lim)
	if err != nil {
		release()
		return nil, err
	}
	res.release = release
	return res, nil
}

package flame

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"viewer/symbolize/sampling"
	"viewer/web/prefault"
)

// Filter selects samples and frames by regular expressions on frame names,
// with pprof's meaning and query parameter names:
//
//   - f (focus): keep only samples with a frame matching Focus;
//   - i (ignore): drop samples with a frame matching Ignore;
//   - h (hide): remove frames matching Hide from every stack;
//   - s (show): keep only frames matching Show (the root stays).
//
// A frame matches when its name (function, or binary+0xOFFSET when
// unsymbolized) or its binary's path matches, as pprof matches a
// location's function or mapping. Focus and Ignore look at the stack
// before Hide and Show remove frames, as in pprof. Regexps are
// case-sensitive, as pprof's are.
type Filter struct {
	Focus, Ignore, Hide, Show *regexp.Regexp
	// Time, when set, keeps only the samples taken in it (t=).
	Time *TimeRange
}

// TimeRange is a half-open range [From, To) of nanoseconds since a
// recording's first sample, as the t query parameter gives it in seconds
// ("1.5-2.25"). It keeps the samples whose sampling.TimeLabel is in it; a
// profile without times has none in any range.
type TimeRange struct{ From, To int64 }

// ParseTimeRange reads t=FROM-TO, in seconds since the first sample; ""
// is no range.
func ParseTimeRange(t string) (*TimeRange, error) {
	if t == "" {
		return nil, nil
	}
	from, to, ok := strings.Cut(t, "-")
	a, err1 := strconv.ParseFloat(from, 64)
	b, err2 := strconv.ParseFloat(to, 64)
	if !ok || err1 != nil || err2 != nil || a < 0 || b <= a || b > 1e9 {
		return nil, fmt.Errorf("t=%q is not a time range: give FROM-TO in seconds since the first sample, FROM below TO (t=1.5-2.25)", t)
	}
	return &TimeRange{From: int64(a * 1e9), To: int64(b * 1e9)}, nil
}

// String is the range as the t parameter writes it.
func (r TimeRange) String() string {
	return strconv.FormatFloat(float64(r.From)/1e9, 'f', -1, 64) + "-" + strconv.FormatFloat(float64(r.To)/1e9, 'f', -1, 64)
}

// Has reports whether sample s was taken in r.
func (r TimeRange) Has(s *profile.Sample) bool {
	ts := s.NumLabel[sampling.TimeLabel]
	return len(ts) == 1 && ts[0] >= r.From && ts[0] < r.To
}

// inTime is p's samples that f.Time keeps, as a profile of only those
// (what groupStacks reads); p when f has no range.
func (f Filter) inTime(p *profile.Profile) *profile.Profile {
	if f.Time == nil {
		return p
	}
	q := &profile.Profile{Sample: make([]*profile.Sample, 0, len(p.Sample)/4)}
	for _, s := range p.Sample {
		if f.Time.Has(s) {
			q.Sample = append(q.Sample, s)
		}
	}
	return q
}

// FilterParams are the query parameter names of Filter's fields, in order.
var FilterParams = [4]string{"f", "i", "h", "s"}

// ParseFilter compiles pprof's f, i, h and s parameters; empty ones are
// off. The error names the parameter with the bad regexp.
func ParseFilter(focus, ignore, hide, show string) (Filter, error) {
	var f Filter
	for i, p := range []struct {
		v   string
		dst **regexp.Regexp
	}{{focus, &f.Focus}, {ignore, &f.Ignore}, {hide, &f.Hide}, {show, &f.Show}} {
		if p.v == "" {
			continue
		}
		re, err := regexp.Compile(p.v)
		if err != nil {
			return Filter{}, fmt.Errorf("%s=%q is not a valid regular expression: %v", FilterParams[i], p.v, err)
		}
		*p.dst = re
	}
	return f, nil
}

// Active reports whether f filters anything.
func (f Filter) Active() bool {
	return f.Focus != nil || f.Ignore != nil || f.Hide != nil || f.Show != nil || f.Time != nil
}

// Key is a string that differs between filters that select differently,
// for cache keys.
func (f Filter) Key() string {
	if !f.Active() {
		return ""
	}
	s := func(re *regexp.Regexp) string {
		if re == nil {
			return ""
		}
		return re.String()
	}
	k := fmt.Sprintf("%q%q%q%q", s(f.Focus), s(f.Ignore), s(f.Hide), s(f.Show))
	if f.Time != nil {
		k += fmt.Sprintf("t%d-%d", f.Time.From, f.Time.To)
	}
	return k
}

// matcher caches, per frame name ID, whether each of a filter's regexps
// matches it.
type matcher struct {
	f    Filter
	fr   *frames
	bits []uint8 // per name ID: 1<<4 when computed, then 1<<k for regexp k
}

func newMatcher(f Filter, fr *frames) *matcher {
	return &matcher{f: f, fr: fr, bits: make([]uint8, len(fr.names))}
}

const (
	bitFocus = 1 << iota
	bitIgnore
	bitHide
	bitShow
	bitDone
)

func (m *matcher) get(nm int32) uint8 {
	b := m.bits[nm]
	if b&bitDone != 0 {
		return b
	}
	b = bitDone
	name := m.fr.names[nm]
	mapping := ""
	if mi := m.fr.nameMapping[nm]; mi >= 0 {
		mapping = m.fr.mappings[mi]
	}
	match := func(re *regexp.Regexp) bool {
		return re != nil && (re.MatchString(name) || mapping != "" && re.MatchString(mapping))
	}
	if match(m.f.Focus) {
		b |= bitFocus
	}
	if match(m.f.Ignore) {
		b |= bitIgnore
	}
	if match(m.f.Hide) {
		b |= bitHide
	}
	if m.f.Show != nil && !match(m.f.Show) {
		b |= bitShow // not shown
	}
	m.bits[nm] = b
	return b
}

// apply filters one stack (root first): ok is false when the sample is
// dropped; out holds the frames that remain.
func (m *matcher) apply(seq, out []int32) (_ []int32, ok bool) {
	focused := m.f.Focus == nil
	for _, nm := range seq {
		b := m.get(nm)
		if b&bitIgnore != 0 {
			return out, false
		}
		if b&bitFocus != 0 {
			focused = true
		}
	}
	if !focused {
		return out, false
	}
	for _, nm := range seq {
		if m.get(nm)&(bitHide|bitShow) == 0 {
			out = append(out, nm)
		}
	}
	return out, true
}

// stacks returns the samples of p for si that pass f, as frames.
func (f Filter) stacks(p *profile.Profile, si int, fr *frames) []weighted {
	ws, _ := f.stacksOf(groupStacks(f.inTime(p), si), fr)
	return ws
}

// stacksOf is stacks of the grouped stacks uniq (f.Time is not looked at):
// kept[k] is the index in uniq of ws[k].
func (f Filter) stacksOf(uniq []stack, fr *frames) (ws []weighted, kept []int32) {
	if f.Focus == nil && f.Ignore == nil && f.Hide == nil && f.Show == nil {
		// Nothing to match: every stack is kept, expanded on two
		// goroutines when there are many.
		ws = make([]weighted, len(uniq))
		kept = make([]int32, len(uniq))
		for k := range kept {
			kept[k] = int32(k)
		}
		if len(uniq) < parallelSortMin {
			fr.expandInto(ws, uniq)
			return ws, kept
		}
		half := len(uniq) / 2
		inTwo(fr.work, func(w *work) {
			fr.withWork(w).expandInto(ws[:half], uniq[:half])
		}, func(w *work) {
			fr.withWork(w).expandInto(ws[half:], uniq[half:])
		})
		return ws, kept
	}
	m := newMatcher(f, fr)
	ws = make([]weighted, 0, len(uniq))
	kept = make([]int32, 0, len(uniq))
	all := make([]int32, 0, framesOf(uniq, fr))
	prefault.Slice(all)
	ends := make([]int, 0, len(uniq))
	var buf []int32
	for k, s := range uniq {
		fr.tick()
		buf = fr.expand(s, buf[:0])
		var ok bool
		if all, ok = m.apply(buf, all); !ok {
			all = all[:lastEnd(ends)]
			continue
		}
		ends = append(ends, len(all))
		ws = append(ws, weighted{v: s.v})
		kept = append(kept, int32(k))
	}
	start := 0
	for i, e := range ends {
		ws[i].seq = all[start:e:e]
		start = e
	}
	return ws, kept
}

// framesOf is about how many frames uniq's stacks have, from their
// locations and the profile's frames per location: the kept frames of
// every stack go in one buffer, sliced at the end, sized up front
// (growing it by appends copied it twice over).
func framesOf(uniq []stack, fr *frames) int {
	locs := 0
	for _, s := range uniq {
		locs += len(s.locs)
	}
	perLoc := 1.0
	if n := len(fr.off) - 1; n > 0 {
		perLoc = float64(len(fr.flat)) / float64(n)
	}
	return int(float64(locs)*perLoc*1.05) + 16
}

// expandInto sets ws[i] to the frames and value of uniq[i], the frames of
// them all in one buffer. The buffer's pages are mapped in before it is
// filled (prefault): 550 MB for growth.sh's 2m-all shape (inlined
// calls), whose 137k page faults were most of the server's faults on its
// upload and first flame graph.
func (fr *frames) expandInto(ws []weighted, uniq []stack) {
	all := make([]int32, 0, framesOf(uniq, fr))
	prefault.Slice(all)
	for i, s := range uniq {
		fr.tick()
		from := len(all)
		all = fr.expand(s, all)
		ws[i] = weighted{seq: all[from:len(all):len(all)], v: s.v}
	}
}

func lastEnd(ends []int) int {
	if len(ends) == 0 {
		return 0
	}
	return ends[len(ends)-1]
}

// KeepsSample applies the focus, ignore and time filters to one sample, as
// pprof does (the annotate listing counts samples by it): a frame matches by function name or by its binary's path.
func (f Filter) KeepsSample(s *profile.Sample) bool {
	if f.Time != nil && !f.Time.Has(s) {
		return false
	}
	if f.Focus == nil && f.Ignore == nil {
		return true
	}
	match := func(re interface{ MatchString(string) bool }) bool {
		for _, l := range s.Location {
			if l.Mapping != nil && re.MatchString(l.Mapping.File) {
				return true
			}
			for _, ln := range l.Line {
				if ln.Function != nil && re.MatchString(ln.Function.Name) {
					return true
				}
			}
		}
		return false
	}
	if f.Focus != nil && !match(f.Focus) {
		return false
	}
	return f.Ignore == nil || !match(f.Ignore)
}

// KeepsLeaf applies hide and show to a sample's leaf location as the flame
// graph applies them to every frame (a frame matches by function name or
// its binary's path): a leaf all of whose frames are hidden, or none of
// them shown, is not drawn, so its sample counts on no instruction.
func (f Filter) KeepsLeaf(l *profile.Location) bool {
	if f.Hide == nil && f.Show == nil {
		return true
	}
	mapping := ""
	if l.Mapping != nil {
		mapping = l.Mapping.File
	}
	match := func(re interface{ MatchString(string) bool }, name string) bool {
		return re.MatchString(name) || mapping != "" && re.MatchString(mapping)
	}
	names := []string{""} // a location without lines is one frame
	if len(l.Line) > 0 {
		names = names[:0]
		for _, ln := range l.Line {
			if ln.Function != nil {
				names = append(names, ln.Function.Name)
			} else {
				names = append(names, "")
			}
		}
	}
	for _, name := range names {
		if (f.Hide == nil || !match(f.Hide, name)) && (f.Show == nil || match(f.Show, name)) {
			return true
		}
	}
	return false
}

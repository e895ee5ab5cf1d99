package ingest_test

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/web/flame"
	"viewer/web/ingest"
)

// speedscopeCorpus is speedscope's own sample profiles, each with the
// stacks speedscope's importer reads from it (README.md there).
const speedscopeCorpus = peersDir + "/speedscope-formats/sample/profiles"

// corpusFormat is how viewer treats the files of speedscope's corpus that
// glob (path.Match, relative to speedscopeCorpus) matches. A format viewer
// reads names the format Parse reports (read); one it does not read yet
// names the words of its ForeignFormatError (notRead), which says what
// the bytes are and what to do. Adding a reader is moving its row from
// notRead to read.
type corpusFormat struct {
	globs   []string
	read    string
	notRead string
	// javaNames: speedscope names a Java frame Class:method, viewer
	// pkg.Class.method as `jfr print` and pprof's Java profiles do.
	javaNames bool
	// perBlock: each profile speedscope makes of a file is compared on
	// its own (JFR's are the same samples without and with native
	// frames), not merged with the others of its unit.
	perBlock bool
}

// corpusFormats are tried in order; the first whose glob matches a file
// says what Parse must do with it.
var corpusFormats = []corpusFormat{
	{globs: []string{"speedscope/*/*.speedscope.json"}, read: "speedscope JSON"},
	{globs: []string{"Chrome/*/*.cpuprofile", "node/*/*.cpuprofile"}, read: "V8 CPU profile"},
	{globs: []string{"Chrome/*/*.heapprofile", "node/*/*.heapprofile"}, read: "V8 heap profile"},
	{globs: []string{"node/*/*.v8log.json"}, read: "node --prof log"},
	{globs: []string{"Chrome/*/*.json", "trace-event/*.json"}, read: "trace events"},
	{globs: []string{"Firefox/*/*.json"}, read: "Firefox Profiler"},
	{globs: []string{"callgrind/*"}, read: "callgrind"},
	{globs: []string{"pmcstat/*.txt"}, read: "pmcstat callgraph"},
	{globs: []string{"Instruments/*/*.txt"}, read: "Instruments deep copy"},
	{globs: []string{"stackprof/*.json"}, read: "stackprof"},
	{globs: []string{"java-flight-recorder/*.jfr"}, read: "Java Flight Recorder", javaNames: true, perBlock: true},

	// Formats read by no reader yet: each gives its own error.
	{globs: []string{"haskell/*.prof"}, read: "GHC profile"},
	{globs: []string{"papyrus/*.log"}, read: "Papyrus profile"},
	{globs: []string{"Safari/*/*.json"}, read: "Safari recording"},
}

// noStacks are the corpus files speedscope reads as a profile without
// samples (its snapshot has no stacks): Parse refuses them with a
// FormatError naming the format and that no sample could be read.
var noStacks = map[string]bool{"trace-event/mismatched-name.json": true}

// speedscopeTruncates are the corpus files whose weights speedscope cuts
// to whole units (its Instruments reader takes "2.45 s" as 2 s, "96.08 Gc"
// as 96 Gc, with parseInt: read so, every file passes at 0.01), which
// viewer reads whole; they are held to divergedTVD instead.
var speedscopeTruncates = map[string]bool{
	"Instruments/13.4/cycles-example-deep-copy.txt":      true,
	"Instruments/16.0/simple-time-profile-deep-copy.txt": true,
}

const divergedTVD = 0.1

// maxStackTVD is the largest total variation distance between viewer's
// stack shares and speedscope's: its snapshots round each value to three
// significant digits for display.
const maxStackTVD = 0.01

// TestSpeedscopeCorpus reads each of speedscope's sample profiles and
// compares the stacks with what speedscope's importer reads from it: for
// each unit of its profiles, the share of each stack (root first) in the
// sample type nearest to it, within maxStackTVD.
func TestSpeedscopeCorpus(t *testing.T) {
	var files []string
	err := filepath.WalkDir(speedscopeCorpus, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".expected.folded") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 67 {
		t.Fatalf("%d files in %s, want speedscope's 67", len(files), speedscopeCorpus)
	}
	for _, file := range files {
		rel, _ := filepath.Rel(speedscopeCorpus, file)
		rel = filepath.ToSlash(rel)
		t.Run(rel, func(t *testing.T) {
			f, ok := corpusFormatOf(rel)
			if !ok {
				t.Fatalf("no row of corpusFormats matches %s", rel)
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			p, format, err := ingest.Parse(data, ingest.Limits{})
			if f.notRead != "" {
				var fe *ingest.ForeignFormatError
				if !errors.As(err, &fe) {
					t.Fatalf("Parse = %q, %v; want the error for %s, a format viewer does not read yet", format, err, f.notRead)
				}
				if !strings.Contains(fe.What, f.notRead) || fe.Do == "" {
					t.Fatalf("the error names %q and says %q; want it to name %s and what to do", fe.What, fe.Do, f.notRead)
				}
				return
			}
			if noStacks[rel] {
				var fe *ingest.FormatError
				if !errors.As(err, &fe) || fe.Format != f.read || !errors.Is(err, ingest.ErrUnknownFormat) ||
					!strings.Contains(err.Error(), "no "+f.read+" sample could be read") && !strings.Contains(err.Error(), "the "+f.read+" input holds no samples") {
					t.Fatalf("Parse = %v; want an error saying the %s holds no samples", err, f.read)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if format != f.read {
				t.Errorf("read as %q, want %q", format, f.read)
			}
			want, err := readExpectedFolded(file + ".expected.folded")
			if err != nil {
				t.Fatal(err)
			}
			if f.perBlock {
				blocks, err := readExpectedBlocks(file + ".expected.folded")
				if err != nil {
					t.Fatal(err)
				}
				want = map[string]map[string]float64{}
				for _, b := range blocks {
					want[b.name] = b.stacks
				}
			}
			if f.javaNames {
				want = dottedJavaNames(want)
			}
			for unit, stacks := range want {
				tvd, si := nearestSampleType(p, stacks)
				if tvd > maxStackTVD && (!speedscopeTruncates[rel] || tvd > divergedTVD) {
					t.Errorf("unit %s: stack shares differ from speedscope's by TVD %.4f (sample type %d of %s), over %v\n%s",
						unit, tvd, si, sampleTypes(p), maxStackTVD, stackDiff(stacksOf(p, si), stacks))
				}
			}
		})
	}
}

// corpusFormatOf returns the row of corpusFormats for rel.
func corpusFormatOf(rel string) (corpusFormat, bool) {
	for _, f := range corpusFormats {
		for _, g := range f.globs {
			if ok, _ := path.Match(g, rel); ok {
				return f, true
			}
		}
	}
	return corpusFormat{}, false
}

// dottedJavaNames renames speedscope's Class:method frames pkg.Class.method.
func dottedJavaNames(units map[string]map[string]float64) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for unit, stacks := range units {
		out[unit] = map[string]float64{}
		for k, v := range stacks {
			out[unit][strings.ReplaceAll(k, ":", ".")] += v
		}
	}
	return out
}

// readExpectedFolded reads an .expected.folded file: "# NAME (UNIT)"
// blocks of "a;b;c VALUE" lines, merged per unit. Blocks without stacks
// are left out.
func readExpectedFolded(name string) (map[string]map[string]float64, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]map[string]float64{}
	unit := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# ") {
			i := strings.LastIndex(line, "(")
			unit = strings.TrimSuffix(line[i+1:], ")")
			continue
		}
		i := strings.LastIndex(line, " ")
		if i < 0 {
			return nil, fmt.Errorf("%s: bad line %q", name, line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: bad value in %q", name, line)
		}
		if out[unit] == nil {
			out[unit] = map[string]float64{}
		}
		out[unit][line[:i]] += v
	}
	return out, sc.Err()
}

// stacksOf sums p's sample type si per stack, root first, of function
// names (inlined frames included) joined by ";".
func stacksOf(p *profile.Profile, si int) map[string]float64 {
	out := map[string]float64{}
	var names []string
	for _, s := range p.Sample {
		names = names[:0]
		for i := len(s.Location) - 1; i >= 0; i-- {
			l := s.Location[i]
			for j := len(l.Line) - 1; j >= 0; j-- {
				if fn := l.Line[j].Function; fn != nil {
					names = append(names, fn.Name)
				}
			}
		}
		if len(names) > 0 && s.Value[si] != 0 {
			out[strings.Join(names, ";")] += float64(s.Value[si])
		}
	}
	return out
}

// nearestSampleType returns the sample type of p whose stack shares are
// nearest to want's, and their total variation distance.
func nearestSampleType(p *profile.Profile, want map[string]float64) (float64, int) {
	best, bi := math.Inf(1), -1
	for si := range p.SampleType {
		if d := stackTVD(stacksOf(p, si), want); d < best {
			best, bi = d, si
		}
	}
	return best, bi
}

// stackTVD is the total variation distance between the stack shares of
// a and b: half the sum of the shares' differences.
func stackTVD(a, b map[string]float64) float64 {
	ta, tb := 0.0, 0.0
	for _, v := range a {
		ta += v
	}
	for _, v := range b {
		tb += v
	}
	if ta == 0 || tb == 0 {
		return 1
	}
	d := 0.0
	for k, v := range a {
		d += math.Abs(v/ta - b[k]/tb)
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d += v / tb
		}
	}
	return d / 2
}

// stackDiff lists the stacks whose shares differ most, for a failure.
func stackDiff(got, want map[string]float64) string {
	tg, tw := 0.0, 0.0
	for _, v := range got {
		tg += v
	}
	for _, v := range want {
		tw += v
	}
	type row struct {
		stack     string
		got, want float64
	}
	var rows []row
	seen := map[string]bool{}
	for k := range got {
		seen[k] = true
	}
	for k := range want {
		seen[k] = true
	}
	for k := range seen {
		rows = append(rows, row{k, got[k] / max(tg, 1e-300), want[k] / max(tw, 1e-300)})
	}
	sort.Slice(rows, func(i, j int) bool {
		return math.Abs(rows[i].got-rows[i].want) > math.Abs(rows[j].got-rows[j].want)
	})
	var b strings.Builder
	for i, r := range rows {
		if i == 8 {
			break
		}
		fmt.Fprintf(&b, "  got %.4f want %.4f  %s\n", r.got, r.want, r.stack)
	}
	return b.String()
}

func sampleTypes(p *profile.Profile) string {
	var s []string
	for _, t := range p.SampleType {
		s = append(s, t.Type+"/"+t.Unit)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// TestJSONProfileThreadsAndTimes checks that the threads of a timestamped
// JSON profile are its samples' labels and its times the timeline's: each
// profile speedscope shows of the file (a thread) is the samples of one
// thread, with speedscope's stacks (within maxStackTVD), one timeline row
// each; the timeline sums every sample, and the first half of its span
// (t=) keeps some of them but not all (when it has more than one bucket:
// multiprocess.json lasts microseconds).
func TestJSONProfileThreadsAndTimes(t *testing.T) {
	pidRe, tidRe := regexp.MustCompile(`pid (\d+)`), regexp.MustCompile(`tid (\d+)`)
	for _, rel := range []string{
		"Chrome/70/worker.json",
		"Chrome/66/worker.json",
		"trace-event/multiprocess.json",
		"trace-event/multi-thread-with-samples.json",
		"Firefox/63/simple-firefox.json",
		"node/8.5.0/simple.v8log.json",
	} {
		t.Run(rel, func(t *testing.T) {
			file := filepath.Join(speedscopeCorpus, filepath.FromSlash(rel))
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := ingest.Parse(data, ingest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			blocks, err := readExpectedBlocks(file + ".expected.folded")
			if err != nil {
				t.Fatal(err)
			}
			si := 0
			for i, st := range p.SampleType {
				if st.Type == p.DefaultSampleType {
					si = i
				}
			}
			for _, blk := range blocks {
				// The samples of the block's thread: by pid and tid when
				// speedscope names them, else by the thread's name.
				keep := func(s *profile.Sample) bool {
					if m := pidRe.FindStringSubmatch(blk.name); m != nil && strconv.FormatInt(s.NumLabel["pid"][0], 10) != m[1] {
						return false
					}
					if m := tidRe.FindStringSubmatch(blk.name); m != nil {
						return strconv.FormatInt(s.NumLabel["tid"][0], 10) == m[1]
					}
					if _, thread, ok := strings.Cut(blk.name, " - "); ok {
						return len(s.Label["comm"]) == 1 && s.Label["comm"][0] == thread
					}
					return len(p.Sample) > 0 && (len(s.Label["comm"]) == 0 || s.Label["comm"][0] == blk.name || len(blocks) == 1)
				}
				q := &profile.Profile{SampleType: p.SampleType}
				for _, s := range p.Sample {
					if keep(s) {
						q.Sample = append(q.Sample, s)
					}
				}
				if d := stackTVD(stacksOf(q, si), blk.stacks); d > maxStackTVD {
					t.Errorf("thread %q: stack shares differ from speedscope's by TVD %.4f\n%s", blk.name, d, stackDiff(stacksOf(q, si), blk.stacks))
				}
			}
			tl := flame.BuildTimeline(p, si)
			if len(tl.Rows) != min(len(blocks), flame.TimelineThreads) {
				var names []string
				for _, r := range tl.Rows {
					names = append(names, r.Name)
				}
				t.Errorf("the timeline has %d rows %q; want one per thread, %d", len(tl.Rows), names, len(blocks))
			}
			var total, sum int64
			for _, v := range tl.Total {
				total += v
			}
			for _, s := range p.Sample {
				sum += s.Value[si]
			}
			if total != sum || total == 0 {
				t.Errorf("the timeline sums %d, the samples %d", total, sum)
			}
			r := flame.TimeRange{From: 0, To: tl.SpanNanos / 2}
			var half int64
			for _, s := range p.Sample {
				if r.Has(s) {
					half += s.Value[si]
				}
			}
			if len(tl.Total) > 1 && (half <= 0 || half >= sum) {
				t.Errorf("t=%s keeps %d of %d: want some samples but not all", r, half, sum)
			}
		})
	}
}

type expectedBlock struct {
	name   string
	stacks map[string]float64
}

// readExpectedBlocks reads an .expected.folded file's blocks with stacks,
// each a profile speedscope shows.
func readExpectedBlocks(name string) ([]expectedBlock, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var out []expectedBlock
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.HasPrefix(line, "# ") {
			n := strings.TrimPrefix(line, "# ")
			out = append(out, expectedBlock{name: strings.TrimSpace(n[:strings.LastIndex(n, "(")]), stacks: map[string]float64{}})
			continue
		}
		i := strings.LastIndex(line, " ")
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil || len(out) == 0 {
			return nil, fmt.Errorf("%s: bad line %q", name, line)
		}
		out[len(out)-1].stacks[line[:i]] += v
	}
	kept := out[:0]
	for _, b := range out {
		if len(b.stacks) > 0 {
			kept = append(kept, b)
		}
	}
	return kept, nil
}

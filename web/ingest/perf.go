package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"viewer/web/ingest/perfdata"
	"viewer/web/ingest/perftext"
)

// The perf formats: perf.data itself (read natively, addresses kept for the
// symbolizer) and the text formats perf and flame graph tools write.
var (
	perfDataFormat   = Format{Name: "perf.data", Sniff: perfdata.Sniff, Parse: parsePerfData}
	perfJSONFormat   = Format{Name: "perf JSON", Sniff: perftext.SniffJSON, Parse: textParser(perftext.ParseJSON, false)}
	perfScriptFormat = Format{Name: "perf script", Sniff: perftext.SniffScript, Parse: textParser(perftext.ParseScript, true)}
	foldedFormat     = Format{Name: "folded stacks", Sniff: perftext.SniffFolded, Parse: textParser(perftext.ParseFolded, true)}
)

func parsePerfData(data []byte, lim Limits) (*profile.Profile, error) {
	// The records of a compressed recording are decompressed to a file
	// and mapped, not held in the heap: read until Convert returns.
	spools := &perfSpools{dir: lim.SpoolDir}
	defer spools.release()
	opt := perfdata.Options{MaxDecompressed: lim.MaxBytes, UserStacks: lim.Binaries != nil, Evict: lim.evict, Progress: lim.progress, Spool: spools.spool}
	if r := lim.reserve; r != nil {
		opt.Reserve = func(n int64) error { return r.grow(n, "perf.data's record index") }
	}
	f, err := perfdata.Scan(data, opt)
	if errors.Is(err, perfdata.ErrLimit) {
		return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	if err != nil {
		return nil, err
	}
	if lim.recordedDepth != nil {
		// perf record --call-graph=fp,N: the chains perf keeps whole are
		// kept whole here, whatever the depth limit.
		*lim.recordedDepth = f.RecordedMaxStack()
		lim = lim.recordedDepthFloor()
	}
	if lim.MaxRecords > 0 && f.NumRecords() > lim.MaxRecords {
		return nil, fmt.Errorf("%w: perf.data holds %d records, over the limit of %d (record a shorter run, or restart the server with a larger --max-records)", ErrTooLarge, f.NumRecords(), lim.MaxRecords)
	}
	plan, err := lim.planPerf(f)
	if err != nil {
		return nil, err
	}
	if r := lim.reserve; r != nil {
		if err := r.grow(plan.est.Memory(), fmt.Sprintf("perf.data (about %d distinct samples from %d records)", plan.est.Samples, f.NumRecords())); err != nil {
			return nil, err
		}
	}
	p, err := perfdata.Convert(f, perfdata.ConvertOptions{MaxSamples: lim.MaxSamples, MaxFrames: lim.MaxFrames, MaxStackDepth: lim.MaxStackDepth,
		TimeBucket: plan.bucket, Binaries: lim.Binaries, NoUnwind: lim.NoUnwind})
	var le *perfdata.LimitError
	switch {
	case errors.As(err, &le) && le.What == "frames":
		return nil, fmt.Errorf("%w: %v (restart the server with a larger --max-frames to accept it)", ErrTooLarge, err)
	case errors.As(err, &le):
		return nil, fmt.Errorf("%w: %v (restart the server with a larger --max-samples to accept it)", ErrTooLarge, err)
	case errors.Is(err, perfdata.ErrLimit):
		return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
	case err != nil:
		return nil, err
	}
	if plan.note != "" {
		p.Comments = append(p.Comments, plan.note)
	}
	return p, nil
}

// perfPlan is how a Scan'ed perf.data is converted: the time label's
// bucket width (perfdata.ConvertOptions.TimeBucket, 0 for Convert's own),
// what the conversion is estimated to keep with it, and the profile's
// comment when the width is coarser than Convert's own.
type perfPlan struct {
	bucket int64
	est    perfdata.Estimate
	note   string
}

// estimateSlack is how far over a limit a Scan's estimate may be and the
// recording still be converted, for the conversion's exact count to
// decide: the estimate is within about 2% above a few thousand samples.
const estimateSlack = 1.05

// planPerf picks, from what the Scan of f estimates, the finest time
// bucket whose samples, frames and memory are within lim and the room
// left in the budget, so that a long recording keeps coarser buckets
// rather than being refused. When even one bucket for the whole recording
// is over, it is refused now, in the time of one read, naming every limit
// it passes and the flag that raises each.
func (lim Limits) planPerf(f *perfdata.File) (perfPlan, error) {
	ests := f.Estimates(lim.MaxStackDepth)
	if len(ests) == 0 {
		return perfPlan{}, nil
	}
	room := lim.reserve.room()
	over := func(e perfdata.Estimate, slack float64) []string {
		var why []string
		if lim.MaxSamples > 0 && float64(e.Samples) > slack*float64(lim.MaxSamples) {
			why = append(why, fmt.Sprintf("about %d distinct samples, over the limit of %d (--max-samples)", e.Samples, lim.MaxSamples))
		}
		if lim.MaxFrames > 0 && float64(e.Frames) > slack*float64(lim.MaxFrames) {
			why = append(why, fmt.Sprintf("about %d frames in their stacks, over the limit of %d (--max-frames)", e.Frames, lim.MaxFrames))
		}
		if float64(e.Memory()) > slack*float64(room) {
			why = append(why, fmt.Sprintf("about %s of memory to convert, more than the server's %s for uploads has left for it (--ingest-memory)", mib(e.Memory()), mib(lim.Memory.Size())))
		}
		return why
	}
	timed := ests[:len(ests)-1] // the widths with a time label; the last has none
	if len(timed) == 0 {
		// No sample times in the header (pipe mode): the estimate without
		// time is a lower bound, which refuses what is surely over.
		timed = ests
	}
	pick := -1
	for i, e := range timed {
		if len(over(e, 1)) == 0 {
			pick = i
			break
		}
	}
	last := len(timed) - 1
	if pick < 0 {
		if why := over(timed[last], estimateSlack); len(why) > 0 {
			return perfPlan{}, fmt.Errorf("%w: this perf.data's %d records would keep %s, even with one time bucket for the whole recording (estimated as they were read); record fewer CPUs or threads, a shorter run or a lower frequency, or restart the server with the larger limits named",
				ErrTooLarge, f.NumRecords(), strings.Join(why, "; "))
		}
		pick = last // within the estimate's error: the conversion's own count decides
	}
	plan := perfPlan{est: timed[pick]}
	if pick > 0 {
		plan.bucket = int64(timed[pick].Bucket)
		plan.note = fmt.Sprintf("time buckets of %v instead of %v: finer ones would keep %s; the timeline and time ranges have this resolution",
			time.Duration(timed[pick].Bucket), time.Duration(timed[0].Bucket), strings.Join(over(timed[0], 1), "; "))
	}
	return plan, nil
}

// textParser adapts a perftext parser; lines says its format is read line
// by line, so that lines longer than lim.MaxLineBytes are refused first.
func textParser(parse func([]byte, int) (*profile.Profile, error), lines bool) func([]byte, Limits) (*profile.Profile, error) {
	return func(data []byte, lim Limits) (*profile.Profile, error) {
		if lines {
			if err := checkLines(data, lim.MaxLineBytes); err != nil {
				return nil, err
			}
		}
		p, err := parse(data, lim.MaxSamples)
		if errors.Is(err, perftext.ErrLimit) {
			return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
		}
		return p, err
	}
}

// checkLines fails with ErrTooLarge naming the first line of data longer
// than max bytes (0: no limit).
func checkLines(data []byte, max int) error {
	if max <= 0 {
		return nil
	}
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			i = len(data)
		}
		if i > max {
			return fmt.Errorf("%w: line %d is longer than the %d-byte limit (restart the server with a larger --max-line to accept it)", ErrTooLarge, n, max)
		}
		data = data[min(i+1, len(data)):]
	}
	return nil
}

// foldedHint is what the refusal of text input adds when some of its lines
// are folded stacks but fewer than the others (SniffFolded wants half):
// how many, the first other line, and what to do; "" when none is.
func foldedHint(head []byte) string {
	c := perftext.CountFolded(head)
	if c.Good == 0 {
		return ""
	}
	are := "are stacks"
	if c.Good == 1 {
		are = "is a stack"
	}
	return fmt.Sprintf(`. If it is folded stacks ("frame;frame;... count" lines): only %d of its first %d lines %s (line %d is not: %q), and folded stacks are read when at least half of the lines are; remove or fix the others`,
		c.Good, c.Good+c.Bad, are, c.FirstBad, c.BadLine)
}

// looksText reports whether head is text (no NUL or other control bytes
// but tab, CR and LF), as the line-based formats are.
func looksText(head []byte) bool {
	for _, b := range head {
		if b < 0x20 && b != '\t' && b != '\n' && b != '\r' {
			return false
		}
	}
	return len(head) > 0
}

// Binaries gives a perf.data's --call-graph=dwarf user stacks the call
// frame information of the profiled binaries (Limits.Binaries): the
// perf.data reader's own interface, named here so callers reach the format
// reader through ingest.
type Binaries = perfdata.Binaries

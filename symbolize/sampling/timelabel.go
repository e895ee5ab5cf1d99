// Package sampling holds the conventions viewer keeps on a pprof profile's
// samples that both the format readers (web/ingest/...) and symbolization
// read or write: the time label and its buckets, the comments that mark
// caller addresses as call sites, give the recording's cache line and warn
// of what a reader skipped, and how sample values are written for people. It is a leaf: it imports no
// project package, so web/ingest, web/flame, symbolize and cmd may all
// import it.
package sampling

// TimeLabel is the numeric label (unit nanoseconds) that holds when a
// sample was taken: the start of its time bucket, as an offset from the
// first sample. Samples of one stack and thread are kept apart per bucket,
// so a profile has at most MaxTimeBuckets times as many samples as
// distinct stacks (and never more than perf.data's sample records): the
// timeline and the t= time range filter read it, and go tool pprof
// reads it with -tagfocus=time=1s:2s.
const TimeLabel = "time"

// MaxTimeBuckets bounds the time buckets of a recording: the timeline's
// resolution, and the factor by which keeping time multiplies the samples.
const MaxTimeBuckets = 500

// MinTimeBucket is the finest time bucket: 1 ms, about perf record's
// default sampling interval, so a short recording's samples of one stack
// are not kept apart per sample.
const MinTimeBucket = 1_000_000

// TimeBucket is the smallest 1, 2 or 5 × 10^k nanoseconds, at least
// MinTimeBucket, that splits span into at most MaxTimeBuckets buckets.
func TimeBucket(span uint64) uint64 {
	for b := uint64(MinTimeBucket); ; b *= 10 {
		for _, m := range []uint64{1, 2, 5} {
			if span/(b*m) < MaxTimeBuckets {
				return b * m
			}
		}
	}
}

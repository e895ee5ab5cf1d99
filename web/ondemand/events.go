package ondemand

import (
	"encoding/json"
	"time"

	"viewer/symbolize"
	"viewer/web/sse"
)

// static/states.js carries these names, RunState's and symbolize.State's
// to the scripts (TestStatesJS fails when it is stale).
//go:generate go test -run ^TestStatesJS$ . -args -update-states

// Event types on a profile's topic, as static/symbolize.js reads them
// (states.js SymbolizeEvent).
const (
	EventJob        = "job"        // Status, while queued and running
	EventBinary     = "binary"     // Binary, on each state change
	EventProgress   = "progress"   // Progress, at most ten a second per fetch
	EventNames      = "names"      // Names, after a copy with more names was stored
	EventSymbolized = "symbolized" // Status with Binaries, once at the end
)

// Snapshot is a job's state at one moment, taken under the job's lock and
// never changed after: what its pages are told. A local Job takes one on
// each change; a replica following a job another replica runs makes one
// from the lease record it reads (lease.go). publisher turns successive
// snapshots into events.
type Snapshot struct {
	Status   Status   // the job's summary (its Binaries unset)
	Binaries []Binary // the rows, in profile order
	// Names counts the copies with more names stored so far; each new
	// one is a "names" event, so pages fetch the names found.
	Names int
	// Final: the job ended; the final event carries Status and Binaries.
	Final bool
}

// Names is the payload of "names" events: a copy with more names is stored
// and flame.json serves it.
type Names struct {
	Resolved int `json:"resolved"`
}

// publisher is the one place that turns a job's snapshots into the
// server-sent events its pages read, for a job run here and one followed
// from another replica alike: each event says what changed since the last
// snapshot it was given. Each kind of event has its topic key, so a late
// subscriber gets the latest of each. It is not safe for concurrent use;
// its owner serializes calls (the job's lock, the follower's goroutine).
type publisher struct {
	topic *sse.Topic
	sent  bool
	last  Snapshot
	rows  map[string]Binary // last published row per key
}

func newPublisher(topic *sse.Topic) *publisher {
	return &publisher{topic: topic, rows: map[string]Binary{}}
}

// publish sends the events that take pages from the last snapshot to s.
func (p *publisher) publish(s Snapshot) {
	if !s.Final && (!p.sent || !sameStatus(s.Status, p.last.Status)) {
		st := s.Status
		st.Binaries = nil
		data, _ := json.Marshal(st)
		p.topic.Publish("job", EventJob, data)
	}
	resolved := 0
	for _, b := range s.Binaries {
		if b.State == symbolize.StateSymbolized {
			resolved++
		}
		if old, ok := p.rows[b.Key]; ok && sameRow(old, b) {
			continue
		}
		p.rows[b.Key] = b
		if !(b.State == symbolize.StateFetching && fetchRunning(b.Phase)) {
			p.topic.Forget("progress:" + b.Key) // its fetch ended
		}
		b.Help = helpFor(b)
		data, _ := json.Marshal(b)
		p.topic.Publish("binary:"+b.Key, EventBinary, data)
	}
	if s.Names > p.last.Names && !s.Final {
		data, _ := json.Marshal(Names{Resolved: resolved})
		p.topic.Publish("names", EventNames, data)
	}
	if s.Final {
		// Pages redraw on the final event, so a pending names event is
		// dropped.
		st := s.Status
		st.Binaries = withHelp(s.Binaries)
		data, _ := json.Marshal(st)
		p.topic.Forget("names")
		p.topic.Finish("symbolized", EventSymbolized, data)
	}
	p.sent, p.last = true, s
}

// progress publishes a fetch's progress, at most once per every.
func (p *publisher) progress(pr Progress, every time.Duration) {
	data, _ := json.Marshal(pr)
	p.topic.PublishThrottled("progress:"+pr.Key, EventProgress, data, every)
}

// fetchRunning reports whether a fetch in this phase still sends progress.
func fetchRunning(phase string) bool {
	switch symbolize.FetchPhase(phase) {
	case symbolize.PhaseConnecting, symbolize.PhaseDownloading, symbolize.PhaseVerifying:
		return true
	}
	return false
}

// sameRow compares rows but for their byte counts, which progress events
// carry: one binary event per change, not per download step.
func sameRow(a, b Binary) bool {
	a.Bytes, a.Total, a.Help = b.Bytes, b.Total, b.Help
	return a == b
}

func sameStatus(a, b Status) bool {
	return a.State == b.State && a.Debuginfod == b.Debuginfod && a.Resolved == b.Resolved && a.Missed == b.Missed &&
		a.Disabled == b.Disabled && a.Error == b.Error && slicesEqual(a.Servers, b.Servers) && slicesEqual(a.Asked, b.Asked)
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// helpFor is the next step the panel gives for a binary: for one left
// with no symbols, how to get its debug info, or, for a JIT's perf map,
// where it can be read.
func helpFor(b Binary) string {
	switch {
	case b.State != symbolize.StateNotFound:
		return ""
	case symbolize.IsPerfMap(b.File):
		return symbolize.PerfMapHelp
	}
	return NoSymbolsHelp
}

// withHelp is the rows as the final event carries them.
func withHelp(bs []Binary) []Binary {
	out := make([]Binary, len(bs))
	for i, b := range bs {
		b.Help = helpFor(b)
		out[i] = b
	}
	return out
}

// counts fills a status's tally of resolved and missed rows.
func counts(st *Status, bs []Binary) {
	st.Resolved, st.Missed = 0, 0
	for _, b := range bs {
		switch b.State {
		case symbolize.StateSymbolized:
			st.Resolved++
		case symbolize.StateNotFound, symbolize.StateSkipped, symbolize.StateError:
			st.Missed++
		}
	}
}

// PublishOutcome answers the event stream of a profile whose job finished
// on another replica (its outcome record is done) with the final event, so
// a page that reconnected here redraws once. It does nothing when the
// profile has a job here, or its topic is open or finished already.
func (m *Manager) PublishOutcome(id string, rec Outcome) {
	if !rec.Done || m.Job(id) != nil {
		return
	}
	st := Status{State: RunDone, Servers: m.Servers(), Asked: rec.Asked}
	if st.Servers == nil {
		st.Servers = []string{}
	}
	if st.Asked == nil {
		st.Asked = []string{}
	}
	counts(&st, rec.Binaries)
	topic := m.cfg.Broker.Topic(id)
	if !topic.Finished() {
		newPublisher(topic).publish(Snapshot{Status: st, Binaries: rec.Binaries, Final: true})
	}
}

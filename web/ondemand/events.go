package ondemand

import (
	"encoding/json"
	"time"

	"viewer/symbolize"
	"viewer/web/sse"
)

// Event types on a profile's topic, as static/symbolize.js reads them.
const (
	EventJob        = "job"        // Status, while queued and running
	EventBinary     = "binary"     // Binary, on each state change
	EventProgress   = "progress"   // Progress, at most ten a second per fetch
	EventNames      = "names"      // Names, after a copy with more names was stored
	EventSymbolized = "symbolized" // Status with Binaries, once at the end
)

// events is the one place that turns a job's state into the server-sent
// events its pages read, for a job run here and one followed from another
// replica alike. Each kind of event has its topic key, so a late
// subscriber gets the latest of each.
type events struct{ topic *sse.Topic }

// job publishes the job's summary.
func (e events) job(st Status) {
	data, _ := json.Marshal(st)
	e.topic.Publish("job", EventJob, data)
}

// binary publishes one row, with the help its state calls for.
func (e events) binary(b *Binary) {
	b.Help = ""
	if b.State == symbolize.StateNotFound {
		b.Help = NoSymbolsHelp
	}
	data, _ := json.Marshal(b)
	e.topic.Publish("binary:"+b.Key, EventBinary, data)
}

// progress publishes a fetch's progress, at most once per every.
func (e events) progress(p Progress, every time.Duration) {
	data, _ := json.Marshal(p)
	e.topic.PublishThrottled("progress:"+p.Key, EventProgress, data, every)
}

// endProgress drops a binary's last progress event once its fetch ended.
func (e events) endProgress(key string) { e.topic.Forget("progress:" + key) }

// names announces a stored copy with more names (resolved binaries so far).
func (e events) names(resolved int) {
	data, _ := json.Marshal(Names{Resolved: resolved})
	e.topic.Publish("names", EventNames, data)
}

// final ends the topic with the job's last Status and rows; pages redraw on
// it, so a pending names event is dropped.
func (e events) final(st Status) {
	data, _ := json.Marshal(st)
	e.topic.Forget("names")
	e.topic.Finish("symbolized", EventSymbolized, data)
}

// PublishOutcome answers the event stream of a profile whose job finished
// on another replica (its outcome record is done) with the final event, so
// a page that reconnected here redraws once. It does nothing when the
// profile has a job here, or its topic is open or finished already.
func (m *Manager) PublishOutcome(id string, rec Outcome) {
	if !rec.Done || m.Job(id) != nil {
		return
	}
	st := Status{State: RunDone, Servers: m.Servers(), Asked: rec.Asked, Binaries: rec.Binaries}
	if st.Servers == nil {
		st.Servers = []string{}
	}
	if st.Asked == nil {
		st.Asked = []string{}
	}
	for _, b := range rec.Binaries {
		switch b.State {
		case symbolize.StateSymbolized:
			st.Resolved++
		case symbolize.StateNotFound, symbolize.StateSkipped, symbolize.StateError:
			st.Missed++
		}
	}
	topic := m.cfg.Broker.Topic(id)
	if !topic.Finished() {
		events{topic}.final(st)
	}
}

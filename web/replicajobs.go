package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"time"

	"viewer/symbolize"
	"viewer/web/ondemand"
	"viewer/web/profiles"
	"viewer/web/store"
)

// KeyJob is the store key, under a profile's ID, of the state of the
// symbolization running for it: which replica runs it, its rows, and a
// heartbeat. Other replicas read it to stream the job to their pages and to
// take the job over when it stops changing.
const KeyJob = "job.json"

// Job record states beyond the job's own queued/running/done.
const (
	jobAbandoned = "abandoned" // the owner stopped before finishing (shutdown)
)

// jobRecord is ID/job.json.
type jobRecord struct {
	Owner string `json:"owner"`
	// Gen counts claims of the profile's job; Token is the claim's
	// random token.
	Gen   int    `json:"gen"`
	Token string `json:"token"`
	State string `json:"state"`
	// Seq increases with each write by the owner; Heartbeat is the
	// owner's clock at that write.
	Seq       int64             `json:"seq"`
	Heartbeat time.Time         `json:"heartbeat"`
	Status    ondemand.Status   `json:"status"`
	Binaries  []ondemand.Binary `json:"binaries"`
}

// claim is this replica's claim on a profile's job.
type claim struct {
	gen   int
	token string
}

// claimRecord is ID/claim-GEN.json, written once per generation.
type claimRecord struct {
	Owner string    `json:"owner"`
	Token string    `json:"token"`
	At    time.Time `json:"at"`
}

// absentPutter is a store with a conditional create (store.Blob).
type absentPutter interface {
	PutIfAbsent(ctx context.Context, key string, r io.Reader) (bool, error)
}

func (s *Server) readJobRecord(ctx context.Context, id string) (*jobRecord, error) {
	b, err := store.ReadAll(ctx, s.store, profiles.Key(id, KeyJob), 16<<20)
	if err != nil {
		return nil, err
	}
	jr := new(jobRecord)
	if err := json.Unmarshal(b, jr); err != nil {
		return nil, fmt.Errorf("%s: %w", profiles.Key(id, KeyJob), err)
	}
	return jr, nil
}

func (s *Server) writeJobRecord(ctx context.Context, id string, jr *jobRecord) error {
	b, err := json.Marshal(jr)
	if err != nil {
		return err
	}
	return s.store.Put(ctx, profiles.Key(id, KeyJob), bytes.NewReader(b))
}

// live reports whether a job record says another replica is working on the
// job and was heard from within TakeoverAfter (by this replica's clock).
func (r *replica) live(jr *jobRecord) bool {
	return jr != nil && jr.Owner != r.cfg.ID && (jr.State == "queued" || jr.State == "running") &&
		time.Since(jr.Heartbeat) < r.cfg.TakeoverAfter
}

// claimJob claims generation gen of the profile's job for this replica.
// With a store that has conditional creates (S3 If-None-Match: *, GCS, Azure,
// fileblob) exactly one replica wins each generation. Without one (Dir), or
// with an S3 clone that ignores the precondition, the claim is written,
// then read back after a short pause: a replica whose claim was overwritten
// loses. Two replicas can still both win when one writes its claim more than
// that pause after the other read it back; both then run the job, which
// costs work but not correctness (the jobs adopt each other's results).
func (s *Server) claimJob(ctx context.Context, id string, gen int) (bool, error) {
	r := s.rep
	token := randomToken()
	b, _ := json.Marshal(claimRecord{Owner: r.cfg.ID, Token: token, At: time.Now().UTC()})
	key := profiles.Key(id, "claim-"+strconv.Itoa(gen)+".json")
	if ap, ok := s.store.(absentPutter); ok {
		won, err := ap.PutIfAbsent(ctx, key, bytes.NewReader(b))
		if err != nil || !won {
			return false, err
		}
	} else if err := s.store.Put(ctx, key, bytes.NewReader(b)); err != nil {
		return false, err
	} else {
		time.Sleep(min(r.cfg.Poll, 200*time.Millisecond)) // let a racing claim land
	}
	got, err := store.ReadAll(ctx, s.store, key, 1<<20)
	if err != nil {
		return false, err
	}
	var cr claimRecord
	if json.Unmarshal(got, &cr) != nil || cr.Token != token {
		return false, nil
	}
	r.mu.Lock()
	r.claims[id] = claim{gen: gen, token: token}
	r.mu.Unlock()
	// Announce the claim at once so others follow rather than claim.
	err = s.writeJobRecord(ctx, id, &jobRecord{Owner: r.cfg.ID, Gen: gen, Token: token, State: "queued", Heartbeat: time.Now().UTC()})
	return true, err
}

// followRemote is called before this replica starts symbolizing a profile.
// It reports true when another replica runs the job (this one then streams
// it from the store) and false when this replica should run it, having
// claimed it. Without replication it always reports false.
func (s *Server) followRemote(ctx context.Context, id string) bool {
	r := s.rep
	if r == nil || s.sym == nil {
		return false
	}
	r.mu.Lock()
	_, following := r.followers[id]
	r.mu.Unlock()
	if following {
		return true
	}
	jr, err := s.readJobRecord(ctx, id)
	if err != nil && !isNotFound(err) {
		s.log.Warn("reading the job record; symbolizing here", "id", id, "err", err)
		return false
	}
	if r.live(jr) {
		s.startFollower(id, jr.Gen)
		return true
	}
	gen := 1
	if jr != nil {
		gen = jr.Gen + 1
	}
	won, err := s.claimJob(ctx, id, gen)
	if err != nil {
		s.log.Warn("claiming the symbolization job; symbolizing here", "id", id, "err", err)
		return false
	}
	if !won {
		s.startFollower(id, gen)
		return true
	}
	return false
}

// replicate writes a local job's state to ID/job.json while it runs (on
// each change, and every Heartbeat), so other replicas can stream it and
// know it is alive. It ends with the job: "done" when the job stored its
// outcome, "abandoned" when it stopped short (shutdown), so another replica
// takes it over at once.
func (s *Server) replicate(j *ondemand.Job) {
	r := s.rep
	if r == nil || j == nil || j.Done() {
		return
	}
	id := j.ID()
	r.mu.Lock()
	if r.mirrors[id] {
		r.mu.Unlock()
		return
	}
	r.mirrors[id] = true
	c, ok := r.claims[id]
	r.mu.Unlock()
	if !ok {
		// Submitted without a claim (a retry): claim the next generation;
		// the job runs here either way.
		gen := 1
		if jr, err := s.readJobRecord(r.ctx, id); err == nil {
			gen = jr.Gen + 1
		}
		if won, err := s.claimJob(r.ctx, id, gen); err != nil || !won {
			s.log.Warn("symbolizing without a claim", "id", id, "err", err)
		}
		r.mu.Lock()
		c = r.claims[id]
		r.mu.Unlock()
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			delete(r.mirrors, id)
			delete(r.claims, id)
			r.mu.Unlock()
		}()
		s.mirror(j, c)
	}()
}

func (s *Server) mirror(j *ondemand.Job, c claim) {
	r := s.rep
	id := j.ID()
	jr := &jobRecord{Owner: r.cfg.ID, Gen: c.gen, Token: c.token}
	var last jobRecord
	var lastWrite time.Time
	var controlSeen string
	applied := map[string]bool{}
	tick := time.NewTicker(min(r.cfg.Poll, r.cfg.Heartbeat))
	defer tick.Stop()
	for {
		if !j.Done() {
			s.applyControl(j, c.gen, &controlSeen, applied)
		}
		done := j.Done()
		st := j.Status()
		jr.State, jr.Status, jr.Binaries = st.State, st, j.Binaries()
		if done {
			jr.State = "done"
			if rec, err := s.sym.jobs.Record(r.ctx, id); err != nil || !rec.Done {
				jr.State = jobAbandoned
			}
		}
		changed := jr.State != last.State || !reflect.DeepEqual(jr.Status, last.Status) || !reflect.DeepEqual(jr.Binaries, last.Binaries)
		if changed || done || time.Since(lastWrite) >= r.cfg.Heartbeat {
			if !changed && !done {
				// A heartbeat: check first that nobody took the job over
				// while this replica was quiet.
				if cur, err := s.readJobRecord(r.ctx, id); err == nil && cur.Gen > c.gen {
					s.log.Warn("another replica took over the symbolization job", "id", id, "owner", cur.Owner)
					return
				}
			}
			jr.Seq++
			jr.Heartbeat = time.Now().UTC()
			if err := s.writeJobRecord(r.ctx, id, jr); err != nil {
				if r.ctx.Err() != nil {
					return
				}
				s.log.Warn("writing the job record", "id", id, "err", err)
			} else {
				last = *jr
				lastWrite = time.Now()
			}
		}
		if done {
			return
		}
		select {
		case <-tick.C:
		case <-r.ctx.Done():
			return
		}
	}
}

// follower streams a job another replica runs to this replica's pages.
type follower struct {
	id     string
	minGen int
	last   *jobRecord
}

// followedBinaries is the panel of a job this replica follows, or nil.
func (s *Server) followedBinaries(id string) ([]ondemand.Binary, bool) {
	r := s.rep
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.followers[id]
	if f == nil {
		return nil, false
	}
	if f.last == nil {
		return []ondemand.Binary{}, true
	}
	return append([]ondemand.Binary(nil), f.last.Binaries...), true
}

func (s *Server) startFollower(id string, minGen int) {
	r := s.rep
	r.mu.Lock()
	if r.followers[id] != nil || r.ctx.Err() != nil {
		r.mu.Unlock()
		return
	}
	f := &follower{id: id, minGen: minGen}
	r.followers[id] = f
	r.wg.Add(1)
	r.mu.Unlock()
	topic := s.sym.broker.Topic(id)
	if topic.Finished() {
		topic.Reopen()
	}
	go func() {
		defer r.wg.Done()
		takeOver := s.follow(f)
		r.mu.Lock()
		delete(r.followers, id)
		r.mu.Unlock()
		if takeOver {
			j, err := s.sym.jobs.Submit(id, ondemand.Options{})
			if err != nil {
				s.log.Error("taking over the symbolization job", "id", id, "err", err)
				return
			}
			s.replicate(j)
		}
	}()
}

// follow polls the job's record and its symbolized copy, publishing what
// changed as the same events a local job sends. It returns true when this
// replica claimed the job because its owner went quiet or gave it up.
func (s *Server) follow(f *follower) bool {
	r := s.rep
	id := f.id
	topic := s.sym.broker.Topic(id)
	var seq int64 = -1
	gen := -1
	changedAt := time.Now()
	rows := map[string]ondemand.Binary{}
	var lastStatus ondemand.Status
	names, _ := s.prof.SymbolizedVersion(r.ctx, id)
	tick := time.NewTicker(r.cfg.Poll)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-r.ctx.Done():
			return false
		}
		jr, err := s.readJobRecord(r.ctx, id)
		if err != nil {
			if r.ctx.Err() != nil {
				return false
			}
			continue // the store is down, or the claim is not yet written
		}
		if jr.Gen < f.minGen {
			jr = nil // the winner of a claim has not written yet
		}
		if jr != nil && (jr.Seq != seq || jr.Gen != gen) {
			seq, gen, changedAt = jr.Seq, jr.Gen, time.Now()
			r.mu.Lock()
			f.last = jr
			r.mu.Unlock()
			if !reflect.DeepEqual(jr.Status, lastStatus) && jr.State != "done" {
				lastStatus = jr.Status
				st := jr.Status
				st.Binaries = nil
				data, _ := json.Marshal(st)
				topic.Publish("job", ondemand.EventJob, data)
			}
			for _, b := range jr.Binaries {
				if old, ok := rows[b.Key]; ok && old == b {
					continue
				}
				rows[b.Key] = b
				data, _ := json.Marshal(b)
				topic.Publish("binary:"+b.Key, ondemand.EventBinary, data)
			}
		}
		if v, err := s.prof.SymbolizedVersion(r.ctx, id); err == nil && v != names {
			names = v
			s.Invalidate(id)
			n := 0
			for _, b := range rows {
				if b.State == symbolize.StateSymbolized {
					n++
				}
			}
			data, _ := json.Marshal(ondemand.Names{Resolved: n})
			topic.Publish("names", ondemand.EventNames, data)
		}
		switch {
		case jr != nil && jr.State == "done":
			s.Invalidate(id)
			st := jr.Status
			st.State = "done"
			st.Binaries = jr.Binaries
			data, _ := json.Marshal(st)
			topic.Forget("names")
			topic.Finish("symbolized", ondemand.EventSymbolized, data)
			return false
		case jr != nil && jr.State == jobAbandoned, time.Since(changedAt) >= r.cfg.TakeoverAfter:
			// The next run after the newest one seen or lost (a claim's
			// winner may have died before writing job.json).
			g := f.minGen + 1
			if jr != nil {
				g = max(g, jr.Gen+1)
			}
			won, err := s.claimJob(r.ctx, id, g)
			if err != nil {
				s.log.Warn("claiming a quiet symbolization job", "id", id, "err", err)
				continue
			}
			if won {
				s.log.Info("took over the symbolization job", "id", id, "from", ownerOf(jr))
				return true
			}
			f.minGen, changedAt = g, time.Now()
		}
	}
}

func ownerOf(jr *jobRecord) string {
	if jr == nil {
		return "(unknown)"
	}
	return jr.Owner
}

// replicaEvents prepares this replica to answer /p/ID/events when its page
// was served by another replica (a load balancer without affinity, or an
// EventSource reconnecting elsewhere): it follows, or queues, the job as a
// page view would, and for a job finished elsewhere it answers with the
// final event so the page redraws once.
func (s *Server) replicaEvents(ctx context.Context, id string) {
	r := s.rep
	if r == nil || s.sym.jobs.Job(id) != nil {
		return
	}
	if _, ok := s.followedBinaries(id); ok {
		return
	}
	if s.sym.broker.Lookup(id) != nil {
		return
	}
	if err := s.QueueSymbolization(ctx, id, false); err != nil {
		s.log.Warn("queueing symbolization for an event stream", "id", id, "err", err)
	}
	if s.sym.jobs.Job(id) != nil {
		return
	}
	if _, ok := s.followedBinaries(id); ok {
		return
	}
	rec, err := s.sym.jobs.Record(ctx, id)
	if err != nil || !rec.Done {
		return
	}
	st := ondemand.Status{State: "done", Servers: s.debuginfodServers(), Asked: rec.Asked, Binaries: rec.Binaries}
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
	data, _ := json.Marshal(st)
	topic := s.sym.broker.Topic(id)
	if !topic.Finished() {
		topic.Finish("symbolized", ondemand.EventSymbolized, data)
	}
}

// replicateSubmit mirrors a job just submitted; when the submit failed
// (a full queue) it gives up the claim at once, marking the run abandoned so
// another replica with room can take it instead of waiting TakeoverAfter.
func (s *Server) replicateSubmit(id string, j *ondemand.Job, err error) {
	r := s.rep
	if r == nil {
		return
	}
	if err == nil {
		s.replicate(j)
		return
	}
	r.mu.Lock()
	c, ok := r.claims[id]
	delete(r.claims, id)
	r.mu.Unlock()
	if ok {
		jr := &jobRecord{Owner: r.cfg.ID, Gen: c.gen, Token: c.token, State: jobAbandoned, Seq: 1, Heartbeat: time.Now().UTC()}
		if werr := s.writeJobRecord(r.ctx, id, jr); werr != nil {
			s.log.Warn("giving up the symbolization claim", "id", id, "err", werr)
		}
	}
}

// KeyControl is the store key, under a profile's ID, of the Skip and
// Disable requests a replica received for a job another replica runs; the
// running replica polls it and applies them.
const KeyControl = "control.json"

// controlRecord is ID/control.json, for run Gen of the job.
type controlRecord struct {
	Gen     int      `json:"gen"`
	Skip    []string `json:"skip,omitempty"`
	Disable bool     `json:"disable,omitempty"`
}

// forwardControl passes a Skip (key) or Disable to the replica running the
// profile's job, when this replica follows it, and reports whether it did.
// Two replicas forwarding at the same moment can overwrite each other's
// request (the object is rewritten whole); the page then still shows the
// binary running and the user presses again.
func (s *Server) forwardControl(ctx context.Context, id, key string, disable bool) bool {
	if s.rep == nil {
		return false
	}
	if _, ok := s.followedBinaries(id); !ok {
		return false
	}
	jr, err := s.readJobRecord(ctx, id)
	if err != nil || !(jr.State == "queued" || jr.State == "running") {
		return false
	}
	cr := controlRecord{Gen: jr.Gen}
	if b, err := store.ReadAll(ctx, s.store, profiles.Key(id, KeyControl), 1<<20); err == nil {
		var cur controlRecord
		if json.Unmarshal(b, &cur) == nil && cur.Gen == jr.Gen {
			cr = cur
		}
	}
	if key != "" && !slices.Contains(cr.Skip, key) {
		cr.Skip = append(cr.Skip, key)
	}
	cr.Disable = cr.Disable || disable
	b, _ := json.Marshal(cr)
	if err := s.store.Put(ctx, profiles.Key(id, KeyControl), bytes.NewReader(b)); err != nil {
		s.log.Warn("forwarding a symbolization request", "id", id, "err", err)
		return false
	}
	return true
}

// applyControl applies the Skip and Disable requests other replicas stored
// for this run of a local job; seen tracks the control object's version.
func (s *Server) applyControl(j *ondemand.Job, gen int, seen *string, applied map[string]bool) {
	ctx := s.rep.ctx
	id := j.ID()
	info, err := s.store.Stat(ctx, profiles.Key(id, KeyControl))
	if err != nil {
		return
	}
	v := info.ETag + "/" + info.ModTime.String() + "/" + strconv.FormatInt(info.Size, 10)
	if v == *seen {
		return
	}
	b, err := store.ReadAll(ctx, s.store, profiles.Key(id, KeyControl), 1<<20)
	if err != nil {
		return
	}
	*seen = v
	var cr controlRecord
	if json.Unmarshal(b, &cr) != nil || cr.Gen != gen {
		return
	}
	for _, k := range cr.Skip {
		if !applied[k] {
			applied[k] = true
			if err := j.Skip(k); err != nil {
				s.log.Warn("skip from another replica", "id", id, "key", k, "err", err)
			}
		}
	}
	if cr.Disable && !applied[" disable"] {
		applied[" disable"] = true
		j.Disable()
	}
}

package ondemand

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"time"

	"viewer/symbolize"
	"viewer/web/profiles"
	"viewer/web/store"
)

// jobRecord is the lease record, ID/job.json (profiles.KeyLease): which
// replica holds the job's lease and the job's rows as it last wrote them.
type jobRecord struct {
	Owner string `json:"owner"`
	// Gen counts claims of the profile's job; Token is the claim's
	// random token.
	Gen   int      `json:"gen"`
	Token string   `json:"token"`
	State RunState `json:"state"`
	// Seq increases with each write by the owner; Heartbeat is the
	// owner's clock at that write.
	Seq       int64     `json:"seq"`
	Heartbeat time.Time `json:"heartbeat"`
	Status    Status    `json:"status"`
	Binaries  []Binary  `json:"binaries"`
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

func (l *Lease) readJobRecord(ctx context.Context, id string) (*jobRecord, error) {
	b, err := store.ReadAll(ctx, l.store, profiles.Key(id, profiles.KeyLease), 16<<20)
	if err != nil {
		return nil, err
	}
	jr := new(jobRecord)
	if err := json.Unmarshal(b, jr); err != nil {
		return nil, fmt.Errorf("%s: %w", profiles.Key(id, profiles.KeyLease), err)
	}
	return jr, nil
}

func (l *Lease) writeJobRecord(ctx context.Context, id string, jr *jobRecord) error {
	b, err := json.Marshal(jr)
	if err != nil {
		return err
	}
	return l.store.Put(ctx, profiles.Key(id, profiles.KeyLease), bytes.NewReader(b))
}

// live reports whether a job record says another replica is working on the
// job and was heard from within TakeoverAfter (by this replica's clock).
func (l *Lease) live(jr *jobRecord) bool {
	return jr != nil && jr.Owner != l.cfg.ID && jr.State.Active() &&
		time.Since(jr.Heartbeat) < l.cfg.TakeoverAfter
}

// claimJob claims generation gen of the profile's job for this replica.
// With a store that has conditional creates (S3 If-None-Match: *, GCS, Azure,
// fileblob) exactly one replica wins each generation. Without one (Dir), or
// with an S3 clone that ignores the precondition, the claim is written,
// then read back after a short pause: a replica whose claim was overwritten
// loses. Two replicas can still both win when one writes its claim more than
// that pause after the other read it back; both then run the job, which
// costs work but not correctness (the jobs adopt each other's results).
func (l *Lease) claimJob(ctx context.Context, id string, gen int) (bool, error) {
	token := randomToken()
	b, _ := json.Marshal(claimRecord{Owner: l.cfg.ID, Token: token, At: time.Now().UTC()})
	key := profiles.ClaimKey(id, gen)
	if ap, ok := l.store.(absentPutter); ok {
		won, err := ap.PutIfAbsent(ctx, key, bytes.NewReader(b))
		if err != nil || !won {
			return false, err
		}
	} else if err := l.store.Put(ctx, key, bytes.NewReader(b)); err != nil {
		return false, err
	} else {
		time.Sleep(min(l.cfg.Poll, 200*time.Millisecond)) // let a racing claim land
	}
	got, err := store.ReadAll(ctx, l.store, key, 1<<20)
	if err != nil {
		return false, err
	}
	var cr claimRecord
	if json.Unmarshal(got, &cr) != nil || cr.Token != token {
		return false, nil
	}
	l.mu.Lock()
	l.claims[id] = claim{gen: gen, token: token}
	l.mu.Unlock()
	// Announce the claim at once so others follow rather than claim.
	err = l.writeJobRecord(ctx, id, &jobRecord{Owner: l.cfg.ID, Gen: gen, Token: token, State: RunQueued, Heartbeat: time.Now().UTC()})
	return true, err
}

// Claim implements Coordinator: before this replica symbolizes a profile,
// it reports false when another replica runs the job (this one then follows
// it from the store) and true when this replica should run it, having
// claimed it (or when the store cannot say: work is repeated, never lost).
func (l *Lease) Claim(ctx context.Context, id string) bool {
	return !l.followRemote(ctx, id)
}

func (l *Lease) followRemote(ctx context.Context, id string) bool {
	l.mu.Lock()
	_, following := l.followers[id]
	l.mu.Unlock()
	if following {
		return true
	}
	jr, err := l.readJobRecord(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		l.log.Warn("reading the job record; symbolizing here", "id", id, "err", err)
		return false
	}
	if l.live(jr) {
		l.startFollower(id, jr.Gen)
		return true
	}
	gen := 1
	if jr != nil {
		gen = jr.Gen + 1
	}
	won, err := l.claimJob(ctx, id, gen)
	if err != nil {
		l.log.Warn("claiming the symbolization job; symbolizing here", "id", id, "err", err)
		return false
	}
	if !won {
		l.startFollower(id, gen)
		return true
	}
	return false
}

// Heartbeat implements Coordinator: it writes a local job's state to
// ID/job.json while it runs (on each change, and every
// LeaseConfig.Heartbeat), so other replicas can stream it and know it is
// alive. It ends with the job: RunDone when the job stored its outcome,
// RunAbandoned when it stopped short (shutdown), so another replica takes
// it over at once.
func (l *Lease) Heartbeat(j *Job) {
	if j == nil || j.Done() {
		return
	}
	id := j.ID()
	l.mu.Lock()
	if l.mirrors[id] {
		l.mu.Unlock()
		return
	}
	l.mirrors[id] = true
	c, ok := l.claims[id]
	l.mu.Unlock()
	if !ok {
		// Submitted without a claim (a retry): claim the next generation;
		// the job runs here either way.
		gen := 1
		if jr, err := l.readJobRecord(l.ctx, id); err == nil {
			gen = jr.Gen + 1
		}
		if won, err := l.claimJob(l.ctx, id, gen); err != nil || !won {
			l.log.Warn("symbolizing without a claim", "id", id, "err", err)
		}
		l.mu.Lock()
		c = l.claims[id]
		l.mu.Unlock()
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer func() {
			l.mu.Lock()
			delete(l.mirrors, id)
			delete(l.claims, id)
			l.mu.Unlock()
		}()
		l.mirror(j, c)
	}()
}

func (l *Lease) mirror(j *Job, c claim) {
	id := j.ID()
	jr := &jobRecord{Owner: l.cfg.ID, Gen: c.gen, Token: c.token}
	var last jobRecord
	var lastWrite time.Time
	var controlSeen string
	applied := map[string]bool{}
	tick := time.NewTicker(min(l.cfg.Poll, l.cfg.Heartbeat))
	defer tick.Stop()
	for {
		if !j.Done() {
			l.applyControl(j, c.gen, &controlSeen, applied)
		}
		done := j.Done()
		snap := j.Snapshot()
		jr.State, jr.Status, jr.Binaries = snap.Status.State, snap.Status, snap.Binaries
		jr.Status.Binaries = nil
		if done {
			jr.State = RunDone
			if rec, err := l.m.Outcome(l.ctx, id); err != nil || !rec.Done {
				jr.State = RunAbandoned
			}
		}
		changed := jr.State != last.State || !reflect.DeepEqual(jr.Status, last.Status) || !reflect.DeepEqual(jr.Binaries, last.Binaries)
		if changed || done || time.Since(lastWrite) >= l.cfg.Heartbeat {
			if !changed && !done {
				// A heartbeat: check first that nobody took the job over
				// while this replica was quiet.
				if cur, err := l.readJobRecord(l.ctx, id); err == nil && cur.Gen > c.gen {
					l.log.Warn("another replica took over the symbolization job", "id", id, "owner", cur.Owner)
					return
				}
			}
			jr.Seq++
			jr.Heartbeat = time.Now().UTC()
			if err := l.writeJobRecord(l.ctx, id, jr); err != nil {
				if l.ctx.Err() != nil {
					return
				}
				l.log.Warn("writing the job record", "id", id, "err", err)
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
		case <-l.ctx.Done():
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

// Followed implements Coordinator: the rows of a job another replica runs
// that this one follows.
func (l *Lease) Followed(id string) ([]Binary, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.followers[id]
	if f == nil {
		return nil, false
	}
	if f.last == nil {
		return []Binary{}, true
	}
	return append([]Binary(nil), f.last.Binaries...), true
}

func (l *Lease) startFollower(id string, minGen int) {
	l.mu.Lock()
	if l.followers[id] != nil || l.ctx.Err() != nil {
		l.mu.Unlock()
		return
	}
	f := &follower{id: id, minGen: minGen}
	l.followers[id] = f
	l.wg.Add(1)
	l.mu.Unlock()
	topic := l.m.cfg.Broker.Topic(id)
	if topic.Finished() {
		topic.Reopen()
	}
	go func() {
		defer l.wg.Done()
		takeOver := l.follow(f)
		l.mu.Lock()
		delete(l.followers, id)
		l.mu.Unlock()
		if takeOver {
			j, err := l.m.Submit(id, Options{})
			if err != nil {
				l.log.Error("taking over the symbolization job", "id", id, "err", err)
				return
			}
			l.Heartbeat(j)
		}
	}()
}

// follow polls the job's record and its symbolized copy, publishing what
// changed as the same events a local job sends. It returns true when this
// replica claimed the job because its owner went quiet or gave it up.
func (l *Lease) follow(f *follower) bool {
	id := f.id
	pub := newPublisher(l.m.cfg.Broker.Topic(id))
	var seq int64 = -1
	gen := -1
	changedAt := time.Now()
	var cur *jobRecord // the newest record read
	stored := 0        // newer symbolized copies seen
	names, _ := profiles.SymbolizedVersion(l.ctx, l.store, id)
	tick := time.NewTicker(l.cfg.Poll)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-l.ctx.Done():
			return false
		}
		jr, err := l.readJobRecord(l.ctx, id)
		if err != nil {
			if l.ctx.Err() != nil {
				return false
			}
			continue // the store is down, or the claim is not yet written
		}
		if jr.Gen < f.minGen {
			jr = nil // the winner of a claim has not written yet
		}
		changed := false
		if jr != nil && (jr.Seq != seq || jr.Gen != gen) {
			seq, gen, changedAt = jr.Seq, jr.Gen, time.Now()
			l.mu.Lock()
			f.last = jr
			l.mu.Unlock()
			cur, changed = jr, true
		}
		if v, err := profiles.SymbolizedVersion(l.ctx, l.store, id); err == nil && v != names {
			names = v
			l.m.stored(id)
			stored++
			changed = true
		}
		if jr != nil && jr.State == RunDone {
			l.m.stored(id)
		}
		if changed && cur != nil {
			// The same events a local job sends: a snapshot of the
			// owner's job, as its record says.
			snap := Snapshot{Status: cur.Status, Binaries: cur.Binaries, Names: stored, Final: cur.State == RunDone}
			snap.Status.Binaries = nil
			if snap.Final {
				snap.Status.State = RunDone
				snap.Status.Binaries = cur.Binaries
			}
			pub.publish(snap)
			// The owner's rows carry its downloads' byte counts; a
			// local job sends them as progress events, which pages
			// need to show a download advancing (without them a
			// follower's page said "stalled: no byte for N s").
			for _, b := range cur.Binaries {
				if !snap.Final && b.State == symbolize.StateFetching && fetchRunning(b.Phase) {
					pub.progress(Progress{Key: b.Key, BuildID: b.BuildID, File: b.File, Server: b.Server,
						Phase: b.Phase, Bytes: b.Bytes, Total: b.Total}, l.m.cfg.ProgressEvery)
				}
			}
		}
		switch {
		case jr != nil && jr.State == RunDone:
			return false
		case jr != nil && jr.State == RunAbandoned, time.Since(changedAt) >= l.cfg.TakeoverAfter:
			// The next run after the newest one seen or lost (a claim's
			// winner may have died before writing job.json).
			g := f.minGen + 1
			if jr != nil {
				g = max(g, jr.Gen+1)
			}
			won, err := l.claimJob(l.ctx, id, g)
			if err != nil {
				l.log.Warn("claiming a quiet symbolization job", "id", id, "err", err)
				continue
			}
			if won {
				l.log.Info("took over the symbolization job", "id", id, "from", ownerOf(jr))
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

// Release implements Coordinator: the job this replica claimed could not be
// submitted (a full queue), so it gives up the claim at once, marking the
// run abandoned so another replica with room can take it instead of
// waiting TakeoverAfter.
func (l *Lease) Release(id string) {
	l.mu.Lock()
	c, ok := l.claims[id]
	delete(l.claims, id)
	l.mu.Unlock()
	if ok {
		jr := &jobRecord{Owner: l.cfg.ID, Gen: c.gen, Token: c.token, State: RunAbandoned, Seq: 1, Heartbeat: time.Now().UTC()}
		if werr := l.writeJobRecord(l.ctx, id, jr); werr != nil {
			l.log.Warn("giving up the symbolization claim", "id", id, "err", werr)
		}
	}
}

// controlRecord is ID/control.json, for run Gen of the job.
type controlRecord struct {
	Gen     int      `json:"gen"`
	Skip    []string `json:"skip,omitempty"`
	Disable bool     `json:"disable,omitempty"`
}

// Forward implements Coordinator: it passes a Skip (key) or Disable to the
// replica running the profile's job, when this replica follows it, and
// reports whether it did.
// Two replicas forwarding at the same moment can overwrite each other's
// request (the object is rewritten whole); the page then still shows the
// binary running and the user presses again.
func (l *Lease) Forward(ctx context.Context, id, key string, disable bool) bool {
	if _, ok := l.Followed(id); !ok {
		return false
	}
	jr, err := l.readJobRecord(ctx, id)
	if err != nil || !jr.State.Active() {
		return false
	}
	cr := controlRecord{Gen: jr.Gen}
	if b, err := store.ReadAll(ctx, l.store, profiles.Key(id, profiles.KeyControl), 1<<20); err == nil {
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
	if err := l.store.Put(ctx, profiles.Key(id, profiles.KeyControl), bytes.NewReader(b)); err != nil {
		l.log.Warn("forwarding a symbolization request", "id", id, "err", err)
		return false
	}
	return true
}

// applyControl applies the Skip and Disable requests other replicas stored
// for this run of a local job; seen tracks the control object's version.
func (l *Lease) applyControl(j *Job, gen int, seen *string, applied map[string]bool) {
	ctx := l.ctx
	id := j.ID()
	info, err := l.store.Stat(ctx, profiles.Key(id, profiles.KeyControl))
	if err != nil {
		return
	}
	v := info.ETag + "/" + info.ModTime.String() + "/" + strconv.FormatInt(info.Size, 10)
	if v == *seen {
		return
	}
	b, err := store.ReadAll(ctx, l.store, profiles.Key(id, profiles.KeyControl), 1<<20)
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
				l.log.Warn("skip from another replica", "id", id, "key", k, "err", err)
			}
		}
	}
	if cr.Disable && !applied[" disable"] {
		applied[" disable"] = true
		j.Disable()
	}
}

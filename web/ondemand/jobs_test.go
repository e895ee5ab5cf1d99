package ondemand

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"go.uber.org/goleak"

	"viewer/symbolize"
	"viewer/symbolize/sampling"
	"viewer/testdata/poll"
	"viewer/web/profiles"
	"viewer/web/sse"
	"viewer/web/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const server = "http://debuginfod.test"

// fakeFetcher plays a debuginfod client: each build ID has a behaviour.
type fakeFetcher struct {
	mu    sync.Mutex
	calls map[string]int
	// have maps build IDs the "server" holds to the path it returns.
	have map[string]bool
	// block makes fetches of these build IDs wait until the channel is
	// closed or their context ends.
	block map[string]chan struct{}
	// started is signalled when a fetch starts.
	started chan string
	// steps is how many progress callbacks a fetch makes, spaced by gap.
	steps int
	gap   time.Duration
}

func newFakeFetcher() *fakeFetcher {
	return &fakeFetcher{calls: map[string]int{}, have: map[string]bool{}, block: map[string]chan struct{}{}, started: make(chan string, 100), steps: 3}
}

func (f *fakeFetcher) Fetch(ctx context.Context, id string, kind symbolize.FetchKind, progress func(symbolize.FetchProgress)) (string, error) {
	f.mu.Lock()
	f.calls[id]++
	have, block := f.have[id], f.block[id]
	f.mu.Unlock()
	f.started <- id
	progress(symbolize.FetchProgress{BuildID: id, Kind: kind, Server: server, Phase: symbolize.PhaseConnecting, Total: -1})
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if !have {
		progress(symbolize.FetchProgress{BuildID: id, Kind: kind, Server: server, Phase: symbolize.PhaseNotFound, Err: symbolize.ErrFetchNotFound})
		return "", fmt.Errorf("%s: %w", id, symbolize.ErrFetchNotFound)
	}
	for i := 1; i <= f.steps; i++ {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		progress(symbolize.FetchProgress{BuildID: id, Kind: kind, Server: server, Phase: symbolize.PhaseDownloading, Bytes: int64(i * 100), Total: int64(f.steps * 100)})
		time.Sleep(f.gap)
	}
	progress(symbolize.FetchProgress{BuildID: id, Kind: kind, Server: server, Phase: symbolize.PhaseDone, Bytes: int64(f.steps * 100), Total: int64(f.steps * 100), Path: "/cache/" + id})
	return "/cache/" + id, nil
}

func (f *fakeFetcher) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}

// fakeSymbolizer plays the engine, keeping its contract (symbolize.Options):
// each unsymbolized binary is worked on under the context opt.Binary gives
// (one that ended is not started, one that ends is reported skipped with
// its cause), at most opt.Parallel at once, looked up in local, then
// fetched through opt.Fetcher, else the fetcher (the Gate), as the engine
// does; its locations are named
// "<base>:fn<address>" under opt.Names, before its final event.
type fakeSymbolizer struct {
	fetcher symbolize.Fetcher
	local   map[string]bool
	mu      sync.Mutex
	calls   map[string]int // per build ID: how many runs looked at it
	gate    chan struct{}  // when set, Symbolize waits for it first
	reqs    []symbolize.Options
}

func (s *fakeSymbolizer) Symbolize(ctx context.Context, p *profile.Profile, opt symbolize.Options) (*symbolize.Report, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, opt)
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return &symbolize.Report{}, ctx.Err()
		}
	}
	symbolize.CallSites(p) // as the engine does, for a copy stored before the convention
	emit := func(ev symbolize.Event) {
		if opt.Progress != nil {
			opt.Progress(ev)
		}
	}
	names := opt.Names
	if names == nil {
		names = new(sync.Mutex)
	}
	ms := unsymbolized(p)
	rep := &symbolize.Report{Mappings: make([]symbolize.MappingReport, len(ms))}
	for i, m := range ms {
		k := symbolize.BinaryKey(m)
		rep.Mappings[i] = symbolize.MappingReport{Key: k, File: m.File, BuildID: m.BuildID, State: symbolize.StateQueued}
		emit(symbolize.Event{Mapping: m, Key: k, File: m.File, BuildID: m.BuildID, State: symbolize.StateQueued})
	}
	one := func(i int, m *profile.Mapping) {
		key := symbolize.BinaryKey(m)
		mctx := ctx
		if opt.Binary != nil {
			var cancel context.CancelFunc
			mctx, cancel = opt.Binary(ctx, key, m)
			defer cancel()
		}
		ev := func(st symbolize.State, src string, err error) {
			emit(symbolize.Event{Mapping: m, Key: key, File: m.File, BuildID: m.BuildID, State: st, Source: src, Err: err})
		}
		end := func(st symbolize.State, src string, err error) {
			r := &rep.Mappings[i]
			r.State, r.Source = st, src
			if err != nil {
				r.Reason = err.Error()
			}
			ev(st, src, err)
		}
		stopped := func() bool {
			switch {
			case ctx.Err() != nil:
				end(symbolize.StateSkipped, "", fmt.Errorf("stopped: %w", context.Cause(ctx)))
			case mctx.Err() != nil:
				end(symbolize.StateSkipped, "", fmt.Errorf("skipped: %w", context.Cause(mctx)))
			default:
				return false
			}
			return true
		}
		if stopped() {
			return
		}
		s.mu.Lock()
		s.calls[m.BuildID]++
		s.mu.Unlock()
		ev(symbolize.StateSearching, "", nil)
		source := ""
		if s.local[m.BuildID] {
			source = "/usr/lib/debug/.build-id/" + m.BuildID
		} else if opt.NoDebuginfod {
			end(symbolize.StateNotFound, "", errors.New("not found locally"))
			return
		} else {
			f := s.fetcher
			if opt.Fetcher != nil {
				f = opt.Fetcher
			}
			path, err := f.Fetch(mctx, m.BuildID, symbolize.KindDebuginfo, nil)
			if err != nil {
				if stopped() {
					return
				}
				st := symbolize.StateNotFound
				if !errors.Is(err, symbolize.ErrFetchNotFound) && !errors.Is(err, ErrSkipped) {
					st = symbolize.StateError
				}
				end(st, "", err)
				return
			}
			source = path
		}
		ev(symbolize.StateLoading, source, nil)
		names.Lock()
		name(p, m)
		names.Unlock()
		end(symbolize.StateSymbolized, source, nil)
	}
	workers := opt.Parallel
	if workers <= 0 {
		workers = 2
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(ms)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				one(i, ms[i])
			}
		}()
	}
dispatch:
	for i := range ms {
		select {
		case work <- i:
		case <-ctx.Done():
			break dispatch
		}
	}
	close(work)
	wg.Wait()
	return rep, ctx.Err()
}

var nameMu sync.Mutex

func name(p *profile.Profile, m *profile.Mapping) {
	nameMu.Lock()
	defer nameMu.Unlock()
	for _, l := range p.Location {
		if l.Mapping == m {
			f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: fmt.Sprintf("%s:fn%x", binaryName(m.File), l.Address)}
			p.Function = append(p.Function, f)
			l.Line = []profile.Line{{Function: f}}
		}
	}
	m.HasFunctions = true
}

// addrProfile has one unsymbolized mapping per build ID, two samples each.
func addrProfile(buildIDs ...string) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     1,
	}
	for i, id := range buildIDs {
		base := uint64(0x10000 * (i + 1))
		m := &profile.Mapping{ID: uint64(i + 1), Start: base, Limit: base + 0x1000, File: "/usr/lib/lib" + id + ".so", BuildID: id}
		p.Mapping = append(p.Mapping, m)
		for k := range 2 {
			l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: base + uint64(0x10*(k+1))}
			p.Location = append(p.Location, l)
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l}, Value: []int64{int64(10 * (k + 1))}})
		}
	}
	return p
}

type harness struct {
	t     *testing.T
	st    *store.Dir
	fetch *fakeFetcher
	sym   *fakeSymbolizer
	m     *Manager
	srv   *httptest.Server
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	st, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, st: st, fetch: newFakeFetcher()}
	gate := NewGate(h.fetch)
	h.sym = &fakeSymbolizer{fetcher: gate, local: map[string]bool{}, calls: map[string]int{}}
	cfg.Symbolizer, cfg.Store, cfg.Gate = h.sym, st, gate
	if cfg.Servers == nil {
		cfg.Servers = []string{server}
	}
	cfg.Broker = sse.NewBroker(sse.Config{})
	cfg.Load = func(ctx context.Context, id string) (*profile.Profile, error) {
		rc, err := st.Get(ctx, id+"/original")
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return profile.Parse(rc)
	}
	h.m = New(cfg)
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.m.Events(w, r, strings.TrimPrefix(r.URL.Path, "/"))
	}))
	t.Cleanup(func() {
		h.srv.Close()
		h.m.Close()
		http.DefaultClient.CloseIdleConnections()
	})
	return h
}

func (h *harness) upload(id string, p *profile.Profile) {
	h.t.Helper()
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		h.t.Fatal(err)
	}
	if err := h.st.Put(context.Background(), id+"/original", &b); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) stored(id string) *profile.Profile {
	h.t.Helper()
	rc, err := h.st.Get(context.Background(), profiles.Key(id, profiles.KeySymbolized))
	if err != nil {
		h.t.Fatalf("symbolized copy of %s: %v", id, err)
	}
	defer rc.Close()
	p, err := profile.Parse(rc)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

type event struct {
	Type string
	Data json.RawMessage
}

// stream reads the profile's events as they come, until the final event.
func (h *harness) stream(id string) <-chan event {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	req, _ := http.NewRequestWithContext(ctx, "GET", h.srv.URL+"/"+id, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	ch := make(chan event, 10000)
	go func() {
		defer cancel()
		defer resp.Body.Close()
		defer close(ch)
		var cur event
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				cur.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				cur.Data = json.RawMessage(line[6:])
			case line == "" && cur.Type != "":
				ch <- cur
				if cur.Type == EventSymbolized {
					return
				}
				cur = event{}
			}
		}
	}()
	return ch
}

// events reads the profile's stream until the final event.
func (h *harness) events(id string) []event {
	h.t.Helper()
	return h.collect(h.stream(id))
}

func (h *harness) collect(ch <-chan event) []event {
	h.t.Helper()
	var evs []event
	for e := range ch {
		evs = append(evs, e)
	}
	if len(evs) == 0 || evs[len(evs)-1].Type != EventSymbolized {
		h.t.Fatalf("stream ended without a symbolized event (after %d events)", len(evs))
	}
	return evs
}

func final(t *testing.T, evs []event) Status {
	t.Helper()
	var s Status
	if err := json.Unmarshal(evs[len(evs)-1].Data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func byKey(bs []Binary) map[string]Binary {
	m := map[string]Binary{}
	for _, b := range bs {
		m[b.Key] = b
	}
	return m
}

func functionNames(p *profile.Profile) map[string]bool {
	names := map[string]bool{}
	for _, f := range p.Function {
		names[f.Name] = true
	}
	return names
}

func TestJobSymbolizesStreamsAndStores(t *testing.T) {
	h := newHarness(t, Config{})
	h.sym.local["aa01"] = true
	h.fetch.have["bb02"] = true
	up := addrProfile("aa01", "bb02", "cc03")
	h.upload("p1", up)
	h.sym.gate = make(chan struct{})
	release := make(chan struct{})
	h.fetch.block["bb02"] = release
	if _, err := h.m.Submit("p1", Options{Profile: up}); err != nil {
		t.Fatal(err)
	}
	// The page is rendered before the job ran: the panel lists every
	// binary as queued.
	bs := byKey(h.m.Binaries("p1"))
	if len(bs) != 3 || bs["bb02"].State != symbolize.StateQueued || bs["bb02"].Name != "libbb02.so" {
		t.Fatalf("before the run, binaries = %+v", bs)
	}
	ch := h.stream("p1")
	close(h.sym.gate)

	// The fetched binary is shown fetching, with its server, while the
	// download runs; then it resolves. The download is held until the
	// stream carried its progress (a fetch's progress is dropped from the
	// stream once it ended, so a subscriber slower than the download may
	// see none).
	var evs []event
	var states []symbolize.State
	sawFetching := false
	for e := range ch {
		evs = append(evs, e)
		if e.Type == EventProgress && release != nil && sawFetching {
			var p Progress
			json.Unmarshal(e.Data, &p)
			if p.BuildID == "bb02" {
				close(release)
				release = nil
			}
		}
		if e.Type != EventBinary {
			continue
		}
		var b Binary
		json.Unmarshal(e.Data, &b)
		if b.Key != "bb02" {
			continue
		}
		if len(states) == 0 || states[len(states)-1] != b.State {
			states = append(states, b.State)
		}
		if b.State == symbolize.StateFetching {
			sawFetching = true
			if b.Server != server {
				t.Errorf("fetching event without its server: %s", e.Data)
			}
		}
	}
	if release != nil {
		t.Fatal("never saw bb02 fetching, with its progress")
	}
	progress := 0
	for _, e := range evs {
		if e.Type == EventProgress {
			var p Progress
			json.Unmarshal(e.Data, &p)
			// cc03 is asked too (the server has not got it), so its
			// fetch may report before it ends.
			if (p.BuildID != "bb02" && p.BuildID != "cc03") || p.Server != server || (p.Phase == "downloading" && p.Total != 300) {
				t.Errorf("progress event %s", e.Data)
			}
			if p.BuildID == "bb02" {
				progress++
			}
		}
	}
	// States only move forward; a subscriber may skip a state that was
	// superseded before it was written (the stream sends the latest).
	order := map[symbolize.State]int{symbolize.StateQueued: 0, symbolize.StateSearching: 1, symbolize.StateFetching: 2, symbolize.StateLoading: 3, symbolize.StateSymbolized: 4}
	for i := 1; i < len(states); i++ {
		if order[states[i]] <= order[states[i-1]] {
			t.Errorf("bb02 went through %v: not forward", states)
		}
	}
	if states[0] != symbolize.StateQueued || states[len(states)-1] != symbolize.StateSymbolized {
		t.Errorf("bb02 went through %v, want queued ... symbolized", states)
	}
	if progress == 0 {
		t.Error("no progress event for bb02's fetch")
	}
	s := final(t, evs)
	if s.Resolved != 2 || s.Missed != 1 || fmt.Sprint(s.Asked) != "["+server+"]" || !s.Debuginfod {
		t.Errorf("final status %+v", s)
	}
	fb := byKey(s.Binaries)
	if fb["aa01"].State != symbolize.StateSymbolized || !strings.Contains(fb["aa01"].Source, "/usr/lib/debug") {
		t.Errorf("local binary: %+v", fb["aa01"])
	}
	if fb["bb02"].State != symbolize.StateSymbolized || fb["bb02"].Source != "/cache/bb02" {
		t.Errorf("fetched binary: %+v", fb["bb02"])
	}
	if fb["cc03"].State != symbolize.StateNotFound || !strings.Contains(fb["cc03"].Reason, "not found") {
		t.Errorf("missing binary: %+v", fb["cc03"])
	}

	p := h.stored("p1")
	names := functionNames(p)
	if !names["libaa01.so:fn10010"] || !names["libbb02.so:fn20020"] {
		t.Errorf("stored profile names %v", names)
	}
	if !symbolize.NeedsSymbolization(p) {
		t.Error("cc03 never resolved, yet the stored profile claims to be complete")
	}
	// Submitting the finished profile again does not run it again.
	j, err := h.m.Submit("p1", Options{})
	if err != nil || !j.Done() {
		t.Fatalf("resubmit: %v done=%v", err, j != nil && j.Done())
	}
	if n := h.fetch.count("bb02"); n != 1 {
		t.Errorf("bb02 fetched %d times, want 1", n)
	}
}

func TestLateSubscriberGetsFinalStateAndNoReconnect(t *testing.T) {
	h := newHarness(t, Config{})
	h.sym.local["aa01"] = true
	h.upload("p1", addrProfile("aa01"))
	j, _ := h.m.Submit("p1", Options{})
	j.Wait(context.Background())
	evs := h.events("p1")
	if len(evs) < 2 || evs[len(evs)-1].Type != EventSymbolized {
		t.Fatalf("late subscriber got %v", evs)
	}
	// No job at all: 204, so EventSource stops.
	resp, err := http.Get(h.srv.URL + "/unknown")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("events of a profile with no job: %d, want 204", resp.StatusCode)
	}
}

func TestQueueFullIsTypedAndLosesNothing(t *testing.T) {
	h := newHarness(t, Config{Workers: 1, Queue: 1})
	h.sym.gate = make(chan struct{})
	for _, id := range []string{"p1", "p2", "p3"} {
		h.upload(id, addrProfile("aa01"))
	}
	h.sym.local["aa01"] = true
	if _, err := h.m.Submit("p1", Options{}); err != nil {
		t.Fatal(err)
	}
	// p1 is running (waiting on the gate) once its status says so.
	poll.Until(t, 5*time.Second, "p1 to start", func() bool { return h.m.Job("p1").Status().State == "running" })
	if _, err := h.m.Submit("p2", Options{}); err != nil {
		t.Fatalf("p2 should fit in the queue: %v", err)
	}
	again, err := h.m.Submit("p2", Options{})
	if err != nil || again != h.m.Job("p2") {
		t.Fatalf("submitting a queued profile again: %v, want the same job", err)
	}
	_, err = h.m.Submit("p3", Options{})
	var qf *QueueFullError
	if !errors.As(err, &qf) || !errors.Is(err, ErrQueueFull) || qf.RetryAfter < time.Second {
		t.Fatalf("third submit: %v, want a QueueFullError with RetryAfter >= 1s", err)
	}
	if h.m.Job("p3") != nil {
		t.Error("a refused job is listed")
	}
	close(h.sym.gate)
	h.m.Job("p2").Wait(context.Background())
	// Asking again later works: the upload was stored all along.
	j, err := h.m.Submit("p3", Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.Wait(context.Background())
	if !functionNames(h.stored("p3"))["libaa01.so:fn10010"] {
		t.Error("p3 was not symbolized after its retry")
	}
}

func TestSkipCancelsOneFetch(t *testing.T) {
	h := newHarness(t, Config{})
	h.fetch.have["aa01"], h.fetch.have["bb02"] = true, true
	release := make(chan struct{})
	h.fetch.block["aa01"] = make(chan struct{}) // never released: only Skip ends it
	h.fetch.block["bb02"] = release
	h.upload("p1", addrProfile("aa01", "bb02"))
	h.m.Submit("p1", Options{})
	started := map[string]bool{}
	for len(started) < 2 {
		started[<-h.fetch.started] = true
	}
	if err := h.m.Skip("p1", "aa01"); err != nil {
		t.Fatal(err)
	}
	if err := h.m.Skip("p1", "nope"); err == nil {
		t.Error("skipping an unknown binary: want an error")
	}
	// The skipped binary is reported at once, while bb02 still fetches
	// (its fetch has started, held by release; its state may take a
	// moment to leave "searching" after the fetcher is called).
	b := byKey(h.m.Binaries("p1"))
	if b["aa01"].State != symbolize.StateSkipped {
		t.Errorf("after Skip: %+v", b)
	}
	poll.Wait(10*time.Second, func() bool {
		b = byKey(h.m.Binaries("p1"))
		return b["bb02"].State == symbolize.StateFetching
	})
	if b["bb02"].State != symbolize.StateFetching {
		t.Errorf("after Skip, the other binary: %+v", b["bb02"])
	}
	close(release)
	s := final(t, h.events("p1"))
	fb := byKey(s.Binaries)
	if fb["aa01"].State != symbolize.StateSkipped || fb["aa01"].Reason != "skipped by the user" {
		t.Errorf("skipped binary ended %+v", fb["aa01"])
	}
	if fb["bb02"].State != symbolize.StateSymbolized {
		t.Errorf("the other binary ended %+v", fb["bb02"])
	}
}

func TestDisableCancelsFetchesAndStopsAsking(t *testing.T) {
	h := newHarness(t, Config{})
	for _, id := range []string{"aa01", "bb02", "cc03"} {
		h.fetch.have[id] = true
		h.fetch.block[id] = make(chan struct{})
	}
	h.sym.local["dd04"] = true
	h.upload("p1", addrProfile("aa01", "bb02", "cc03", "dd04"))
	h.m.Submit("p1", Options{})
	for range 3 {
		<-h.fetch.started
	}
	h.m.Disable("p1")
	s := final(t, h.events("p1"))
	if s.Debuginfod || !s.Disabled {
		t.Errorf("status after Disable: %+v", s)
	}
	fb := byKey(s.Binaries)
	for _, id := range []string{"aa01", "bb02", "cc03"} {
		if fb[id].State != symbolize.StateSkipped || !strings.Contains(fb[id].Reason, "disabled") {
			t.Errorf("%s ended %+v, want skipped because debuginfod was disabled", id, fb[id])
		}
	}
	if fb["dd04"].State != symbolize.StateSymbolized {
		t.Errorf("local binary ended %+v: Disable must not stop local lookups", fb["dd04"])
	}
	// A fetch asked after Disable never reaches the client.
	j := h.m.Job("p1")
	if _, err := h.m.cfg.Gate.For(j).Fetch(context.Background(), "ee05", symbolize.KindDebuginfo, nil); !errors.Is(err, ErrSkipped) {
		t.Errorf("fetch after Disable: %v", err)
	}
	if h.fetch.count("ee05") != 0 {
		t.Error("fetch after Disable reached the client")
	}
}

func TestNoDebuginfodUploadAsksNoServer(t *testing.T) {
	h := newHarness(t, Config{})
	h.fetch.have["aa01"] = true
	h.sym.local["bb02"] = true
	h.upload("p1", addrProfile("aa01", "bb02"))
	h.m.Submit("p1", Options{NoDebuginfod: true})
	s := final(t, h.events("p1"))
	if h.fetch.count("aa01") != 0 {
		t.Error("a no-debuginfod upload reached the debuginfod client")
	}
	if !h.sym.reqs[0].NoDebuginfod || s.Debuginfod || len(s.Asked) != 0 {
		t.Errorf("request %+v, status %+v", h.sym.reqs[0], s)
	}
	if fb := byKey(s.Binaries); fb["bb02"].State != symbolize.StateSymbolized || fb["aa01"].State != symbolize.StateNotFound {
		t.Errorf("binaries %+v", fb)
	}
}

func TestServerWithoutDebuginfod(t *testing.T) {
	h := newHarness(t, Config{})
	h.m.cfg.Gate = NewGate(nil)
	h.sym.fetcher = h.m.cfg.Gate
	h.upload("p1", addrProfile("aa01"))
	h.m.Submit("p1", Options{})
	s := final(t, h.events("p1"))
	if s.Debuginfod || len(s.Servers) != 0 || !h.sym.reqs[0].NoDebuginfod {
		t.Errorf("status %+v", s)
	}
}

func TestRetryRerunsOnlyMissedBinaries(t *testing.T) {
	h := newHarness(t, Config{})
	h.sym.local["aa01"] = true
	h.upload("p1", addrProfile("aa01", "bb02"))
	j, _ := h.m.Submit("p1", Options{})
	j.Wait(context.Background())
	if s := j.Status(); s.Missed != 1 {
		t.Fatalf("first run: %+v", s)
	}
	h.fetch.have["bb02"] = true // the server has it now
	j2, err := h.m.Retry("p1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if j2 == j {
		t.Fatal("Retry returned the finished job")
	}
	// A new subscriber sees the retry's stream, not the old end.
	s := final(t, h.events("p1"))
	if s.Resolved != 2 || s.Missed != 0 {
		t.Errorf("after retry: %+v", s)
	}
	if h.sym.calls["aa01"] != 1 || h.sym.calls["bb02"] != 2 {
		t.Errorf("engine looked at aa01 %d times and bb02 %d times, want 1 and 2", h.sym.calls["aa01"], h.sym.calls["bb02"])
	}
	names := functionNames(h.stored("p1"))
	if !names["libaa01.so:fn10010"] || !names["libbb02.so:fn20010"] {
		t.Errorf("stored after retry: %v", names)
	}
	// After a restart (a new manager on the same store) the record still
	// lists the binaries, and Retry works without an in-memory job.
	rec, _, err := ReadOutcome(context.Background(), h.st, "p1")
	if err != nil || !rec.Done || len(rec.Binaries) != 2 || fmt.Sprint(rec.Asked) != "["+server+"]" {
		t.Fatalf("record %+v, %v", rec, err)
	}
	m2 := New(h.m.cfg)
	defer m2.Close()
	j3, err := m2.Retry("p1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	j3.Wait(context.Background())
	if s := j3.Status(); s.Resolved != 2 || h.sym.calls["aa01"] != 1 || h.sym.calls["bb02"] != 2 {
		t.Errorf("retry after restart: %+v, engine calls %v", s, h.sym.calls)
	}
}

func TestRetryWhileRunningIsRefused(t *testing.T) {
	h := newHarness(t, Config{})
	h.sym.gate = make(chan struct{})
	h.upload("p1", addrProfile("aa01"))
	h.m.Submit("p1", Options{})
	if _, err := h.m.Retry("p1", Options{}); !errors.Is(err, ErrRunning) {
		t.Errorf("retry while running: %v", err)
	}
	close(h.sym.gate)
}

func TestSymbolizedElsewhereMeanwhileIsAdopted(t *testing.T) {
	h := newHarness(t, Config{})
	h.fetch.have["aa01"], h.fetch.have["bb02"] = true, true
	release := make(chan struct{})
	h.fetch.block["aa01"] = release
	h.fetch.block["bb02"] = make(chan struct{}) // would never end by itself
	orig := addrProfile("aa01", "bb02")
	h.upload("p1", orig)
	h.m.Submit("p1", Options{})
	<-h.fetch.started
	<-h.fetch.started

	// Another replica finished the same profile meanwhile.
	other := addrProfile("aa01", "bb02")
	for _, m := range other.Mapping {
		name(other, m)
	}
	var b bytes.Buffer
	other.Write(&b)
	h.st.Put(context.Background(), profiles.Key("p1", profiles.KeySymbolized), bytes.NewReader(b.Bytes()))
	rec := Outcome{Done: true, Asked: []string{"http://other.test"}, Binaries: []Binary{
		{Key: "aa01", BuildID: "aa01", File: "/usr/lib/libaa01.so", State: symbolize.StateSymbolized, Source: "http://other.test"},
		{Key: "bb02", BuildID: "bb02", File: "/usr/lib/libbb02.so", State: symbolize.StateSymbolized, Source: "http://other.test"},
	}}
	if _, err := writeOutcome(context.Background(), h.st, "p1", rec); err != nil {
		t.Fatal(err)
	}
	close(release) // aa01's fetch ends: the job checks the store

	s := final(t, h.events("p1"))
	fb := byKey(s.Binaries)
	if fb["bb02"].State != symbolize.StateSymbolized || !strings.Contains(fb["bb02"].Source, "elsewhere") {
		t.Errorf("bb02 %+v, want taken from the copy stored meanwhile", fb["bb02"])
	}
	rc, _ := h.st.Get(context.Background(), profiles.Key("p1", profiles.KeySymbolized))
	var now bytes.Buffer
	now.ReadFrom(rc)
	rc.Close()
	if !bytes.Equal(now.Bytes(), b.Bytes()) {
		t.Error("the job overwrote the copy stored by the other replica")
	}
}

func TestProgressIsThrottledPerFetch(t *testing.T) {
	h := newHarness(t, Config{})
	h.fetch.have["aa01"] = true
	h.fetch.steps, h.fetch.gap = 400, time.Millisecond
	h.upload("p1", addrProfile("aa01"))
	start := time.Now()
	h.m.Submit("p1", Options{})
	evs := h.events("p1")
	elapsed := time.Since(start)
	n := 0
	for _, e := range evs {
		if e.Type == EventProgress {
			n++
		}
	}
	if max := int(elapsed/(100*time.Millisecond)) + 2; n > max || n == 0 {
		t.Errorf("%d progress events for 400 callbacks in %v, want 1..%d", n, elapsed, max)
	}
}

func TestConcurrentUploadsSharingABinary(t *testing.T) {
	h := newHarness(t, Config{Workers: 4})
	h.fetch.have["11bc"] = true
	h.fetch.gap = 5 * time.Millisecond
	var jobs []*Job
	for i := range 8 {
		id := fmt.Sprintf("p%d", i)
		h.upload(id, addrProfile("11bc", fmt.Sprintf("%04x", i)))
		j, err := h.m.Submit(id, Options{})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	for _, j := range jobs {
		j.Wait(context.Background())
		if b := byKey(j.Binaries())["11bc"]; b.State != symbolize.StateSymbolized {
			t.Errorf("%s: shared binary %+v", j.ID(), b)
		}
	}
}

func TestCloseStopsRunningJobsWithoutLeaks(t *testing.T) {
	st, _ := store.NewDir(t.TempDir())
	f := newFakeFetcher()
	f.have["aa01"] = true
	f.block["aa01"] = make(chan struct{})
	gate := NewGate(f)
	sym := &fakeSymbolizer{fetcher: gate, local: map[string]bool{}, calls: map[string]int{}}
	var loads atomic.Int32
	m := New(Config{Symbolizer: sym, Store: st, Gate: gate, Broker: sse.NewBroker(sse.Config{}), Workers: 1, Servers: []string{server},
		Load: func(ctx context.Context, id string) (*profile.Profile, error) {
			loads.Add(1)
			return addrProfile("aa01"), nil
		}})
	j1, _ := m.Submit("p1", Options{})
	j2, _ := m.Submit("p2", Options{})
	<-f.started
	m.Close()
	if !j1.Done() || !j2.Done() {
		t.Fatal("Close returned with jobs not done")
	}
	if s := j1.Status(); !strings.Contains(s.Error, "stopped") {
		t.Errorf("running job after Close: %+v", s)
	}
	if s := j2.Status(); !strings.Contains(s.Error, "reload") {
		t.Errorf("queued job after Close: %+v", s)
	}
	if _, err := m.Submit("p3", Options{}); !errors.Is(err, ErrClosed) {
		t.Errorf("submit after Close: %v", err)
	}
	goleak.VerifyNone(t)
}

func TestNeedsSymbolization(t *testing.T) {
	p := addrProfile("aa01", "bb02")
	if !symbolize.NeedsSymbolization(p) {
		t.Error("raw addresses: want true")
	}
	name(p, p.Mapping[0])
	if !symbolize.NeedsSymbolization(p) {
		t.Error("one of two mappings named: want true")
	}
	name(p, p.Mapping[1])
	if symbolize.NeedsSymbolization(p) {
		t.Error("all named: want false")
	}
}

func TestNamesAreServedAsEachBinaryResolves(t *testing.T) {
	h := newHarness(t, Config{SnapshotEvery: time.Millisecond})
	h.fetch.have["aa01"], h.fetch.have["bb02"] = true, true
	release := make(chan struct{})
	h.fetch.block["bb02"] = release
	var stored atomic.Int32
	h.m.OnStored(func(id string) { stored.Add(1) })
	h.upload("p1", addrProfile("aa01", "bb02"))
	h.m.Submit("p1", Options{})
	ch := h.stream("p1")
	sawNames := false
	// aa01 resolves while bb02 still downloads: a "names" event announces a
	// stored copy with aa01's names and bb02 still as addresses.
	for e := range ch {
		if e.Type == EventNames {
			sawNames = true
			break
		}
		if e.Type == EventSymbolized {
			t.Fatal("finished before any names event")
		}
	}
	if !sawNames {
		t.Fatal("stream ended without a names event")
	}
	if stored.Load() == 0 {
		t.Error("names event before the server was told to drop its cache")
	}
	p := h.stored("p1")
	names := functionNames(p)
	if !names["libaa01.so:fn10010"] || names["libbb02.so:fn20010"] {
		t.Errorf("copy stored mid-run has %v, want aa01's names only", names)
	}
	if len(p.Sample) != 4 || p.Sample[0].Value[0] != 10 {
		t.Errorf("the stored copy lost samples: %d", len(p.Sample))
	}
	rec, _, _ := ReadOutcome(context.Background(), h.st, "p1")
	if rec.Done {
		t.Error("record says done mid-run")
	}
	close(release)
	h.collect(ch)
	names = functionNames(h.stored("p1"))
	if !names["libaa01.so:fn10010"] || !names["libbb02.so:fn20020"] {
		t.Errorf("final copy has %v", names)
	}
}

func TestNoDebuginfodRecordedAndStrictestWins(t *testing.T) {
	h := newHarness(t, Config{})
	h.fetch.have["aa01"] = true
	h.upload("p1", addrProfile("aa01"))
	ctx := context.Background()
	if err := h.m.SetNoDebuginfod(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	// Submitted without the choice (say, a page view after a restart): the
	// record still says no.
	j, _ := h.m.Submit("p1", Options{})
	j.Wait(ctx)
	if h.fetch.count("aa01") != 0 {
		t.Error("debuginfod asked despite the upload's choice")
	}
	rec, _ := h.m.Outcome(ctx, "p1")
	if !rec.NoDebuginfod || !rec.Done {
		t.Errorf("record %+v", rec)
	}
	j2, _ := h.m.Retry("p1", Options{})
	j2.Wait(ctx)
	if h.fetch.count("aa01") != 0 || j2.Status().Debuginfod {
		t.Error("Retry turned debuginfod back on against the upload's choice")
	}
}

// TestProfileTimeoutEndsTheRunOnce: a binary still fetching when the
// profile's time limit passes is reported timed out, the other binary's
// names are stored, the run ends with its final event and a done record (so
// the page does not queue it again), and Retry looks again.
func TestProfileTimeoutEndsTheRunOnce(t *testing.T) {
	h := newHarness(t, Config{ProfileTimeout: 300 * time.Millisecond, ProfileTimeoutName: "--symbolize-profile-timeout"})
	h.sym.local["aa01"] = true
	h.fetch.have["bb02"] = true
	release := make(chan struct{})
	h.fetch.block["bb02"] = release // stalls past the limit
	h.upload("p1", addrProfile("aa01", "bb02"))
	j, err := h.m.Submit("p1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := final(t, h.events("p1"))
	if s.Error != "" {
		t.Errorf("the run ended with error %q; a time limit is not a failure of the run", s.Error)
	}
	b := byKey(s.Binaries)
	if b["aa01"].State != symbolize.StateSymbolized {
		t.Errorf("aa01 ended %+v", b["aa01"])
	}
	want := "timed out after 300ms (--symbolize-profile-timeout)"
	if b["bb02"].State != symbolize.StateError || !strings.Contains(b["bb02"].Reason, want) {
		t.Errorf("bb02 ended %+v, want state error with reason %q", b["bb02"], want)
	}
	if names := functionNames(h.stored("p1")); !names["libaa01.so:fn10010"] {
		t.Errorf("the resolved binary's names were not stored: %v", names)
	}
	rec, _, err := ReadOutcome(context.Background(), h.st, "p1")
	if err != nil || !rec.Done {
		t.Fatalf("record after the time limit: %+v, %v; not done means every page view queues the profile again", rec, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if j.Wait(ctx) != nil || h.m.Job("p1") != j {
		t.Error("the timed-out job was replaced or is not done")
	}
	// It is not run again by itself.
	time.Sleep(100 * time.Millisecond)
	if n := h.fetch.count("bb02"); n != 1 {
		t.Errorf("bb02 fetched %d times after one run, want 1", n)
	}
	// Retry runs the timed-out binary again.
	close(release)
	if _, err := h.m.Retry("p1", Options{}); err != nil {
		t.Fatal(err)
	}
	s = final(t, h.events("p1"))
	if b := byKey(s.Binaries); b["bb02"].State != symbolize.StateSymbolized || s.Resolved != 2 {
		t.Errorf("after retry: %+v", s)
	}
	if names := functionNames(h.stored("p1")); !names["libbb02.so:fn20010"] {
		t.Errorf("retry did not store bb02's names: %v", names)
	}
}

// TestProfileTimeoutCoversWaitingBinaries: the limit is the whole profile's,
// not each binary's: a binary that waited for a slot behind a stalled one
// times out too, without ever starting.
func TestProfileTimeoutCoversWaitingBinaries(t *testing.T) {
	h := newHarness(t, Config{Parallel: 1, ProfileTimeout: 300 * time.Millisecond})
	h.fetch.block["aa01"] = make(chan struct{})
	h.fetch.block["bb02"] = make(chan struct{})
	h.upload("p1", addrProfile("aa01", "bb02"))
	start := time.Now()
	if _, err := h.m.Submit("p1", Options{}); err != nil {
		t.Fatal(err)
	}
	s := final(t, h.events("p1"))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the run took %v with a 300ms limit", d)
	}
	for _, k := range []string{"aa01", "bb02"} {
		if b := byKey(s.Binaries)[k]; b.State != symbolize.StateError || !strings.Contains(b.Reason, "timed out after 300ms (the profile's symbolization time limit)") {
			t.Errorf("%s ended %+v", k, b)
		}
	}
	if n := h.fetch.count("aa01") + h.fetch.count("bb02"); n != 1 {
		t.Errorf("%d fetches started with one slot, want 1", n)
	}
}

// panickingFetcher panics on the build ID bad, as a client or a reader of
// hostile debug info might, inside the engine's work on that one binary.
type panickingFetcher struct{ bad string }

func (f panickingFetcher) Fetch(_ context.Context, id string, _ symbolize.FetchKind, _ func(symbolize.FetchProgress)) (string, error) {
	if id == f.bad {
		var idx []int
		_ = idx[len(id)+3] // index out of range
	}
	return "", fmt.Errorf("%s: %w", id, symbolize.ErrFetchNotFound)
}

// mapTestBinary maps testdata/symbolize/NAME's executable segment at base,
// as the kernel would, with one location at its main.
func mapTestBinary(t *testing.T, p *profile.Profile, name string, base uint64) *profile.Mapping {
	t.Helper()
	path, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "symbolize", name))
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var m *profile.Mapping
	for _, pr := range f.Progs {
		if pr.Type == elf.PT_LOAD && pr.Flags&elf.PF_X != 0 {
			m = &profile.Mapping{ID: uint64(len(p.Mapping) + 1), Start: base + pr.Vaddr&^0xfff, Limit: (base + pr.Vaddr + pr.Memsz + 0xfff) &^ 0xfff,
				Offset: pr.Off &^ 0xfff, File: path}
			break
		}
	}
	for _, sec := range f.Sections {
		if sec.Name == ".note.gnu.build-id" {
			d, _ := sec.Data()
			m.BuildID = hex.EncodeToString(d[16:])
		}
	}
	syms, _ := f.Symbols()
	for _, sym := range syms {
		if sym.Name == "main" {
			l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: base + sym.Value}
			p.Location = append(p.Location, l)
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l}, Value: []int64{1}})
		}
	}
	if m == nil || m.BuildID == "" || len(p.Location) == 0 {
		t.Fatalf("%s: no executable segment, build ID or main", path)
	}
	p.Mapping = append(p.Mapping, m)
	return m
}

// TestPanicOnOneBinaryFailsOnlyThatBinary: the real engine panics on one
// binary (its fetch); the process survives, the other binaries resolve and
// are stored, the job completes, and the panic is that binary's error.
func TestPanicOnOneBinaryFailsOnlyThatBinary(t *testing.T) {
	h := newHarness(t, Config{})
	const bad = "0123456789abcdef0123456789abcdef01234567"
	gate := NewGate(panickingFetcher{bad: bad})
	h.m.cfg.Gate = gate
	h.m.cfg.Symbolizer = symbolize.New(symbolize.Config{Fetcher: gate, SystemDebugDir: "-", BuildIDCacheDir: "-", DebuginfodCacheDir: "-",
		KallsymsPath: "-", KernelNotesPath: "-", KernelRelease: "none"})
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}}
	aa := mapTestBinary(t, p, "c-nopie-dwarf4", 0)
	bb := &profile.Mapping{ID: 2, Start: 0x7f0000000000, Limit: 0x7f0000100000, File: "/nonexistent/libhostile.so", BuildID: bad}
	p.Mapping = append(p.Mapping, bb)
	bl := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: bb, Address: 0x7f0000000010}
	p.Location = append(p.Location, bl)
	p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{bl}, Value: []int64{1}})
	cc := mapTestBinary(t, p, "c-pie-dwarf5", 0x555500000000)
	h.upload("p1", p)
	if _, err := h.m.Submit("p1", Options{}); err != nil {
		t.Fatal(err)
	}
	s := final(t, h.events("p1"))
	b := byKey(s.Binaries)
	if b[aa.BuildID].State != symbolize.StateSymbolized || b[cc.BuildID].State != symbolize.StateSymbolized {
		t.Errorf("the other binaries ended %+v and %+v", b[aa.BuildID], b[cc.BuildID])
	}
	if b[bad].State != symbolize.StateError || !strings.Contains(b[bad].Reason, "index out of range") || !strings.Contains(b[bad].Reason, "stays unsymbolized") {
		t.Errorf("the panicking binary ended %+v, want an error naming the panic", b[bad])
	}
	if s.Error != "" || s.Resolved != 2 || s.Missed != 1 {
		t.Errorf("job ended %+v", s)
	}
	named := map[string]bool{}
	for _, l := range h.stored("p1").Location {
		if len(l.Line) > 0 && l.Line[0].Function != nil && l.Line[0].Function.Name == "main" {
			named[l.Mapping.BuildID] = true
		}
	}
	if !named[aa.BuildID] || !named[cc.BuildID] || named[bad] {
		t.Errorf("stored copy names main in %v; want both good binaries, not the panicking one", named)
	}
	if rec, _, err := ReadOutcome(context.Background(), h.st, "p1"); err != nil || !rec.Done {
		t.Errorf("record: %+v, %v", rec, err)
	}
}

// TestDoneOnceTheFinalEventIsOut: a client that sees the final event and at
// once presses Retry (or reloads the page) finds the job done, not "still
// running" while its worker returns.
func TestDoneOnceTheFinalEventIsOut(t *testing.T) {
	h := newHarness(t, Config{})
	h.sym.local["aa01"] = true
	h.upload("p1", addrProfile("aa01", "bb02"))
	if _, err := h.m.Submit("p1", Options{}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		final(t, h.events("p1"))
		if j := h.m.Job("p1"); !j.Done() {
			t.Fatalf("run %d: the final event was sent but the job is not done", i)
		}
		if _, err := h.m.Retry("p1", Options{}); err != nil {
			t.Fatalf("run %d: Retry right after the final event: %v", i, err)
		}
	}
	final(t, h.events("p1"))
}

// TestCallSitesOfAnOldCopy runs a job on a profile stored before the
// call-site convention (no mark, callers at their return addresses). The
// engine, given the whole profile, turns callers into call sites first: a
// caller is looked up at address − 1, a location that is also a leaf keeps
// its address for the leaf, and the stored copy is marked so that nothing
// shifts again.
func TestCallSitesOfAnOldCopy(t *testing.T) {
	h := newHarness(t, Config{})
	h.sym.local["aa01"] = true
	p := addrProfile("aa01")
	m := p.Mapping[0]
	leaf, both := p.Location[0], p.Location[1] // 0x10010, 0x10020
	caller := &profile.Location{ID: 3, Mapping: m, Address: 0x10035}
	p.Location = append(p.Location, caller)
	// both is the leaf of sample 1 and the caller of a new sample.
	p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{leaf, both, caller}, Value: []int64{5}})
	h.upload("p1", p)
	if _, err := h.m.Submit("p1", Options{}); err != nil {
		t.Fatal(err)
	}
	final(t, h.events("p1"))
	got := h.stored("p1")
	var stacks []string
	for _, s := range got.Sample {
		var fs []string
		for _, l := range s.Location {
			fs = append(fs, l.Line[0].Function.Name)
		}
		stacks = append(stacks, strings.Join(fs, ";"))
	}
	want := "libaa01.so:fn10010\nlibaa01.so:fn10020\nlibaa01.so:fn10010;libaa01.so:fn1001f;libaa01.so:fn10034"
	if g := strings.Join(stacks, "\n"); g != want {
		t.Errorf("stored stacks:\n%s\nwant:\n%s", g, want)
	}
	if !sampling.HasCallSites(got) {
		t.Errorf("stored copy has no call-site mark: %q", got.Comments)
	}
}

// TestBinaryTimeoutStopsOneBinary: the per-binary limit (--symbolize-timeout)
// reaches the engine through the binary's context: a binary whose fetch
// stalls past it ends timed out, naming the flag, while the other binary
// resolves and the run completes.
func TestBinaryTimeoutStopsOneBinary(t *testing.T) {
	h := newHarness(t, Config{BinaryTimeout: 200 * time.Millisecond, BinaryTimeoutName: "--symbolize-timeout"})
	h.sym.local["aa01"] = true
	h.fetch.have["bb02"] = true
	h.fetch.block["bb02"] = make(chan struct{}) // never released
	h.upload("p1", addrProfile("aa01", "bb02"))
	if _, err := h.m.Submit("p1", Options{}); err != nil {
		t.Fatal(err)
	}
	s := final(t, h.events("p1"))
	b := byKey(s.Binaries)
	if b["aa01"].State != symbolize.StateSymbolized {
		t.Errorf("aa01 ended %+v", b["aa01"])
	}
	if want := "timed out after 200ms (--symbolize-timeout)"; b["bb02"].State != symbolize.StateError || !strings.Contains(b["bb02"].Reason, want) {
		t.Errorf("bb02 ended %+v, want an error naming %q", b["bb02"], want)
	}
	if s.Error != "" {
		t.Errorf("the run ended with error %q", s.Error)
	}
	if rec, _, err := ReadOutcome(context.Background(), h.st, "p1"); err != nil || !rec.Done {
		t.Errorf("record: %+v, %v", rec, err)
	}
}

// TestFinalProfileIsHandedOver: the job asks the engine with its own view
// of the gate and its profile's ID (no context value), and once the final
// copy is stored hands the named profile over in memory (Config.Replace),
// with the very bytes it stored, so the server need not parse them again.
func TestFinalProfileIsHandedOver(t *testing.T) {
	type handover struct {
		id      string
		p       *profile.Profile
		encoded []byte
	}
	var mu sync.Mutex
	var got []handover
	h := newHarness(t, Config{Replace: func(_ context.Context, id string, p *profile.Profile, encoded []byte) {
		mu.Lock()
		got = append(got, handover{id, p, encoded})
		mu.Unlock()
	}})
	h.sym.local["bb02"] = true
	h.upload("p1", addrProfile("bb02"))
	h.m.Submit("p1", Options{})
	final(t, h.events("p1"))
	if r := h.sym.reqs[0]; r.Profile != "p1" || r.Fetcher == nil {
		t.Errorf("the engine was asked with Profile %q, Fetcher %v; want the job's", r.Profile, r.Fetcher)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].id != "p1" {
		t.Fatalf("handed over %d profiles (%+v), want p1 once", len(got), got)
	}
	stored, err := store.ReadAll(context.Background(), h.st, profiles.Key("p1", profiles.KeySymbolized), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stored, got[0].encoded) {
		t.Error("the bytes handed over are not the stored copy")
	}
	named := false
	for _, f := range got[0].p.Function {
		named = named || strings.Contains(f.Name, ":fn")
	}
	if !named {
		t.Errorf("the profile handed over has no names: %v", got[0].p.Function)
	}
}

package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/testdata/poll"
	"viewer/web"
	"viewer/web/ondemand"
	"viewer/web/store"
	"viewer/web/store/storetest"
	"viewer/web/webtest"
)

// replicaServer starts a viewer on st (one replica), listening on
// 127.0.0.1 and closed when the test ends. Its TakeoverAfter is a minute,
// so a replica takes a job over only when its owner said it gave it up, or
// in a test about takeover that sets it shorter: a loaded machine that
// delays heartbeats must not hand a running job to a follower.
func replicaServer(t *testing.T, st store.Store, sym *web.SymbolizationConfig, id string, adjust ...func(*web.ReplicaConfig)) (*web.Server, string) {
	t.Helper()
	rc := &web.ReplicaConfig{
		ID: id, Recheck: 10 * time.Millisecond, Poll: 50 * time.Millisecond,
		Heartbeat: 100 * time.Millisecond, TakeoverAfter: time.Minute,
	}
	for _, f := range adjust {
		f(rc)
	}
	s, err := web.New(web.Config{Store: st, Symbolization: sym, Replica: rc})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.Config.RegisterOnShutdown(s.CloseSymbolization)
	ts.Start()
	t.Cleanup(func() {
		s.CloseSymbolization()
		s.CloseReplica()
		ts.Close()
	})
	return s, ts.URL
}

func fetch(t *testing.T, url string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// namedProfile is a small symbolized CPU profile whose leaf is leaf.
func namedProfile(t *testing.T, leaf string) []byte {
	t.Helper()
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/bin/app", HasFunctions: true}
	fMain := &profile.Function{ID: 1, Name: "main.main"}
	fLeaf := &profile.Function{ID: 2, Name: leaf}
	l1 := &profile.Location{ID: 1, Mapping: m, Address: 0x401000, Line: []profile.Line{{Function: fMain}}}
	l2 := &profile.Location{ID: 2, Mapping: m, Address: 0x402000, Line: []profile.Line{{Function: fLeaf}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Sample:     []*profile.Sample{{Location: []*profile.Location{l2, l1}, Value: []int64{7}}},
		Mapping:    []*profile.Mapping{m}, Location: []*profile.Location{l1, l2}, Function: []*profile.Function{fMain, fLeaf},
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestReplicasShareProfilesThroughS3 runs two viewers on one bucket of a
// real S3 server: a profile uploaded to A is served by B (page, flame.json,
// download), and a symbolized copy stored later through A replaces what B
// cached.
func TestReplicasShareProfilesThroughS3(t *testing.T) {
	s3 := storetest.NewS3(t)
	_, a := replicaServer(t, s3.Open(t), nil, "a")
	_, b := replicaServer(t, s3.Open(t), nil, "b")

	data := namedProfile(t, "main.firstName")
	id := webtest.UploadAPI(t, a, "", data)

	if code, _, body := fetch(t, b+"/p/"+id); code != 200 || !strings.Contains(string(body), "flame") {
		t.Fatalf("B's page for A's upload: %d %.200s", code, body)
	}
	code, _, body := fetch(t, b+"/p/"+id+"/flame.json")
	if code != 200 || !strings.Contains(string(body), "main.firstName") {
		t.Fatalf("B's flame.json: %d %.300s", code, body)
	}
	code, _, body = fetch(t, b+"/p/"+id+"/profile.pb.gz")
	if code != 200 {
		t.Fatalf("B's download: %d", code)
	}
	p, err := profile.ParseData(body)
	if err != nil || len(p.Sample) != 1 || p.Sample[0].Value[0] != 7 {
		t.Fatalf("B's download does not hold A's upload: %v", err)
	}
	if code, _, _ := fetch(t, b+"/p/aaaaaaaaaaaaaaaaaaaa/flame.json"); code != 404 {
		t.Fatalf("unknown ID on B: %d, want 404", code)
	}

	// A symbolized copy stored through A (as A's symbolization does) is
	// what B serves next, though B cached the original.
	sym := namedProfile(t, "main.betterName")
	if err := s3.Open(t).Put(context.Background(), id+"/symbolized.pb.gz", bytes.NewReader(sym)); err != nil {
		t.Fatal(err)
	}
	if !poll.Wait(5*time.Second, func() bool {
		_, _, body = fetch(t, b+"/p/"+id+"/flame.json")
		return strings.Contains(string(body), "main.betterName")
	}) {
		t.Fatalf("B still serves its cached copy after the symbolized one was stored: %.300s", body)
	}
	if _, _, body := fetch(t, a+"/p/"+id+"/flame.json"); !strings.Contains(string(body), "main.betterName") {
		t.Fatalf("A does not serve the stored symbolized copy: %.300s", body)
	}
}

// switchStore is a replica's view of the store that can be cut off, as
// when that replica's machine dies or loses the network.
type switchStore struct {
	store.Store
	dead atomic.Bool
}

var errCutOff = errors.New("this replica is cut off from the store")

func (s *switchStore) Put(ctx context.Context, key string, r io.Reader) error {
	if s.dead.Load() {
		return errCutOff
	}
	return s.Store.Put(ctx, key, r)
}

func (s *switchStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if s.dead.Load() {
		return nil, errCutOff
	}
	return s.Store.Get(ctx, key)
}

func (s *switchStore) Stat(ctx context.Context, key string) (store.Info, error) {
	if s.dead.Load() {
		return store.Info{}, errCutOff
	}
	return s.Store.Stat(ctx, key)
}

// sseEvent is one event of a stream.
type sseEvent struct{ typ, data string }

// streamEvents reads /p/ID/events into a channel until the stream ends.
func streamEvents(t *testing.T, ctx context.Context, url string) <-chan sseEvent {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		resp.Body.Close()
		t.Fatalf("events: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	ch := make(chan sseEvent, 256)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		typ := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				typ = line[7:]
			case strings.HasPrefix(line, "data: "):
				ch <- sseEvent{typ, line[6:]}
			}
		}
	}()
	return ch
}

// TestReplicaFollowsThenTakesOverSymbolization: A starts symbolizing an
// upload, stuck fetching from its debuginfod; B's page streams A's job from
// the bucket; A dies (cut off from the store, its jobs stopped) and B, which
// has the debug info locally, takes the job over and finishes it on the
// same event stream.
func TestReplicaFollowsThenTakesOverSymbolization(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a replica to be declared dead (3 s); TestReplicaTakesOverAtOnceAfterCleanShutdown takes over without the wait: skipped with -short")
	}
	testTakeover(t, true)
}

// TestReplicaTakesOverAtOnceAfterCleanShutdown: when A shuts down cleanly
// (SIGTERM) mid-job, it marks the job abandoned and B continues it at once,
// long before B's TakeoverAfter (one minute here).
func TestReplicaTakesOverAtOnceAfterCleanShutdown(t *testing.T) {
	testTakeover(t, false)
}

func testTakeover(t *testing.T, crash bool) {
	exe, debugFile := webtest.OndemandFiles(t)
	s3 := storetest.NewS3(t)

	// A's only source is a debuginfod server that never answers.
	var stalled atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stalled.Add(1)
		defer stalled.Add(-1)
		<-r.Context().Done()
	}))
	t.Cleanup(slow.Close)
	cacheA := t.TempDir()
	client, err := debuginfod.New(debuginfod.Config{URLs: []string{slow.URL}, CacheDir: cacheA, Timeout: time.Minute, RetryLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	gate := ondemand.NewGate(client)
	cfgA := searchNothing
	cfgA.Fetcher, cfgA.DebuginfodCacheDir = gate, cacheA
	storeA := &switchStore{Store: s3.Open(t)}
	srvA, a := replicaServer(t, storeA, &web.SymbolizationConfig{Engine: symbolize.New(cfgA), Gate: gate, Servers: client.Servers()}, "replica-a")

	// B finds the debug file in a local directory.
	cfgB := searchNothing
	cfgB.DebugDirs = []string{filepath.Dir(debugFile)}
	// 30 of A's heartbeats: B must not take over while A is alive, however
	// busy the machine, and then soon after A dies.
	takeover := 3 * time.Second
	if !crash {
		takeover = time.Minute
	}
	_, b := replicaServer(t, s3.Open(t), &web.SymbolizationConfig{Engine: symbolize.New(cfgB)}, "replica-b",
		func(c *web.ReplicaConfig) { c.TakeoverAfter = takeover })

	seed := 91
	if !crash {
		seed = 93
	}
	id := webtest.UploadAPI(t, a, "", webtest.OndemandProfile(t, exe, debugFile, "/usr/bin/ondemand", seed))
	waitState(t, a, id, symbolize.StateFetching)

	// B's page shows A's job and links its event stream.
	code, _, page := fetch(t, b+"/p/"+id)
	if code != 200 || !strings.Contains(string(page), "/p/"+id+"/events") {
		t.Fatalf("B's page does not follow A's job: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	events := streamEvents(t, ctx, b+"/p/"+id+"/events")
	next := func(what string, ok func(sseEvent) bool) sseEvent {
		t.Helper()
		for {
			select {
			case ev, open := <-events:
				if !open {
					t.Fatalf("B's stream ended before %s", what)
				}
				if ok(ev) {
					return ev
				}
			case <-ctx.Done():
				t.Fatalf("B's stream: no %s", what)
			}
		}
	}
	next("A's fetch from its debuginfod", func(ev sseEvent) bool {
		var bin ondemand.Binary
		return ev.typ == ondemand.EventBinary && json.Unmarshal([]byte(ev.data), &bin) == nil &&
			bin.State == symbolize.StateFetching && bin.Server == slow.URL
	})
	var jr struct {
		Owner string `json:"owner"`
	}
	if raw, err := store.ReadAll(ctx, s3.Open(t), id+"/job.json", 0); err != nil || json.Unmarshal(raw, &jr) != nil || jr.Owner != "replica-a" {
		t.Fatalf("job.json in the bucket: %s, %v; want owner replica-a", raw, err)
	}

	stopped := time.Now()
	if crash {
		// A dies mid-fetch: nothing it does reaches the store any more.
		storeA.dead.Store(true)
		srvA.CloseSymbolization()
	} else {
		// serve's shutdown order: jobs, then the replica's records.
		srvA.CloseSymbolization()
		srvA.CloseReplica()
	}
	for stalled.Load() > 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond) // A's fetch was cancelled
	}

	final := next("the final event", func(ev sseEvent) bool { return ev.typ == ondemand.EventSymbolized })
	var st ondemand.Status
	if err := json.Unmarshal([]byte(final.data), &st); err != nil {
		t.Fatal(err)
	}
	if st.Resolved != 1 || len(st.Binaries) != 1 || st.Binaries[0].State != symbolize.StateSymbolized {
		t.Fatalf("final status on B: %+v", st)
	}
	if took := time.Since(stopped); !crash && took > 20*time.Second {
		t.Fatalf("B took %v to continue a job A abandoned on shutdown", took)
	}
	if raw, err := store.ReadAll(ctx, s3.Open(t), id+"/job.json", 0); err != nil || json.Unmarshal(raw, &jr) != nil || jr.Owner != "replica-b" {
		t.Fatalf("job.json after the takeover: %s, %v; want owner replica-b", raw, err)
	}
	if _, _, body := fetch(t, b+"/p/"+id+"/flame.json"); !strings.Contains(string(body), "ondemand_hash_block") {
		t.Fatalf("B's flame.json has no names after finishing the job: %.300s", body)
	}
	// A third replica, started afterwards, serves the names at once.
	_, c := replicaServer(t, s3.Open(t), nil, "replica-c")
	if _, _, body := fetch(t, c+"/p/"+id+"/flame.json"); !strings.Contains(string(body), "ondemand_hash_block") {
		t.Fatalf("a new replica does not serve the symbolized copy: %.300s", body)
	}
}

// searchNothing is a symbolizer configuration that looks nowhere on this
// machine: a replica with it names only what the store holds.
var searchNothing = symbolize.Config{SystemDebugDir: "-", BuildIDCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-", KernelRelease: "none"}

// replicasAsking starts replica A, which asks the debuginfod server at
// upstream (one retry), and replica B, which asks none, on one store.
func replicasAsking(t *testing.T, s3 *storetest.S3, upstream string) (a, b string) {
	t.Helper()
	cacheA := t.TempDir()
	client, err := debuginfod.New(debuginfod.Config{URLs: []string{upstream}, CacheDir: cacheA, Timeout: time.Minute, RetryLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	gate := ondemand.NewGate(client)
	cfgA := searchNothing
	cfgA.Fetcher, cfgA.DebuginfodCacheDir = gate, cacheA
	_, a = replicaServer(t, s3.Open(t), &web.SymbolizationConfig{Engine: symbolize.New(cfgA), Gate: gate, Servers: client.Servers()}, "replica-a")
	_, b = replicaServer(t, s3.Open(t), &web.SymbolizationConfig{Engine: symbolize.New(searchNothing)}, "replica-b")
	return a, b
}

// TestReplicaFollowsJobToTheEnd: B streams a job A runs, from A's fetch
// (held until the test releases it) to A's final event, and then serves
// the names A stored.
func TestReplicaFollowsJobToTheEnd(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	s3 := storetest.NewS3(t)
	release := make(chan struct{})
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/debuginfo") {
			http.NotFound(w, r)
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		http.ServeFile(w, r, debugFile)
	}))
	t.Cleanup(held.Close)
	a, b := replicasAsking(t, s3, held.URL)

	id := webtest.UploadAPI(t, a, "", webtest.OndemandProfile(t, exe, debugFile, "/usr/bin/ondemand", 92))
	waitState(t, a, id, symbolize.StateFetching)
	if code, _, page := fetch(t, b+"/p/"+id); code != 200 || !strings.Contains(string(page), "/p/"+id+"/events") {
		t.Fatalf("B's page does not follow A's job: %d", code)
	}
	// C only gets the event stream (the page came from another replica).
	_, c := replicaServer(t, s3.Open(t), &web.SymbolizationConfig{Engine: symbolize.New(searchNothing)}, "replica-c")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cEvents := streamEvents(t, ctx, c+"/p/"+id+"/events")
	close(release)
	st, types := finalEvent(t, b, id)
	if st.Resolved != 1 || len(st.Binaries) != 1 || st.Binaries[0].State != symbolize.StateSymbolized {
		t.Fatalf("B's final event for A's job: %+v (events %v)", st, types)
	}
	if !strings.Contains(strings.Join(types, " "), ondemand.EventBinary) {
		t.Fatalf("B's stream carried no binary rows: %v", types)
	}
	if _, _, body := fetch(t, b+"/p/"+id+"/flame.json"); !strings.Contains(string(body), "ondemand_hash_block") {
		t.Fatalf("B's flame.json after A's job: %.300s", body)
	}
	var cTypes []string
	for ev := range cEvents {
		cTypes = append(cTypes, ev.typ)
		if ev.typ == ondemand.EventSymbolized {
			break
		}
	}
	if len(cTypes) == 0 || cTypes[len(cTypes)-1] != ondemand.EventSymbolized {
		t.Fatalf("C's stream, opened without its page, ended without the final event: %v", cTypes)
	}
	// D starts after the job finished: its stream gives the final event
	// at once, so a page from another replica redraws.
	_, d := replicaServer(t, s3.Open(t), &web.SymbolizationConfig{Engine: symbolize.New(searchNothing)}, "replica-d")
	if st, _ := finalEvent(t, d, id); st.Resolved != 1 || st.State != "done" {
		t.Fatalf("D's final event: %+v", st)
	}
}

// TestReplicaStoreOutage: while the bucket refuses writes an upload gets
// 503 saying it was not stored (nothing acknowledged is lost); once the
// bucket is back the same upload is stored and served by another replica;
// a view during an outage is a 503, not a 404 or 500.
func TestReplicaStoreOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the S3 SDK's retries (9 s): skipped with -short")
	}
	s3 := storetest.NewS3(t)
	_, a := replicaServer(t, s3.Open(t), nil, "a")
	_, b := replicaServer(t, s3.Open(t), nil, "b")
	data := namedProfile(t, "main.outage")

	s3.SetFailPuts(true)
	resp, err := http.Post(a+"/api/profiles", "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(body), "object store unavailable") || !strings.Contains(string(body), "NOT stored") {
		t.Fatalf("upload during a write outage: %d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	s3.SetFailPuts(false)
	id := webtest.UploadAPI(t, a, "", data) // the client's retry
	if _, _, body := fetch(t, b+"/p/"+id+"/flame.json"); !strings.Contains(string(body), "main.outage") {
		t.Fatalf("B after the retried upload: %.200s", body)
	}

	s3.SetDown(true)
	_, c := replicaServer(t, s3.Open(t), nil, "c") // nothing cached
	code, hdr, page := fetch(t, c+"/p/"+id)
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !strings.Contains(string(page), "object store unavailable") {
		t.Fatalf("view during an outage: %d %.300s", code, page)
	}
	s3.SetDown(false)
	if code, _, _ := fetch(t, c+"/p/"+id); code != 200 {
		t.Fatalf("view after the outage: %d", code)
	}
}

// TestReplicaClaimRaceHasOneWinner: two replicas asked at the same moment
// to symbolize a stored profile (its page opened on both) run it once: one
// claims the run with S3's conditional write, the other follows it, and
// both pages' streams end with the names.
func TestReplicaClaimRaceHasOneWinner(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	s3 := storetest.NewS3(t)
	local := searchNothing
	local.DebugDirs = []string{filepath.Dir(debugFile)}
	// Stored by a replica without symbolization, so nobody claimed it yet.
	_, up := replicaServer(t, s3.Open(t), nil, "uploader")
	id := webtest.UploadAPI(t, up, "", webtest.OndemandProfile(t, exe, debugFile, "/usr/bin/ondemand", 94))

	var bases []string
	for _, name := range []string{"replica-a", "replica-b"} {
		_, base := replicaServer(t, s3.Open(t), &web.SymbolizationConfig{Engine: symbolize.New(local)}, name)
		bases = append(bases, base)
	}
	codes := make(chan int, len(bases))
	for _, base := range bases {
		go func() {
			resp, err := http.Get(base + "/p/" + id)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	for range bases {
		if code := <-codes; code != 200 {
			t.Fatalf("page: %d", code)
		}
	}
	for _, base := range bases {
		if st, _ := finalEvent(t, base, id); st.Resolved != 1 {
			t.Fatalf("%s final event: %+v", base, st)
		}
	}
	ctx := context.Background()
	bucket := s3.Open(t)
	raw, err := store.ReadAll(ctx, bucket, id+"/claim-1.json", 0)
	if err != nil {
		t.Fatalf("no claim of the first run: %v", err)
	}
	var claim, job struct {
		Owner string `json:"owner"`
		Gen   int    `json:"gen"`
	}
	json.Unmarshal(raw, &claim)
	if _, err := bucket.Stat(ctx, id+"/claim-2.json"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a second run was claimed (%v): the job ran twice", err)
	}
	raw, _ = store.ReadAll(ctx, bucket, id+"/job.json", 0)
	json.Unmarshal(raw, &job)
	if job.Owner != claim.Owner || job.Gen != 1 {
		t.Fatalf("job.json owner %q gen %d; the claim went to %q", job.Owner, job.Gen, claim.Owner)
	}
}

// TestReplicaForwardsSkipToTheOwner: the Skip button on a page served by B
// reaches the job A runs (through ID/control.json): A stops waiting for its
// debuginfod and B's stream ends with the binary skipped.
func TestReplicaForwardsSkipToTheOwner(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	s3 := storetest.NewS3(t)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(slow.Close)
	cacheA := t.TempDir()
	client, err := debuginfod.New(debuginfod.Config{URLs: []string{slow.URL}, CacheDir: cacheA, Timeout: time.Minute, RetryLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	gate := ondemand.NewGate(client)
	cfgA := searchNothing
	cfgA.Fetcher, cfgA.DebuginfodCacheDir = gate, cacheA
	_, a := replicaServer(t, s3.Open(t), &web.SymbolizationConfig{Engine: symbolize.New(cfgA), Gate: gate, Servers: client.Servers()}, "replica-a")
	_, b := replicaServer(t, s3.Open(t), &web.SymbolizationConfig{Engine: symbolize.New(searchNothing)}, "replica-b",
		func(c *web.ReplicaConfig) { c.TakeoverAfter = time.Minute })

	id := webtest.UploadAPI(t, a, "", webtest.OndemandProfile(t, exe, debugFile, "/usr/bin/ondemand", 95))
	waitState(t, a, id, symbolize.StateFetching)
	if code, _, _ := fetch(t, b+"/p/"+id); code != 200 {
		t.Fatalf("B's page: %d", code)
	}
	bid, err := debuginfodtest.BuildID(exe)
	if err != nil {
		t.Fatal(err)
	}
	if code, body, _ := post(t, b+"/p/"+id+"/symbolize/skip?build_id="+bid, nil); code != 200 {
		t.Fatalf("skip on B: %d %s", code, body)
	}
	st, _ := finalEvent(t, b, id)
	if len(st.Binaries) != 1 || st.Binaries[0].State != symbolize.StateSkipped {
		t.Fatalf("B's final event after a skip forwarded to A: %+v", st)
	}
	if code, _, _ := post(t, b+"/p/"+id+"/symbolize/skip?build_id="+bid, nil); code != http.StatusConflict {
		t.Fatalf("skip on B after the job ended: %d, want 409", code)
	}
}

// TestReplicaFollowerStreamsDownloadProgress: while A downloads the debug
// file, a page on B gets progress events with the bytes so far, from A's
// job record, as A's own page does. B sent the row's first byte count and
// then nothing, so its page said "stalled: no byte for N s" while A's
// download went on.
func TestReplicaFollowerStreamsDownloadProgress(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	data, err := os.ReadFile(debugFile)
	if err != nil {
		t.Fatal(err)
	}
	s3 := storetest.NewS3(t)
	release := make(chan struct{})
	half := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/debuginfo") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data[:len(data)/2])
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Write(data[len(data)/2:])
	}))
	t.Cleanup(half.Close)
	a, b := replicasAsking(t, s3, half.URL)

	id := webtest.UploadAPI(t, a, "", webtest.OndemandProfile(t, exe, debugFile, "/usr/bin/ondemand", 93))
	waitState(t, a, id, symbolize.StateFetching)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := streamEvents(t, ctx, b+"/p/"+id+"/events")
	var got ondemand.Progress
	for ev := range events {
		if ev.typ != ondemand.EventProgress {
			continue
		}
		if err := json.Unmarshal([]byte(ev.data), &got); err != nil {
			t.Fatal(err)
		}
		if got.Bytes >= int64(len(data)/2) {
			break
		}
	}
	close(release)
	if got.Bytes < int64(len(data)/2) || got.Total != int64(len(data)) {
		t.Fatalf("B's stream: last progress %+v; want %d of %d bytes, as A reports", got, len(data)/2, len(data))
	}
}

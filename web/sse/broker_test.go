package sse

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"viewer/testdata/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// received is one thing read from a stream: an event or a comment.
type received struct {
	ID, Type, Data string
	Comment        string
	Retry          string
}

// client reads a stream line by line, as EventSource does.
type client struct {
	t      *testing.T
	resp   *http.Response
	cancel context.CancelFunc
	ch     chan received
	done   chan struct{}
}

func dial(t *testing.T, url, lastID string) *client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c := &client{t: t, resp: resp, cancel: cancel, ch: make(chan received, 1000), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer close(c.ch)
		sc := bufio.NewScanner(resp.Body)
		var cur received
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if data != nil || cur.ID != "" || cur.Type != "" {
					cur.Data = strings.Join(data, "\n")
					c.ch <- cur
				}
				cur, data = received{}, nil
			case strings.HasPrefix(line, ":"):
				c.ch <- received{Comment: strings.TrimSpace(line[1:])}
			case strings.HasPrefix(line, "id: "):
				cur.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				cur.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				data = append(data, line[6:])
			case strings.HasPrefix(line, "retry: "):
				c.ch <- received{Retry: line[7:]}
			}
		}
	}()
	t.Cleanup(c.close)
	return c
}

func (c *client) close() {
	c.cancel()
	c.resp.Body.Close()
	<-c.done
}

// next returns the next event, skipping comments and retry fields.
func (c *client) next() received {
	c.t.Helper()
	for {
		select {
		case r, ok := <-c.ch:
			if !ok {
				c.t.Fatal("stream ended, want another event")
			}
			if r.Comment != "" || r.Retry != "" {
				continue
			}
			return r
		case <-time.After(5 * time.Second):
			c.t.Fatal("no event within 5s")
		}
	}
}

// ended reports whether the server closed the stream with nothing more sent.
func (c *client) ended() bool {
	c.t.Helper()
	for {
		select {
		case r, ok := <-c.ch:
			if !ok {
				return true
			}
			if r.Comment != "" || r.Retry != "" {
				continue
			}
			c.t.Fatalf("unexpected event %+v, want the end of the stream", r)
		case <-time.After(5 * time.Second):
			return false
		}
	}
}

func serve(t *testing.T, b *Broker) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := b.Serve(w, r, strings.TrimPrefix(r.URL.Path, "/")); err == ErrNoTopic {
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestWriteSplitsDataLinesAndCleansFields(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, Event{ID: "7\nid: 9", Type: "binary", Data: []byte("a\nb\r\nc")}); err != nil {
		t.Fatal(err)
	}
	want := "id: 7 id: 9\nevent: binary\ndata: a\ndata: b\ndata: c\n\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	WriteComment(&b, "keep-alive")
	if b.String() != ": keep-alive\n\n" {
		t.Errorf("comment: got %q", b.String())
	}
}

func TestServeReplaysCurrentStateToLateSubscriber(t *testing.T) {
	b := NewBroker(Config{})
	srv := serve(t, b)
	tp := b.Topic("p1")
	tp.Publish("binary:aa", "binary", []byte(`{"state":"searching"}`))
	tp.Publish("binary:bb", "binary", []byte(`{"state":"searching"}`))
	tp.Publish("binary:aa", "binary", []byte(`{"state":"fetching"}`))
	tp.Publish("progress:aa", "progress", []byte(`{"bytes":10}`))

	c := dial(t, srv.URL+"/p1", "")
	if ct := c.resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	// The late subscriber gets the latest per binary, in publishing order:
	// bb searching, aa fetching, aa progress; not aa's superseded state.
	for _, want := range []string{`{"state":"searching"}`, `{"state":"fetching"}`, `{"bytes":10}`} {
		if got := c.next(); got.Data != want {
			t.Fatalf("replay: got %+v, want data %s", got, want)
		}
	}
	tp.Publish("binary:aa", "binary", []byte(`{"state":"symbolized"}`))
	if got := c.next(); got.Type != "binary" || got.Data != `{"state":"symbolized"}` {
		t.Fatalf("live: got %+v", got)
	}
	tp.Finish("symbolized", "symbolized", []byte(`{}`))
	if got := c.next(); got.Type != "symbolized" {
		t.Fatalf("final: got %+v", got)
	}
	if !c.ended() {
		t.Error("stream did not end after the final event")
	}
}

func TestServeResumesFromLastEventID(t *testing.T) {
	b := NewBroker(Config{})
	srv := serve(t, b)
	tp := b.Topic("p1")
	tp.Publish("binary:aa", "binary", []byte(`aa1`))
	tp.Publish("binary:bb", "binary", []byte(`bb1`))

	c := dial(t, srv.URL+"/p1", "")
	c.next()
	last := c.next()
	c.close()

	// While disconnected: aa changes twice, cc appears.
	tp.Publish("binary:aa", "binary", []byte(`aa2`))
	tp.Publish("binary:cc", "binary", []byte(`cc1`))
	tp.Publish("binary:aa", "binary", []byte(`aa3`))

	c2 := dial(t, srv.URL+"/p1", last.ID)
	var got []string
	for range 2 {
		got = append(got, c2.next().Data)
	}
	if strings.Join(got, ",") != "cc1,aa3" {
		t.Errorf("resume sent %v, want only what changed since %s: [cc1 aa3]", got, last.ID)
	}
	// bb1 must not be resent.
	tp.Finish("symbolized", "symbolized", []byte(`done`))
	if r := c2.next(); r.Data != "done" {
		t.Errorf("after resume got %+v, want the final event", r)
	}
}

func TestServeUnknownLastEventIDReplaysEverything(t *testing.T) {
	b := NewBroker(Config{})
	srv := serve(t, b)
	tp := b.Topic("p1")
	tp.Publish("binary:aa", "binary", []byte(`aa1`))
	// An ID from a previous process (another epoch) or garbage.
	for _, id := range []string{"zzz-1", "garbage", "-5"} {
		c := dial(t, srv.URL+"/p1", id)
		if r := c.next(); r.Data != "aa1" {
			t.Errorf("Last-Event-ID %q: got %+v, want the full state", id, r)
		}
		c.close()
	}
}

func TestServeFinishedStream(t *testing.T) {
	b := NewBroker(Config{})
	srv := serve(t, b)
	tp := b.Topic("p1")
	tp.Publish("binary:aa", "binary", []byte(`aa`))
	tp.Finish("symbolized", "symbolized", []byte(`done`))
	tp.Publish("binary:aa", "binary", []byte(`ignored after finish`))

	c := dial(t, srv.URL+"/p1", "")
	c.next()
	fin := c.next()
	if fin.Data != "done" || !c.ended() {
		t.Fatalf("finished topic: got %+v", fin)
	}
	// A client that already has the final event gets 204 so EventSource
	// stops reconnecting.
	req, _ := http.NewRequest("GET", srv.URL+"/p1", nil)
	req.Header.Set("Last-Event-ID", fin.ID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("reconnect after the end: status %d, want 204", resp.StatusCode)
	}

	// Reopen (a retry): the old final event is gone for new subscribers.
	tp.Reopen()
	tp.Publish("binary:aa", "binary", []byte(`aa again`))
	c2 := dial(t, srv.URL+"/p1", "")
	if r := c2.next(); r.Data != "aa again" {
		t.Fatalf("after reopen got %+v", r)
	}
	select {
	case r := <-c2.ch:
		if r.Comment == "" && r.Retry == "" {
			t.Errorf("after reopen got stale %+v", r)
		}
	case <-time.After(100 * time.Millisecond):
	}
}

func TestServeUnknownTopic(t *testing.T) {
	srv := serve(t, NewBroker(Config{}))
	resp, err := http.Get(srv.URL + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("status %d, want 404 from the caller", resp.StatusCode)
	}
}

func TestServeKeepAlive(t *testing.T) {
	b := NewBroker(Config{KeepAlive: 20 * time.Millisecond, Retry: 1500 * time.Millisecond})
	srv := serve(t, b)
	b.Topic("p1")
	c := dial(t, srv.URL+"/p1", "")
	var retry, comments int
	deadline := time.After(5 * time.Second)
	for comments < 3 {
		select {
		case r := <-c.ch:
			if r.Retry == "1500" {
				retry++
			}
			if r.Comment == "keep-alive" {
				comments++
			}
		case <-deadline:
			t.Fatalf("got %d keep-alive comments in 5s, want 3", comments)
		}
	}
	if retry != 1 {
		t.Errorf("retry field sent %d times, want once", retry)
	}
}

func TestServeBoundsSubscribers(t *testing.T) {
	b := NewBroker(Config{MaxSubscribers: 2})
	srv := serve(t, b)
	b.Topic("p1").Publish("k", "binary", []byte("x"))
	c1 := dial(t, srv.URL+"/p1", "")
	c1.next()
	c2 := dial(t, srv.URL+"/p1", "")
	c2.next()

	resp, err := http.Get(srv.URL + "/p1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "too many") {
		t.Fatalf("third subscriber: %d Retry-After=%q %q, want 503 with Retry-After and a reason", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}

	c1.close()
	poll.Until(t, 5*time.Second, "the closed stream to be released", func() bool { return b.Subscribers() == 1 })
	c3 := dial(t, srv.URL+"/p1", "")
	if r := c3.next(); r.Data != "x" {
		t.Errorf("after a slot freed: got %+v", r)
	}
}

func TestServeClientGoneLeavesNoGoroutine(t *testing.T) {
	b := NewBroker(Config{KeepAlive: time.Hour})
	srv := serve(t, b)
	tp := b.Topic("p1")
	tp.Publish("k", "binary", []byte("x"))
	ignore := goleak.IgnoreCurrent()
	for range 5 {
		c := dial(t, srv.URL+"/p1", "")
		c.next()
		c.close()
	}
	poll.Until(t, 5*time.Second, "handlers to return after clients left", func() bool { return b.Subscribers() == 0 })
	tp.mu.Lock()
	n := len(tp.subs)
	tp.mu.Unlock()
	if n != 0 {
		t.Errorf("%d subscriptions left on the topic", n)
	}
	http.DefaultClient.CloseIdleConnections()
	goleak.VerifyNone(t, ignore)
}

func TestShutdownEndsStreams(t *testing.T) {
	b := NewBroker(Config{KeepAlive: time.Hour})
	srv := serve(t, b)
	b.Topic("p1").Publish("k", "binary", []byte("x"))
	c := dial(t, srv.URL+"/p1", "")
	c.next()
	b.Shutdown()
	if !c.ended() {
		t.Fatal("stream still open after Shutdown")
	}
	resp, err := http.Get(srv.URL + "/p1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("after shutdown: %d, want 503", resp.StatusCode)
	}
}

func TestPublishThrottledCoalesces(t *testing.T) {
	b := NewBroker(Config{})
	srv := serve(t, b)
	tp := b.Topic("p1")
	tp.Publish("binary:aa", "binary", []byte("fetching"))
	c := dial(t, srv.URL+"/p1", "")
	c.next()

	const every = 100 * time.Millisecond
	start := time.Now()
	const n = 600
	for i := 1; i <= n; i++ {
		tp.PublishThrottled("progress:aa", "progress", fmt.Appendf(nil, "%d", i), every)
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	// The last value must arrive, after at most one interval.
	var got []string
	for {
		r := c.next()
		got = append(got, r.Data)
		if r.Data == fmt.Sprint(n) {
			break
		}
	}
	max := int(elapsed/every) + 2
	if len(got) > max {
		t.Errorf("%d progress events in %v, want at most %d (10 per second)", len(got), elapsed, max)
	}
	if len(got) < 2 {
		t.Errorf("only %d progress events in %v: progress was not streamed while it happened", len(got), elapsed)
	}
	// A state change is never delayed by the throttle, and Forget drops
	// pending progress so it can't arrive after the binary resolved.
	tp.PublishThrottled("progress:aa", "progress", []byte("late"), time.Hour)
	tp.PublishThrottled("progress:aa", "progress", []byte("later"), time.Hour)
	tp.Forget("progress:aa")
	tp.Publish("binary:aa", "binary", []byte("symbolized"))
	if r := c.next(); r.Data != "symbolized" && r.Data != "late" {
		t.Fatalf("got %+v", r)
	} else if r.Data == "late" {
		if r2 := c.next(); r2.Data != "symbolized" {
			t.Fatalf("got %+v after late, want symbolized", r2)
		}
	}
	for _, ev := range tp.Snapshot() {
		if ev.Type == "progress" {
			t.Errorf("forgotten progress still in the state: %s", ev.Data)
		}
	}
}

func TestConcurrentPublishAndSubscribe(t *testing.T) {
	b := NewBroker(Config{MaxSubscribers: 100})
	srv := serve(t, b)
	tp := b.Topic("p1")
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				tp.PublishThrottled(fmt.Sprintf("progress:%d", i), "progress", fmt.Appendf(nil, "%d", j), time.Millisecond)
				tp.Publish(fmt.Sprintf("binary:%d", i), "binary", fmt.Appendf(nil, "%d", j))
			}
		}()
	}
	var cs []*client
	for range 10 {
		cs = append(cs, dial(t, srv.URL+"/p1", ""))
	}
	wg.Wait()
	tp.Finish("symbolized", "symbolized", []byte("done"))
	for _, c := range cs {
		// Every subscriber ends with the final event and the last state of
		// each binary before it.
		last := map[string]string{}
		for {
			r := c.next()
			if r.Type == "symbolized" {
				break
			}
			last[r.Type] = r.Data
		}
		if last["binary"] != "199" {
			t.Errorf("subscriber's last binary state %q, want 199", last["binary"])
		}
	}
}

func TestServeLiftsTheServersWriteTimeout(t *testing.T) {
	b := NewBroker(Config{KeepAlive: time.Hour})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.Serve(w, r, "p1")
	}))
	srv.Config.WriteTimeout = 100 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	tp := b.Topic("p1")
	tp.Publish("k", "binary", []byte("first"))
	c := dial(t, srv.URL+"/p1", "")
	if r := c.next(); r.Data != "first" {
		t.Fatalf("got %+v", r)
	}
	// Well past the server's write timeout, the stream still delivers.
	time.Sleep(400 * time.Millisecond)
	tp.Publish("k", "binary", []byte("later"))
	if r := c.next(); r.Data != "later" {
		t.Fatalf("after the write timeout: got %+v", r)
	}
}

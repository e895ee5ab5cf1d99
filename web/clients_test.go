package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod"
	"viewer/web"
	"viewer/web/ondemand"
	"viewer/web/sse"
	"viewer/web/webtest"
)

// clientFrom is an HTTP client whose connections come from the loopback
// address ip (127.0.0.2, …), a second client address on this machine.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{
		Transport:     &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func do(t *testing.T, c *http.Client, method, u string, body io.Reader, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, body)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestUploadsFromAnotherOriginRefused checks a page on another origin
// cannot store a profile (form post, no-cors fetch), while curl and the
// CLI (no Origin, no Sec-Fetch-Site) and the server's own page can.
func TestUploadsFromAnotherOriginRefused(t *testing.T) {
	base := webtest.StartServerWith(t, web.Config{})
	data := webtest.StacksPB(t, "", nil, "main;work", 10)
	form := func() (io.Reader, string) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		fw, _ := w.CreateFormFile("file", "p.pb.gz")
		fw.Write(data)
		w.Close()
		return &b, w.FormDataContentType()
	}
	c := clientFrom("127.0.0.1")
	for _, tc := range []struct {
		what string
		path string
		hdr  []string
		want int
	}{
		{"form post from evil.example", "/upload", []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"no-cors fetch from evil.example", "/api/profiles", []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors"}, http.StatusForbidden},
		{"Origin only (older browser)", "/api/profiles", []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		{"another port on this host", "/api/profiles", []string{"Origin", "http://127.0.0.1:1", "Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{"sandboxed page (Origin: null)", "/api/profiles", []string{"Origin", "null"}, http.StatusForbidden},
		{"curl", "/api/profiles", nil, http.StatusCreated},
		{"this server's own page", "/api/profiles", []string{"Origin", base, "Sec-Fetch-Site", "same-origin"}, http.StatusCreated},
	} {
		body, ct := form()
		resp, text := do(t, c, http.MethodPost, base+tc.path, body, append([]string{"Content-Type", ct}, tc.hdr...)...)
		got := resp.StatusCode
		if got == http.StatusSeeOther && tc.path == "/upload" {
			got = http.StatusCreated // the form redirects to the stored profile
		}
		if got != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.what, resp.StatusCode, tc.want, text)
		}
		if tc.want == http.StatusForbidden && !strings.Contains(text, "another site") {
			t.Errorf("%s: the refusal does not say why: %s", tc.what, text)
		}
	}
}

// hangingDebuginfod is a debuginfod server that never answers until the
// test ends: a real one cannot be made to, and a job that stays running
// keeps its event stream open.
func hangingDebuginfod(t *testing.T) string {
	done := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(done); ts.Close() })
	return ts.URL
}

// heldJobServer is a viewer whose symbolization jobs wait on a debuginfod
// server that does not answer, with the given token and stream bounds.
func heldJobServer(t *testing.T, token string, events sse.Config) (base, id string) {
	t.Helper()
	return heldJobServerWith(t, web.Config{AuthToken: token}, events)
}

// heldJobServerWith is heldJobServer with cfg's token and proxy settings.
func heldJobServerWith(t *testing.T, cfg web.Config, events sse.Config) (base, id string) {
	t.Helper()
	token := cfg.AuthToken
	url := hangingDebuginfod(t)
	client, err := debuginfod.New(debuginfod.Config{URLs: []string{url}, CacheDir: t.TempDir(), Timeout: time.Minute, RetryLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	gate := ondemand.NewGate(client)
	engine := symbolize.New(symbolize.Config{Fetcher: gate, SystemDebugDir: "-", BuildIDCacheDir: "-",
		KallsymsPath: "-", KernelNotesPath: "-", KernelRelease: "none", IgnoreMappingPaths: true})
	cfg.DataDir = t.TempDir()
	cfg.Symbolization = &web.SymbolizationConfig{
		Engine: engine, Gate: gate, Servers: client.Servers(), Workers: 1, Queue: 8, Events: events,
	}
	s, err := web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := webtest.LoopbackServer(t, s.Handler())
	ts.Config.RegisterOnShutdown(s.CloseSymbolization)
	ts.Start()
	t.Cleanup(func() { s.CloseSymbolization(); ts.Close() })
	m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "/opt/app/bin/app", BuildID: "0123456789abcdef0123456789abcdef01234567"}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}, Mapping: []*profile.Mapping{m}}
	p.Location = []*profile.Location{{ID: 1, Mapping: m, Address: 0x401234}}
	p.Sample = []*profile.Sample{{Value: []int64{1}, Location: p.Location}}
	var b bytes.Buffer
	p.Write(&b)
	hdr := []string{}
	if token != "" {
		hdr = []string{"Authorization", "Bearer " + token}
	}
	resp, text := do(t, clientFrom("127.0.0.1"), http.MethodPost, ts.URL+"/api/profiles", &b, hdr...)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %d %s", resp.StatusCode, text)
	}
	var r struct{ ID string }
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		t.Fatal(err)
	}
	waitState(t, ts.URL, r.ID, symbolize.StateFetching)
	return ts.URL, r.ID
}

// TestEventStreamsCappedPerClient checks one client address cannot take
// every event stream: beyond its share it gets 503 with Retry-After and
// the reason, while another address still gets a stream.
func TestEventStreamsCappedPerClient(t *testing.T) {
	base, id := heldJobServer(t, "", sse.Config{MaxSubscribers: 10, MaxPerClient: 3})
	open := func(c *http.Client) *http.Response {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/p/"+id+"/events", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	first := clientFrom("127.0.0.1")
	for i := range 3 {
		if r := open(first); r.StatusCode != http.StatusOK {
			t.Fatalf("stream %d of the first client: %d", i+1, r.StatusCode)
		}
	}
	r := open(first)
	body, _ := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "the most one client may hold") {
		t.Errorf("4th stream of one client: %d, Retry-After %q, %s", r.StatusCode, r.Header.Get("Retry-After"), body)
	}
	if r := open(clientFrom("127.0.0.2")); r.StatusCode != http.StatusOK {
		t.Errorf("another client address: %d, want a stream", r.StatusCode)
	}
}

// TestForgedForwardedForGetsNoMoreStreams checks a local client cannot
// pass for many by writing a new X-Forwarded-For on each request: without
// --behind-proxy the header is not read, so its 4th stream is refused as
// its own. Behind a proxy (the peer on loopback), the proxy's entries are
// the clients, each with its own share.
func TestForgedForwardedForGetsNoMoreStreams(t *testing.T) {
	for _, behind := range []bool{false, true} {
		base, id := heldJobServerWith(t, web.Config{BehindProxy: behind}, sse.Config{MaxSubscribers: 10, MaxPerClient: 3})
		c := clientFrom("127.0.0.1")
		got := 0
		for i := range 6 {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/p/"+id+"/events", nil)
			req.Header.Set("X-Forwarded-For", "198.51.100."+strconv.Itoa(i+1))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { resp.Body.Close() })
			if resp.StatusCode == http.StatusOK {
				got++
			}
		}
		switch {
		case !behind && got != 3:
			t.Errorf("without --behind-proxy, one client forging X-Forwarded-For got %d of 6 streams, want its share of 3", got)
		case behind && got != 6:
			t.Errorf("with --behind-proxy, 6 clients behind the proxy got %d streams, want 6", got)
		}
	}
}

// TestControlsNeedTheToken checks that with a token set, skip, disable
// and retry are refused without it and work with it.
func TestControlsNeedTheToken(t *testing.T) {
	const token = "tok-123"
	base, id := heldJobServer(t, token, sse.Config{})
	c := clientFrom("127.0.0.1")
	controls := []string{"/symbolize/skip?build_id=0123456789abcdef0123456789abcdef01234567", "/symbolize/disable", "/symbolize/retry"}
	for _, path := range controls {
		resp, text := do(t, c, http.MethodPost, base+"/p/"+id+path, nil)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(text, "need its token") {
			t.Errorf("%s without the token: %d %s", path, resp.StatusCode, text)
		}
	}
	resp, err := http.Get(base + "/p/" + id + "/symbolization")
	if err != nil {
		t.Fatal(err)
	}
	var st ondemand.Status
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st.State != "running" || len(st.Binaries) != 1 || st.Binaries[0].State != symbolize.StateFetching {
		t.Fatalf("controls without the token changed the job: %+v", st)
	}
	resp, text := do(t, c, http.MethodPost, base+"/p/"+id+controls[0], nil, "Authorization", "Bearer "+token)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("skip with the token: %d %s", resp.StatusCode, text)
	}
	waitState(t, base, id, symbolize.StateSkipped)
	resp, text = do(t, c, http.MethodPost, base+"/p/"+id+controls[2], nil, "Authorization", "Bearer "+token)
	if resp.StatusCode == http.StatusUnauthorized {
		t.Errorf("retry with the token: %d %s", resp.StatusCode, text)
	}
}

// TestLoginBacksOff checks /login answers 429 with Retry-After after
// repeated wrong tokens from one address, even to the right token, while
// another address signs in, and lets the first in after the wait.
func TestLoginBacksOff(t *testing.T) {
	const token = "right-token"
	base := webtest.StartServerWith(t, web.Config{AuthToken: token})
	login := func(c *http.Client, tok string) *http.Response {
		resp, _ := do(t, c, http.MethodPost, base+"/login", strings.NewReader(url.Values{"token": {tok}}.Encode()),
			"Content-Type", "application/x-www-form-urlencoded")
		return resp
	}
	guesser := clientFrom("127.0.0.1")
	var refused *http.Response
	for i := range 20 {
		r := login(guesser, "guess-"+strconv.Itoa(i))
		if r.StatusCode == http.StatusTooManyRequests {
			refused = r
			break
		}
		if r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d", i, r.StatusCode)
		}
	}
	if refused == nil {
		t.Fatalf("20 wrong tokens in a row were all answered")
	}
	secs, err := strconv.Atoi(refused.Header.Get("Retry-After"))
	if err != nil || secs < 1 {
		t.Fatalf("429 without a Retry-After in seconds: %q", refused.Header.Get("Retry-After"))
	}
	if r := login(guesser, token); r.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the right token during the wait: %d, want 429", r.StatusCode)
	}
	if r := login(clientFrom("127.0.0.2"), token); r.StatusCode != http.StatusSeeOther {
		t.Errorf("another address with the right token: %d, want 303", r.StatusCode)
	}
	// A local user forging X-Forwarded-For gets a fresh address per guess,
	// but the peer's own count stops it after 100.
	forger, forgedRefused := clientFrom("127.0.0.3"), 0
	for i := range 110 {
		resp, _ := do(t, forger, http.MethodPost, base+"/login", strings.NewReader("token=guess"),
			"Content-Type", "application/x-www-form-urlencoded", "X-Forwarded-For", "198.51.100."+strconv.Itoa(i))
		if resp.StatusCode == http.StatusTooManyRequests {
			forgedRefused++
		}
	}
	if forgedRefused == 0 {
		t.Errorf("110 wrong tokens under forged X-Forwarded-For addresses were all answered")
	}

	time.Sleep(time.Duration(secs)*time.Second + 100*time.Millisecond)
	if r := login(guesser, token); r.StatusCode != http.StatusSeeOther {
		t.Errorf("the right token after Retry-After: %d, want 303", r.StatusCode)
	}
}

package debuginfodtest

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestStartServesOnLoopbackAndCounts(t *testing.T) {
	dir := t.TempDir()
	bin, id := BuildELF(t, dir, "prog", 256<<10)
	srv := Start(t, dir)
	if u, _ := url.Parse(srv.URL); !strings.HasPrefix(u.Host, "127.0.0.1:") {
		t.Fatalf("URL %s is not on 127.0.0.1", srv.URL)
	}
	srv.SetRate(1 << 20)
	start := time.Now()
	resp, err := http.Get(srv.URL + "/buildid/" + id + "/executable")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body) == 0 {
		t.Fatalf("GET executable: %s, %d bytes", resp.Status, len(body))
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("SetRate(1 MiB/s) let %d bytes through in %v", len(body), d)
	}
	if got, err := BuildID(bin); err != nil || got != id {
		t.Errorf("BuildID = %q, %v; want %s", got, err, id)
	}
	resp, err = http.Get(srv.URL + "/buildid/" + strings.Repeat("ab", 20) + "/debuginfo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown build ID: %s, want 404", resp.Status)
	}
	if n := srv.Requests(id); n != 1 {
		t.Errorf("Requests(%s) = %d, want 1", id, n)
	}
	reqs := srv.AllRequests()
	if len(reqs) != 2 || reqs[0].Status != 200 || reqs[1].Status != 404 {
		t.Errorf("AllRequests = %+v, want a 200 then a 404", reqs)
	}
	if n := srv.Metric("http_responses_total"); n < 2 {
		t.Errorf("/metrics counts %v responses, want at least 2", n)
	}
	if !strings.Contains(srv.Log(), "GET /buildid/"+id) {
		t.Errorf("debuginfod log lacks the request:\n%s", srv.Log())
	}
}

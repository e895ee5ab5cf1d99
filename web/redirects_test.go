package web_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/web/webtest"
)

// TestHostileDebuginfodRedirects checks, through the viewer's binary rows,
// that a debuginfod server cannot make the viewer fetch from a loopback
// admin port or the cloud metadata address by redirecting, that a loop
// reads "too many redirects" (not "unreachable"), and that no reply's body
// is quoted: the rows give status, content type and size. A real
// debuginfod cannot be made to redirect, so the hostile server is a fake.
func TestHostileDebuginfodRedirects(t *testing.T) {
	var adminHits atomic.Int64
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		adminHits.Add(1)
		w.Write([]byte("ADMIN-SECRET"))
	}))
	defer admin.Close()
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.Contains(r.URL.Path, "/aa01"):
			http.Redirect(w, r, admin.URL+"/token", http.StatusFound)
		case strings.Contains(r.URL.Path, "/bb02"):
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case strings.Contains(r.URL.Path, "/cc03"):
			http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
		default:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte("BODY-SECRET: internal path /srv/keys\n"))
		}
	}))
	defer hostile.Close()
	_, base := webtest.SymbolizingServer(t, []string{hostile.URL}, 1)

	ids := []string{"aa01", "bb02", "cc03", "dd04"}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}}}
	for i, id := range ids {
		m := &profile.Mapping{ID: uint64(i + 1), Start: uint64(i+1) << 32, Limit: uint64(i+2) << 32, File: "/opt/lib" + id + ".so", BuildID: id}
		l := &profile.Location{ID: uint64(i + 1), Mapping: m, Address: m.Start + 0x1000}
		p.Mapping = append(p.Mapping, m)
		p.Location = append(p.Location, l)
		p.Sample = append(p.Sample, &profile.Sample{Value: []int64{1}, Location: []*profile.Location{l}})
	}
	var b bytes.Buffer
	p.Write(&b)
	st, _ := finalEvent(t, base, webtest.UploadAPI(t, base, "", b.Bytes()))
	reason := map[string]string{}
	for _, bin := range st.Binaries {
		if bin.State == symbolize.StateSymbolized {
			t.Errorf("%s symbolized from a hostile server", bin.BuildID)
		}
		reason[bin.BuildID] = bin.Reason
	}
	for id, want := range map[string]string{
		"aa01": "a loopback, link-local or private address not in the server list",
		"bb02": "refused a redirect to 169.254.169.254",
		"cc03": "too many redirects",
		"dd04": "HTTP status 403 (text/plain, 37 bytes)",
	} {
		if !strings.Contains(reason[id], want) {
			t.Errorf("%s: reason %q, want it to say %q", id, reason[id], want)
		}
		if strings.Contains(reason[id], "unreachable") || strings.Contains(reason[id], "SECRET") {
			t.Errorf("%s: reason %q says unreachable or quotes a body", id, reason[id])
		}
	}
	if n := adminHits.Load(); n != 0 {
		t.Errorf("the loopback admin port was fetched %d times through a redirect", n)
	}
}

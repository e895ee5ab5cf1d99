package web_test

import (
	"html"
	"net/http"
	"os"
	"strings"
	"testing"

	"viewer/web"
	"viewer/web/webtest"
)

// TestTopEmptySaysWhy: a top table that lists nothing because of its time
// range or filters says so, where it said "No samples for this sample
// type." of a sample type with samples (t=1000-1001 past the recording's
// end, a focus that matches no function).
func TestTopEmptySaysWhy(t *testing.T) {
	data, err := os.ReadFile("../testdata/peers/flamegraph/perf-cycles-instructions-01.txt")
	if err != nil {
		t.Fatal(err)
	}
	base := webtest.StartServerWith(t, web.Config{})
	id := webtest.PostProfile(t, base, "perf.txt", data)
	for q, want := range map[string]string{
		"t=1000-1001":                    "No samples in 1000–1001 s",
		"f=no-such-function":             "No samples match the filters.",
		"t=1000-1001&f=no-such-function": "No samples in 1000–1001 s of the recording match the filters.",
	} {
		status, _, body := fetchURL(t, base+"/p/"+id+"/top?"+q)
		if status != http.StatusOK {
			t.Fatalf("/top?%s: %d", q, status)
		}
		body = html.UnescapeString(body)
		if !strings.Contains(body, want) || strings.Contains(body, "No samples for this sample type.") {
			t.Errorf("/top?%s does not say %q (or blames the sample type)", q, want)
		}
	}
	if _, _, body := fetchURL(t, base+"/p/"+id+"/top"); strings.Contains(body, `class="empty"`) {
		t.Errorf("/top of the whole recording says it is empty")
	}
}

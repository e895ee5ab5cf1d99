package browsertest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"viewer/web/browsertest"
	"viewer/web/webtest"
)

// TestBrowserUploadSourceMaps uploads a node --cpu-prof recording of a
// terser bundle through the upload page in chromium, its .map picked in
// the source maps field first, as a user does: the profile's page names
// the bundle's functions as app.js does (fibonacciRecursive), not as the
// bundle does (n).
func TestBrowserUploadSourceMaps(t *testing.T) {
	base := webtest.StartServer(t)
	b := browsertest.Start(t, browsertest.Options{})
	run(t, b, "open the upload page", chromedp.Navigate(base+"/"))
	td, err := filepath.Abs("../ingest/sourcemap/testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"app.min.js.map", "app.min.cpuprofile"} {
		// chromium picks a missing file without a word, and its upload
		// then fails as a network error.
		if _, err := os.Stat(filepath.Join(td, f)); err != nil {
			t.Fatal(err)
		}
	}
	run(t, b, "pick the map", chromedp.SetUploadFiles(chromedp.CSS("#sourcemaps"), []string{filepath.Join(td, "app.min.js.map")}, chromedp.NodeReady))
	run(t, b, "pick the profile", chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{filepath.Join(td, "app.min.cpuprofile")}, chromedp.NodeReady))
	waitForJS(t, b, "the profile page", `location.pathname.startsWith('/p/') && document.body.dataset.ready === '1'`)
	names := eval[string](t, b, `fetch(location.pathname + '/top.json?n=1000').then(r => r.json()).then(j => j.rows.map(r => r[0]).join('\n'))`)
	for _, want := range []string{"fibonacciRecursive", "sumOfSquares", "mainLoop"} {
		if !strings.Contains("\n"+names+"\n", "\n"+want+"\n") {
			t.Errorf("the top table has no %s: %q", want, names)
		}
	}
	if strings.Contains("\n"+names+"\n", "\nn\n") {
		t.Errorf("the top table still names the minified n: %q", names)
	}
}

package browsertest_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"viewer/symbolize"
	"viewer/web"
	"viewer/web/browsertest"
	"viewer/web/debuginfo"
	"viewer/web/ondemand"
	"viewer/web/webtest"
)

// TestBrowserNamesArriveWithTheDebugFile (issue 19): a flame page left open
// on a profile whose binary has no symbols draws the binary's functions in
// place once its debug file is uploaded to the server, without Retry and
// without a reload.
func TestBrowserNamesArriveWithTheDebugFile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs chromium")
	}
	exe, debugFile := webtest.OndemandFiles(t)
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{Symbolization: func(files *debuginfo.Store) *web.SymbolizationConfig {
		gate := ondemand.NewGate(nil) // no debuginfod: only the upload can name it
		engine := symbolize.New(symbolize.Config{Fetcher: gate, Uploaded: files, IgnoreMappingPaths: true,
			SystemDebugDir: "-", BuildIDCacheDir: "-", DebuginfodCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-", KernelRelease: "none"})
		return &web.SymbolizationConfig{Engine: engine, Gate: gate, Workers: 1, Queue: 8}
	}})
	id := webtest.UploadAPI(t, ds.URL, "", webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 42))

	b := browsertest.Start(t, browsertest.Options{})
	odDo(t, b, "open the profile", chromedp.Navigate(ds.URL+"/p/"+id))
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatalf("flame graph never drew: %v; problems %q", err, b.Problems())
	}
	odEval[bool](t, b, `window.__samePage = true`)
	row := `document.querySelector('#binaries tr')`
	waitForJS(t, b, "the binary left without symbols", row+` && `+row+`.dataset.state === 'no symbols' && document.getElementById('symbolization').dataset.job === 'done'`)
	names := `JSON.stringify(Array.from(window.viewer.tree.name, (n) => window.viewer.tree.names[n]))`
	if odEval[bool](t, b, names+`.includes('"ondemand_hash_block"')`) {
		t.Fatal("named before the upload")
	}

	webtest.UploadDebugFile(t, ds.URL, debugFile)
	waitForJS(t, b, "the names in the open page", names+`.includes('"ondemand_hash_block"') && `+row+`.dataset.state === 'symbolized' && document.getElementById('symbolization').dataset.job === 'done'`)
	if !odEval[bool](t, b, `window.__samePage === true`) {
		t.Error("the page was reloaded; want the names drawn in place")
	}
	if r := odEval[any](t, b, `window.viewer.frameRect(["main","ondemand_run_workload","ondemand_hash_block"])`); r == nil {
		t.Error("main > ondemand_run_workload > ondemand_hash_block is not drawn")
	}
	b.Screenshot(t, "names-arrive-with-the-debug-file")
	noProblems(t, b)
}

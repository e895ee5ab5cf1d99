package web_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/testdata/poll"
	"viewer/web"
	"viewer/web/debuginfo"
	"viewer/web/ondemand"
	"viewer/web/webtest"
)

// TestDebugUploadRequeuesMissingProfiles (issue 19): a profile of a stripped
// binary whose debug info is nowhere (the real debuginfod server asked has
// none) ends with the binary left without symbols, and the miss is
// remembered. Uploading the debug file as viewer upload-debuginfo does
// (multipart POST /api/debuginfo) queues the profile again by itself: the
// status the open page polls shows the new run, the event stream ends with
// the binary symbolized, and flame.json names its function, with no Retry
// and no reload. The miss is forgotten.
func TestDebugUploadRequeuesMissingProfiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts elfutils' debuginfod")
	}
	exe, debugFile := webtest.OndemandFiles(t)
	bid, err := debuginfodtest.BuildID(exe)
	if err != nil {
		t.Fatal(err)
	}
	upstream := debuginfodtest.Start(t, t.TempDir()) // knows no build ID
	cache := t.TempDir()
	client, err := debuginfod.New(debuginfod.Config{URLs: []string{upstream.URL}, CacheDir: cache, Timeout: time.Minute, RetryLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	ds := webtest.StartDebuginfo(t, webtest.DebuginfoOptions{Symbolization: func(files *debuginfo.Store) *web.SymbolizationConfig {
		gate := ondemand.NewGate(client)
		engine := symbolize.New(symbolize.Config{Fetcher: gate, Uploaded: files, IgnoreMappingPaths: true, DebuginfodCacheDir: cache,
			SystemDebugDir: "-", BuildIDCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-", KernelRelease: "none"})
		return &web.SymbolizationConfig{Engine: engine, Gate: gate, Servers: client.Servers(), Workers: 1, Queue: 8}
	}})
	id := webtest.UploadAPI(t, ds.URL, "", webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 41))
	st, _ := finalEvent(t, ds.URL, id)
	if st.Resolved != 0 || len(st.Binaries) != 1 || st.Binaries[0].State != symbolize.StateNotFound {
		t.Fatalf("before the upload: %+v", st)
	}
	if webtest.FunctionNames(t, ds.URL, id)["ondemand_hash_block"] {
		t.Fatal("named before the upload")
	}
	miss := filepath.Join(cache, bid, "debuginfo")
	if fi, err := os.Stat(miss); err != nil || fi.Size() != 0 {
		t.Fatalf("the miss is not remembered in the cache (%s): %v", miss, err)
	}
	asked := upstream.Requests(bid)

	webtest.UploadDebugFile(t, ds.URL, debugFile)

	// The page polls the status of a job that ended with misses.
	var s ondemand.Status
	if !poll.Wait(30*time.Second, func() bool {
		resp, err := http.Get(ds.URL + "/p/" + id + "/symbolization")
		if err != nil {
			t.Fatal(err)
		}
		s = ondemand.Status{}
		err = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return s.State.Active() || s.Resolved == 1
	}) {
		t.Fatalf("the upload did not queue the profile again: %+v", s)
	}
	st, _ = finalEvent(t, ds.URL, id)
	if st.Resolved != 1 || len(st.Binaries) != 1 || st.Binaries[0].State != symbolize.StateSymbolized {
		t.Fatalf("after the upload: %+v", st)
	}
	if !webtest.FunctionNames(t, ds.URL, id)["ondemand_hash_block"] {
		t.Error("flame.json does not name ondemand_hash_block after the upload")
	}
	if _, err := os.Stat(miss); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the remembered miss was not forgotten: %v", err)
	}
	if n := upstream.Requests(bid); n != asked {
		t.Errorf("the upstream was asked %d more times; the uploaded file comes first", n-asked)
	}
}

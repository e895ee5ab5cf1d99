package web_test

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize"
	"viewer/symbolize/debuginfod"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/testdata/poll"
	"viewer/web"
	"viewer/web/ondemand"
	"viewer/web/webtest"
)

// finalEvent follows /p/ID/events until the "symbolized" event and returns
// it with the types of the events seen before.
func finalEvent(t testing.TB, base, id string) (ondemand.Status, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/p/"+id+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("events: %s, Content-Type %q", resp.Status, ct)
	}
	var types []string
	typ := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
			types = append(types, typ)
		case strings.HasPrefix(line, "data: ") && typ == "symbolized":
			var s ondemand.Status
			if err := json.Unmarshal([]byte(line[6:]), &s); err != nil {
				t.Fatal(err)
			}
			return s, types
		}
	}
	t.Fatalf("events of %s ended without a symbolized event (saw %v): %v", id, types, sc.Err())
	return ondemand.Status{}, nil
}

func TestOnDemandNoDebuginfodUploadAsksNoServer(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	dsrv := debuginfodtest.Start(t, filepath.Join(webtest.OndemandDir(), "debuginfo"))
	bid, _ := debuginfodtest.BuildID(exe)
	_, base := webtest.SymbolizingServer(t, []string{dsrv.URL}, 2)
	id := webtest.UploadAPI(t, base, "?debuginfod=0", webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 1))
	s, _ := finalEvent(t, base, id)
	if s.Debuginfod || len(s.Asked) != 0 || len(s.Binaries) != 1 || s.Binaries[0].State != symbolize.StateNotFound {
		t.Errorf("final status %+v, want debuginfod off and the binary not found", s)
	}
	if n := dsrv.Requests(bid); n != 0 {
		t.Errorf("a ?debuginfod=0 upload sent %d requests to the server", n)
	}
	// Uploading the same bytes again with debuginfod allowed does not
	// override the first uploader's choice.
	webtest.UploadAPI(t, base, "", webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 1))
	resp, err := http.Post(base+"/p/"+id+"/symbolize/retry", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("retry: %s", resp.Status)
	}
	finalEvent(t, base, id)
	if n := dsrv.Requests(bid); n != 0 {
		t.Errorf("after a retry the server got %d requests despite the upload's choice", n)
	}
}

func TestOnDemandUploadsSharingABinaryFetchItOnce(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	dsrv := debuginfodtest.Start(t, filepath.Join(webtest.OndemandDir(), "debuginfo"))
	bid, _ := debuginfodtest.BuildID(exe)
	dsrv.SetRate(8 << 10) // about a second: the uploads overlap
	_, base := webtest.SymbolizingServer(t, []string{dsrv.URL}, 4)
	var ids []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := webtest.UploadAPI(t, base, "", webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 100+i))
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, id := range ids {
		s, _ := finalEvent(t, base, id)
		if s.Resolved != 1 {
			t.Errorf("%s: %+v", id, s)
		}
		if !webtest.FunctionNames(t, base, id)["ondemand_hash_block"] {
			t.Errorf("%s was not symbolized", id)
		}
	}
	if n := dsrv.Requests(bid); n != 1 {
		t.Errorf("6 uploads sharing one binary made %d requests to debuginfod, want 1", n)
	}
}

func post(t testing.TB, url string, header http.Header) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// waitState polls /p/ID/symbolization until the binary reaches state.
func waitState(t testing.TB, base, id string, state symbolize.State) {
	t.Helper()
	poll.Until(t, 30*time.Second, fmt.Sprintf("%s's binary to reach %s", id, state), func() bool {
		resp, err := http.Get(base + "/p/" + id + "/symbolization")
		if err != nil {
			t.Fatal(err)
		}
		var s ondemand.Status
		json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		return len(s.Binaries) > 0 && s.Binaries[0].State == state
	})
}

func TestOnDemandSkipThenRetry(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	dsrv := debuginfodtest.Start(t, webtest.PaddedDebugDir(t, debugFile, 640<<10))
	bid, _ := debuginfodtest.BuildID(exe)
	dsrv.SetRate(32 << 10) // 20 s: only Skip ends it in time
	_, base := webtest.SymbolizingServer(t, []string{dsrv.URL}, 2)
	id := webtest.UploadAPI(t, base, "", webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 2))
	waitState(t, base, id, symbolize.StateFetching)

	if code, body, _ := post(t, base+"/p/"+id+"/symbolize/skip", nil); code != http.StatusBadRequest || !strings.Contains(body, "build_id") {
		t.Errorf("skip without a build ID: %d %q", code, body)
	}
	if code, _, _ := post(t, base+"/p/"+id+"/symbolize/skip?build_id="+bid, http.Header{"Origin": {"http://evil.example"}}); code != http.StatusForbidden {
		t.Errorf("cross-origin skip: %d, want 403", code)
	}
	if code, _, _ := post(t, base+"/p/"+id+"/symbolize/retry", nil); code != http.StatusConflict {
		t.Errorf("retry while running: %d, want 409", code)
	}
	start := time.Now()
	if code, body, _ := post(t, base+"/p/"+id+"/symbolize/skip?build_id="+strings.ToUpper(bid), nil); code != http.StatusOK {
		t.Fatalf("skip: %d %s", code, body)
	}
	s, _ := finalEvent(t, base, id)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the job ended %v after Skip: the fetch was not cancelled", took)
	}
	if len(s.Binaries) != 1 || s.Binaries[0].State != symbolize.StateSkipped || s.Binaries[0].Reason != "skipped by the user" {
		t.Fatalf("after Skip: %+v", s.Binaries)
	}
	if webtest.FunctionNames(t, base, id)["ondemand_hash_block"] {
		t.Error("names appeared for a skipped binary")
	}

	// Retry: the binary that missed is fetched now.
	dsrv.SetRate(0)
	code, body, _ := post(t, base+"/p/"+id+"/symbolize/retry", nil)
	if code != http.StatusAccepted || !strings.Contains(body, "/p/"+id+"/events") {
		t.Fatalf("retry: %d %s", code, body)
	}
	s, _ = finalEvent(t, base, id)
	if s.Resolved != 1 || !webtest.FunctionNames(t, base, id)["ondemand_hash_block"] {
		t.Errorf("after Retry: %+v", s)
	}
}

func TestOnDemandDisableStopsAskingDebuginfod(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	dsrv := debuginfodtest.Start(t, webtest.PaddedDebugDir(t, debugFile, 640<<10))
	dsrv.SetRate(32 << 10)
	_, base := webtest.SymbolizingServer(t, []string{dsrv.URL}, 2)
	id := webtest.UploadAPI(t, base, "", webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 3))
	waitState(t, base, id, symbolize.StateFetching)
	if code, body, _ := post(t, base+"/p/"+id+"/symbolize/disable", nil); code != http.StatusOK {
		t.Fatalf("disable: %d %s", code, body)
	}
	s, _ := finalEvent(t, base, id)
	if s.Debuginfod || !s.Disabled || s.Binaries[0].State != symbolize.StateSkipped || !strings.Contains(s.Binaries[0].Reason, "disabled") {
		t.Errorf("after Disable: %+v", s)
	}
}

func TestOnDemandQueueFullKeepsTheUpload(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	dsrv := debuginfodtest.Start(t, webtest.PaddedDebugDir(t, debugFile, 640<<10))
	dsrv.SetRate(32 << 10) // 20 s: the only worker stays busy with the first upload
	client, _ := debuginfod.New(debuginfod.Config{URLs: []string{dsrv.URL}, CacheDir: t.TempDir()})
	gate := ondemand.NewGate(client)
	s, err := web.New(web.Config{DataDir: t.TempDir(), Symbolization: &web.SymbolizationConfig{
		Engine: symbolize.New(symbolize.Config{Fetcher: gate, DebuginfodCacheDir: client.CacheDir(), SystemDebugDir: "-", BuildIDCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-"}),
		Gate:   gate, Servers: client.Servers(), Workers: 1, Queue: 1,
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.CloseSymbolization(); ts.Close() })
	var ids []string
	var last *http.Response
	for i := range 5 {
		resp, err := http.Post(ts.URL+"/api/profiles", "application/octet-stream", bytes.NewReader(webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 10+i)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			last = resp
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "/p/") || !strings.Contains(string(body), "queue is full") {
				t.Errorf("503 without Retry-After or the link: %q", body)
			}
			m := regexp.MustCompile(`/p/([a-z2-7]{20})`).FindStringSubmatch(string(body))
			if m == nil {
				t.Fatalf("503 body names no link: %q", body)
			}
			ids = append(ids, m[1])
			continue
		}
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("upload %d: %s %s", i, resp.Status, body)
		}
		if i == 0 {
			var r struct{ ID string }
			json.Unmarshal(body, &r)
			waitState(t, ts.URL, r.ID, symbolize.StateFetching) // the worker holds it
		}
	}
	// One running, one queued: the other three are refused.
	if len(ids) != 3 || last == nil {
		t.Fatalf("%d uploads refused with 503, want 3 (workers 1, queue 1)", len(ids))
	}
	// The refused upload was stored: its link works and names it once the
	// queue has room (opening the page queues it).
	for _, id := range ids {
		resp, err := http.Get(ts.URL + "/p/" + id + "/profile.pb.gz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("refused upload %s: profile.pb.gz %s", id, resp.Status)
		}
	}
}

func TestOnDemandPageViewQueuesAStoredProfile(t *testing.T) {
	exe, debugFile := webtest.OndemandFiles(t)
	dsrv := debuginfodtest.Start(t, filepath.Join(webtest.OndemandDir(), "debuginfo"))
	dir := t.TempDir()
	// Uploaded while symbolization was off (or before a restart).
	plain, err := web.New(web.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	id, err := plain.Ingest(context.Background(), webtest.OndemandProfile(t, exe, debugFile, "/opt/ondemand/bin/ondemand", 4), "x.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	client, _ := debuginfod.New(debuginfod.Config{URLs: []string{dsrv.URL}, CacheDir: t.TempDir()})
	gate := ondemand.NewGate(client)
	s, err := web.New(web.Config{DataDir: dir, Symbolization: &web.SymbolizationConfig{
		Engine: symbolize.New(symbolize.Config{Fetcher: gate, DebuginfodCacheDir: client.CacheDir(), SystemDebugDir: "-", BuildIDCacheDir: "-", KallsymsPath: "-", KernelNotesPath: "-"}),
		Gate:   gate, Servers: client.Servers(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.CloseSymbolization(); ts.Close() })
	resp, err := http.Get(ts.URL + "/p/" + id)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "/p/"+id+"/events") || !strings.Contains(string(page), "symbolize.js") {
		t.Fatalf("the page of an unsymbolized profile has no event stream")
	}
	st, _ := finalEvent(t, ts.URL, id)
	if st.Resolved != 1 || !webtest.FunctionNames(t, ts.URL, id)["ondemand_hash_block"] {
		t.Errorf("after the page view: %+v", st)
	}
	// A later view has the outcome and no stream.
	resp, _ = http.Get(ts.URL + "/p/" + id)
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(page), "/p/"+id+"/events") || !strings.Contains(string(page), `data-state="symbolized"`) {
		t.Errorf("the page after symbolization still streams or lacks the outcome")
	}
}

// TestOnDemandKernelFetchesVmlinuxLast: a kernel mapping is named from this
// machine's kallsyms when its build ID is the running kernel's, with no
// request to debuginfod; the vmlinux is fetched by build ID only when
// nothing local fits.
func TestOnDemandKernelFetchesVmlinuxLast(t *testing.T) {
	dir := t.TempDir()
	gcc := debuginfodtest.NeedTool(t, "gcc", "gcc")
	vmlinux := filepath.Join(dir, "vmlinux") // stands in for one: ET_EXEC, absolute addresses
	if out, err := exec.Command(gcc, "-g", "-O1", "-fno-inline", "-no-pie", "-fno-pie", "-Wl,--build-id=sha1", "-o", vmlinux, filepath.Join(webtest.OndemandDir(), "ondemand.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
	}
	bid, _ := debuginfodtest.BuildID(vmlinux)
	ef, err := elf.Open(vmlinux)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := ef.Symbols()
	ef.Close()
	addr := map[string]uint64{}
	var kallsyms strings.Builder
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			addr[s.Name] = s.Value
			fmt.Fprintf(&kallsyms, "%016x T %s\n", s.Value, s.Name)
		}
	}
	fmt.Fprintf(&kallsyms, "%016x T _text\n", addr["main"]&^0xfff)
	ksPath := filepath.Join(t.TempDir(), "kallsyms")
	os.WriteFile(ksPath, []byte(kallsyms.String()), 0o644)
	notes := func(id string) string {
		desc, _ := hex.DecodeString(id)
		b := make([]byte, 12, 16+len(desc))
		binary.LittleEndian.PutUint32(b, 4)
		binary.LittleEndian.PutUint32(b[4:], uint32(len(desc)))
		binary.LittleEndian.PutUint32(b[8:], 3)
		b = append(append(b, "GNU\x00"...), desc...)
		p := filepath.Join(t.TempDir(), "notes")
		os.WriteFile(p, b, 0o644)
		return p
	}
	kernelProfile := func(seed int64) []byte {
		m := &profile.Mapping{ID: 1, Start: 0x400000, Limit: 0x500000, File: "[kernel.kallsyms]", BuildID: bid}
		l := &profile.Location{ID: 1, Mapping: m, Address: addr["ondemand_hash_block"] + 4}
		p := &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
			Sample:     []*profile.Sample{{Location: []*profile.Location{l}, Value: []int64{seed}}},
			Mapping:    []*profile.Mapping{m}, Location: []*profile.Location{l},
		}
		var b bytes.Buffer
		p.Write(&b)
		return b.Bytes()
	}
	dsrv := debuginfodtest.Start(t, dir)

	// The running kernel: kallsyms names it, nothing is fetched.
	_, base := webtest.SymbolizingServer(t, []string{dsrv.URL}, 1, func(c *symbolize.Config) {
		c.KallsymsPath, c.KernelNotesPath = ksPath, notes(bid)
	})
	id := webtest.UploadAPI(t, base, "", kernelProfile(1))
	s, _ := finalEvent(t, base, id)
	if s.Resolved != 1 || !strings.Contains(s.Binaries[0].Source, "kallsyms") {
		t.Errorf("running kernel: %+v", s.Binaries)
	}
	if n := dsrv.Requests(bid); n != 0 {
		t.Errorf("kallsyms could name the running kernel, yet debuginfod got %d requests", n)
	}

	// Another machine's kernel: the vmlinux comes from debuginfod.
	_, base = webtest.SymbolizingServer(t, []string{dsrv.URL}, 1, func(c *symbolize.Config) {
		c.KallsymsPath, c.KernelNotesPath = ksPath, notes("ffeeddccbbaa99887766554433221100ffeeddcc")
	})
	id = webtest.UploadAPI(t, base, "", kernelProfile(2))
	s, _ = finalEvent(t, base, id)
	if s.Resolved != 1 || !strings.Contains(s.Binaries[0].Source, "debuginfod") {
		t.Errorf("other kernel: %+v", s.Binaries)
	}
	if n := dsrv.Requests(bid); n != 1 {
		t.Errorf("other kernel: debuginfod got %d requests, want 1", n)
	}
	if !webtest.FunctionNames(t, base, id)["ondemand_hash_block"] {
		t.Error("the kernel frame has no name after the vmlinux was fetched")
	}
}

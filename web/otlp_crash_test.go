package web_test

import (
	"bufio"
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"viewer/testdata/poll"
	"viewer/web"
	"viewer/web/ingest/otlptest"
)

// TestOTLPAcknowledgedSurvivesKill: 8 clients send OTLP profiles to a
// server process that is killed (SIGKILL) while requests are in flight;
// after a restart on the same data directory, every profile the server
// had answered 200 for is there, whole (its samples as sent), and listed
// under its service, and no temporary file or folder is left.
func TestOTLPAcknowledgedSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOTLPBenchServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), benchServerEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		cmd.Process.Kill()
		t.Fatalf("the server process did not say its address: %q, %v", line, err)
	}
	url := strings.TrimSpace(line)

	const n = 2000 // samples per profile
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
		seed  = make(chan int)
		done  = make(chan struct{})
	)
	go func() {
		defer close(seed)
		for i := 0; ; i++ {
			select {
			case seed <- i:
			case <-done:
				return
			}
		}
	}()
	for range 8 {
		wg.Go(func() {
			for i := range seed {
				body, err := pprofileotlp.NewExportRequestFromProfiles(otlptest.FromPprof(otlptest.EBPFLike(n, i), map[string]string{"service.name": "app"})).MarshalProto()
				if err != nil {
					t.Error(err)
					return
				}
				resp, err := http.Post(url+web.OTLPPath, "application/x-protobuf", bytes.NewReader(body))
				if err != nil {
					return // the server is gone
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					mu.Lock()
					acked = append(acked, resp.Header.Get("X-Viewer-Profiles"))
					mu.Unlock()
				}
			}
		})
	}
	poll.Wait(30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 24
	})
	cmd.Process.Kill() // SIGKILL, with requests in flight
	close(done)
	wg.Wait()
	cmd.Wait()
	if len(acked) == 0 {
		t.Fatal("no profile was acknowledged before the kill")
	}

	s, err := web.New(web.Config{DataDir: dir, OTLP: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/services")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, id := range acked {
		resp, err := http.Get(ts.URL + "/p/" + id + "/profile.pb.gz")
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.Parse(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || err != nil {
			t.Errorf("acknowledged profile %s after the restart: %s, %v", id, resp.Status, err)
			continue
		}
		var total int64
		for _, smp := range p.Sample {
			total += smp.Value[0]
		}
		if len(p.Sample) != n/10 || total != n {
			t.Errorf("profile %s: %d samples of %d in all; sent %d of %d", id, len(p.Sample), total, n/10, n)
		}
		if !bytes.Contains(page, []byte("/p/"+id)) {
			t.Errorf("profile %s is not listed on /services after the restart", id)
		}
	}
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("left after the restart: %s", p)
		}
		return nil
	})
	t.Logf("%d profiles acknowledged before the kill, all there after the restart", len(acked))
}

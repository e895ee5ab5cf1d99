package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"viewer/web/webtest"
)

// honestClient is a user beside an attack (issue 33: "honest uploads and
// pages keep being served during the attack"): until stop, it uploads a
// small profile to base and opens its flame graph page and flame.json,
// round after round. stop fails t unless some rounds were served whole and
// none failed (a request not answered 2xx, named with its status and body).
func honestClient(t testing.TB, base string) (stop func()) {
	data := webtest.StacksPB(t, "", nil, "main;serve;parse", 30, "main;serve;render", 20)
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var rounds int
	var failures []string
	get := func(u string) error {
		resp, err := http.Get(u)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("GET %s: %d %.200s", u, resp.StatusCode, b)
		}
		return nil
	}
	round := func() error {
		resp, err := http.Post(base+"/api/profiles", "application/octet-stream", bytes.NewReader(data))
		if err != nil {
			return err
		}
		var r struct{ ID string }
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if json.Unmarshal(b, &r); resp.StatusCode != http.StatusCreated || r.ID == "" {
			return fmt.Errorf("upload: %d %.200s", resp.StatusCode, b)
		}
		for _, p := range []string{"/p/" + r.ID, "/p/" + r.ID + "/flame.json"} {
			if err := get(base + p); err != nil {
				return err
			}
		}
		return nil
	}
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			err := round()
			mu.Lock()
			if err != nil {
				failures = append(failures, err.Error())
			} else {
				rounds++
			}
			mu.Unlock()
		}
	})
	return func() {
		t.Helper()
		close(done)
		wg.Wait()
		t.Logf("an honest client meanwhile: %d rounds (upload, page, flame.json) served, %d failed", rounds, len(failures))
		if rounds == 0 || len(failures) > 0 {
			t.Errorf("an honest client during the attack: %d rounds served, failures %q; want it served throughout", rounds, failures[:min(len(failures), 3)])
		}
	}
}

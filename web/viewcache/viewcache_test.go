package viewcache

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

type key struct{ id, view string }

func (k key) Profile() string { return k.id }

// TestDropOnlyThatProfile: a profile that changed loses every view built
// from it, and the other profiles keep theirs.
func TestDropOnlyThatProfile(t *testing.T) {
	c, err := New[key, string](8)
	if err != nil {
		t.Fatal(err)
	}
	c.Add(key{"a", "flame"}, "a flame")
	c.Add(key{"a", "top"}, "a top")
	c.Add(key{"b", "flame"}, "b flame")
	c.Drop("a")
	for _, k := range []key{{"a", "flame"}, {"a", "top"}} {
		if _, ok := c.Get(k); ok {
			t.Errorf("%v is still cached after its profile was dropped", k)
		}
	}
	if v, ok := c.Get(key{"b", "flame"}); !ok || v != "b flame" {
		t.Errorf("b's flame = %q, %v; want it kept", v, ok)
	}
}

// TestBuildOnce: requests asking for a missing view at the same time wait
// for one build and share it; the view is then kept.
func TestBuildOnce(t *testing.T) {
	c, err := New[key, string](8)
	if err != nil {
		t.Fatal(err)
	}
	var builds atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() {
			v, err := c.Build(key{"a", "flame"}, func() (string, bool, error) {
				builds.Add(1)
				<-release
				return "a flame", true, nil
			})
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		})
	}
	for builds.Load() == 0 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	for i, v := range got {
		if v != "a flame" {
			t.Errorf("caller %d got %q", i, v)
		}
	}
	if _, err := c.Build(key{"a", "flame"}, func() (string, bool, error) {
		builds.Add(1)
		return "again", true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := builds.Load(); n != 1 {
		t.Errorf("%d builds of one view; want 1", n)
	}
}

// TestBuildNotKept: a view its build says not to keep, and an error, are
// returned but built again on the next request.
func TestBuildNotKept(t *testing.T) {
	c, err := New[key, string](8)
	if err != nil {
		t.Fatal(err)
	}
	builds := 0
	partial := func() (string, bool, error) { builds++; return "partial", false, nil }
	failed := func() (string, bool, error) { builds++; return "", false, errors.New("no binary") }
	for range 2 {
		if v, err := c.Build(key{"a", "types"}, partial); v != "partial" || err != nil {
			t.Errorf("Build = %q, %v; want the partial view", v, err)
		}
		if _, err := c.Build(key{"a", "annotate"}, failed); err == nil {
			t.Error("Build of a failing view: no error")
		}
	}
	if builds != 4 {
		t.Errorf("%d builds; want 4 (nothing kept)", builds)
	}
}

// TestBuildPanics: those waiting on a build that panics get an error
// rather than waiting for ever, and the next request builds again.
func TestBuildPanics(t *testing.T) {
	c, err := New[key, string](8)
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		defer func() { recover() }()
		c.Build(key{"a", "flame"}, func() (string, bool, error) {
			close(started)
			<-release
			panic("bad profile")
		})
	}()
	<-started
	go func() {
		_, err := c.Build(key{"a", "flame"}, func() (string, bool, error) { return "waiter's own", true, nil })
		done <- err
	}()
	close(release)
	if err := <-done; err == nil {
		// The waiter may have arrived after the panic and built its own.
		if v, ok := c.Get(key{"a", "flame"}); !ok || v != "waiter's own" {
			t.Errorf("a waiter got no error and no view of its own: %q, %v", v, ok)
		}
	}
	if v, err := c.Build(key{"a", "flame"}, func() (string, bool, error) { return "built", true, nil }); err != nil || v == "" {
		t.Errorf("after a panic: %q, %v", v, err)
	}
}

package viewcache

import "testing"

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

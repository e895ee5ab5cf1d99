package web_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"viewer/web/webtest"
)

// TestTypesFunctionNames: a profile whose binary cannot be read (no debug
// info here, as a Go binary built without DWARF) still names, on the
// data-type page, the functions of its unattributed share, from the
// profile's own names, instead of "[unknown function]".
func TestTypesFunctionNames(t *testing.T) {
	base := webtest.StartServer(t)
	id := webtest.PostProfile(t, base, "named.pb.gz", webtest.StacksPB(t, "", nil, "main;pkg.run;pkg.hot", 30, "main;pkg.run;pkg.cold", 10))
	resp, err := http.Get(base + "/p/" + id + "/types.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tj struct {
		Types []struct {
			Name  string
			Funcs []struct {
				Name   string
				Weight int64
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&tj); err != nil || resp.StatusCode != 200 {
		t.Fatalf("types.json: HTTP %d, %v", resp.StatusCode, err)
	}
	got := map[string]int64{}
	for _, ty := range tj.Types {
		for _, f := range ty.Funcs {
			got[f.Name] += f.Weight
		}
	}
	if got["pkg.hot"] != 30 || got["pkg.cold"] != 10 || len(got) != 2 {
		t.Errorf("functions of the unattributed share: %v; want pkg.hot 30 and pkg.cold 10", got)
	}
}

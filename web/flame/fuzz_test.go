package flame_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"viewer/web/flame"
	"viewer/web/ingest"
)

// FuzzBuild builds flame trees, zoomed trees, sandwiches and diffs from
// arbitrary profiles (any input the ingest formats accept, within a frame
// budget): go test -fuzz FuzzBuild ./web/flame. Whatever the profile, no stack is
// deeper than the depth limit, and every view stays within its node and
// byte budget.
func FuzzBuild(f *testing.F) {
	for _, name := range []string{"testdata/small.pb.gz", "../../testdata/perf/fp.folded", "../../testdata/perf/fp.script"} {
		b, err := os.ReadFile(filepath.FromSlash(name))
		if err != nil {
			f.Fatalf("seed %s: %v", name, err)
		}
		f.Add(b, uint8(8), uint16(64))
	}
	f.Add([]byte("a;b;c 1\na;b;d 2\na;e 3\nf 4\n"), uint8(3), uint16(200))
	f.Fuzz(func(t *testing.T, data []byte, depth uint8, nodes uint16) {
		lim := ingest.Limits{MaxBytes: 1 << 20, MaxSamples: 10000, MaxLocations: 10000, MaxFunctions: 10000, MaxMappings: 100,
			MaxRecords: 100000, MaxFrames: 100000, MaxStackDepth: max(2, int(depth)), MaxStrings: 100000, MaxLineBytes: 1 << 16}
		p, _, err := ingest.Parse(data, lim)
		if err != nil {
			return
		}
		frames, lines := 0, 0
		for _, s := range p.Sample {
			n := 0
			for _, l := range s.Location {
				n += max(1, len(l.Line))
			}
			if n > lim.MaxStackDepth {
				t.Fatalf("a stack of %d frames passed the %d-frame depth limit", n, lim.MaxStackDepth)
			}
			frames += len(s.Location)
			lines += n
		}
		if frames > lim.MaxFrames {
			t.Fatalf("%d frames passed the %d-frame limit", frames, lim.MaxFrames)
		}
		if lines > ingest.InlinedFramesPerFrame*lim.MaxFrames {
			t.Fatalf("%d frames with their inlined calls passed %d× the %d-frame limit", lines, ingest.InlinedFramesPerFrame, lim.MaxFrames)
		}
		b := flame.Budget{Nodes: max(1, int(nodes)), Bytes: 64 << 10}
		opt := flame.Options{MinFraction: flame.DefaultMinFraction, Budget: b}.WithContext(context.Background())
		check := func(what string, tr *flame.Tree) {
			if len(tr.Nodes) > b.Nodes {
				t.Errorf("%s: %d nodes, over the %d-node budget", what, len(tr.Nodes), b.Nodes)
			}
			if js := tr.JSON(); len(js) > b.Bytes {
				t.Errorf("%s: %d bytes of JSON, over the %d-byte budget", what, len(js), b.Bytes)
			}
			if tr.Compaction != nil && tr.Compaction.Note() == "" {
				t.Errorf("%s: a compacted tree has no note", what)
			}
		}
		err = flame.Guard(func() {
			for si := range p.SampleType {
				check("flame", flame.Build(p, si, opt))
				st := flame.NewStacks(p, si, opt)
				check("zoomed", st.Tree(nil, opt))
				if len(p.Function) > 0 {
					check("zoomed at a function", st.Tree([]string{p.Function[0].Name}, opt))
				}
				d := flame.Diff(p, si, p, si, opt)
				check("diff", d.Tree)
				if len(p.Function) > 0 {
					sw := flame.BuildSandwich(p, si, p.Function[0].Name, opt)
					check("sandwich callers", sw.Callers)
					check("sandwich callees", sw.Callees)
				}
			}
		})
		if err != nil {
			// Only names too long for the byte budget may stop a build
			// whose context never ends.
			t.Logf("stopped: %v", err)
		}
	})
}

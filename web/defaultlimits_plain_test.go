package web

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// repeatedStacks is a pprof profile shaped like the 2M benchmark one as
// the limits count it: records over distinct stacks of depth frames,
// each stack recorded records/stacks times (its records' frames over
// --max-frames' 50M, its distinct stacks' under it), of 1000 locations.
func repeatedStacks(records, stacks, depth int) []byte {
	p := pprofHead()
	const locs = 1000
	for id := uint64(1); id <= locs; id++ {
		p.msg(5, func(m *pbuf) { m.uint(1, id); m.uint(2, 3+id%2) })
		p.msg(4, func(m *pbuf) { m.uint(1, id); m.msg(4, func(l *pbuf) { l.uint(1, id) }) })
	}
	stack := func(i int) []byte {
		var ids pbuf
		// The first three frames tell the stacks apart.
		ids.varint(uint64(1 + i%locs))
		ids.varint(uint64(1 + i/locs%locs))
		ids.varint(uint64(1 + i/locs/locs%locs))
		for j := 3; j < depth; j++ {
			ids.varint(uint64(1 + (i*7+j*13)%locs))
		}
		return ids.b
	}
	for r := range records {
		p.msg(2, func(m *pbuf) { m.bytes(1, stack(r%stacks)); m.bytes(2, []byte{1}) })
	}
	return p.b
}

// TestDefaultLimitsAcceptRepeatedStacks uploads, to a server with the
// default limits, a profile of the 2M benchmark profile's counts (2M
// records over 500k stacks of 35 frames: 70M frames in its records,
// 17.5M in its distinct stacks), gzipped (decoded as it inflates) and
// not (read from the spool after its pre-scan): both are stored, their
// flame graph counting every record.
func TestDefaultLimitsAcceptRepeatedStacks(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("heavy: a 2M-record profile (160 MB inflated); not with -short or -race")
	}
	const records, stacks, depth = 2_000_000, 500_000, 35
	plain := repeatedStacks(records, stacks, depth)
	gz := gzipWith(t, func(w io.Writer) { w.Write(plain) })
	_, ts := newTestServer(t, Config{})
	for _, up := range []struct {
		name string
		data []byte
	}{{"gzipped", gz}, {"uncompressed", plain}} {
		code, msg := post(t, ts.URL, up.data)
		if code != http.StatusCreated {
			t.Fatalf("%s upload of %d bytes: %d %s; want 201 from a server with the default limits", up.name, len(up.data), code, msg)
		}
		resp, err := http.Get(ts.URL + "/p/" + msg + "/flame.json")
		if err != nil {
			t.Fatal(err)
		}
		var tree struct {
			Total int64 `json:"total"`
		}
		err = json.NewDecoder(resp.Body).Decode(&tree)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: flame.json: %s %v", up.name, resp.Status, err)
		}
		if tree.Total != records {
			t.Errorf("%s: flame.json total %d; want %d, one per record", up.name, tree.Total, records)
		}
	}
}

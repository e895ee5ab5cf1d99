package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"viewer/symbolize"
	"viewer/symbolize/addr2line"
	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web"
	"viewer/web/webtest"
)

// BenchmarkSymbolizeAPI100k times /api/symbolize for 100,000 addresses of
// libc (its debug file from libc6-dbg, loaded once and kept warm) against
// viewer's own addr2line (-f -i -C) on the same addresses, both in one
// run; "api/addr2line" is the ratio of their times (goal ≤ 1.5).
//
//	go test -run '^$' -bench SymbolizeAPI100k -benchtime 5x ./web/
func BenchmarkSymbolizeAPI100k(b *testing.B) {
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	id, err := debuginfodtest.BuildID(libc)
	if err != nil {
		b.Fatal(err)
	}
	debug := filepath.Join("/usr/lib/debug/.build-id", id[:2], id[2:]+".debug")
	if _, err := os.Stat(debug); err != nil {
		b.Fatalf("%v (install libc6-dbg)", err)
	}
	addrs := textAddrs(b, libc, 14)[:100_000]
	hexes := make([]string, len(addrs))
	for i, a := range addrs {
		hexes[i] = fmt.Sprintf("%#x", a)
	}
	body, _ := json.Marshal(map[string]any{"binaries": []map[string]any{{"build_id": id, "file": libc, "addresses": hexes}}})
	stdin := strings.Join(hexes, "\n") + "\n"
	_, base := webtest.SymbolizingServerWith(b, nil, 2, web.Config{}, func(c *symbolize.Config) { c.SystemDebugDir = "" })
	post := func() {
		resp, err := http.Post(base+"/api/symbolize", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("/api/symbolize: %s", resp.Status)
		}
	}
	post() // warm: libc's debug info is loaded once and stays
	var api, a2l time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		post()
		api += time.Since(start)
		start = time.Now()
		if err := addr2line.Run(context.Background(), []string{"-f", "-i", "-C", "-e", debug}, strings.NewReader(stdin), io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
		a2l += time.Since(start)
	}
	b.ReportMetric(float64(api.Milliseconds())/float64(b.N), "api-ms/op")
	b.ReportMetric(float64(a2l.Milliseconds())/float64(b.N), "addr2line-ms/op")
	b.ReportMetric(float64(api)/float64(a2l), "api/addr2line")
}

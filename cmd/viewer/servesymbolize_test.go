package main

import (
	"bufio"
	"debug/elf"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"viewer/symbolize/debuginfod/debuginfodtest"
	"viewer/web"
)

// writeAddressProfile writes a profile of testdata/ondemand's stripped
// program holding only addresses and its build ID: 6 samples in
// ondemand_hash_block, 4 in main.
func writeAddressProfile(t *testing.T, dir string) string {
	t.Helper()
	exe := "../../testdata/ondemand/bin/ondemand"
	bid, err := debuginfodtest.BuildID(exe)
	if err != nil {
		t.Fatal(err)
	}
	df, err := elf.Open("../../testdata/ondemand/debuginfo/ondemand.debug")
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	syms, _ := df.Symbols()
	addr := map[string]uint64{}
	for _, s := range syms {
		addr[s.Name] = 0x555555554000 + s.Value + 4
	}
	m := &profile.Mapping{ID: 1, Start: 0x555555555000, Limit: 0x555555556000, Offset: 0x1000, File: "/opt/ondemand/bin/ondemand", BuildID: bid}
	l1 := &profile.Location{ID: 1, Mapping: m, Address: addr["main"]}
	l2 := &profile.Location{ID: 2, Mapping: m, Address: addr["ondemand_hash_block"]}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		Sample:     []*profile.Sample{{Location: []*profile.Location{l2, l1}, Value: []int64{6}}, {Location: []*profile.Location{l1}, Value: []int64{4}}},
		Mapping:    []*profile.Mapping{m}, Location: []*profile.Location{l1, l2},
	}
	name := filepath.Join(dir, "perf.pb.gz")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestServeSymbolizesFromDebugDir(t *testing.T) {
	dir := t.TempDir()
	file := writeAddressProfile(t, dir)
	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())
	base, out, stop := startServe(t, "--data", t.TempDir(), "--no-debuginfod",
		"--debug-dir", "../../testdata/ondemand/debuginfo", "--workers", "1", file)
	waitForOutput(t, out, regexp.MustCompile(`debuginfod: no build IDs leave this machine \(--no-debuginfod\)`))
	id := waitForOutput(t, out, regexp.MustCompile(`/p/([a-z2-7]{20})\t`))[1]

	resp, err := http.Get(base + "/p/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	final := ""
	for sc.Scan() {
		if sc.Text() == "event: symbolized" && sc.Scan() {
			final = sc.Text()
			break
		}
	}
	resp.Body.Close()
	if !strings.Contains(final, `"resolved":1`) || !strings.Contains(final, "--debug-dir") {
		t.Fatalf("final event %q, want the binary resolved from --debug-dir", final)
	}
	resp, err = http.Get(base + "/p/" + id + "/profile.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range p.Function {
		found = found || f.Name == "ondemand_hash_block"
	}
	if !found {
		t.Errorf("profile.pb.gz after symbolization has no ondemand_hash_block")
	}
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
}

func TestServeSymbolizeFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--workers", "0"},
		{"--queue", "0"},
		{"--no-debuginfod", "--debuginfod-urls", "http://x"},
	} {
		err := runServe(t.Context(), append([]string{"--addr", "127.0.0.1:0", "--data", t.TempDir()}, args...), stdio{out: &syncBuffer{}, err: &syncBuffer{}})
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("serve %v: %v, want a usage error", args, err)
		}
	}
}

func TestServeReadsMappingPathsOnlyOnLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:0": true, "[::1]:80": true,
		"0.0.0.0:8080": false, ":8080": false, "192.0.2.7:80": false,
	} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.String("addr", "", "")
		f := registerSymbolizeFlags(fs)
		fs.Parse([]string{"--addr", addr})
		if got := f.loopback(); got != want {
			t.Errorf("--addr %s: loopback %v, want %v", addr, got, want)
		}
	}
}

// TestServeSaysWhyMappingPathsAreOff: the reason a perf map or a DWARF
// stack was not read names the cause this server has, not both.
func TestServeSaysWhyMappingPathsAreOff(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "127.0.0.1:8080"}, ""},
		{[]string{"--addr", "127.0.0.1:8080", "--no-local-files"}, "it runs with --no-local-files"},
		{[]string{"--addr", "0.0.0.0:8080"}, "it is reachable from other machines"},
	} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.String("addr", "", "")
		f := registerSymbolizeFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if got := f.localFilesOff(); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
		var lim web.Limits
		f.unwinding(&lim, nil)
		if c.want != "" && !strings.Contains(lim.NoUnwind, strings.TrimPrefix(c.want, "it ")) {
			t.Errorf("%v: unwinding off because %q, want it to say %q", c.args, lim.NoUnwind, c.want)
		}
	}
}

// TestServeSymbolizeLimitFlags: --symbolize-profile-timeout reaches the
// job manager's config, and --max-debug-file bounds local files (the
// engine's and the data-type page's cap) as well as downloads.
func TestServeSymbolizeLimitFlags(t *testing.T) {
	t.Setenv("DEBUGINFOD_MAXSIZE", "")
	t.Setenv("DEBUGINFOD_URLS", "")
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.String("addr", "127.0.0.1:0", "")
	f := registerSymbolizeFlags(fs)
	if err := fs.Parse([]string{"--symbolize-profile-timeout", "90s", "--max-debug-file", "1MiB", "--debug-dir", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := f.config(func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ProfileTimeout != 90*time.Second {
		t.Errorf("ProfileTimeout = %v, want 90s", cfg.ProfileTimeout)
	}
	if f.debugFileCap != 1<<20 {
		t.Errorf("local debug-file cap = %d, want %d", f.debugFileCap, 1<<20)
	}
	// The default: 30 minutes per profile, 4GiB per file.
	fs = flag.NewFlagSet("serve", flag.ContinueOnError)
	f = registerSymbolizeFlags(fs)
	fs.Parse(nil)
	if cfg, _, err = f.config(func(string, ...any) {}); err != nil || cfg.ProfileTimeout != 30*time.Minute || f.debugFileCap != 4<<30 {
		t.Errorf("defaults: profile timeout %v, debug-file cap %d, %v", cfg.ProfileTimeout, f.debugFileCap, err)
	}
}

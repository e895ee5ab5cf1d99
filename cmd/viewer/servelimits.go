package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"viewer/web"
	"viewer/web/ingest"
)

// limitFlags are serve's limits on what an upload may hold and how many are
// handled at once, and the optional upload token.
type limitFlags struct {
	samples, locations, functions, mappings, records int
	uploads                                          int
	uploadWait, uploadIdle                           time.Duration
	token, tokenFile                                 string
	behindProxy                                      bool
}

func registerLimitFlags(fs *flag.FlagSet) *limitFlags {
	f := &limitFlags{}
	fs.IntVar(&f.samples, "max-samples", ingest.DefaultMaxSamples, "most samples (distinct stacks) one profile may hold; 0: no limit")
	fs.IntVar(&f.locations, "max-locations", ingest.DefaultMaxLocations, "most locations one profile may hold; 0: no limit")
	fs.IntVar(&f.functions, "max-functions", ingest.DefaultMaxFunctions, "most functions one profile may hold; 0: no limit")
	fs.IntVar(&f.mappings, "max-mappings", ingest.DefaultMaxMappings, "most mappings (binaries) one profile may hold; 0: no limit")
	fs.IntVar(&f.records, "max-records", ingest.DefaultMaxRecords, "most records one perf.data may hold; 0: no limit")
	fs.IntVar(&f.uploads, "max-concurrent-uploads", web.DefaultMaxConcurrentUploads, "uploads read and parsed at once; more wait up to --upload-wait, then get 503 with Retry-After")
	fs.DurationVar(&f.uploadWait, "upload-wait", 2*time.Second, "how long an upload waits for a free slot before it is refused as busy")
	fs.DurationVar(&f.uploadIdle, "upload-idle", 30*time.Second, "drop an upload whose body stops arriving for this long")
	fs.StringVar(&f.token, "auth-token", "", "`TOKEN` required to upload (Authorization: Bearer TOKEN, or /login in a browser); viewing links needs none. Prefer --auth-token-file: flags show in ps")
	fs.StringVar(&f.tokenFile, "auth-token-file", "", "`FILE` holding the upload token (first line)")
	fs.BoolVar(&f.behindProxy, "behind-proxy", false, "others reach this server through a reverse proxy on the loopback --addr: never read files or binaries at paths a profile names")
	return f
}

// config turns the flags into the server's limits and upload token.
func (f *limitFlags) config() (web.Limits, string, error) {
	count := func(n int) int {
		if n == 0 {
			return -1 // web.Limits: negative is no limit, zero the default
		}
		return n
	}
	for _, n := range []int{f.samples, f.locations, f.functions, f.mappings, f.records} {
		if n < 0 {
			return web.Limits{}, "", usageError{"serve: --max-samples, --max-locations, --max-functions, --max-mappings and --max-records must be 0 (no limit) or more"}
		}
	}
	if f.uploads < 1 {
		return web.Limits{}, "", usageError{"serve: --max-concurrent-uploads must be at least 1"}
	}
	if f.uploadWait <= 0 || f.uploadIdle <= 0 {
		return web.Limits{}, "", usageError{"serve: --upload-wait and --upload-idle must be positive"}
	}
	lim := web.Limits{
		MaxSamples: count(f.samples), MaxLocations: count(f.locations), MaxFunctions: count(f.functions),
		MaxMappings: count(f.mappings), MaxRecords: count(f.records),
		MaxConcurrentUploads: f.uploads, UploadWait: f.uploadWait, UploadIdle: f.uploadIdle,
	}
	tok := strings.TrimSpace(f.token)
	if f.tokenFile != "" {
		if tok != "" {
			return lim, "", usageError{"serve: give --auth-token or --auth-token-file, not both"}
		}
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return lim, "", fmt.Errorf("serve: reading --auth-token-file: %w", err)
		}
		tok, _, _ = strings.Cut(string(b), "\n")
		if tok = strings.TrimSpace(tok); tok == "" {
			return lim, "", fmt.Errorf("serve: --auth-token-file %s is empty; put the token on its first line", f.tokenFile)
		}
	}
	if f.token != "" && tok == "" {
		return lim, "", usageError{"serve: --auth-token is blank"}
	}
	return lim, tok, nil
}

package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"viewer/web"
	"viewer/web/flame"
	"viewer/web/ingest"
)

// limitFlags are serve's limits on what an upload may hold and how many are
// handled at once, and the optional upload token.
type limitFlags struct {
	samples, locations, functions, mappings, records int
	frames, depth, strs, otlpProfiles                int
	line, renderBytes                                limitSize // sizes, 0: no limit
	ingestMemory, minRate, memoryLimit               sizeFlag
	uploads                                          int
	uploadWait, uploadIdle, uploadDeadline           time.Duration
	renderTimeout                                    time.Duration
	renderNodes                                      int
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
	fs.IntVar(&f.frames, "max-frames", ingest.DefaultMaxFrames, "most frames (locations) all stacks of one profile may hold together, a stack that repeats counting once (its records merge into one sample), and a third of the most they may hold with their inlined calls; 0: no limit")
	fs.IntVar(&f.depth, "max-stack-depth", defaultStackDepth(perfMaxStackFile), "most frames of one stack; deeper stacks keep their leaf-most frames under a \"[truncated N frames]\" frame (default 4096, or this machine's kernel.perf_event_max_stack when larger; a perf.data recorded with --call-graph=fp,N keeps N frames when that is more); 0: no limit")
	fs.IntVar(&f.strs, "max-strings", ingest.DefaultMaxStrings, "most string table entries of one pprof profile; 0: no limit")
	fs.IntVar(&f.otlpProfiles, "max-otlp-profiles", ingest.DefaultMaxOTLPProfiles, "most profiles one OTLP request may hold (each is stored as a profile); 0: no limit")
	f.line = limitSize(ingest.DefaultMaxLineBytes)
	fs.Var(&f.line, "max-line", "longest line of a text profile (folded stacks, perf script), e.g. 4MiB; 0: the text parsers' own bound, which is also the most it can be")
	f.ingestMemory = sizeFlag(ingest.DefaultMemory)
	fs.Var(&f.ingestMemory, "ingest-memory", "memory shared by all uploads being parsed, each taking its estimated cost first (e.g. 1GiB); an upload needing more is refused with 413, one finding it taken waits --upload-wait, then gets 503")
	fs.Var(&f.memoryLimit, "memory-limit", "soft limit on the server's Go heap, which makes garbage collection work harder near it (as GOMEMLIMIT, which wins when set; default --ingest-memory plus 256MiB)")
	f.minRate = sizeFlag(web.DefaultMinUploadRate)
	fs.Var(&f.minRate, "upload-min-rate", "slowest average rate, per second over 10 s, an upload body may arrive at (e.g. 10KiB)")
	fs.DurationVar(&f.uploadDeadline, "upload-deadline", web.DefaultUploadDeadline, "longest an upload body may take in all")
	fs.DurationVar(&f.renderTimeout, "render-timeout", web.DefaultRenderTimeout, "longest the building of one view (flame.json, flame.svg, diff, sandwich) may take; then it is answered 503")
	fs.IntVar(&f.renderNodes, "render-nodes", flame.DefaultBudgetNodes, "most frames one built view holds; larger trees are compacted by width, then depth, and say so")
	f.renderBytes = limitSize(flame.DefaultBudgetBytes)
	fs.Var(&f.renderBytes, "render-bytes", "about the most one built view's encoding holds (e.g. 32MiB); larger trees are compacted; 0: no limit")
	fs.IntVar(&f.uploads, "max-concurrent-uploads", web.DefaultMaxConcurrentUploads, "uploads parsed at once (once their body is read); more wait up to --upload-wait, then get 503 with Retry-After")
	fs.DurationVar(&f.uploadWait, "upload-wait", 2*time.Second, "how long an upload waits for a free slot before it is refused as busy")
	fs.DurationVar(&f.uploadIdle, "upload-idle", 30*time.Second, "drop an upload whose body stops arriving for this long")
	fs.StringVar(&f.token, "auth-token", "", "`TOKEN` required to upload (Authorization: Bearer TOKEN, or /login in a browser); viewing links needs none. Prefer --auth-token-file: flags show in ps")
	fs.StringVar(&f.tokenFile, "auth-token-file", "", "`FILE` holding the upload token (first line)")
	fs.BoolVar(&f.behindProxy, "behind-proxy", false, "others reach this server through a reverse proxy on the loopback --addr: never read files or binaries at paths a profile names, take the proxy's last X-Forwarded-For entry as the client address (per-client limits), and accept any Host (without it a loopback server answers only Host localhost or a loopback address)")
	return f
}

// perfMaxStackFile is the sysctl that bounds the frames perf records and
// perf script prints by default.
const perfMaxStackFile = "/proc/sys/kernel/perf_event_max_stack"

// defaultStackDepth is --max-stack-depth's default: ingest's, or the
// machine's perf limit read from file when that is larger, so that viewer
// never cuts a stack perf on this machine keeps.
func defaultStackDepth(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return ingest.DefaultMaxStackDepth
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return ingest.DefaultMaxStackDepth
	}
	return max(ingest.DefaultMaxStackDepth, n)
}

// config turns the flags into the server's limits and upload token.
func (f *limitFlags) config() (web.Limits, string, error) {
	count := func(n int) int {
		if n == 0 {
			return -1 // web.Limits: negative is no limit, zero the default
		}
		return n
	}
	for _, n := range []int{f.samples, f.locations, f.functions, f.mappings, f.records, f.frames, f.depth, f.strs, f.otlpProfiles, int(f.line), f.renderNodes, int(f.renderBytes)} {
		if n < 0 {
			return web.Limits{}, "", usageError{"serve: --max-samples, --max-locations, --max-functions, --max-mappings, --max-records, --max-frames, --max-stack-depth, --max-strings, --max-otlp-profiles, --max-line, --render-nodes and --render-bytes must be 0 (no limit) or more"}
		}
	}
	if f.depth == 1 {
		return web.Limits{}, "", usageError{"serve: --max-stack-depth must be at least 2: one frame for the stack's leaf, one for the truncation"}
	}
	if f.uploadDeadline <= 0 || f.renderTimeout <= 0 {
		return web.Limits{}, "", usageError{"serve: --upload-deadline and --render-timeout must be positive"}
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
		MaxFrames: count(f.frames), MaxStackDepth: count(f.depth), MaxStrings: count(f.strs), MaxLineBytes: count(int(f.line)),
		MaxOTLPProfiles: count(f.otlpProfiles),
		IngestMemory:    int64(f.ingestMemory), MinUploadRate: int64(f.minRate), UploadDeadline: f.uploadDeadline,
		RenderTimeout: f.renderTimeout, RenderNodes: count(f.renderNodes), RenderBytes: count(int(f.renderBytes)),
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

// memoryHeadroom is what the default --memory-limit allows beyond
// --ingest-memory: parsed profiles kept for views and the views being built.
const memoryHeadroom = 256 << 20

// applyMemoryLimit sets the Go runtime's soft memory limit from
// --memory-limit, unless GOMEMLIMIT is set, and returns the limit in force.
func (f *limitFlags) applyMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1)
	}
	lim := int64(f.memoryLimit)
	if lim <= 0 {
		lim = int64(f.ingestMemory) + memoryHeadroom
	}
	debug.SetMemoryLimit(lim)
	return lim
}

# `make test` is the test command: it installs what the tests need on a fresh
# Debian machine, checks the generated templ code, then vets and runs the
# tests: under the race detector, but for NORACE_TESTS (below), which run
# without it, and the fuzz targets briefly. The browser tests are a module
# of their own, BROWSER_TESTS (below): each of those go test steps runs it
# after the main module, and `go test ./...` at the top, with or without
# -short, leaves it out.
GO ?= go
TEST_TIMEOUT ?= 30m

.PHONY: test test-race test-plain test-plain-build deps vet templ templ-check jscheck build bench fuzz fuzz-build fuzz-short

# After deps, three jobs side by side: the race run, fuzz-short, and, under
# $(NICE), templ-check, jscheck (seconds) then test-plain-build, compiles that only take the
# CPU the race run leaves idle (its web tests wait on chromium and
# servers; CI has 2 cores) so as not to lengthen it; fuzz-short compiles
# under $(NICE) too (fuzz-build) but fuzzes at normal priority (a fuzz
# input that runs 10 s fails as deadlocked). Then the plain run alone:
# its load test, perf record and page timings fail on a loaded machine
# (TestLoad did at load 20-30 beside them); test-plain-build compiled
# it, so it only links and runs. go vet runs inside the race run
# (-vet=all: every analyzer, as `go vet ./...` runs them): a separate
# `go vet ./...` compiled every package a third time. The plain run does
# not vet (-vet=off): vet goes over every dependency for its facts, once
# per build mode (~77 s of CPU for the plain build's, BENCHMARKS.md),
# and the only files the race build leaves out, the four `//go:build
# !race` test files, each declare one constant.
test: deps
	@$(MAKE) --no-print-directory -j3 test-race fuzz-short test-plain-build
	@$(MAKE) --no-print-directory test-plain

test-race:
	$(if $(STRAY_NORACE_FILES),$(error $(STRAY_NORACE_FILES): a *_plain_test.go in none of NORACE_PKGS/NORACE_TOOL_PKGS/BROWSER_TESTS would run in neither go test))
	$(GO) test -race -vet=all -skip '$(NORACE_TESTS)' -timeout $(TEST_TIMEOUT) ./...
	cd $(BROWSER_TESTS) && $(GO) test -race -vet=all -skip '$(NORACE_TESTS)' -timeout $(TEST_TIMEOUT) ./...

# NORACE_TOOL_PKGS run after the others, alone: their tests run a JVM and
# valgrind, and beside TestHugePerfData's perf record they cost it a
# tenth of its samples (471k of the 500k it needs, in CI). OTLP_EXPORTER
# is a module of its own, the OpenTelemetry Collector's exporter against
# viewer's server, kept out of go.mod (the collector's tree of modules).
test-plain:
	$(GO) test -vet=off -run '$(NORACE_TESTS)|^TestHostileInputs$$' -timeout $(TEST_TIMEOUT) $(NORACE_PKGS)
	cd $(BROWSER_TESTS) && $(GO) test -vet=off -run '$(NORACE_TESTS)' -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -vet=off -run '$(NORACE_TESTS)' -timeout $(TEST_TIMEOUT) $(NORACE_TOOL_PKGS)
	cd $(OTLP_EXPORTER) && $(GO) test -vet=off -timeout $(TEST_TIMEOUT) ./...

OTLP_EXPORTER = testdata/otlpexporter

# BROWSER_TESTS is the module viewer/web/browsertest: the web pages' tests
# and benchmarks in headless chromium, with their chromedp driver (package
# browsertest), kept out of go.mod (chromedp and cdproto). It imports
# viewer (replace => ../..), and web/webtest for the helpers the web
# package's tests share with it. A module of its own, it is run by a go
# test of its own, in its directory, after the main module's, in both
# runs: `go test ./...` at the top (-short or not) does not reach it.
BROWSER_TESTS = web/browsertest

# test-plain-build compiles test-plain's packages (OTLP_EXPORTER's and
# BROWSER_TESTS' too) and the viewer binary its cmd/viewer tests build,
# into the build cache, and runs no test.
# After templ-check: both compile the standard library without -race, and
# two go commands side by side would each compile it.
test-plain-build: templ-check jscheck
	$(NICE) $(GO) test -vet=off -run '^$$' $(NORACE_PKGS) $(NORACE_TOOL_PKGS)
	$(NICE) $(GO) build -o /dev/null ./cmd/viewer
	cd $(BROWSER_TESTS) && $(NICE) $(GO) test -vet=off -run '^$$' ./...
	cd $(OTLP_EXPORTER) && $(NICE) $(GO) test -vet=off -run '^$$' ./...

# NICE runs make test's compile-only jobs at the lowest priority.
NICE ?= nice -n 19

# NORACE_TESTS run in make test's second go test, without the race
# detector, and only there (the first skips them): their work is in other
# processes, where -race sees nothing and only slows the test's own driver
# several times (the viewer binary under load, kills and a full disk, the
# huge profiles against go tool pprof and perf report, chromium drawing
# and measuring pages), or -race distorts what they measure (the heap
# budget). The browser tests of concurrent server work (on-demand
# symbolization, names arriving over SSE, upload progress, liveness) stay
# under -race. TestHostileInputs runs in both: its heaviest rows skip
# themselves under -race.
# A test is one of them by where it is written: in a *_plain_test.go file
# of NORACE_PKGS or NORACE_TOOL_PKGS, or of BROWSER_TESTS' directory (its
# chromium tests; NORACE_NAMES reads their names from those files; a test
# added there needs no edit here). Such files are compiled, and vetted, in
# the race run like any other test file. BROWSER_TESTS' two go tests take
# the same -skip and -run as the main module's.
NORACE_PKGS = ./cmd/viewer/ ./web/ ./symbolize/
NORACE_TOOL_PKGS = ./web/ingest/callgrind/ ./web/ingest/jfr/
NORACE_FILES = $(wildcard $(addsuffix *_plain_test.go,$(NORACE_PKGS) $(NORACE_TOOL_PKGS) ./$(BROWSER_TESTS)/))
NORACE_NAMES = $(shell sed -nE 's/^func (Test[A-Za-z0-9_]+).*/\1/p' $(NORACE_FILES) | sort)
STRAY_NORACE_FILES = $(filter-out $(NORACE_FILES),$(shell find . -name '*_plain_test.go' -not -path './testdata/*'))
NORACE_TESTS = ^($(subst $(space),|,$(strip $(NORACE_NAMES))))$$
space := $(subst ,, )

# Every fuzz target of a parser of untrusted bytes, as "package target".
FUZZ_TARGETS = \
	./web/ingest:FuzzParse \
	./web/ingest/pprofwire:FuzzDecodePprof \
	./web/ingest:FuzzPrescanOTLP \
	./web/flame:FuzzBuild \
	./web/ingest/perfdata:FuzzPerfData \
	./web/ingest/perftext:FuzzScript \
	./web/ingest/perftext:FuzzFolded \
	./web/ingest/perftext:FuzzJSON \
	./web/ingest/jsonprof:FuzzSpeedscope \
	./web/ingest/jsonprof:FuzzV8 \
	./web/ingest/jsonprof:FuzzTraceEvents \
	./web/ingest/jsonprof:FuzzFirefox \
	./web/ingest/jsonprof:FuzzGHC \
	./web/ingest/jsonprof:FuzzSafari \
	./web/ingest/callgrind:FuzzCallgrind \
	./web/ingest/jfr:FuzzJFR \
	./web/ingest/pmcstat:FuzzPmcstat \
	./web/ingest/instruments:FuzzInstruments \
	./web/ingest/stackprof:FuzzStackprof \
	./web/ingest/papyrus:FuzzPapyrus \
	./web/ingest/ghcprof:FuzzGHCReport \
	./web/ingest/sourcemap:FuzzParse \
	./symbolize/elfsym:FuzzOpenLookup \
	./symbolize/datatype:FuzzOpenAttribute \
	./symbolize/debuginfod:FuzzFileBuildID \
	./web/debuginfo:FuzzSourceArchive \
	./web/sse:FuzzWrite
FUZZTIME ?= 10s
FUZZMINIMIZE ?= 2s

# fuzz runs each target for FUZZTIME, one after the other (make fuzz
# FUZZTIME=10m for a long run); new failing inputs land in the package's
# testdata/fuzz/ and then run with every go test. fuzz-short is the short
# run make test does. -vet=off: make test's race run vets these packages
# (-vet=all), and here vet would go over every dependency again in the
# fuzz-instrumented build.
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test -vet=off -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg; \
	done

# fuzz-build compiles, with fuzzing instrumentation, the packages of the
# fuzz target with the most dependencies (nearly all of the others'), into
# the build cache. Its tests import neither web/profiles nor web/store:
# the blob store's cloud SDKs would be instrumented too (TestOTLPStoredCopyIsPprofs
# is in web/profiles for that).
fuzz-build:
	$(NICE) $(GO) test -c -vet=off -fuzz . -o /dev/null ./web/ingest/

# fuzz-short counts executions instead of timing them: with a duration,
# Go 1.26's fuzz coordinator can fail a target with "context deadline
# exceeded" at the deadline though no input failed (golang/go#75804, fixed
# in Go 1.27).
fuzz-short: fuzz-build
	@$(MAKE) --no-print-directory fuzz FUZZTIME=10000x FUZZMINIMIZE=100x

deps:
	./.ci/deps

vet:
	$(GO) vet ./...
	cd $(BROWSER_TESTS) && $(GO) vet ./...

templ:
	$(GO) tool templ generate

# Fails when `templ generate` would change the *_templ.go files. It
# generates from a copy of views/*.templ (the same output: templ names the
# file relative to -path), so views/ is not rewritten under the builds
# running beside it.
templ-check:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && mkdir "$$tmp/views" && cp views/*.templ "$$tmp/views/" && \
	$(NICE) $(GO) tool templ generate -path "$$tmp" >"$$tmp/log" 2>&1 || { cat "$$tmp/log" >&2; exit 1; }; \
	stale=$$(cd views && ls *_templ.go "$$tmp"/views/*_templ.go | xargs -n1 basename | sort -u | \
		while read -r f; do cmp -s "$$f" "$$tmp/views/$$f" || echo " views/$$f"; done); \
	[ -z "$$stale" ] || { echo "stale or missing:$$stale: run 'make templ' and commit views/*_templ.go" >&2; exit 1; }

# jscheck type-checks static/*.js: tsc --checkJs on their JSDoc types
# (JSCHECK/tsconfig.json), TypeScript the version JSCHECK/package-lock.json
# pins. npm ci installs it when the lock file is newer than the last
# install. It fails, in CI or not, when node or npm is missing (make deps
# installs them).
JSCHECK = testdata/jscheck

jscheck: $(JSCHECK)/node_modules/.installed
	cd $(JSCHECK) && $(NICE) node node_modules/.bin/tsc -p tsconfig.json

$(JSCHECK)/node_modules/.installed: $(JSCHECK)/package.json $(JSCHECK)/package-lock.json
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "jscheck: node and npm are needed: run make deps (Debian packages nodejs, npm)" >&2; exit 1; }
	cd $(JSCHECK) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

build:
	$(GO) build -o bin/viewer ./cmd/viewer

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
	cd $(BROWSER_TESTS) && $(GO) test -run '^$$' -bench . -benchmem ./...

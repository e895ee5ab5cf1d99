# `make test` is the test command: it installs what the tests need on a fresh
# Debian machine, checks the generated templ code, then vets and runs the
# tests: under the race detector, but for NORACE_TESTS (below), which run
# without it, and the fuzz targets briefly.
GO ?= go
TEST_TIMEOUT ?= 30m

.PHONY: test test-race test-plain deps vet templ templ-check build bench fuzz fuzz-short

# After deps and templ-check (which may rewrite views/), the race run and
# fuzz-short run side by side (-j2: each waits on something, a link, a
# server, while the other computes; CI has 2 cores), then the plain run
# alone: its load test, perf record and page timings fail on a loaded
# machine (TestLoad did at load 20-30 beside them). go vet runs inside
# the two go tests (-vet=all: every analyzer, as `go vet ./...` runs them;
# the plain run vets the !race files): a separate `go vet ./...` compiled
# every package a third time.
test: deps templ-check
	@$(MAKE) --no-print-directory -j2 test-race fuzz-short
	@$(MAKE) --no-print-directory test-plain

test-race:
	$(GO) test -race -vet=all -skip '$(NORACE_TESTS)' -timeout $(TEST_TIMEOUT) ./...

test-plain:
	$(GO) test -vet=all -run '$(NORACE_TESTS)|^TestHostileInputs$$' -timeout $(TEST_TIMEOUT) $(NORACE_PKGS)

# NORACE_TESTS run in make test's second go test, without the race
# detector, and only there (the first skips them): their work is in other
# processes, where -race sees nothing and only slows the test's own driver
# several times (the viewer binary under load, kills and a full disk, the
# huge profiles against go tool pprof and perf report, chromium drawing
# and measuring pages), or -race distorts what they measure (the heap
# budget). The browser tests of concurrent server work (on-demand
# symbolization, names arriving over SSE, upload progress, liveness) stay
# under -race. TestHostileInputs runs in both: its heaviest rows skip
# themselves under -race. Each name is a test of NORACE_PKGS.
NORACE_PKGS = ./cmd/viewer/ ./web/ ./symbolize/
NORACE_TESTS = ^(TestLoad|TestKillDuringUploads|TestKillDuringSymbolization|TestFullDisk|TestSecondServerOnOneDataDir|TestStackFidelity|TestHugeProfile|TestHugePerfData|TestMemoryWithinBudget|$(NORACE_BROWSER_TESTS))$$
NORACE_BROWSER_TESTS = TestBrowserFlameLayout|TestBrowserFlamePage|TestBrowserFlameColorsAndLegend|TestBrowserFlameTooltipAndDetail|TestBrowserFlameWheelZoom|TestBrowserDeepStack|TestBrowserDiffColors|TestBrowserDiffLink|TestBrowserCompareHostileNames|TestBrowserHostileNamesStayText|TestBrowserContrast|TestBrowserPhoneWidth|TestBrowserEveryPage|TestBrowserExactTopAndZoom|TestBrowserFormatterMatchesGo|TestBrowserFrameMenuSandwich|TestBrowserTimeline|TestBrowserServices|TestBrowserDropUpload|TestScreenshots|TestTypesPageInBrowser|TestAnnotatePageInBrowser|TestAnnotateMergeInBrowser

# Every fuzz target of a parser of untrusted bytes, as "package target".
FUZZ_TARGETS = \
	./web/ingest:FuzzParse \
	./web/ingest:FuzzDecodePprof \
	./web/flame:FuzzBuild \
	./web/ingest/perfdata:FuzzPerfData \
	./web/ingest/perftext:FuzzScript \
	./web/ingest/perftext:FuzzFolded \
	./web/ingest/perftext:FuzzJSON \
	./symbolize/elfsym:FuzzOpenLookup \
	./symbolize/datatype:FuzzOpenAttribute \
	./symbolize/debuginfod:FuzzFileBuildID \
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

# fuzz-short counts executions instead of timing them: with a duration,
# Go 1.26's fuzz coordinator can fail a target with "context deadline
# exceeded" at the deadline though no input failed (golang/go#75804, fixed
# in Go 1.27).
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=10000x FUZZMINIMIZE=100x

deps:
	./.ci/deps

vet:
	$(GO) vet ./...

templ:
	$(GO) tool templ generate

# Fails when `templ generate` would change the *_templ.go files.
templ-check:
	@before=$$(cat views/*_templ.go | sha256sum); \
	$(GO) tool templ generate >/dev/null 2>&1; \
	after=$$(cat views/*_templ.go | sha256sum); \
	[ "$$before" = "$$after" ] || { echo "views/*_templ.go were stale: 'make templ' regenerated them; commit them" >&2; exit 1; }

build:
	$(GO) build -o bin/viewer ./cmd/viewer

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# `make test` is the test command: it installs what the tests need on a fresh
# Debian machine, then vets, checks the generated templ code and runs the
# tests under the race detector.
GO ?= go
TEST_TIMEOUT ?= 12m

.PHONY: test deps vet templ templ-check build bench fuzz fuzz-short

test: deps vet templ-check
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -run '^(TestHostileInputs|TestStackFidelity)$$' -timeout $(TEST_TIMEOUT) ./web/ ./cmd/viewer/
	$(GO) test -run '^TestMemoryWithinBudget$$' -timeout $(TEST_TIMEOUT) ./symbolize/
	$(MAKE) fuzz-short

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
# run make test does.
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg; \
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

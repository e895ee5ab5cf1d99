# `make test` is the test command: it installs what the tests need on a fresh
# Debian machine, then vets, checks the generated templ code and runs the
# tests under the race detector.
GO ?= go
TEST_TIMEOUT ?= 12m

.PHONY: test deps vet templ templ-check build bench

test: deps vet templ-check
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

deps:
	./.ci/deps

vet:
	$(GO) vet ./...

templ:
	$(GO) tool templ generate

# Fails when `templ generate` would change the *_templ.go files.
templ-check:
	@before=$$(cat views/*_templ.go | sha256sum); \
	$(GO) tool templ generate -path views >/dev/null 2>&1; \
	after=$$(cat views/*_templ.go | sha256sum); \
	[ "$$before" = "$$after" ] || { echo "views/*_templ.go were stale: 'make templ' regenerated them; commit them" >&2; exit 1; }

build:
	$(GO) build -o bin/viewer ./cmd/viewer

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# mltrain: build, test, lint, run the lab, benchmark.
GO      ?= go
BIN     ?= bin/mltrain
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
# Without a local Go >= go.mod's, make build compiles in this image (cgo on;
# bookworm's glibc 2.36 yields a binary needing at most GLIBC_2.34, so it
# runs on Ubuntu 22.04 and 24.04), caching modules and builds in a volume.
GO_IMAGE        ?= golang:1.26.8-bookworm
GO_CACHE_VOLUME ?= mltrain-go-cache
# GoReleaser for make dist, built from its Go module once into the cache the
# test MinIO uses. v2.15.1: its go.mod fits this repository's Go, and newer
# ones pull go.digitalxero.dev/go-msix, which the module proxy here refuses.
GORELEASER_VERSION := v2.15.1
TOOLS_CACHE ?= $(or $(MLTRAIN_TEST_CACHE),$(HOME)/.cache/mltrain-test)
GORELEASER  ?= $(TOOLS_CACHE)/goreleaser-$(GORELEASER_VERSION)/goreleaser
PKGS    := ./...
# staticcheck's version, pinned here only: .ci/run installs this one.
STATICCHECK_VERSION := v0.8.2
# go-nvml's generated bindings call every NVML function, the ones NVIDIA's
# header marks deprecated included, so each cgo compile of it (build, vet,
# test) printed hundreds of -Wdeprecated-declarations warnings. Only that one
# warning is off, and mltrain has no C of its own: any other C warning still
# shows. Go's default flags are kept; a CGO_CFLAGS from the environment too.
CGO_CFLAGS ?= -O2 -g
CGO_CFLAGS += -Wno-deprecated-declarations
export CGO_CFLAGS

.PHONY: all build dist test lint vet staticcheck fmt-check up bench bench-food11 bench-fresh bench-backup gpu-smoke fuzz py-check clean

all: lint test build

# With the host's Go when new enough, else in $(GO_IMAGE) through Docker.
build:
	@BIN='$(BIN)' GO='$(GO)' GO_IMAGE='$(GO_IMAGE)' GO_CACHE_VOLUME='$(GO_CACHE_VOLUME)' \
		VERSION='$(VERSION)' COMMIT='$(COMMIT)' DATE='$(DATE)' sh scripts/build.sh

# This checkout's release as a snapshot in dist/v<version>/: the archives,
# .deb and .rpm packages (binary, completions, man pages), checksums.txt and
# install.sh, laid out as the release URL is, so dist/ served as is is an
# MLTRAIN_DOWNLOAD_URL (.goreleaser.yaml, scripts/dist.sh; GoReleaser works
# in build/goreleaser; a tag's release runs in .github/workflows/release.yml).
dist: $(GORELEASER)
	$(GORELEASER) release --snapshot --clean
	sh scripts/dist.sh build/goreleaser dist

$(GORELEASER):
	CGO_ENABLED=0 GOBIN=$(dir $@) GOFLAGS=-buildvcs=false GOTOOLCHAIN=local \
		$(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

# Every test, integration tests against the real Docker engine included.
test: lint py-check
	$(GO) test -count=1 -timeout 40m $(PKGS)

lint: fmt-check vet staticcheck

staticcheck:
	@command -v staticcheck >/dev/null || { echo "staticcheck is not installed: go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)"; exit 1; }
	staticcheck $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# Python without PyPI: compile it, and run the standard-library tests of
# train.py's plain logic and of the GPU smoke run's checks.
py-check:
	@if ls workspace/*.py >/dev/null 2>&1; then python3 -m py_compile workspace/*.py bench/gpu-smoke/*.py && echo "py_compile: workspace, gpu-smoke ok"; fi
	python3 -m unittest discover -s workspace -p 'test_*.py'
	python3 -m unittest discover -s bench/gpu-smoke -p 'test_*.py'

# The main job: bring the lab up on this host.
up: build
	./$(BIN) up $(ARGS)

# Go benchmarks (up vs Compose v5, scaling, verify, packaging...). Each reports
# its ratio against a baseline measured in the same run.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x $(PKGS)

# The Food-11 load against unzip and the course's way (generates a ~1 GiB zip once, cached).
bench-food11:
	bash bench/food11/run.sh

# A fresh node (no images, no dataset) to a ready lab: mltrain against the
# course's sequence, over throttled loopback links to a real registry and a
# dataset server (builds a 1 GiB worker image and a ~1 GiB zip; see
# bench/fresh for the knobs). FRESH_ROUNDS runs of each; `make bench` skips it.
FRESH_ROUNDS ?= 3
bench-fresh:
	MLTRAIN_BENCH_FRESH=1 $(GO) test -run '^$$' -bench BenchmarkFresh -benchtime $(FRESH_ROUNDS)x -timeout 90m ./bench/fresh

# mltrain backup to a file against tar -czf of the same bytes from a local
# copy, side by side: ~2 GiB of checkpoints in a real MinIO plus a workspace
# (BACKUP_MB=256 for a quick run). BACKUP_ROUNDS runs; `make bench` skips it.
BACKUP_ROUNDS ?= 3
bench-backup:
	MLTRAIN_BENCH_BACKUP=1 MLTRAIN_BENCH_BACKUP_MB=$(BACKUP_MB) $(GO) test -run '^$$' -bench BenchmarkBackup -benchtime $(BACKUP_ROUNDS)x -timeout 60m ./bench/backup

# On a machine with an NVIDIA GPU (no Docker or Ray needed): NVML through a
# cgo build of mltrain, and one quick epoch of train.py on the GPU. Skips
# (exit 0) without a GPU; never part of test or CI.
gpu-smoke:
	bash bench/gpu-smoke/run.sh

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseProperties -fuzztime 30s ./internal/gpu

clean:
	rm -rf bin dist build

# mltrain: build, test, lint, run the lab, benchmark.
GO      ?= go
BIN     ?= bin/mltrain
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
PKGS    := ./...
# staticcheck's version, pinned here only: .ci/run installs this one.
STATICCHECK_VERSION := v0.8.2

.PHONY: all build test lint vet staticcheck fmt-check up bench bench-food11 bench-fresh gpu-smoke fuzz py-check clean

all: lint test build

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/mltrain

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

# On a machine with an NVIDIA GPU (no Docker or Ray needed): NVML through a
# cgo build of mltrain, and one quick epoch of train.py on the GPU. Skips
# (exit 0) without a GPU; never part of test or CI.
gpu-smoke:
	bash bench/gpu-smoke/run.sh

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseProperties -fuzztime 30s ./internal/gpu

clean:
	rm -rf bin

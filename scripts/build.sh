#!/bin/sh
# Builds mltrain with cgo on (NVIDIA detection needs it): with the host's Go
# when it is at least go.mod's version, else inside the pinned official Go
# image through Docker, so a lab node with Docker but no Go can build too.
# Called by `make build`; every knob comes from the environment the Makefile
# sets. In CI, release/build_test.go runs it with Go off PATH against a
# stand-in for the Go image (release/standin_test.go says how it is made).
set -eu

out=${BIN:-bin/mltrain}
go=${GO:-go}
image=${GO_IMAGE:?GO_IMAGE: the Go image to build in}
volume=${GO_CACHE_VOLUME:-mltrain-go-cache}
ldflags="-X main.version=${VERSION:-dev} -X main.commit=${COMMIT:-} -X main.date=${DATE:-}"
need=$(sed -n 's/^go \([0-9.]*\).*/\1/p' go.mod)

# at_least A B: version A >= version B, both dotted numbers.
at_least() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		na = split(a, x, "."); nb = split(b, y, ".")
		for (i = 1; i <= (na > nb ? na : nb); i++) {
			if (x[i] + 0 > y[i] + 0) exit 0
			if (x[i] + 0 < y[i] + 0) exit 1
		}
		exit 0
	}'
}

have=
if command -v "$go" >/dev/null 2>&1; then
	have=$(GOTOOLCHAIN=local "$go" env GOVERSION 2>/dev/null | sed -n 's/^go\([0-9.]*\).*/\1/p')
fi
mkdir -p "$(dirname "$out")"

if [ -n "$have" ] && at_least "$have" "$need"; then
	echo "building $out with the host's Go $have ($(command -v "$go")), cgo on"
	CGO_ENABLED=1 GOTOOLCHAIN=local "$go" build -ldflags "$ldflags" -o "$out" ./cmd/mltrain
	exit 0
fi

why="no Go on PATH"
[ -z "$have" ] || why="the host's Go $have is older than go.mod's $need"
if ! command -v docker >/dev/null 2>&1; then
	echo "cannot build mltrain: $why, and no docker to build in $image; install Docker (or Go >= $need)" >&2
	exit 1
fi
case $out in
/* | ../*) echo "cannot build in Docker: BIN=$out must be a path inside this checkout" >&2; exit 1 ;;
esac
# The Go image comes from a registry: on a node that reaches none, say
# what to do instead of ending on Docker's own error.
if ! docker image inspect "$image" >/dev/null 2>&1; then
	echo "the Go image $image is not on this host: pulling it"
	if ! docker pull "$image" >&2; then
		cat >&2 <<EOF
cannot build mltrain: $why, and the Go image $image is not on this host and could not be pulled (Docker's error above).
Next, one of:
  - install Go >= $need (https://go.dev/dl/), then run 'make build' again
  - on a machine that has the image: 'docker save $image -o go-image.tar'; copy go-image.tar here,
    'docker load -i go-image.tar', then run 'make build' again
  - build elsewhere ('make build' there) and copy bin/mltrain here, or install a release: see install.sh
EOF
		exit 1
	fi
fi
echo "building $out in Docker image $image ($why), cgo on, caches in volume $volume"
# Root in the container writes the caches in the volume; the binary is
# handed to the invoking user (with rootless Docker the container's root
# already is that user).
owner="$(id -u):$(id -g)"
case $(docker info --format '{{json .SecurityOptions}}' 2>/dev/null) in
*rootless*) owner=0:0 ;;
esac
# -buildvcs=false: the image may have no git,
# and the commit comes in through -ldflags anyway.
docker run --rm \
	-v "$(pwd):/src" -w /src \
	-v "$volume:/cache" \
	-e GOMODCACHE=/cache/mod -e GOCACHE=/cache/build -e GOFLAGS=-buildvcs=false \
	-e CGO_ENABLED=1 -e GOTOOLCHAIN=local ${GOPROXY:+-e GOPROXY} \
	"$image" \
	sh -c 'go build -ldflags "$1" -o "$2" ./cmd/mltrain && chown "$3" "$2"' \
	sh "$ldflags" "$out" "$owner"

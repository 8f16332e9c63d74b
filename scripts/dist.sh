#!/bin/sh
# Lays GoReleaser's output (its dist, $1) out as a download URL in $2:
# $2/v<version>/ holds the archives, the .deb and .rpm packages,
# checksums.txt and install.sh, the same <url>/<tag>/<file> shape as
# https://github.com/mltrain/mltrain/releases/download, so serving $2 as is
# lets install.sh install from it:
#
#   curl -fsSL <url>/v<version>/install.sh | MLTRAIN_VERSION=v<version> MLTRAIN_DOWNLOAD_URL=<url> sh
#
# Other versions already in $2 stay. checksums.txt must cover every file
# but itself, or nothing is written.
set -eu

src=${1:?usage: dist.sh GORELEASER_DIST OUT}
out=${2:?usage: dist.sh GORELEASER_DIST OUT}

die() {
	printf 'make dist: %s\n' "$*" >&2
	exit 1
}

[ -f "$src/metadata.json" ] || die "$src/metadata.json is missing: did GoReleaser run?"
# metadata.json is one JSON object; its "version" is the release's, without v.
version=$(sed -n 's/.*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$src/metadata.json" | head -n 1)
[ -n "$version" ] || die "no version in $src/metadata.json"
tag=v$version

mkdir -p "$out"
tmp=$(mktemp -d "$out/.$tag.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
for f in "$src"/*.tar.gz "$src"/*.deb "$src"/*.rpm "$src/checksums.txt" install.sh; do
	[ -f "$f" ] || die "$f is missing from GoReleaser's output"
	cp "$f" "$tmp/"
done
chmod 0755 "$tmp"
listed=$(awk '{ print $2 }' "$tmp/checksums.txt" | sort)
present=$(cd "$tmp" && ls | grep -vx checksums.txt | sort)
[ "$listed" = "$present" ] || die "checksums.txt lists [$listed] but the release has [$present]"
(cd "$tmp" && sha256sum --quiet -c checksums.txt) || die "a file does not match checksums.txt"

# Replace an earlier build of the same version whole: never half-written.
rm -rf "${out:?}/$tag"
mv "$tmp" "$out/$tag"
trap - EXIT INT TERM
printf 'make dist: %s/%s/ (serve %s/ as MLTRAIN_DOWNLOAD_URL):\n' "$out" "$tag" "$out" >&2
ls -1 "$out/$tag" >&2

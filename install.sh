#!/bin/sh
# Installs an mltrain release on a Linux lab node:
#
#   curl -fsSL https://github.com/mltrain/mltrain/releases/download/v0.3.0/install.sh | MLTRAIN_VERSION=v0.3.0 sh
#
# A release is named by its tag, v<version> (v0.3.0; a snapshot of make dist:
# v0.3.1-dev.<commit>), and every file of it is at <url>/<tag>/<file>: this
# script, the archives mltrain_<version>_linux_<arch>.tar.gz, the .deb and
# .rpm packages and checksums.txt. `make dist` writes dist/<tag>/, so dist/
# served as is is such a <url>.
#
# MLTRAIN_VERSION       the release to install, e.g. v0.3.0 (required)
# MLTRAIN_DOWNLOAD_URL  where releases are: <url>/<version>/<archive> and
#                       <url>/<version>/checksums.txt (default: GitHub's)
# MLTRAIN_INSTALL_DIR   where mltrain goes (default /usr/local/bin when
#                       writable, else ~/.local/bin)
#
# The archive's sha256 is checked against the release's checksums.txt
# before anything is installed: a mismatch or a missing entry installs nothing.
set -eu

base=${MLTRAIN_DOWNLOAD_URL:-https://github.com/mltrain/mltrain/releases/download}
version=${MLTRAIN_VERSION:-}

say() { printf 'mltrain install: %s\n' "$*" >&2; }
die() {
	say "$*"
	exit 1
}

[ -n "$version" ] || die "set MLTRAIN_VERSION to the release to install, e.g. MLTRAIN_VERSION=v0.3.0 (releases: https://github.com/mltrain/mltrain/releases)"
case $version in
v[0-9]*) ;;
*) die "MLTRAIN_VERSION=$version: a release tag looks like v0.3.0" ;;
esac

[ "$(uname -s)" = Linux ] || die "mltrain runs on Linux lab nodes; this is $(uname -s)"
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die "no mltrain release for this machine's architecture $(uname -m) (there are amd64 and arm64)" ;;
esac

# GoReleaser names archives by the version without its v.
archive="mltrain_${version#v}_linux_${arch}.tar.gz"
url="${base%/}/$version"

if command -v curl >/dev/null 2>&1; then
	fetch() { curl -fsSL --retry 3 -o "$2" "$1"; }
	via=curl
elif command -v wget >/dev/null 2>&1; then
	fetch() { wget -q -O "$2" "$1"; }
	via=wget
else
	die "neither curl nor wget is installed; install one (apt-get install curl) and run this again"
fi

if command -v sha256sum >/dev/null 2>&1; then
	sha256() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
	sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
else
	die "neither sha256sum nor shasum is installed: cannot verify the download"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

say "downloading mltrain $version ($arch) from $url with $via"
fetch "$url/checksums.txt" "$tmp/checksums.txt" ||
	die "cannot download $url/checksums.txt: is $version a released version? (releases: https://github.com/mltrain/mltrain/releases)"
fetch "$url/$archive" "$tmp/$archive" ||
	die "cannot download $url/$archive: release $version has no $arch archive?"

want=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1; exit }' "$tmp/checksums.txt")
[ -n "$want" ] || die "checksums.txt of $version has no sha256 for $archive; refusing to install it (nothing installed)"
got=$(sha256 "$tmp/$archive")
[ "$got" = "$want" ] ||
	die "sha256 of $archive is $got but checksums.txt says $want: the download is corrupt or tampered with; nothing installed"

tar -xzf "$tmp/$archive" -C "$tmp" mltrain || die "$archive has no mltrain binary; nothing installed"

dir=${MLTRAIN_INSTALL_DIR:-}
if [ -z "$dir" ]; then
	if [ -w /usr/local/bin ]; then
		dir=/usr/local/bin
	else
		dir=$HOME/.local/bin
	fi
fi
mkdir -p "$dir" || die "cannot create $dir (set MLTRAIN_INSTALL_DIR to a writable directory)"
# Copy beside the target, then rename: a running mltrain is never half-written.
cp "$tmp/mltrain" "$dir/.mltrain.$$" && chmod 0755 "$dir/.mltrain.$$" && mv -f "$dir/.mltrain.$$" "$dir/mltrain" ||
	{
		rm -f "$dir/.mltrain.$$"
		die "cannot write $dir/mltrain (set MLTRAIN_INSTALL_DIR to a writable directory, or run with sudo)"
	}
say "installed $dir/mltrain"

case :$PATH: in
*:"$dir":*) ;;
*) say "$dir is not on your PATH; add it: echo 'export PATH=\"$dir:\$PATH\"' >> ~/.bashrc && export PATH=\"$dir:\$PATH\"" ;;
esac

"$dir/mltrain" version

#!/usr/bin/env bash
# Build containerlab from the Go module proxy, for machines that cannot reach its package
# repository (the appliance tests here; an offline VM: copy the binary into the repository
# and provision with -e containerlab_local_path=/vagrant/containerlab).
#
#   images/containerlab-build.sh [VERSION]     prints the path of the binary
#
# VERSION defaults to the containerlab role's pin (ansible/roles/containerlab/defaults).
# The binary is cached in $MPTCPLAB_CACHE (default /var/cache/mptcplab) per version (the
# Go module and build caches live in a temporary directory unless GOMODCACHE/GOCACHE are
# set, and are removed after the build); the
# proxy's checksum database may be unreachable, so its verification is switched off for
# this build (the module proxy still serves the module's recorded content).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=${1:-$(sed -n 's/^containerlab_version: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$here/../ansible/roles/containerlab/defaults/main.yml")}
cache=${MPTCPLAB_CACHE:-/var/cache/mptcplab}
out="$cache/containerlab-$version"
if [ -x "$out" ] && "$out" version 2>/dev/null | grep -q "version: $version"; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null || { echo "containerlab-build.sh: needs Go (golang-go, or go.dev's toolchain)" >&2; exit 1; }
mkdir -p "$cache"
work=$(mktemp -d "${TMPDIR:-/tmp}/mptcplab-clab.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GONOSUMDB='*' GONOSUMCHECK=1 GOSUMDB=off GOTOOLCHAIN=local
own_caches=0
if [ -z "${GOMODCACHE:-}" ] && [ -z "${GOCACHE:-}" ]; then
  own_caches=1
fi
export GOMODCACHE=${GOMODCACHE:-$work/gomod} GOCACHE=${GOCACHE:-$work/gobuild}
mod=github.com/srl-labs/containerlab
dir=$(cd "$work" && go mod download -json "$mod@v$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] || { echo "containerlab-build.sh: cannot download $mod@v$version" >&2; exit 1; }
cp -r "$dir" "$work/src"
chmod -R u+w "$work/src"
echo "containerlab-build.sh: building containerlab $version (a few minutes)" >&2
(cd "$work/src" && CGO_ENABLED=0 go build -trimpath -o "$out.tmp" \
  -ldflags "-s -w -X $mod/cmd/version.Version=$version -X $mod/cmd/version.commit=goproxy -X $mod/cmd/version.date=unknown" .) >&2
mv "$out.tmp" "$out"
# the module and build caches (about 1 GB) served this build only
if [ "$own_caches" = 1 ]; then
  go clean -modcache >/dev/null 2>&1 || true
fi
echo "$out"

#!/usr/bin/env bash
# Build the mptcplab container images: mptcplab/host, mptcplab/router, mptcplab/jupyter.
#
#   images/build.sh [--offline | --base IMAGE] [--force] [--tag TAG] [IMAGE...]
#
#   --offline    build the base locally (images/build-base.sh: debootstrap + docker import,
#                needs only Debian's package mirror) and build FROM it; no image registry
#   --base IMAGE build FROM IMAGE (default: $BASE_IMAGE, else debian:bookworm)
#   --force      rebuild even when an image is up to date
#   --tag TAG    image tag (default: latest)
#   IMAGE...     a subset of: host router jupyter (default: all)
#
# Environment: BASE_IMAGE, MPTCPLAB_OFFLINE=1 (same as --offline), MPTCPLAB_IMAGE_PREFIX
# (default: mptcplab), MPTCPLAB_EXTRA_CA_CERTS (a directory of *.crt certificates the
# images trust in addition to Debian's, for a TLS-intercepting proxy in front of PyPI;
# default: the host's /usr/local/share/ca-certificates), and those of images/build-base.sh.
#
# An image is rebuilt only when its inputs change: the hash of its staged build context
# (Dockerfile, files, and for jupyter the mptcplab package) and of the base image is kept
# in the label org.mptcplab.build-hash. Each image prints one line, "built: NAME" or
# "up to date: NAME", which the Ansible images role reads to report changes.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
prefix=${MPTCPLAB_IMAGE_PREFIX:-mptcplab}
tag=latest
base=${BASE_IMAGE:-}
offline=${MPTCPLAB_OFFLINE:-0}
force=0
images=()
extra_ca=${MPTCPLAB_EXTRA_CA_CERTS:-/usr/local/share/ca-certificates}

while [ $# -gt 0 ]; do
  case "$1" in
    --offline) offline=1 ;;
    --base) base=$2; shift ;;
    --force) force=1 ;;
    --tag) tag=$2; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    host|router|jupyter) images+=("$1") ;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ ${#images[@]} -gt 0 ] || images=(host router jupyter)

if [ "$offline" = 1 ]; then
  base=${MPTCPLAB_BASE_TAG:-mptcplab/debian-base:${MPTCPLAB_SUITE:-bookworm}}
  "$here/build-base.sh" --tag "$base"
fi
base=${base:-debian:bookworm}

docker version >/dev/null 2>&1 || { echo "build.sh: Docker is not reachable (is dockerd running?)" >&2; exit 1; }

# the base's identity enters every image's hash: a new base rebuilds the images
base_id=$(docker image inspect -f '{{.Id}}' "$base" 2>/dev/null || echo "$base")

# the legacy builder leaves the container of a failed step behind unless told otherwise
force_rm=()
if [ "${DOCKER_BUILDKIT:-}" = 0 ] || ! docker buildx version >/dev/null 2>&1; then
  force_rm=(--force-rm)
fi

stage=$(mktemp -d "${TMPDIR:-/tmp}/mptcplab-images.XXXXXX")
trap 'rm -rf "$stage"' EXIT

# stage_context NAME DIR: the build context of image NAME, with its Dockerfile at
# DIR/Dockerfile and only the files it uses
stage_context() {
  local name=$1 dir=$2
  mkdir -p "$dir"
  case "$name" in
    jupyter)
      # the Dockerfile copies from the repository root's layout
      mkdir -p "$dir/images"
      cp -a "$here/jupyter" "$dir/images/jupyter"
      cp -a "$repo/pyproject.toml" "$dir/"
      tar -C "$repo" --exclude='__pycache__' --exclude='*.pyc' --exclude='*.egg-info' \
        -cf - mptcplab | tar -C "$dir" -xf -
      cp "$dir/images/jupyter/Dockerfile" "$dir/Dockerfile"
      # the local certificate authorities (pip reaches PyPI over HTTPS)
      if [ -d "$extra_ca" ]; then
        find "$extra_ca" -name '*.crt' -type f | sort | while read -r crt; do
          cp "$crt" "$dir/images/jupyter/extra-ca-$(basename "$crt")"
        done
      fi
      ;;
    *)
      cp -a "$here/$name/." "$dir/"
      ;;
  esac
}

context_hash() {
  local dir=$1
  {
    tar -C "$dir" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
      --mode='u+rw,go+r' -cf - .
    echo "base=$base_id tag=$tag"
  } | sha256sum | cut -c1-32
}

for name in "${images[@]}"; do
  image="$prefix/$name:$tag"
  ctx="$stage/$name"
  stage_context "$name" "$ctx"
  want=$(context_hash "$ctx")
  have=$(docker image inspect -f '{{index .Config.Labels "org.mptcplab.build-hash"}}' "$image" 2>/dev/null || true)
  if [ "$force" = 0 ] && [ "$have" = "$want" ]; then
    echo "up to date: $image"
    continue
  fi
  old_id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
  start=$(date +%s)
  log="$stage/$name.log"
  if ! docker build --pull=false "${force_rm[@]}" \
      --build-arg "BASE_IMAGE=$base" \
      --label "org.mptcplab.image=$name" \
      --label "org.mptcplab.build-hash=$want" \
      --label "org.mptcplab.base=$base" \
      -t "$image" "$ctx" > "$log" 2>&1; then
    tail -40 "$log" >&2
    echo "build.sh: building $image failed" >&2
    exit 1
  fi
  # the image this one replaced is dangling now: remove it (unless a container uses it)
  new_id=$(docker image inspect -f '{{.Id}}' "$image")
  if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
    docker image rm "$old_id" >/dev/null 2>&1 || true
  fi
  echo "built: $image ($(( $(date +%s) - start )) s, base $base)"
done

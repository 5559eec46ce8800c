#!/usr/bin/env bash
# Build the Debian base image locally, with no image registry: debootstrap a minbase
# root file system from Debian's package mirror and `docker import` it.
#
#   images/build-base.sh [--force] [--tag TAG]
#
# Environment:
#   MPTCPLAB_SUITE            Debian suite (default: bookworm)
#   MPTCPLAB_DEBIAN_MIRROR    package mirror (default: http://deb.debian.org/debian)
#   MPTCPLAB_SECURITY_MIRROR  security mirror (default: http://deb.debian.org/debian-security)
#   MPTCPLAB_BASE_TAG         image tag (default: mptcplab/debian-base:$MPTCPLAB_SUITE)
#
# The result stands in for the public `debian:<suite>` image: the Dockerfiles under
# images/ take it as their BASE_IMAGE build argument (see images/build.sh).
# An existing image with the tag is kept unless --force is given.
set -euo pipefail

suite=${MPTCPLAB_SUITE:-bookworm}
mirror=${MPTCPLAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${MPTCPLAB_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
tag=${MPTCPLAB_BASE_TAG:-mptcplab/debian-base:$suite}
force=0

while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1 ;;
    --tag) tag=$2; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "build-base.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

if [ "$force" = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "build-base.sh: $tag exists (use --force to rebuild)"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "build-base.sh: debootstrap needs root" >&2
  exit 1
fi
command -v debootstrap >/dev/null || { echo "build-base.sh: install debootstrap (apt-get install debootstrap)" >&2; exit 1; }

rootfs=$(mktemp -d "${TMPDIR:-/var/tmp}/mptcplab-base.XXXXXX")
cleanup() {
  # debootstrap may leave proc/sys mounted when it fails half way
  for m in proc sys dev/pts dev; do
    mountpoint -q "$rootfs/$m" 2>/dev/null && umount -l "$rootfs/$m" || true
  done
  rm -rf --one-file-system "$rootfs"
}
trap cleanup EXIT

echo "build-base.sh: debootstrap --variant=minbase $suite from $mirror"
debootstrap --variant=minbase --components=main "$suite" "$rootfs" "$mirror" \
  > "$rootfs.log" 2>&1 || { tail -30 "$rootfs.log" >&2; rm -f "$rootfs.log"; exit 1; }
rm -f "$rootfs.log"

# apt sources as in the public image: the suite, its updates and security
rm -f "$rootfs/etc/apt/sources.list"
cat > "$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF

# container conventions of the public image: no service starts from package scripts,
# no apt caches kept, no documentation needed by the lab images
cat > "$rootfs/usr/sbin/policy-rc.d" <<'EOF'
#!/bin/sh
exit 101
EOF
chmod 0755 "$rootfs/usr/sbin/policy-rc.d"
cat > "$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
echo 'Acquire::Languages "none";' > "$rootfs/etc/apt/apt.conf.d/docker-no-languages"

rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/log/*.log \
       "$rootfs"/tmp/* "$rootfs"/var/tmp/* "$rootfs/etc/hostname" "$rootfs/etc/resolv.conf"
: > "$rootfs/etc/machine-id"

echo "build-base.sh: docker import as $tag"
tar --numeric-owner --xattrs -C "$rootfs" -c . | docker import \
  --change 'CMD ["bash"]' \
  --change 'ENV LANG=C.UTF-8' \
  --change "LABEL org.mptcplab.base.suite=$suite org.mptcplab.base.mirror=$mirror org.mptcplab.base.built=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  - "$tag" >/dev/null
echo "build-base.sh: built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))"

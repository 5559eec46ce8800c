# Sourced by images/kernel/boot-check.sh and qemu-run.sh: the packages directory that
# `make kernel-deb` leaves (manifest.json with the release, linux-image-<release>_*.deb).
#
# kernel_image PROG DIR: sets `release` (the manifest's) and `image` (the one linux-image
# package of that release); otherwise one line naming DIR and the problem, and exit 2.
# Leaves nullglob on (both callers glob the unpacked package afterwards).
kernel_image() {
  local prog=$1 dir=$2 found
  shopt -s nullglob
  [ -e "$dir/manifest.json" ] || { echo "$prog: $dir/manifest.json: missing; run 'make kernel-deb' first" >&2; exit 2; }
  release=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("release", ""))' "$dir/manifest.json")
  [ -n "$release" ] || { echo "$prog: $dir/manifest.json: no release" >&2; exit 2; }
  found=("$dir/linux-image-${release}_"*.deb)
  [ "${#found[@]}" = 1 ] || {
    echo "$prog: $dir: expected one linux-image-${release}_*.deb, found ${#found[@]}; run 'make kernel-deb'" >&2; exit 2; }
  image=${found[0]}
}

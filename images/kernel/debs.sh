# The packages directory of a kernel: sourced by images/kernel/boot-check.sh and qemu-run.sh,
# run by the campaign's qemu targets (mptcplab/campaign/targets.py) to validate one.
#
# A packages directory holds either what `make kernel-deb` leaves (manifest.json with the
# release, linux-image-<release>_*.deb beside it), or only a distribution's image package
# (`apt-get download linux-image-6.1.0-56-amd64`: linux-image-<release>_<version>_<arch>.deb,
# its release read from the package's name).
#
# kernel_image PROG DIR: sets `release` and `image` (the one linux-image package of that
# release); otherwise one line naming DIR and the problem, and exit 2.
# Leaves nullglob on (both callers glob the unpacked package afterwards).
#
#   images/kernel/debs.sh DIR     prints "RELEASE<TAB>IMAGE", or the one line and exit 2
kernel_image() {
  local prog=$1 dir=$2 found name
  shopt -s nullglob
  [ -d "$dir" ] || { echo "$prog: $dir: no such directory" >&2; exit 2; }
  if [ ! -e "$dir/manifest.json" ]; then
    # a distribution's package alone; debug symbols (-dbg) are not a kernel
    found=()
    for name in "$dir"/linux-image-*.deb; do
      case "${name##*/}" in *-dbg_*) ;; *) found+=("$name") ;; esac
    done
    [ "${#found[@]}" = 1 ] || {
      echo "$prog: $dir: no manifest.json and ${#found[@]} linux-image-*.deb (without a manifest, exactly one tells the release); run 'make kernel-deb' or 'apt-get download linux-image-RELEASE' there" >&2; exit 2; }
    image=${found[0]}
    name=${image##*/linux-image-}
    release=${name%%_*}
    release=${release%-unsigned}
    return 0
  fi
  release=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("release", ""))' "$dir/manifest.json")
  [ -n "$release" ] || { echo "$prog: $dir/manifest.json: no release" >&2; exit 2; }
  found=("$dir/linux-image-${release}_"*.deb)
  [ "${#found[@]}" = 1 ] || {
    echo "$prog: $dir: expected one linux-image-${release}_*.deb, found ${#found[@]}; run 'make kernel-deb'" >&2; exit 2; }
  image=${found[0]}
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  [ $# = 1 ] || { echo "usage: debs.sh DIR" >&2; exit 2; }
  kernel_image debs.sh "$1"
  printf '%s\t%s\n' "$release" "$image"
fi

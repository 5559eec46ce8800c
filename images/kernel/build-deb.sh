#!/usr/bin/env bash
# Build the pinned kernel (images/kernel/pin.yml) with images/kernel/patches/ into .deb
# packages on this host, for the appliance VM (the kernel role's `prebuilt` mode installs
# them): `make kernel-deb`.
#
#   images/kernel/build-deb.sh [--prepare-only] [--dry-run] [--print-key]
#                              [--source TARBALL] [--build-dir DIR] [--out DIR] [--jobs N]
#
#   --prepare-only  unpack, patch and configure the tree; no compilation
#   --dry-run       print the commands (each as `+ argv`), run none, change nothing
#   --print-key     print the cache key and exit
#   --source        the kernel source tarball (default /usr/src/<kernel_pin_debian_package>.tar.xz,
#                   installed with apt-get when missing, as images/kernel/check.sh does)
#   --build-dir     where the trees and their packages are kept (default build/kernel)
#   --out           where the current packages are handed over (default build/kernel-debs):
#                   its .debs and manifest.json are those of the last build or cache hit
#
# The source must be of the pinned series (check.sh's rule: Debian's linux-source-6.1 moves
# with Debian's updates; its actual version is recorded in the manifest). The configuration
# is x86_64 `defconfig` + the kernel's kvm_guest.config + images/kernel/vm.config (what the
# VM needs) + images/kernel/mptcplab.config (what a lab needs, last: it wins), each checked
# after `make olddefconfig`; the fragment's CONFIG_LOCALVERSION names the release
# (6.1.x-mptcplab), and LOCALVERSION is set empty on make's command line so that neither
# the environment nor a git checkout adds to it.
#
# Cache: the key is the sha256 over this script, pin.yml, the fragments and the patches
# (names and contents); build/kernel/<key>/ holds the tree (src/), the packages, build.log and
# manifest.json. When that directory already has the packages, they are handed over again
# and their paths printed, with no build. Needs (Debian packages): build-essential, bc, bison,
# flex, cpio, kmod, rsync, dpkg-dev, libelf-dev, libssl-dev, xz-utils (the missing ones are
# installed with apt-get when run as root).
set -euo pipefail
shopt -s nullglob
# one order of the patches (and of the key's inputs) whatever the caller's locale
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
pin() { sed -n "s/^$1: *\"\\{0,1\\}\\([^\"]*\\)\"\\{0,1\\} *$/\\1/p" "$here/pin.yml"; }
series=$(pin kernel_pin_series)
version=$(pin kernel_pin_version)
package=$(pin kernel_pin_debian_package)

prepare_only=0
dry_run=0
print_key=0
source=""
build_root=$repo/build/kernel
out=$repo/build/kernel-debs
jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --prepare-only) prepare_only=1 ;;
    --dry-run) dry_run=1 ;;
    --print-key) print_key=1 ;;
    --source) source=$2; shift ;;
    --build-dir) build_root=$2; shift ;;
    --out) out=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    -h|--help) awk 'NR > 1 && /^set /{exit} NR > 1' "$0"; exit 0 ;;
    *) echo "build-deb.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
build_root=$(realpath -m "$build_root")
out=$(realpath -m "$out")

say() { echo "build-deb.sh: $*" >&2; }
# one command: printed as its argument list, run unless --dry-run
run() {
  printf '+'; printf ' %q' "$@"; printf '\n'
  [ "$dry_run" = 1 ] || "$@"
}
# the same, its output into a log (the kernel build's is long)
run_logged() {
  local log=$1
  shift
  printf '+'; printf ' %q' "$@"; printf ' > %q 2>&1\n' "$log"
  [ "$dry_run" = 1 ] || "$@" > "$log" 2>&1
}

# the inputs of the cache key, in a fixed order; a patch's name counts (it sets the order)
fragments=("$here/vm.config" "$here/mptcplab.config")
patches=()
for p in "$here"/patches/*.patch; do patches+=("$p"); done
[ ${#patches[@]} -gt 0 ] || { say "no patches in $here/patches"; exit 1; }
for p in "${patches[@]}"; do
  # names go into the JSON manifest unquoted
  [[ $(basename "$p") =~ ^[A-Za-z0-9._-]+$ ]] || { say "patch name $(basename "$p") has characters other than A-Za-z0-9._-"; exit 1; }
done
key=$(cd "$here" && sha256sum build-deb.sh pin.yml vm.config mptcplab.config \
        "${patches[@]#"$here"/}" | sha256sum | cut -c1-64)
short=${key:0:16}
if [ "$print_key" = 1 ]; then
  echo "$key"
  exit 0
fi
dir=$build_root/$short
tree=$dir/src

# hand the packages of $dir over in $out (hard links where the file system allows)
hand_over() {
  run mkdir -p "$out"
  run find "$out" -maxdepth 1 -type f '(' -name '*.deb' -o -name manifest.json ')' -delete
  local f
  for f in "$dir"/*.deb "$dir/manifest.json"; do
    run cp -l "$f" "$out/" 2>/dev/null || run cp "$f" "$out/"
  done
}

if [ "$prepare_only" = 0 ] && [ -e "$dir/manifest.json" ] && compgen -G "$dir/linux-image-*.deb" >/dev/null; then
  say "cached: $dir (key $short)"
  hand_over >/dev/null
  for f in "$out"/*.deb; do echo "$f"; done
  exit 0
fi

# bindeb-pkg's build dependencies (build-essential is dpkg-buildpackage's implicit one):
# only the missing packages are installed (apt-get install of an installed one upgrades it)
missing=()
for pkg in build-essential bc bison flex cpio kmod rsync dpkg-dev libelf-dev libssl-dev xz-utils; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing the missing build dependencies"
    run env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  elif [ "$dry_run" = 0 ]; then
    say "missing build dependencies: install ${missing[*]}"
    exit 1
  fi
fi

deb_version=""
if [ -z "$source" ]; then
  source=/usr/src/$package.tar.xz
  if [ ! -e "$source" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-cache show "$package" >/dev/null 2>&1; then
      say "installing $package"
      run env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$package"
    elif [ "$dry_run" = 0 ]; then
      say "no kernel source: install $package (Debian 12) or pass --source linux-$version.tar.xz"
      exit 1
    fi
  fi
  deb_version=$(dpkg-query -W -f='${Version}' "$package" 2>/dev/null || true)
fi

t_start=$(date +%s)
run mkdir -p "$dir"
# unpacked and patched at once (a failed patch leaves no stamp: the next run unpacks anew),
# then configured; each marked done by a stamp in $dir
t_unpacked=$t_start
if [ ! -e "$dir/.patched" ]; then
  run rm -rf "$tree"
  run mkdir -p "$tree"
  run tar -C "$tree" --strip-components=1 -xf "$source"
  t_unpacked=$(date +%s)
fi

have=$version
if [ "$dry_run" = 0 ]; then
  mk() { sed -n "s/^$1 = *//p" "$tree/Makefile" | head -1; }
  have="$(mk VERSION).$(mk PATCHLEVEL).$(mk SUBLEVEL)"
  case "$have" in
    "$series".*) ;;
    *) say "source is $have, the patches are ported to $series.y"; exit 1 ;;
  esac
  if [ "$have" = "$version" ]; then
    say "source $have (pinned $version)${deb_version:+, $package $deb_version}"
  else
    say "source $have; pinned $version (same series, as check.sh allows)${deb_version:+, $package $deb_version}"
  fi
fi

if [ ! -e "$dir/.patched" ]; then
  for p in "${patches[@]}"; do
    run patch -d "$tree" -p1 --fuzz=0 --batch --forward --quiet -i "$p"
    [ "$dry_run" = 1 ] || echo "ok    $(basename "$p") applies"
  done
  run touch "$dir/.patched"
fi
t_patched=$(date +%s)

localversion=$(sed -n 's/^CONFIG_LOCALVERSION="\(.*\)"$/\1/p' "$here/mptcplab.config")
release=$have$localversion
if [ ! -e "$dir/.configured" ]; then
  run make -s -C "$tree" defconfig
  run_logged "$dir/merge.log" env -C "$tree" scripts/kconfig/merge_config.sh -m .config \
    kernel/configs/kvm_guest.config "${fragments[@]}" || { cat "$dir/merge.log" >&2; exit 1; }
  run make -s -C "$tree" olddefconfig
  run "$here/verify-config.sh" "$tree/.config" "${fragments[@]}"
  # include/config/auto.conf: where `make kernelrelease` reads CONFIG_LOCALVERSION from
  run make -s -C "$tree" syncconfig
  run touch "$dir/.configured"
fi
if [ "$dry_run" = 0 ]; then
  got=$(make -s -C "$tree" kernelrelease LOCALVERSION=)
  [ "$got" = "$release" ] || { say "the tree's release is $got, wanted $release"; exit 1; }
fi
t_configured=$(date +%s)
prepare_s=$((t_configured - t_start))
say "prepared $tree: release $release, in $prepare_s s (unpack $((t_unpacked - t_start)) s, patches $((t_patched - t_unpacked)) s, configuration $((t_configured - t_patched)) s)"
if [ "$prepare_only" = 1 ]; then
  exit 0
fi

# the package version carries the key: another set of patches is another package version
say "building with $jobs jobs, log in $dir/build.log (about an hour on 2 cores, not yet timed here)"
run_logged "$dir/build.log" make -C "$tree" -j"$jobs" bindeb-pkg LOCALVERSION= "KDEB_PKGVERSION=$release-${key:0:8}" \
  || { tail -40 "$dir/build.log" >&2; say "the build failed: $dir/build.log"; exit 1; }
t_built=$(date +%s)
build_s=$((t_built - t_configured))
if [ "$dry_run" = 1 ]; then
  hand_over
  exit 0
fi
# the patch is in the image: its log message is in the compiled tcp_output.o
strings -a "$tree/net/ipv4/tcp_output.o" > "$dir/tcp_output.strings"
grep -q "mptcplab: subflow" "$dir/tcp_output.strings" || { say "the built tcp_output.o lacks the patch's log message"; exit 1; }
rm -f "$dir/tcp_output.strings"
compgen -G "$dir/linux-image-${release}_*.deb" >/dev/null || { say "no linux-image-$release package in $dir"; exit 1; }

json_list() { local first=1 x; for x in "$@"; do [ $first = 1 ] || printf ', '; first=0; printf '%s' "$x"; done; }
patch_entries=()
for p in "${patches[@]}"; do
  patch_entries+=("{\"name\": \"$(basename "$p")\", \"sha256\": \"$(sha256sum "$p" | cut -c1-64)\"}")
done
deb_names=()
for f in "$dir"/*.deb; do deb_names+=("\"$(basename "$f")\""); done
cat > "$dir/manifest.json.tmp" <<EOF
{
  "key": "$key",
  "release": "$release",
  "pin": "$version",
  "source": {"tarball": "$source", "kernel_version": "$have", "debian_package": "${deb_version:+$package}", "debian_version": "$deb_version"},
  "patches": [$(json_list "${patch_entries[@]}")],
  "fragments": ["kernel/configs/kvm_guest.config", "images/kernel/vm.config", "images/kernel/mptcplab.config"],
  "base_config": "defconfig",
  "jobs": $jobs,
  "host": {"kernel": "$(uname -r)", "cpus": $(nproc)},
  "prepare_seconds": $prepare_s,
  "build_seconds": $build_s,
  "debs": [$(json_list "${deb_names[@]}")]
}
EOF
mv "$dir/manifest.json.tmp" "$dir/manifest.json"
say "built $release in $build_s s"
hand_over >/dev/null
for f in "$out"/*.deb; do echo "$f"; done

#!/usr/bin/env bash
# Check the mptcplab kernel patches against the pinned kernel source (images/kernel/pin.yml):
#   1. each patch in images/kernel/patches/ applies in order, with no fuzz
#      (`patch --dry-run --fuzz=0` and `git apply --check`, then applied for the next one);
#   2. the configuration fragment images/kernel/mptcplab.config survives
#      `make olddefconfig` (on x86_64 defconfig, or on --base-config FILE);
#   3. the patched net/ipv4/tcp_output.c compiles, and carries the patch's log message
#      (skip with --no-compile).
#
#   images/kernel/check.sh [--source TARBALL|DIR] [--base-config FILE] [--patches DIR]
#                          [--no-compile] [--keep DIR]
#
# The source defaults to /usr/src/<kernel_pin_debian_package>.tar.xz, installed with apt
# when missing (Debian). Needs: patch, git, make, gcc, flex, bison, bc, libelf-dev, xz.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pin() { sed -n "s/^$1: *\"\\{0,1\\}\\([^\"]*\\)\"\\{0,1\\} *$/\\1/p" "$here/pin.yml"; }
series=$(pin kernel_pin_series)
version=$(pin kernel_pin_version)
package=$(pin kernel_pin_debian_package)
source=""
base_config=""
compile=1
keep=""
patches="$here/patches"
while [ $# -gt 0 ]; do
  case "$1" in
    --source) source=$2; shift ;;
    --base-config) base_config=$2; shift ;;
    --patches) patches=$(cd "$2" && pwd); shift ;;
    --no-compile) compile=0 ;;
    --keep) keep=$2; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

if [ -z "$source" ]; then
  source=/usr/src/$package.tar.xz
  if [ ! -e "$source" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-cache show "$package" >/dev/null 2>&1; then
      echo "check.sh: installing $package"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$package" >/dev/null
    else
      echo "check.sh: no kernel source: install $package (Debian 12) or pass --source linux-$version.tar.xz" >&2
      exit 1
    fi
  fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/mptcplab-kernel.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -d "$source" ]; then
  echo "check.sh: copying $source"
  cp -a "$source" "$work/src"
else
  echo "check.sh: unpacking $source"
  mkdir "$work/src"
  tar -C "$work/src" --strip-components=1 -xf "$source"
fi
cd "$work/src"

mk() { sed -n "s/^$1 = *//p" Makefile | head -1; }
have="$(mk VERSION).$(mk PATCHLEVEL).$(mk SUBLEVEL)"
case "$have" in
  "$series".*) ;;
  *) echo "check.sh: source is $have, the patches are ported to $series.y" >&2; exit 1 ;;
esac
if [ "$have" = "$version" ]; then
  echo "check.sh: source $have (pinned $version)"
else
  echo "check.sh: source $have; pinned $version (same series; checking against $have)"
fi

fail=0
n=0
for p in "$patches"/*.patch; do
  [ -e "$p" ] || continue
  n=$((n + 1))
  name=$(basename "$p")
  if ! out=$(patch -p1 --fuzz=0 --dry-run < "$p" 2>&1); then
    echo "FAIL  $name: patch --dry-run"; echo "$out" | sed 's/^/      /'; fail=1; continue
  fi
  if ! out=$(git apply --check "$p" 2>&1); then
    echo "FAIL  $name: git apply --check"; echo "$out" | sed 's/^/      /'; fail=1; continue
  fi
  patch -p1 --fuzz=0 --quiet < "$p"
  echo "ok    $name applies"
done
[ "$n" -gt 0 ] || { echo "check.sh: no patches in $patches" >&2; exit 1; }
[ "$fail" = 0 ] || exit 1

if [ -n "$base_config" ]; then
  cp "$base_config" .config
  make -s olddefconfig
else
  make -s defconfig
fi
./scripts/kconfig/merge_config.sh -m .config "$here/mptcplab.config" > "$work/merge.log" 2>&1 \
  || { cat "$work/merge.log"; exit 1; }
make -s olddefconfig
"$here/verify-config.sh" .config "$here/mptcplab.config"

if [ "$compile" = 1 ]; then
  make -s -j"$(nproc)" net/ipv4/tcp_output.o > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; echo "FAIL  net/ipv4/tcp_output.c does not compile"; exit 1; }
  if grep -q "error\|warning:" "$work/build.log"; then cat "$work/build.log"; echo "FAIL  compiler diagnostics in net/ipv4/tcp_output.c"; exit 1; fi
  # (grep -q would end the pipe early, and pipefail would count strings' SIGPIPE)
  strings -a net/ipv4/tcp_output.o > "$work/strings.txt"
  grep -q "mptcplab: subflow" "$work/strings.txt" \
    || { echo "FAIL  the patched tcp_output.o lacks the subflow log message"; exit 1; }
  echo "ok    patched net/ipv4/tcp_output.c compiles ($(uname -m), no warnings)"
fi
if [ -n "$keep" ]; then
  rm -rf "$keep"; mv "$work/src" "$keep"; echo "check.sh: patched tree kept in $keep"
fi
echo "check.sh: all $n patches apply to $have"

#!/usr/bin/env bash
# Run one command of this host on another kernel: the kernel of a packages directory (as
# `make kernel-deb` leaves one, or a distribution's linux-image .deb with a manifest.json)
# booted under QEMU with this host's root file system as its own, read-only. A prototype of
# the kernel matrix (issue 18) without a VM image: the same userland, the same .venv, only the
# kernel changes.
#
#   images/kernel/qemu-run.sh --debs DIR [--timeout SECONDS] [--mem MB] [--out DIR]
#                             [--share DIR]... [--accel tcg|kvm] [--cpu MODEL] [--keep] -- COMMAND [ARG...]
#
#   --debs     manifest.json {"release": ...} and linux-image-<release>_*.deb (required)
#   --timeout  the boot and the command, at most (default 3600 s); then exit 124
#   --mem      the guest's memory in MB (default 2048)
#   --out      the one host directory the guest may write (default the repository's results/),
#              mounted at the same path in the guest; created when missing
#   --share    a host directory the guest sees read-only at the same path even where its own
#              tmpfs would hide it (a lab under /tmp); repeatable. The repository and the
#              working directory are shared so whenever they lie under the guest's tmpfs
#   --accel    QEMU's accelerator (default tcg: this host's /dev/kvm does not run guests)
#   --cpu      QEMU's CPU model (default max,-avx2 under TCG, host under KVM)
#   --keep     keep the work directory (unpacked package, initramfs, console log); print its path
#
# The guest (-smp 2) sees:
#   /                 the host's / over virtio-9p, read-only
#   /tmp /run /var/tmp /dev/shm   tmpfs
#   the --out DIR     the host's directory over virtio-9p, writable
#   each --share DIR  (and this checkout, and the working directory, when under the tmpfs)
#                     the host's directory over virtio-9p, read-only
# and runs COMMAND as root, in the directory qemu-run.sh was started from (a clean environment
# but for the caller's MPTCPLAB_* variables; stdin is /dev/null), with the kernel's
# modules from the .deb: 9p and virtio are loaded by the initramfs, the netns labs' modules
# (veth, qdiscs, nftables, NFQUEUE...) before COMMAND, and any other the kernel asks for
# (kernel.modprobe) from the package's /lib/modules/<release>. What that kernel lacks, the
# lab's own preflight reports. COMMAND's stdout and stderr come out here as it runs; the
# kernel's console goes to the work directory (its last lines are printed when the guest
# fails before COMMAND ends).
#
# Exit status: COMMAND's; 124 on timeout; 125 when the guest did not run COMMAND to its end
# (boot or mount failure); 2 on bad arguments or missing packages. Needs (Debian):
# qemu-system-x86, busybox, cpio, kmod (installed with apt-get when missing, as root).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
debs=
timeout_s=3600
mem=2048
out=$repo/results
accel=tcg
cpu=
keep=0
shares=()
while [ $# -gt 0 ]; do
  case "$1" in
    --debs) debs=${2-}; shift ;;
    --timeout) timeout_s=${2-}; shift ;;
    --mem) mem=${2-}; shift ;;
    --out) out=${2-}; shift ;;
    --share) [ -d "${2-}" ] || { echo "qemu-run.sh: --share: no such directory: ${2-}" >&2; exit 2; }
             shares+=("$(cd "$2" && pwd -P)"); shift ;;
    --accel) accel=${2-}; shift ;;
    --cpu) cpu=${2-}; shift ;;
    --keep) keep=1 ;;
    --) shift; break ;;
    -h|--help) awk 'NR > 1 && /^set /{exit} NR > 1' "$0"; exit 0 ;;
    *) echo "qemu-run.sh: unknown argument $1 (the command goes after --)" >&2; exit 2 ;;
  esac
  shift
done
[ $# -gt 0 ] || { echo "qemu-run.sh: no command: qemu-run.sh --debs DIR -- COMMAND..." >&2; exit 2; }
[ -n "$debs" ] || { echo "qemu-run.sh: --debs DIR is required" >&2; exit 2; }
case "$accel" in tcg|kvm) ;; *) echo "qemu-run.sh: --accel: tcg or kvm, not $accel" >&2; exit 2 ;; esac
case "$timeout_s" in ''|*[!0-9]*) echo "qemu-run.sh: --timeout: not a number of seconds: $timeout_s" >&2; exit 2 ;; esac
case "$mem" in ''|*[!0-9]*) echo "qemu-run.sh: --mem: not a number of MB: $mem" >&2; exit 2 ;; esac
[ -n "$out" ] || { echo "qemu-run.sh: --out: empty" >&2; exit 2; }

# shellcheck source=images/kernel/debs.sh
. "$here/debs.sh"
kernel_image qemu-run.sh "$debs"

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v busybox >/dev/null || need+=(busybox)
command -v cpio >/dev/null || need+=(cpio)
command -v depmod >/dev/null || need+=(kmod)
if [ "${#need[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "qemu-run.sh: missing ${need[*]}; run as root to install them" >&2; exit 2; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi
# the guest writes --out as root over 9p (security_model=none: as this process)
[ "$(id -u)" = 0 ] || { echo "qemu-run.sh: run as root (the guest's writes to --out are this process's)" >&2; exit 2; }

mkdir -p "$out"
out=$(cd "$out" && pwd -P)
cwd=$(pwd -P)
# what the guest's fresh tmpfs would hide: the checkout and the working directory go along
for d in "$repo" "$cwd"; do
  case "$d/" in /tmp/*|/run/*|/var/tmp/*|/dev/shm/*) ;; *) continue ;; esac
  case " ${shares[*]-} " in *" $d "*) ;; *) shares+=("$d") ;; esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/mptcplab-qemu-run.XXXXXX")
qemu_pid=
cleanup() {
  # a timeout or ^C leaves the guest running: stop it (timeout(1) passes the signal on)
  if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then kill "$qemu_pid" 2>/dev/null || true; wait "$qemu_pid" 2>/dev/null || true; fi
  if [ "$keep" = 1 ]; then echo "qemu-run.sh: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ctl/ is the guest's control share: the unpacked package (its modules), the command, the
# second-stage script, and what comes back (stdout, stderr, status)
ctl=$work/ctl
mkdir -p "$ctl"
dpkg-deb -x "$image" "$ctl/pkg"
kernels=("$ctl"/pkg/boot/vmlinuz-*)
[ "${#kernels[@]}" = 1 ] || { echo "qemu-run.sh: $image: expected one boot/vmlinuz-*, found ${#kernels[@]}" >&2; exit 2; }
vmlinuz=${kernels[0]}
krel=${vmlinuz##*/vmlinuz-}
[ -d "$ctl/pkg/lib/modules/$krel" ] || { echo "qemu-run.sh: $image: no lib/modules/$krel" >&2; exit 2; }
# a .deb carries no modules.dep (its postinst makes it)
depmod -b "$ctl/pkg" "$krel" 2>/dev/null

# the initramfs: busybox, the modules that reach the shares (in dependency order), an init
root=$work/root
mkdir -p "$root"/{bin,proc,sys,dev,modules,newroot}
cp "$(command -v busybox)" "$root/bin/busybox"
for lib in $(ldd "$(command -v busybox)" | awk '/=>/ {print $3} /^\t\// {print $1}'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
: >"$root/modules.order"
modprobe -d "$ctl/pkg" -S "$krel" --show-depends -a virtio_pci 9pnet_virtio 9p |
  awk '$1 == "insmod" && !seen[$2]++ {print $2}' | while read -r ko; do
    name=${ko##*/}
    case "$name" in
      *.ko) cp "$ko" "$root/modules/$name" ;;
      *.ko.xz) xz -dc "$ko" >"$root/modules/${name%.xz}" ;;
      *.ko.zst) zstd -qdc "$ko" >"$root/modules/${name%.zst}" ;;
      *.ko.gz) gzip -dc "$ko" >"$root/modules/${name%.gz}" ;;
    esac
    echo "${name%.ko*}.ko" >>"$root/modules.order"
  done
cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
fail() { echo "qemu-run: $*"; poweroff -f; }
for m in $(cat /modules.order); do insmod "/modules/$m" || echo "qemu-run: insmod $m failed"; done
opts=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o "$opts,ro,cache=loose" hostroot /newroot || fail "mounting the host's root failed"
for d in /run /tmp /var/tmp; do mount -t tmpfs -o mode=1777 tmpfs "/newroot$d" || fail "tmpfs on $d failed"; done
ctl=/newroot/run/mptcplab-qemu-run
mkdir -p "$ctl"
mount -t 9p -o "$opts" ctl "$ctl" || fail "mounting the control share failed"
out=$(cat "$ctl/out")
# the read-only shares first: --out may lie inside one (results/ of a checkout under /tmp)
while read -r tag dir; do
  mkdir -p "/newroot$dir" 2>/dev/null
  mount -t 9p -o "$opts,ro,cache=loose" "$tag" "/newroot$dir" || fail "mounting $dir failed"
done <"$ctl/shares"
mkdir -p "/newroot$out" 2>/dev/null  # exists on the host; under /tmp the guest's tmpfs needs it
mount -t 9p -o "$opts" out "/newroot$out" || fail "mounting $out failed"
for d in /proc /sys /dev; do mount --move "$d" "/newroot$d"; done
exec switch_root /newroot /bin/bash /run/mptcplab-qemu-run/stage2
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.gz"

# the second stage runs on the host's userland, as PID 1 of the guest
cat >"$ctl/stage2" <<'EOF'
set -u
ctl=/run/mptcplab-qemu-run
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null  # the labs' probes read tracepoints
# modules on demand (tc's qdiscs, nft's expressions...) from the package, not the host's /lib/modules
echo "$ctl/modprobe" >/proc/sys/kernel/modprobe
missing=
for m in $(cat "$ctl/preload"); do
  "$ctl/modprobe" -q "$m" 2>/dev/null || missing="$missing $m"  # built in: modprobe says 0
done
[ -z "$missing" ] || echo "qemu-run: not in this kernel (neither built in nor a module):$missing" >/dev/console
ip link set lo up
hostname qemu-run
mapfile -d '' -t argv <"$ctl/argv"
mapfile -d '' -t passenv <"$ctl/env"
cd "$(cat "$ctl/cwd")" || { echo 125 >"$ctl/status"; busybox poweroff -f; }
echo "qemu-run: running ${argv[*]} on $(uname -r) ($(cut -d' ' -f1 /proc/uptime) s after boot)" >/dev/console
# HOME is the host's, read-only: caches go to the tmpfs (matplotlib's would warn)
env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb \
  XDG_CACHE_HOME=/tmp/cache MPLCONFIGDIR=/tmp/matplotlib "${passenv[@]}" \
  "${argv[@]}" </dev/null >"$ctl/stdout" 2>"$ctl/stderr"
echo $? >"$ctl/status"
sync
busybox poweroff -f
EOF
cat >"$ctl/modprobe" <<'EOF'
#!/bin/sh
exec /sbin/modprobe -d /run/mptcplab-qemu-run/pkg "$@"
EOF
chmod +x "$ctl/modprobe"
# what the netns labs use: veth pairs, tbf/htb/netem shaping, ifb, u32/bpf filters, mirred,
# nftables with its expressions and NFQUEUE (the delay line), iptables-nft's statistic match
echo veth ifb sch_tbf sch_htb sch_netem sch_ingress cls_u32 cls_bpf act_mirred \
  nf_tables nft_ct nft_nat nft_masq nft_reject_inet nft_numgen nft_queue nfnetlink_queue nft_compat \
  xt_statistic xt_NFQUEUE xt_mark tcp_bbr >"$ctl/preload"
printf '%s\0' "$@" >"$ctl/argv"
# the engine's own settings (MPTCPLAB_DELAYLINE...) go along; the rest of the environment stays here
env -0 | { grep -z '^MPTCPLAB_' || true; } >"$ctl/env"
printf '%s\n' "$cwd" >"$ctl/cwd"
printf '%s\n' "$out" >"$ctl/out"
share_args=()
: >"$ctl/shares"
for i in "${!shares[@]}"; do
  printf 'share%d %s\n' "$i" "${shares[$i]}" >>"$ctl/shares"
  share_args+=(-fsdev "local,id=share$i,path=${shares[$i]},readonly=on,security_model=none,multidevs=remap"
               -device "virtio-9p-pci,fsdev=share$i,mount_tag=share$i")
done
: >"$ctl/stdout"
: >"$ctl/stderr"

fs=security_model=none,multidevs=remap
# the host's binaries (Python's wheels: numpy...) use what the host CPU has: under QEMU's
# default model (qemu64, no SSE4) they die of SIGILL. AVX2 off: with it (QEMU 7.2's TCG)
# lab-mtu's figures segfaulted in pandas/numpy sorting in 3 of 4 runs; without it, none
if [ -z "$cpu" ]; then cpu=max,-avx2; [ "$accel" = kvm ] && cpu=host; fi
echo "qemu-run.sh: $krel under QEMU ($accel, -cpu $cpu, 2 CPUs, ${mem} MB), at most ${timeout_s} s: $*" >&2
t0=$(date +%s)
timeout "$timeout_s" qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -m "$mem" -smp 2 -display none -no-reboot \
  -monitor none -serial "file:$work/console.log" -nic none \
  -kernel "$vmlinuz" -initrd "$work/initramfs.gz" -append "console=ttyS0 panic=-1 loglevel=4" \
  -fsdev "local,id=hostroot,path=/,readonly=on,$fs" -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
  -fsdev "local,id=ctl,path=$ctl,$fs" -device virtio-9p-pci,fsdev=ctl,mount_tag=ctl \
  -fsdev "local,id=out,path=$out,$fs" -device virtio-9p-pci,fsdev=out,mount_tag=out \
  "${share_args[@]}" </dev/null >"$work/qemu.log" 2>&1 &
qemu_pid=$!
tail -n +1 -f --pid="$qemu_pid" "$ctl/stdout" &
tail -n +1 -f --pid="$qemu_pid" "$ctl/stderr" >&2 &
set +e
wait "$qemu_pid"
qemu_rc=$?
set -e
qemu_pid=
wait  # the two tails end with qemu, after their last read
seconds=$(( $(date +%s) - t0 ))

if [ "$qemu_rc" = 124 ]; then
  echo "qemu-run.sh: timed out after ${timeout_s} s; last console lines:" >&2
  tail -n 5 "$work/console.log" | tr -d '\r' | sed 's/^/  /' >&2
  exit 124
fi
status=$(cat "$ctl/status" 2>/dev/null || true)
case "$status" in
  ''|*[!0-9]*)
    echo "qemu-run.sh: the guest did not run the command to its end (qemu exit status $qemu_rc, ${seconds} s); last lines:" >&2
    cat "$work/qemu.log" <(tr -d '\r' <"$work/console.log") | grep -v '^$' | tail -n 8 | sed 's/^/  /' >&2
    exit 125 ;;
esac
grep -a '^qemu-run: ' "$work/console.log" | tr -d '\r' | grep -v '^qemu-run: running' >&2 || true
echo "qemu-run.sh: exit status $status after ${seconds} s" >&2
exit "$status"

#!/usr/bin/env bash
# Boot the kernel `make kernel-deb` built, under QEMU, and check in minutes what the VM path
# (`MPTCPLAB_KERNEL=prebuilt make test-vm`, over two hours under TCG) checks at its end:
# `make kernel-boot-check`.
#
#   images/kernel/boot-check.sh [--debs DIR] [--timeout SECONDS] [--accel tcg|kvm] [--keep]
#
#   --debs     the packages and manifest.json of `make kernel-deb` (default build/kernel-debs)
#   --timeout  the boot and the check, at most (default 900 s; TCG boots in 1 to 3 min here)
#   --accel    QEMU's accelerator (default tcg, as test-vm's qemu driver: this host's /dev/kvm,
#              where present, does not run guests)
#   --keep     keep the work directory (initramfs, serial log) and print its path
#
# The kernel (vmlinuz from the linux-image .deb, no modules: what the check needs is built
# in) boots with a small initramfs: busybox, a static MPTCP client/server (smoke.c) and an
# init script. With net.ipv4.tcp_mtu_probing at its default 0, the check passes when
#   - `uname -r` is the release in the packages' manifest;
#   - one MPTCP connection over loopback moves its bytes and MPTCP_INFO answers on it
#     (MPTCP negotiated, no fallback);
#   - the kernel log has patch 0002's "mptcplab: subflow ... mtup enabled=1" line for it:
#     patch 0002 is in, and patch 0001 turned probing on although the sysctl says 0.
# The verdict and the lines it rests on are written to DIR/boot-check.json beside the
# packages (the manifest of what was checked); the exit status is 0 when it passes, 1 when
# it does not, 2 on bad arguments or missing packages. Needs (Debian): qemu-system-x86,
# busybox, cpio, gcc with libc6-dev (installed with apt-get when missing, as root).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
debs=$repo/build/kernel-debs
timeout_s=900
keep=0
accel=tcg
while [ $# -gt 0 ]; do
  case "$1" in
    --debs) debs=$2; shift ;;
    --timeout) timeout_s=$2; shift ;;
    --keep) keep=1 ;;
    --accel) accel=$2; shift ;;
    -h|--help) awk 'NR > 1 && /^set /{exit} NR > 1' "$0"; exit 0 ;;
    *) echo "boot-check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
case "$accel" in tcg|kvm) ;; *) echo "boot-check.sh: --accel: tcg or kvm, not $accel" >&2; exit 2 ;; esac
case "$timeout_s" in ''|*[!0-9]*) echo "boot-check.sh: --timeout: not a number of seconds: $timeout_s" >&2; exit 2 ;; esac

# shellcheck source=images/kernel/debs.sh
. "$here/debs.sh"
kernel_image boot-check.sh "$debs"
expected=$release

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v busybox >/dev/null || need+=(busybox)
command -v cpio >/dev/null || need+=(cpio)
command -v gcc >/dev/null || need+=(gcc libc6-dev)
if [ "${#need[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "boot-check.sh: missing ${need[*]}; run as root to install them" >&2; exit 2; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/mptcplab-boot-check.XXXXXX")
cleanup() { if [ "$keep" = 1 ]; then echo "boot-check.sh: kept $work" >&2; else rm -rf "$work"; fi; }
trap cleanup EXIT

dpkg-deb -x "$image" "$work/pkg"
kernels=("$work"/pkg/boot/vmlinuz-*)
[ "${#kernels[@]}" = 1 ] || { echo "boot-check.sh: $image: expected one boot/vmlinuz-*, found ${#kernels[@]}" >&2; exit 2; }
vmlinuz=${kernels[0]}
release=${vmlinuz##*/vmlinuz-}

# the initramfs: busybox with the libraries it links, the smoke test, an init script
root=$work/root
mkdir -p "$root"/{bin,proc,sys,dev,tmp}
cp "$(command -v busybox)" "$root/bin/busybox"
for lib in $(ldd "$(command -v busybox)" | awk '/=>/ {print $3} /^\t\// {print $1}'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
gcc -static -O2 -Wall -Wextra -o "$root/bin/mptcp-smoke" "$here/smoke.c"
cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "bootcheck: uname $(uname -r)"
ip link set lo up
echo "bootcheck: tcp_mtu_probing $(cat /proc/sys/net/ipv4/tcp_mtu_probing)"
echo "bootcheck: mptcp.enabled $(cat /proc/sys/net/mptcp/enabled 2>&1)"
/bin/mptcp-smoke
dmesg | grep 'mptcplab: subflow' | sed 's/^/bootcheck: dmesg /'
echo "bootcheck: done"
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.gz"

echo "boot-check.sh: booting $release under QEMU ($accel), at most ${timeout_s} s" >&2
t0=$(date +%s)
set +e
timeout "$timeout_s" qemu-system-x86_64 -accel "$accel" -m 512 -smp 1 -nographic -no-reboot \
  -kernel "$vmlinuz" -initrd "$work/initramfs.gz" -append "console=ttyS0 panic=-1 loglevel=4" \
  </dev/null >"$work/serial.log" 2>&1
qemu_rc=$?
set -e
seconds=$(( $(date +%s) - t0 ))
tr -d '\r' <"$work/serial.log" >"$work/serial.txt"

python3 - "$work/serial.txt" "$release" "$expected" "$image" "$qemu_rc" "$seconds" "$accel" "$debs/boot-check.json" <<'EOF'
import json, re, sys
from datetime import datetime, timezone
log, release, expected, image, qemu_rc, seconds, accel, out = sys.argv[1:]
lines = [l for l in open(log, errors="replace").read().splitlines()]
ours = [l[l.index("bootcheck: "):] for l in lines if "bootcheck: " in l]
smoke = [l[l.index("mptcp-smoke: "):] for l in lines if "mptcp-smoke: " in l]
def value(key):
    for l in ours:
        if l.startswith(f"bootcheck: {key} "):
            return l.split(" ", 2)[2].strip()
    return None
uname = value("uname")
subflows = [l for l in ours if "mptcplab: subflow" in l]
problems = []
if uname is None:
    problems.append(f"the init script never ran (qemu exit status {qemu_rc}); last serial lines: "
                    + " | ".join(lines[-5:]))
else:
    if uname != (expected or release):
        problems.append(f"uname -r is {uname}, the packages say {expected or release}")
    if value("tcp_mtu_probing") != "0":
        problems.append(f"net.ipv4.tcp_mtu_probing is {value('tcp_mtu_probing')}, the check needs 0")
    if not smoke or not smoke[-1].startswith("mptcp-smoke: ok"):
        problems.append("MPTCP connection: " + (smoke[-1] if smoke else "no mptcp-smoke output"))
    if not subflows:
        problems.append("no 'mptcplab: subflow' line in the kernel log: patch 0002 is not in this kernel")
    elif not all(re.search(r"mtup enabled=1\b", l) for l in subflows):
        problems.append("a subflow without 'mtup enabled=1' although patch 0001 enables probing: " + subflows[0])
    if "bootcheck: done" not in ours:
        problems.append("the init script did not finish")
verdict = {"passed": not problems, "problems": problems, "release": uname, "expected_release": expected or release,
           "package": image.rsplit("/", 1)[-1], "accel": accel, "seconds": int(seconds), "qemu_rc": int(qemu_rc),
           "mptcp_smoke": smoke[-1] if smoke else None, "subflow_log_lines": subflows,
           "checked_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
json.dump(verdict, open(out, "w"), indent=2)
print(f"boot-check: {'PASSED' if not problems else 'FAILED'}: {uname or '?'} in {seconds} s ({accel}); {out}")
for p in problems:
    print(f"boot-check: {p}", file=sys.stderr)
sys.exit(0 if not problems else 1)
EOF

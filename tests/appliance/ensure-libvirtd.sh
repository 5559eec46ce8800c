#!/usr/bin/env bash
# Make sure libvirtd answers (vagrant-libvirt connects to it to validate its provider block):
# start it in the background when it does not run, as on the CI machine where no service
# manager starts it. No VM is ever defined; without KVM libvirt still answers.
set -euo pipefail
if virsh -c qemu:///system uri >/dev/null 2>&1; then
  exit 0
fi
command -v libvirtd >/dev/null || { echo "ensure-libvirtd.sh: apt-get install libvirt-daemon-system" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "ensure-libvirtd.sh: start libvirtd as root" >&2; exit 3; }
pgrep -x virtlogd >/dev/null || setsid virtlogd -d
pgrep -x libvirtd >/dev/null || setsid libvirtd -d
for _ in $(seq 1 30); do
  virsh -c qemu:///system uri >/dev/null 2>&1 && exit 0
  sleep 1
done
echo "ensure-libvirtd.sh: libvirtd did not answer within 30 s" >&2
exit 1

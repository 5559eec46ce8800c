#!/usr/bin/env bash
# Build a Vagrant box for the libvirt provider with no box registry: Debian 12 bootstrapped
# from Debian's package mirror, Debian's own kernel (linux-image-amd64) booted by GRUB.
#
#   vagrant/build-box.sh [--force] [--add]     prints the path of the .box file
#
#   --force   rebuild even when the cached box matches this script
#   --add     also `vagrant box add` it as $MPTCPLAB_LOCAL_BOX (when not added yet)
#
# Environment:
#   MPTCPLAB_CACHE            cache directory (default /var/cache/mptcplab); the box is
#                             kept as box/debian12-<hash>.box, hash = this script's sha256
#   MPTCPLAB_LOCAL_BOX        the box name to add (default mptcplab/debian12-local)
#   MPTCPLAB_DEBIAN_MIRROR    package mirror (default http://deb.debian.org/debian)
#   MPTCPLAB_SECURITY_MIRROR  security mirror (default http://deb.debian.org/debian-security)
#   MPTCPLAB_KEEP_BUILD       1: keep the build directory (root file system, logs) on failure
#
# The box is what a Vagrant base box must be (vagrant user, password vagrant, passwordless
# sudo, Vagrant's published insecure public key, sshd) plus Python, python3-apt and
# Debian's Ansible. GRUB is installed so that the kernel role can install another kernel and boot it.
# SSH host keys and the machine id are created at each machine's first boot, not baked in.
# Needs root, debootstrap, qemu-img (qemu-utils), sfdisk (fdisk), losetup and mkfs.ext4.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${MPTCPLAB_CACHE:-/var/cache/mptcplab}
box_name=${MPTCPLAB_LOCAL_BOX:-mptcplab/debian12-local}
mirror=${MPTCPLAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${MPTCPLAB_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
suite=bookworm
disk_gib=64
force=0
add=0

while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1 ;;
    --add) add=1 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "build-box.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

hash=$(sha256sum "$0" | cut -c1-12)
box="$cache/box/debian12-$hash.box"

add_box() {
  # the box's file name carries its hash: a box added from another file is replaced
  local added
  added=$(cat "$cache/box/added-$(echo "$box_name" | tr / _)" 2>/dev/null || true)
  if [ "$added" != "$box" ] || ! vagrant box list --machine-readable 2>/dev/null | grep -q ",box-name,$box_name\$"; then
    vagrant box add --force --provider libvirt --name "$box_name" "$box" >&2
    echo "$box" >"$cache/box/added-$(echo "$box_name" | tr / _)"
  fi
}

if [ "$force" = 0 ] && [ -s "$box" ]; then
  [ "$add" = 0 ] || add_box
  echo "$box"
  exit 0
fi

[ "$(id -u)" = 0 ] || { echo "build-box.sh: needs root (debootstrap, loop devices)" >&2; exit 1; }
for tool in debootstrap qemu-img sfdisk losetup mkfs.ext4 blkid; do
  command -v "$tool" >/dev/null || {
    echo "build-box.sh: $tool is missing (apt-get install debootstrap qemu-utils fdisk mount e2fsprogs)" >&2
    exit 1
  }
done
insecure_key=""
for k in /usr/share/rubygems-integration/all/gems/vagrant-*/keys/vagrant.pub \
         /opt/vagrant/embedded/gems/gems/vagrant-*/keys/vagrant.pub; do
  [ -s "$k" ] && { insecure_key=$k; break; }
done
[ -n "$insecure_key" ] || { echo "build-box.sh: Vagrant's keys/vagrant.pub not found (is vagrant installed?)" >&2; exit 1; }

mkdir -p "$cache/box"
work=$(mktemp -d "$cache/box/build.XXXXXX")
mnt="$work/root"
loop=""
part=""
cleanup() {
  for m in dev/pts dev proc sys run; do
    mountpoint -q "$mnt/$m" 2>/dev/null && umount -l "$mnt/$m" || true
  done
  mountpoint -q "$mnt" 2>/dev/null && umount "$mnt" || true
  [ -z "$part" ] || losetup -d "$part" 2>/dev/null || true
  [ -z "$loop" ] || losetup -d "$loop" 2>/dev/null || true
  [ -n "${MPTCPLAB_KEEP_BUILD:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "build-box.sh: building $box (debootstrap of Debian 12 with its kernel: a few minutes)" >&2
raw="$work/disk.raw"
truncate -s "${disk_gib}G" "$raw"
printf 'label: dos\n,,L,*\n' | sfdisk -q "$raw"
# Loop partition scanning is not available everywhere (this kernel: no partition nodes):
# the whole disk and its one partition get a loop device each
loop=$(losetup -f --show "$raw")
part=$(losetup -f --show --offset $((2048 * 512)) "$raw")
mkfs.ext4 -q -L mptcplab-root "$part"
uuid=$(blkid -s UUID -o value "$part")
mkdir -p "$mnt"
mount "$part" "$mnt"

packages=linux-image-amd64,grub-pc,systemd-sysv,openssh-server,sudo,python3,python3-apt,
packages+=ca-certificates,rsync,iproute2,iputils-ping,curl,gnupg,less,procps,dbus
DEBIAN_FRONTEND=noninteractive debootstrap --variant=minbase --include="$packages" \
  "$suite" "$mnt" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -20 "$work/debootstrap.log" >&2
  echo "build-box.sh: debootstrap failed" >&2
  exit 1
}

cat >"$mnt/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
EOF
echo "mptcplab" >"$mnt/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tmptcplab\n' >"$mnt/etc/hosts"
echo "UUID=$uuid / ext4 errors=remount-ro 0 1" >"$mnt/etc/fstab"
# a fresh machine id per machine (systemd creates it at first boot)
: >"$mnt/etc/machine-id"
rm -f "$mnt/var/lib/dbus/machine-id"

# a kernel installed in the machine (the kernel role) gets an initramfs with only the
# modules this machine needs: minutes less under software emulation than MODULES=most
echo "MODULES=dep" >"$mnt/etc/initramfs-tools/conf.d/mptcplab-modules"

# DHCP on the first NIC (libvirt's management network)
mkdir -p "$mnt/etc/systemd/network"
cat >"$mnt/etc/systemd/network/10-dhcp.network" <<'EOF'
[Match]
Name=eth* en*

[Network]
DHCP=yes
EOF

# per-machine SSH host keys, made before sshd's first start
rm -f "$mnt"/etc/ssh/ssh_host_*
cat >"$mnt/etc/systemd/system/mptcplab-ssh-keys.service" <<'EOF'
[Unit]
Description=Create this machine's SSH host keys
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
WantedBy=multi-user.target
EOF
echo "UseDNS no" >"$mnt/etc/ssh/sshd_config.d/vagrant.conf"

# the kernel on the serial console too (virsh console, libvirt's log)
cat >"$mnt/etc/default/grub" <<'EOF'
GRUB_DEFAULT=0
GRUB_TIMEOUT=1
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT=""
GRUB_CMDLINE_LINUX="console=tty0 console=ttyS0,115200n8 net.ifnames=0"
GRUB_TERMINAL="console serial"
GRUB_SERIAL_COMMAND="serial --speed=115200"
EOF

for m in dev dev/pts proc sys run; do
  case $m in
    proc) mount -t proc proc "$mnt/proc" ;;
    sys) mount -t sysfs sys "$mnt/sys" ;;
    run) mount -t tmpfs run "$mnt/run" ;;
    *) mount --bind "/$m" "$mnt/$m" ;;
  esac
done
in_root() { chroot "$mnt" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }
# Ansible (with the ansible.posix and community.general collections the roles use) is in
# the box: unpacking its 40,000 files takes 10 minutes under software emulation, seconds
# here. vagrant/install-ansible.sh finds it and stops.
in_root apt-get update -qq >"$work/apt.log" 2>&1 &&
  in_root apt-get install -y -qq --no-install-recommends ansible >>"$work/apt.log" 2>&1 ||
  { tail -20 "$work/apt.log" >&2; echo "build-box.sh: installing ansible failed" >&2; exit 1; }
in_root systemctl enable systemd-networkd mptcplab-ssh-keys.service >/dev/null 2>&1
in_root useradd --create-home --shell /bin/bash vagrant
echo "vagrant:vagrant" | in_root chpasswd
echo "vagrant ALL=(ALL) NOPASSWD: ALL" >"$mnt/etc/sudoers.d/vagrant"
chmod 0440 "$mnt/etc/sudoers.d/vagrant"
install -d -m 0700 -o 1000 -g 1000 "$mnt/home/vagrant/.ssh"
install -m 0600 -o 1000 -g 1000 "$insecure_key" "$mnt/home/vagrant/.ssh/authorized_keys"
in_root grub-install --target=i386-pc --modules="part_msdos ext2" "$loop" >"$work/grub.log" 2>&1 || { cat "$work/grub.log" >&2; exit 1; }
# update-grub skips root file systems on file-backed loop devices (10_linux): the first
# boot's configuration is written here, and the machine regenerates the standard one at
# its first boot (and whenever a kernel package is installed)
kver=$(basename "$(ls "$mnt"/boot/vmlinuz-* | sort -V | tail -1)" | sed 's/^vmlinuz-//')
cat >"$mnt/boot/grub/grub.cfg" <<EOF
set default=0
set timeout=1
serial --speed=115200
terminal_input console serial
terminal_output console serial
insmod part_msdos
insmod ext2
search --no-floppy --fs-uuid --set=root $uuid
menuentry 'Debian GNU/Linux, with Linux $kver' {
  linux /boot/vmlinuz-$kver root=UUID=$uuid ro console=tty0 console=ttyS0,115200n8 net.ifnames=0
  initrd /boot/initrd.img-$kver
}
EOF
cat >"$mnt/etc/systemd/system/mptcplab-grub-config.service" <<'EOF'
[Unit]
Description=Generate this machine's GRUB configuration
ConditionPathExists=!/var/lib/mptcplab/grub-configured

[Service]
Type=oneshot
ExecStart=/usr/sbin/update-grub
ExecStart=/usr/bin/install -D /dev/null /var/lib/mptcplab/grub-configured

[Install]
WantedBy=multi-user.target
EOF
in_root systemctl enable mptcplab-grub-config.service >/dev/null 2>&1
in_root apt-get clean
rm -rf "$mnt"/var/lib/apt/lists/*_Packages "$mnt"/tmp/*
for m in dev/pts dev proc sys run; do umount -l "$mnt/$m"; done
umount "$mnt"
losetup -d "$part" "$loop"
part=""
loop=""

qemu-img convert -q -O qcow2 "$raw" "$work/box.img"
rm -f "$raw"
cat >"$work/metadata.json" <<EOF
{"provider": "libvirt", "format": "qcow2", "virtual_size": $disk_gib}
EOF
cat >"$work/Vagrantfile" <<'EOF'
Vagrant.configure("2") do |config|
  config.vm.provider :libvirt do |lv|
    lv.disk_bus = "virtio"
  end
end
EOF
tar -C "$work" -cf "$box.tmp" metadata.json Vagrantfile box.img
mv "$box.tmp" "$box"
# older builds of this box are superseded
find "$cache/box" -maxdepth 1 -name 'debian12-*.box' ! -path "$box" -delete
echo "build-box.sh: built $box ($(du -h "$box" | cut -f1))" >&2
[ "$add" = 0 ] || add_box
echo "$box"

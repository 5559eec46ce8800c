#!/usr/bin/env bash
# Host packages the appliance checks (make test-appliance) use, from Debian's mirror:
# Docker (docker.io; started by ensure-dockerd.sh), Compose v1, Vagrant with the libvirt
# plugin (vagrant validate), Ansible and ansible-lint, debootstrap (offline image base), the
# pinned kernel source and what configuring and compiling part of it needs, headless Chromium
# and its chromedriver (the browser test, test_browser.py: no browser download). Quick when all
# are there. Go (for containerlab from the module proxy) comes with the machine.
set -euo pipefail
pkgs=(
  docker.io docker-compose debootstrap
  vagrant vagrant-libvirt kmod libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients
  ansible ansible-lint
  linux-source-6.1 patch git xz-utils make gcc libc6-dev flex bison bc libelf-dev libssl-dev
  curl ca-certificates
  chromium chromium-driver
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "host-deps.sh: run as root to install ${missing[*]}" >&2; exit 3; }
  echo "host-deps.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

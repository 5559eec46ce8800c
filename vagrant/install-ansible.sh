#!/bin/sh
# Vagrant provisioner: Ansible from the distribution's own packages (Ubuntu 24.04: ansible
# 9 / ansible-core 2.16; Debian 12: ansible 7 / ansible-core 2.14), with the collections the
# roles use (ansible.posix, community.general). Idempotent.
set -eu
if command -v ansible-playbook >/dev/null 2>&1 && ansible-doc -t module ansible.posix.sysctl >/dev/null 2>&1; then
  echo "mptcplab: $(ansible-playbook --version | head -1) already installed"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends ansible python3-apt >/dev/null
echo "mptcplab: installed $(ansible-playbook --version | head -1)"

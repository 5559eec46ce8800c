#!/usr/bin/env bash
# First-use set-up on a fresh Debian 12 / Ubuntu 24.04 machine, as root:
# system packages, the native delay line, and the Python virtual environment.
# clang, llvm, libbpf-dev and bpftool build the BPF congestion control mptcp_lia
# (native/lia, docs/cc-lia.md).
# Idempotent and quick when everything is already there (a stamp file records
# what was installed for which inputs).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  iproute2 iputils-ping iptables nftables ethtool procps
  iperf3 mptcpize tcpdump tshark
  busybox wrk
  python3 python3-venv python3-pip
  build-essential pkg-config libnetfilter-queue-dev libmnl-dev libpcap-dev
  clang llvm libbpf-dev bpftool
  git ca-certificates
)

# --test: what the test suite needs besides the engine: ansible-playbook and rsync (its
# synchronize module) for the campaign
# tests' ansible targets (tests/integration/test_campaign.py; Debian's package, as the VM's
# provisioner installs it)
if [ "${1:-}" = "--test" ]; then
  APT_PACKAGES+=(ansible rsync)
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "bootstrap: run as root (namespaces, tc and nftables need it)" >&2
  exit 3
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; the answer does not matter for root
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

make -s -C native

# The venv uses the distribution's python3 (3.11 on Debian 12, 3.12 on Ubuntu 24.04).
# Every Python package comes from requirements.lock (pinned, with hashes: scripts/lock.sh
# regenerates it from pyproject.toml), the build backend from requirements-build.lock; pip
# installs those exact bytes or fails. The engine itself is installed editable, without
# dependencies, so nothing is resolved at install time.
PY=/usr/bin/python3
stamp=.venv/.mptcplab-stamp
# the venv belongs to one Python: /vagrant is shared between a host and the VM
pyver="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
hash="$(cat pyproject.toml requirements.lock requirements-build.lock | sha256sum | cut -c1-16)-py$pyver"
if [ -x .venv/bin/python ] && [ "$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" != "$pyver" ]; then
  rm -rf .venv
fi
# the lock holds the Python test tools too: one environment for --test and without
[ -x .venv/bin/python ] && [ "$(cat "$stamp" 2>/dev/null || true)" = "$hash" ] && exit 0
[ -x .venv/bin/python ] || "$PY" -m venv .venv
log=$(mktemp)
if ! { .venv/bin/pip install -q --require-hashes --no-deps -r requirements-build.lock \
       && .venv/bin/pip install -q --require-hashes --no-deps -r requirements.lock \
       && .venv/bin/pip install -q --no-deps --no-build-isolation -e . ; } >"$log" 2>&1; then
  cat "$log" >&2
  rm -f "$log"
  echo "bootstrap: installing the Python environment failed" >&2
  exit 1
fi
rm -f "$log"
echo "$hash" > "$stamp"

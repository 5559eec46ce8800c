# A campaign host of the pool test (test_campaign_pool_docker.py): a machine that runs work
# items of ansible/campaign-item.yml over the community.docker.docker connection. FROM the
# lab host image (iperf3, mptcpize, tcpdump, tshark, iproute2, nftables: built offline from
# the bootstrapped Debian 12 base), plus what the item playbook and the engine need there:
# python3 for Ansible and the engine, rsync for ansible.posix.synchronize, the shared
# libraries of the native helpers (native/build comes with the synced checkout), and the
# engine's runtime dependencies at the lock's versions in /opt/mptcplab/venv (the item runs
# `python -m mptcplab.cli` in the synced checkout, which imports the checkout's engine).
# scripts/bootstrap.sh is not run there (mptcplab_bootstrap=false): it would install a
# compiler, clang and the test tools into every container of every test run.
ARG BASE_IMAGE=mptcplab/host:latest
FROM ${BASE_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv rsync kmod iptables \
      libnetfilter-queue1 libmnl0 libpcap0.8 libcap2 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# the local certificate authorities of the machine running the test (PyPI through a
# TLS-intercepting proxy); pip uses the system store
COPY ca/ /usr/local/share/ca-certificates/
COPY constraints.txt /opt/mptcplab/constraints.txt
RUN update-ca-certificates >/dev/null \
 && python3 -m venv /opt/mptcplab/venv \
 && /opt/mptcplab/venv/bin/pip install -q --no-cache-dir --cert /etc/ssl/certs/ca-certificates.crt \
      -c /opt/mptcplab/constraints.txt pydantic PyYAML pandas matplotlib
CMD ["sleep", "infinity"]

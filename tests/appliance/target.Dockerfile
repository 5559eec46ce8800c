# The throwaway target of the Ansible converge test: a stand-in for the appliance VM,
# built FROM the locally bootstrapped Debian 12 base. systemd runs as init (the roles
# manage units), python3 for Ansible, a `vagrant` user as in the box. Package scripts do
# not start services (the base's policy-rc.d), as in any Debian container.
ARG BASE_IMAGE=mptcplab/debian-base:bookworm
FROM ${BASE_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends systemd systemd-sysv dbus python3 python3-apt \
      sudo ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && rm -f /etc/apt/apt.conf.d/docker-clean \
 && useradd -m -s /bin/bash -u 1000 vagrant \
 && echo 'vagrant ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/vagrant \
 && systemctl mask systemd-logind.service getty.target console-getty.service
# the local certificate authorities of the machine running the test (PyPI through a
# TLS-intercepting proxy); pip uses the system store
COPY ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null \
 && printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' > /etc/pip.conf
STOPSIGNAL SIGRTMIN+3
CMD ["/sbin/init"]

#!/bin/bash
# mptcplab router entrypoint: IP forwarding on, FRR (zebra + staticd under watchfrr)
# started, then wait until the container is stopped.
set -u

# forwarding is a per network namespace setting; containerlab runs nodes privileged, so
# /proc/sys is writable. Without privileges, pass --sysctl net.ipv4.ip_forward=1.
for s in net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1; do
  sysctl -q -w "$s" 2>/dev/null || echo "mptcplab-router: cannot set $s (not privileged?)" >&2
done

mkdir -p /var/log/frr /var/run/frr
chown frr:frr /var/log/frr /var/run/frr
chown -R frr:frr /etc/frr

stop() {
  /usr/lib/frr/frrinit.sh stop >/dev/null 2>&1
  exit 0
}
trap stop TERM INT

/usr/lib/frr/frrinit.sh start || { echo "mptcplab-router: FRR did not start" >&2; cat /var/log/frr/frr.log >&2 2>/dev/null; }

# a lab's topology may hand the node a command; otherwise wait for the stop signal
if [ $# -gt 0 ]; then
  exec "$@"
fi
sleep infinity &
wait $!

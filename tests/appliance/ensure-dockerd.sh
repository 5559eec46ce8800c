#!/usr/bin/env bash
# Make sure a Docker daemon answers: start dockerd (Debian's docker.io) in the background
# when none runs, as on the CI machine where no service manager starts it. A daemon that
# already runs is left alone; the one started here keeps running after the tests.
set -euo pipefail
log=${MPTCPLAB_DOCKERD_LOG:-/var/log/mptcplab-dockerd.log}
if docker version >/dev/null 2>&1; then
  exit 0
fi
if pgrep -x dockerd >/dev/null; then
  echo "ensure-dockerd.sh: dockerd runs but does not answer; waiting" >&2
else
  command -v dockerd >/dev/null || { echo "ensure-dockerd.sh: no dockerd (apt-get install docker.io)" >&2; exit 1; }
  [ "$(id -u)" = 0 ] || { echo "ensure-dockerd.sh: start dockerd as root" >&2; exit 3; }
  # a stale pid file from a daemon that died keeps a new one from starting
  if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
    rm -f /var/run/docker.pid
  fi
  echo "ensure-dockerd.sh: starting dockerd (log: $log)"
  setsid nohup dockerd > "$log" 2>&1 < /dev/null &
fi
for _ in $(seq 1 60); do
  docker version >/dev/null 2>&1 && exit 0
  sleep 1
done
echo "ensure-dockerd.sh: Docker did not answer within 60 s; last lines of $log:" >&2
tail -20 "$log" >&2 || true
exit 1

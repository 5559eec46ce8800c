#!/usr/bin/env bash
# Run a lab inside this checkout's Vagrant VM and bring its results back to the host.
#
#   vagrant/run-lab.sh LAB [mptcplab run arguments...]      (what `make lab-LAB` calls)
#
# The repository is pushed first (`vagrant rsync`, a no-op for shared folders), the lab
# runs in the VM with `sudo make lab-LAB`, and every run directory the host lacks is copied
# from the VM's results/LAB/ with rsync over Vagrant's SSH configuration. Existing files
# on the host are never overwritten (--ignore-existing); `latest` then points at the VM's
# latest run. With a shared folder (VirtualBox, NFS, 9p) the runs are already there and
# nothing is copied. Exits with the lab run's status.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: vagrant/run-lab.sh LAB [ARGS...]" >&2; exit 2; }
lab=$1
shift
case "$lab" in
  *[!A-Za-z0-9_-]*|"") echo "run-lab.sh: bad lab name '$lab'" >&2; exit 2 ;;
esac
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1

# a failed push would run stale code in the VM: say so (no rsync folder is not a failure)
if ! out=$(vagrant rsync 2>&1); then
  echo "$out" >&2
  echo "run-lab.sh: vagrant rsync failed; the VM may run an older copy of the repository" >&2
fi

# the run arguments reach the VM's shell quoted one by one
quoted=""
for a in "$@"; do quoted+=" $(printf '%q' "$a")"; done
echo "lab $lab: running inside the Vagrant VM"
vagrant ssh -c "cd /vagrant && sudo MPTCPLAB_IN_VM=1 make lab-$lab RUN_ARGS=$(printf '%q' "${quoted# }")"
status=$?

cfg=$(mktemp "${TMPDIR:-/tmp}/mptcplab-ssh.XXXXXX")
trap 'rm -f "$cfg"' EXIT
if ! vagrant ssh-config >"$cfg" 2>/dev/null; then
  echo "run-lab.sh: cannot read the VM's SSH configuration; results stay in the VM's /vagrant/results/$lab" >&2
  exit $(( status ? status : 1 ))
fi
host=$(awk '/^Host /{print $2; exit}' "$cfg")
mkdir -p "results/$lab"
if ! rsync -a --ignore-existing --exclude=latest -e "ssh -F $cfg" \
      "$host:/vagrant/results/$lab/" "results/$lab/"; then
  echo "run-lab.sh: copying results/$lab from the VM failed (they are still in the VM)" >&2
  exit $(( status ? status : 1 ))
fi
latest=$(ssh -F "$cfg" "$host" "readlink /vagrant/results/$lab/latest" 2>/dev/null || true)
if [ -n "$latest" ] && [ -d "results/$lab/$latest" ]; then
  # switched atomically, as the engine does
  ln -sfn "$latest" "results/$lab/.latest.tmp" && mv -T "results/$lab/.latest.tmp" "results/$lab/latest"
  echo "lab $lab: results on this host in results/$lab/$latest"
fi
exit $status

#!/usr/bin/env bash
# make test-vm: the user's path as a whole, in a software-emulated VM (QEMU without KVM).
#
#   vagrant/test-vm.sh            (as root, from the repository; `make test-vm`)
#
# Stages, each timed (the table is printed at the end, also on failure):
#   host-deps     Vagrant, vagrant-libvirt, libvirt, QEMU, debootstrap from Debian's mirror;
#                 libvirtd started when no service manager runs it
#   box           vagrant/build-box.sh --add: the Debian 12 libvirt box, built offline
#                 once and cached in /var/cache/mptcplab/box
#   containerlab  images/containerlab-build.sh: containerlab from the Go module proxy
#                 (cached), handed to the VM as containerlab_local_path
#   kernel-deb    MPTCPLAB_KERNEL=prebuilt only: `make kernel-deb`, the patched kernel's
#                 packages (cached per patches and fragments), handed to the VM in
#                 build/kernel-debs/ for the kernel role's prebuilt mode, after
#                 images/kernel/boot-check.sh booted it under QEMU (uname, MPTCP, the patch)
#   ca-certs      this host's extra CA certificates, for the VM to trust (PyPI behind a
#                 TLS-intercepting proxy)
#   up            `vagrant up` (libvirt, qemu driver, rsync'd /vagrant): the project's
#                 Ansible installs Debian's backports kernel, Vagrant reboots into it, the
#                 site playbook provisions Docker, containerlab, the images built offline
#                 in the VM (FRR routers); Jupyter only with MPTCPLAB_TEST_VM_JUPYTER=1
#   kernel        the VM runs the kernel the role installed, not the box's
#   reprovision   a second `vagrant provision`: no reboot, every Ansible play changed=0
#   lab           the README's `make lab-mtu`, quick mode, from the host: runs in the VM on
#                 the containerlab backend; results come back to results/mtu/ here
#   results       summary.json complete, MPTCP verified, a functional check; the manifest
#                 names the VM's kernel and the containerlab backend
#   patch-log     MPTCPLAB_KERNEL=prebuilt only: the VM runs <version>-mptcplab and its
#                 kernel log has the patch's "mptcplab: subflow" lines from the lab's run
#   stock-boot    MPTCPLAB_TEST_VM_ALSO_STOCK=1 only (after patch-log, or after results with
#                 another kernel): one boot (grub-reboot) into the box's Debian 6.1 kernel,
#                 still installed, GRUB's saved default unchanged
#   stock-lab     the same `make lab-mtu` on that kernel; stock-results checks it as results
#   side-by-side  `mptcplab compare` of the two runs (.cache/test-vm/compare/compare.md):
#                 both columns there, complete; the black-hole rows printed
#   destroy       `vagrant destroy -f`: no domain, disk volume or network left
#
# Environment: MPTCPLAB_TEST_VM_KEEP=1 keeps the VM (for debugging, no destroy stage);
# MPTCPLAB_TEST_VM_KEEP=failure keeps it only when a stage fails (a passing run still
# destroys it and checks nothing is left); the Vagrantfile's
# MPTCPLAB_* settings are fixed here except MPTCPLAB_LIBVIRT_DRIVER (default qemu) and
# MPTCPLAB_KERNEL (default backports); MPTCPLAB_TEST_VM_JUPYTER=1 provisions the Jupyter
# image and service too (default 0, headless); MPTCPLAB_TEST_VM_RUN_ARGS replaces the lab
# stage's run arguments (default --quick; the results stage needs the three mptcp-*
# scenarios, so a shorter check is e.g. "--quick --scenario 'mptcp-*' --scenario
# 'blackhole-probing*'"); MPTCPLAB_TEST_VM_REPROVISION=0 leaves out the reprovision stage
# (about 18 min; the stage table says "skipped"); MPTCPLAB_TEST_VM_ALSO_STOCK=1 adds the
# stock-* stages: the same lab on the box's own 6.1 in the same VM, compared side by side
# with the first run (the patched kernel's question with MPTCPLAB_KERNEL=prebuilt).
# Logs: .cache/test-vm/<stage>.log.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
[ "$(id -u)" = 0 ] || { echo "test-vm.sh: run as root (libvirt, loop devices, debootstrap)" >&2; exit 3; }

export MPTCPLAB_BOX=${MPTCPLAB_TEST_VM_BOX:-mptcplab/debian12-local}
export MPTCPLAB_LIBVIRT_DRIVER=${MPTCPLAB_LIBVIRT_DRIVER:-qemu}
export MPTCPLAB_KERNEL=${MPTCPLAB_KERNEL:-backports}
# headless by default: the Jupyter image takes about 40 min to build under qemu, and the
# appliance tests (make test-appliance) already build it and check its unit
export MPTCPLAB_JUPYTER=${MPTCPLAB_TEST_VM_JUPYTER:-0}
export MPTCPLAB_SYNC_TYPE=rsync
export MPTCPLAB_IMAGES_OFFLINE=1
export MPTCPLAB_CPUS=2 MPTCPLAB_MEMORY=4096
run_args=${MPTCPLAB_TEST_VM_RUN_ARGS:---quick}
# containerlab built here, and this host's extra CA certificates (a TLS-intercepting proxy
# in front of PyPI is trusted by the VM too); both reach the VM in the rsync'd /vagrant
export MPTCPLAB_ANSIBLE_ARGS="-e containerlab_local_path=/vagrant/.cache/containerlab -e base_extra_ca_certs_dir=/vagrant/.cache/ca-certificates"
export VAGRANT_DEFAULT_PROVIDER=libvirt
unset VAGRANT_DOTFILE_PATH

logs=.cache/test-vm
mkdir -p "$logs"
names=()
times=()
current=""
created=0
t_all=$(date +%s)

report() {
  local rc=$?
  trap - EXIT
  local keep=${MPTCPLAB_TEST_VM_KEEP:-0}
  if [ "$keep" = failure ] && [ $rc != 0 ] && [ "$current" != destroy ]; then keep=1; fi
  if [ "$created" = 1 ] && [ "$keep" != 1 ] && [ "$current" != destroy-done ]; then
    echo "test-vm: removing the VM after ${current:-start} (vagrant destroy -f)" >&2
    vagrant destroy -f >"$logs/destroy-on-exit.log" 2>&1 || echo "test-vm: vagrant destroy failed, see $logs/destroy-on-exit.log" >&2
  fi
  echo
  echo "test-vm stage times:"
  local i
  for i in "${!names[@]}"; do
    case "${times[$i]}" in
      *[!0-9]*) printf '  %-13s %7s\n' "${names[$i]}" "${times[$i]}" ;;
      *) printf '  %-13s %6ss\n' "${names[$i]}" "${times[$i]}" ;;
    esac
  done
  printf '  %-13s %6ss\n' total "$(( $(date +%s) - t_all ))"
  if [ $rc = 0 ]; then
    echo "test-vm: PASSED"
  else
    echo "test-vm: FAILED in stage '${current}' (rc $rc); logs in $logs/"
  fi
  exit $rc
}
trap report EXIT
trap 'exit 130' INT TERM

# run a stage in this shell (its variables stay set): output to its log, Vagrant's progress
# bars stripped; the last lines are shown when it fails
stage() {
  local name=$1 rc=0 t0
  shift
  current=$name
  t0=$(date +%s)
  echo "test-vm: stage $name ..."
  "$@" >"$logs/$name.raw" 2>&1 || rc=$?
  tr '\r' '\n' <"$logs/$name.raw" | grep -v 'Progress: [0-9]*%' >"$logs/$name.log" || true
  rm -f "$logs/$name.raw"
  names+=("$name"); times+=("$(( $(date +%s) - t0 ))")
  if [ $rc != 0 ]; then
    tail -30 "$logs/$name.log" >&2
    return $rc
  fi
}

host_deps() {
  local pkgs=(vagrant vagrant-libvirt libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients
              qemu-system-x86 qemu-utils dnsmasq-base debootstrap fdisk rsync openssh-client)
  local missing=() p
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq || return 1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" || return 1
  fi
  tests/appliance/ensure-libvirtd.sh
}

ca_certs() {
  rm -rf .cache/ca-certificates
  mkdir -p .cache/ca-certificates
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt .cache/ca-certificates/
  fi
  ls .cache/ca-certificates
}

containerlab() {
  local bin
  bin=$(images/containerlab-build.sh) || return 1
  mkdir -p .cache
  cp "$bin" .cache/containerlab.tmp && mv .cache/containerlab.tmp .cache/containerlab || return 1
  .cache/containerlab version
}

kernel_deb() {
  images/kernel/build-deb.sh
  cat build/kernel-debs/manifest.json
  # a kernel that does not boot or lacks the patch fails here in a minute, not after `up`
  images/kernel/boot-check.sh
}

up() {
  created=1
  vagrant up --provider libvirt
}

guest() { vagrant ssh -c "$1" -- -q 2>/dev/null | tr -d '\r'; }

kernel() {
  local running wanted
  running=$(guest 'uname -r') || return 1
  wanted=$(guest 'cat /var/lib/mptcplab/kernel-wanted') || return 1
  echo "running $running, kernel role installed $wanted"
  [ -n "$running" ] && [ "$running" = "$wanted" ] || { echo "the VM does not run the installed kernel"; return 1; }
  case "$running" in
    6.1.0-*) echo "still the box's kernel"; return 1 ;;
  esac
  echo "$running" >"$logs/vm-kernel"
}

reprovision() {
  vagrant provision >"$logs/reprovision-full.log" 2>&1 || { cat "$logs/reprovision-full.log"; return 1; }
  cat "$logs/reprovision-full.log"
  grep -q 'no reboot needed' "$logs/reprovision-full.log" || { echo "the second provisioning rebooted"; return 1; }
  local recaps
  recaps=$(grep -E 'ok=[0-9]+ +changed=[0-9]+' "$logs/reprovision-full.log")
  [ -n "$recaps" ] || { echo "no Ansible recap in the second provisioning"; return 1; }
  if echo "$recaps" | grep -qv 'changed=0 '; then
    echo "the second provisioning changed something:"; echo "$recaps"; return 1
  fi
  echo "second provisioning: no reboot, no change"
}

lab() {
  # the README's command; `make` sees the running VM and runs the lab in it. A run on a
  # software-emulated CPU may flag its link calibration: the results stage judges it
  make lab-mtu RUN_ARGS="$run_args" || echo "make lab-mtu exited $? (judged in the results stage)"
  test -e results/mtu/latest || { echo "no results/mtu/latest on the host"; return 1; }
}

results() {
  # read through the engine's result model: the project's virtual environment
  [ -x .venv/bin/python ] || scripts/bootstrap.sh
  .venv/bin/python vagrant/check-vm-results.py results/mtu/latest "$(cat "$logs/vm-kernel")"
}

patch_log() {
  local running lines
  running=$(cat "$logs/vm-kernel")
  case "$running" in
    *-mptcplab) ;;
    *) echo "the VM runs $running, not the patched kernel"; return 1 ;;
  esac
  lines=$(guest 'sudo dmesg' | grep 'mptcplab: subflow' || true)
  [ -n "$lines" ] || { echo "no 'mptcplab: subflow' line in the kernel log of $running"; return 1; }
  echo "$lines"
}

# the newest Debian 6.1 kernel in the VM's /boot: the box's own, which the kernel role left
# installed beside the one it chose
stock_release() {
  guest "ls /boot" | sed -n 's/^vmlinuz-\(6\.1\.0-[0-9]*-amd64\)$/\1/p' | sort -V | tail -1
}

boot_id() { timeout 60 vagrant ssh -c 'cat /proc/sys/kernel/random/boot_id' -- -q -o ConnectTimeout=20 2>/dev/null | tr -d '\r'; }

stock_boot() {
  local rel entry old new running deadline
  rel=$(stock_release)
  [ -n "$rel" ] || { echo "no Debian 6.1 kernel (vmlinuz-6.1.0-*-amd64) in the VM's /boot"; return 1; }
  # boot.yml's entry name; grub-reboot needs GRUB_DEFAULT=saved, which boot.yml set
  entry="Advanced options for Debian GNU/Linux>Debian GNU/Linux, with Linux $rel"
  old=$(boot_id)
  [ -n "$old" ] || { echo "cannot read the VM's boot id"; return 1; }
  guest "sudo grub-reboot $(printf '%q' "$entry") && echo one-time boot: $(printf '%q' "$entry")" || return 1
  vagrant ssh -c 'sudo systemctl reboot' -- -q >/dev/null 2>&1 || true
  # a fresh connection each time (a half-open one hung for 16 min once, docs/appliance.md)
  deadline=$(( $(date +%s) + ${MPTCPLAB_REBOOT_TIMEOUT:-1200} ))
  while new=$(boot_id); [ -z "$new" ] || [ "$new" = "$old" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "the VM did not come back from the reboot in time"; return 1; }
    sleep 15
  done
  running=$(guest 'uname -r')
  [ "$running" = "$rel" ] || { echo "running $running after a one-time boot of $rel"; return 1; }
  cp "$logs/vm-kernel" "$logs/vm-kernel-first"
  echo "$running" >"$logs/vm-kernel"
  echo "running the box's stock $running (the saved default stays $(cat "$logs/vm-kernel-first"))"
}

side_by_side() {
  local stock_run
  stock_run=$(readlink -f results/mtu/latest)
  [ "$stock_run" != "$first_run" ] || { echo "the stock lab made no new run (results/mtu/latest is still $first_run)"; return 1; }
  rm -rf "$logs/compare"
  .venv/bin/mptcplab compare "$first_run" "$stock_run" --out "$logs/compare" || return 1
  local md=$logs/compare/compare.md
  grep -q "$(cat "$logs/vm-kernel-first")" "$md" || { echo "no column of $(cat "$logs/vm-kernel-first") in $md"; return 1; }
  grep -q "$(cat "$logs/vm-kernel")" "$md" || { echo "no column of $(cat "$logs/vm-kernel") in $md"; return 1; }
  echo "$md: $first_run beside $stock_run"
  sed -n '/^## Verdicts that change/,/^### Goodput/p' "$md" | grep -v '^### Goodput'
  grep -E '^\| (blackhole|mptcp-bottleneck)' "$md" || true
}

destroy() {
  local dom
  dom=$(virsh -c qemu:///system domname "$(cat .vagrant/machines/default/libvirt/id)" 2>/dev/null || true)
  vagrant destroy -f
  current=destroy-done
  [ -z "$dom" ] || ! virsh -c qemu:///system dominfo "$dom" >/dev/null 2>&1 || { echo "domain $dom still defined"; return 1; }
  if [ -n "$dom" ] && virsh -c qemu:///system vol-list default 2>/dev/null | awk '{print $1}' | grep -q "^$dom"; then
    echo "volumes of $dom left:"; virsh -c qemu:///system vol-list default; return 1
  fi
  if virsh -c qemu:///system net-info vagrant-libvirt >/dev/null 2>&1; then
    echo "network vagrant-libvirt left"; return 1
  fi
  # vagrant-libvirt keeps a box's image as a base volume named after the box file's mtime:
  # the current one is the cache, those of earlier builds of the box are removed
  local box_img current vol prefix
  prefix=${MPTCPLAB_BOX//\//-VAGRANTSLASH-}  # how Vagrant spells a box name in paths and volumes
  box_img=$(ls ~/.vagrant.d/boxes/"$prefix"/0/libvirt/box.img 2>/dev/null || true)
  current=$( [ -n "$box_img" ] && stat -c %Y "$box_img" || echo none)
  for vol in $(virsh -c qemu:///system vol-list default 2>/dev/null | awk 'NR>2 && $1 != "" {print $1}'); do
    case "$vol" in
      "${prefix}_vagrant_box_image_0_${current}_"*) ;;
      "${prefix}_vagrant_box_image_0_"*)
        echo "removing $vol (an earlier build of the box)"
        virsh -c qemu:///system vol-delete --pool default "$vol" ;;
    esac
  done
  echo "domain ${dom:-?}, its volumes and the vagrant-libvirt network are gone (the box's base volume stays: the cache)"
}

if [ -e .vagrant/machines/default/libvirt/id ]; then
  echo "test-vm.sh: this checkout already has a Vagrant VM (.vagrant/machines/default/libvirt/id);" >&2
  echo "  'vagrant destroy -f' it first (test-vm creates and destroys its own)" >&2
  exit 3
fi

stage host-deps host_deps
stage box vagrant/build-box.sh --add
stage containerlab containerlab
if [ "$MPTCPLAB_KERNEL" = prebuilt ]; then stage kernel-deb kernel_deb; fi
stage ca-certs ca_certs
stage up up
stage kernel kernel
if [ "${MPTCPLAB_TEST_VM_REPROVISION:-1}" = 0 ]; then
  names+=(reprovision); times+=(skipped)
else
  stage reprovision reprovision
fi
stage lab lab
first_run=$(readlink -f results/mtu/latest)
stage results results
cat "$logs/results.log"
if [ "$MPTCPLAB_KERNEL" = prebuilt ]; then stage patch-log patch_log; fi
if [ "${MPTCPLAB_TEST_VM_ALSO_STOCK:-0}" = 1 ]; then
  stage stock-boot stock_boot
  stage stock-lab lab
  stage stock-results results
  stage side-by-side side_by_side
  cat "$logs/side-by-side.log"
fi
if [ "${MPTCPLAB_TEST_VM_KEEP:-0}" != 1 ]; then
  stage destroy destroy
  tail -1 "$logs/destroy.log"
fi

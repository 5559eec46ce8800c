"""`mptcplab campaign --provision` for real (issue 36): a bare Debian 12 container made a
campaign host by ansible/campaign-host.yml, then measuring an item, then provisioned again
with no change.

The host is a container of the debootstrapped base (mptcplab/debian-base:bookworm, what the
product images and tests/appliance/campaign-host.Dockerfile start FROM): no python3, rsync,
lab tools or engine. It is reached with ``ansible_connection=community.docker.docker`` and
the inventory's variables of a container host:
- ``mptcplab_in_container=true``: the kernel role installs and boots no kernel (a container
  runs its host's kernel) but still requires MPTCP of the running one; the sysctls role
  applies the per-network-namespace settings (net.*: the container's own namespace), writes
  the machine-wide ones to /etc/sysctl.d without applying them (they would change the
  machine's) and loads no kernel module (the machine's kernel; a container cannot).
- ``ansible_become=false``: a root login without sudo (the bare base has none).
- ``base_extra_ca_certs_dir``: this machine's local CAs (PyPI through a TLS-intercepting
  proxy), mounted read-only, which the base role installs.
Packages come through this machine's apt cache (/var/cache/mptcplab/apt-archives mounted as
the container's /var/cache/apt/archives, as test_ansible.py's target does; the image's
docker-clean hook, which would empty it, is removed first: a machine has no such hook). The
engine's wheels come from PyPI each time: pip's cache (/var/cache/mptcplab/pip, mounted as
test_ansible.py does) stayed empty here behind the proxy, so it is not mounted.

The campaign runs from a copy of this checkout (its engine and playbooks): the second
provisioning's sync must find the checkout as the first left it, which a working tree being
edited meanwhile would not be.

What it proves: the playbook's roles converge on a bare host (python3 first, then rsync, the
sync, base, kernel, sysctls), the provisioned host runs an item with its own bootstrapped
engine (labs/mtu's mptcp-bottleneck, quick, 2 s of traffic: the default mptcplab_python and
mptcplab_bootstrap), and the second `campaign --provision` recaps changed=0.
Measured here (2 shared cores, other users), the run kept in
bench/records/campaign-pool-20261129/provision-run.txt (2026-11-29 04:15 UTC): the file 206 s;
the first `campaign --provision` 161 s (the provisioning's slowest tasks: the engine's
bootstrap 60 s, apt's lab tools 49 s; then the item), the second 23 s. An earlier run (04:05,
not kept) took 167 s (132 s and 23 s).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from appliance_support import BASE_IMAGE, CACHE, REPO, docker, privileged_args, run

TARGET = "prov"
SCENARIO = "mptcp-bottleneck"
ENV = {"ANSIBLE_NOCOLOR": "1", "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_RETRY_FILES_ENABLED": "0",
       "ANSIBLE_LOCAL_TEMP": "/tmp/.ansible-mptcplab",
       # each task's time in the provisioning log (where a provisioning spends its time)
       "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks"}
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.M)
LOCAL_CA = Path("/usr/local/share/ca-certificates")
#: not part of the checkout a host gets (campaign-host.yml's excludes, and what only this
#: machine keeps: the records, the build trees)
SNAPSHOT_SKIP = {".venv", ".git", "__pycache__", ".vagrant", ".mypy_cache", ".ruff_cache", ".pytest_cache",
                 ".hypothesis", ".cache"}
SNAPSHOT_SKIP_TOP = {"results", "build"}


def snapshot(dest: Path) -> Path:
    def ignore(d: str, names: list[str]) -> set[str]:
        top = Path(d) == REPO
        skip = {n for n in names if n in SNAPSHOT_SKIP or n.endswith(".egg-info") or top and n in SNAPSHOT_SKIP_TOP}
        if Path(d) == REPO / "native":
            skip.add("build")
        if Path(d) == REPO / "campaigns":
            skip.add("records")
        return skip

    shutil.copytree(REPO, dest, ignore=ignore, symlinks=True)
    return dest


@pytest.fixture(scope="module")
def bare_host(resources):
    work = resources.add_path(Path(tempfile.mkdtemp(prefix=resources.prefix + "-prov-")))
    if docker("image", "inspect", BASE_IMAGE, check=False).returncode != 0:
        run([str(REPO / "images/build-base.sh")], timeout=1800)
    apt_cache = CACHE / "apt-archives"
    (apt_cache / "partial").mkdir(parents=True, exist_ok=True)
    cas = sorted(LOCAL_CA.rglob("*.crt")) if LOCAL_CA.is_dir() else []
    name = resources.add("container", resources.name("prov"))
    docker("run", "-d", "--name", name, "--hostname", name, *privileged_args(), "--tmpfs", "/run", "--tmpfs", "/tmp",
           "-v", f"{apt_cache}:/var/cache/apt/archives",
           *(["-v", f"{LOCAL_CA}:/mnt/local-ca:ro"] if cas else []), BASE_IMAGE, "sleep", "infinity")
    docker("exec", name, "rm", "-f", "/etc/apt/apt.conf.d/docker-clean")
    # bare: nothing of what provisioning installs
    have = docker("exec", name, "sh", "-c", "command -v python3 rsync iperf3 tshark sysctl; true").stdout.split()
    assert not have, have
    inventory = work / "hosts.ini"
    inventory.write_text(f"{name} ansible_connection=community.docker.docker "
                         "ansible_python_interpreter=/usr/bin/python3 ansible_become=false mptcplab_in_container=true"
                         + (" base_extra_ca_certs_dir=/mnt/local-ca" if cas else "") + "\n")
    checkout = snapshot(work / "checkout")
    return {"name": name, "work": work, "inventory": inventory, "checkout": checkout}


def write_campaign(d: Path, inventory: Path, host: str) -> Path:
    d.mkdir(parents=True)
    lab = d / "mtu"
    shutil.copytree(REPO / "labs" / "mtu", lab)
    exp = yaml.safe_load((lab / "experiment.yml").read_text())
    exp["quick"] = {"duration": "2s", "repetitions": 1}
    (lab / "experiment.yml").write_text(yaml.safe_dump(exp, sort_keys=False))
    f = d / "prov.yml"
    f.write_text(yaml.safe_dump({
        "name": TARGET, "labs": [{"lab": "mtu", "scenarios": [SCENARIO]}],
        "targets": [{"name": TARGET, "kind": "ansible", "host": host}],
        "inventory": str(inventory), "repetitions": 1, "run": {"quick": True, "no_calibrate": True}},
        sort_keys=False))
    return f


def recaps(log: str, host: str) -> list[dict[str, int]]:
    """Every PLAY RECAP line of the host in a log (one per ansible-playbook run)."""
    keys = ("ok", "changed", "unreachable", "failed", "skipped")
    return [dict(zip(keys, map(int, m.groups()[1:]), strict=True)) for m in RECAP.finditer(log) if m.group(1) == host]


def task_status(run_log: str, task: str) -> set[str]:
    """How a task ended in one playbook run's output: ok, changed, skipping, fatal."""
    block = run_log.split(f"TASK [{task}]", 1)
    assert len(block) == 2, f"no task {task!r} in the run:\n{run_log[-3000:]}"
    body = block[1].split("\nTASK [", 1)[0].split("\nPLAY RECAP", 1)[0]
    return {m.group(1) for m in re.finditer(r"^(ok|changed|skipping|fatal):", body, re.M)}


def test_provision_makes_a_bare_container_a_campaign_host_and_a_second_one_changes_nothing(bare_host) -> None:
    t0 = time.monotonic()
    name, work, checkout = bare_host["name"], bare_host["work"], bare_host["checkout"]
    f = write_campaign(work / "c", bare_host["inventory"], name)
    out = work / "out"
    # the copy's engine and playbooks: `python -m` imports mptcplab from the working directory
    argv = [sys.executable, "-m", "mptcplab.cli", "campaign", str(f), "--provision", "--out", str(out)]
    r1 = run(argv, cwd=checkout, env=ENV, timeout=1500, check=False)
    t1 = time.monotonic() - t0
    log_path = out / f"provision-{TARGET}.log"
    log = log_path.read_text() if log_path.exists() else ""
    assert r1.returncode == 0, r1.stdout[-4000:] + r1.stderr[-3000:] + log[-6000:]
    assert f"provisioning {TARGET}: ansible-playbook" in r1.stdout and str(checkout / "ansible/campaign-host.yml") \
        in r1.stdout, r1.stdout[:2000]
    (first,) = recaps(log, name)
    assert first["failed"] == 0 and first["unreachable"] == 0 and first["changed"] > 0, first
    # a bare host: python3 installed by the first play, then rsync, the checkout, the lab tools
    for task in ("Install python3 where it is missing", "Install rsync", "Sync the checkout (the engine)",
                 "base : Install the lab tools"):
        assert task_status(log, task) == {"changed"}, (task, task_status(log, task))
    # the roles limited for a container host (mptcplab_in_container, the module docstring)
    assert task_status(log, "kernel : Install the chosen kernel") == {"skipping"}
    assert task_status(log, "kernel : Boot the chosen kernel") == {"skipping"}
    assert task_status(log, "kernel : Require MPTCP in the running kernel") == {"ok"} and "has MPTCP" in log
    assert task_status(log, "sysctls : Load the lab's kernel modules now") == {"skipping"}

    def sh(cmd: str) -> str:
        return docker("exec", name, "sh", "-c", cmd).stdout.strip()

    # per-namespace sysctls applied in the container; the machine-wide ones only written down
    assert sh("sysctl -n net.ipv4.tcp_no_metrics_save net.mptcp.enabled").split() == ["1", "1"]
    conf = sh("cat /etc/sysctl.d/90-mptcplab.conf").replace(" ", "")
    assert "kernel.perf_event_paranoid=1" in conf and "fs.inotify.max_user_instances=1024" in conf, conf
    machine = Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
    assert sh("sysctl -n kernel.perf_event_paranoid") == machine, "a machine-wide sysctl changed from a container"
    remote = f"/var/tmp/mptcplab-campaign/{TARGET}/checkout"
    assert sh(f"{remote}/.venv/bin/python -c 'import mptcplab, pydantic; print(mptcplab.__name__)'") == "mptcplab"
    assert sh(f"test -x {remote}/native/build/mptcplab-delayline && echo built") == "built"

    # the item, measured on the provisioned host with its own engine
    items = {p.parent.name: json.loads(p.read_text()) for p in (out / "items").glob("*/item.json")}
    assert len(items) == 1, items
    (rec,) = items.values()
    assert rec["exit"] == 0 and rec["finished"] and rec["host"] == name, rec
    assert "1 item(s) run now, 0 finished earlier, 0 not finished" in r1.stdout, r1.stdout[-2000:]
    fp = json.loads((out / "merged" / "mtu" / TARGET / "fingerprint.json").read_text())
    assert [x["hostname"] for x in fp["runs"]] == [name], fp["runs"]
    summary = json.loads((out / "merged" / "mtu" / TARGET / "summary.json").read_text())
    assert [s["name"] for s in summary["scenarios"]] == [SCENARIO], summary["scenarios"]

    # again: nothing left to run, and the provisioning changes nothing
    t2 = time.monotonic()
    # -v: a changed task's result (the sync's itemized files) in the log, for the assertion
    r2 = run(argv, cwd=checkout, env={**ENV, "ANSIBLE_VERBOSITY": "1"}, timeout=1500, check=False)
    t2 = time.monotonic() - t2
    log2 = log_path.read_text()[len(log):]
    assert r2.returncode == 0, r2.stdout[-4000:] + r2.stderr[-3000:] + log2[-6000:]
    assert "0 item(s) run now, 1 finished earlier" in r2.stdout, r2.stdout[-2000:]
    (second,) = recaps(log2, name)
    changed = [t for t in re.findall(r"^TASK \[(.+?)\]", log2, re.M) if "changed" in task_status(log2, t)]
    assert second["changed"] == 0 and second["failed"] == 0, (second, changed, log2[-6000:])
    slowest = [line for line in log.splitlines() if re.search(r" -+ \d+\.\d+s$", line)][:6]
    print(f"\nfirst campaign --provision (provisioning + the item): {t1:.0f} s, recap {first}; second: {t2:.0f} s,"
          f" recap {second}; the test {time.monotonic() - t0:.0f} s\nslowest tasks of the first provisioning:\n"
          + "\n".join(slowest))


def test_snapshot_leaves_out_what_a_host_never_gets(tmp_path: Path) -> None:
    """The copy the campaign runs from holds the engine and the playbooks, not this machine's
    venv, git, results or build products."""
    d = snapshot(tmp_path / "c")
    assert (d / "mptcplab/cli/__init__.py").is_file() and (d / "ansible/campaign-host.yml").is_file()
    assert (d / "mptcplab/results").is_dir(), "the engine's results package is not the top results/"
    assert not any((d / p).exists() for p in (".venv", ".git", "results", "native/build", "campaigns/records"))
    assert subprocess.run([sys.executable, "-c", "import mptcplab.cli, pathlib, sys; "
                           "sys.exit(pathlib.Path(mptcplab.cli.__file__).is_relative_to(pathlib.Path.cwd()) is False)"],
                          cwd=d, check=False).returncode == 0, "the copy's engine is the one imported"

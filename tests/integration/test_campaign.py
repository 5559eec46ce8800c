"""A real campaign (issue 18): the mtu lab's tcp-a scenario, quick and short, on two
targets of this machine: `box-a`, an Ansible host reached with ansible_connection=local
(the playbook syncs the checkout and the lab, runs the engine, pulls the results back),
and `here` (the netns backend directly). The campaign is killed with SIGKILL halfway,
during its second item, and run again: the finished item is skipped, the killed one is
measured again, nothing is measured twice, both targets are merged and compared."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from mptcplab.campaign.executor import complete_runs
from mptcplab.record.model import load_manifest

from .labkit import created_namespaces, netns

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "mptcplab.cli"]
pytestmark = pytest.mark.netns


def _campaign(tmp_path: Path) -> Path:
    lab = tmp_path / "mtu"
    shutil.copytree(REPO / "labs" / "mtu", lab)
    exp = yaml.safe_load((lab / "experiment.yml").read_text())
    exp["quick"] = {"duration": "2s", "repetitions": 1}  # the shortest run that still measures
    (lab / "experiment.yml").write_text(yaml.safe_dump(exp, sort_keys=False))
    (tmp_path / "hosts.ini").write_text(
        f"box-a ansible_connection=local ansible_python_interpreter={sys.executable} "
        f"mptcplab_python={sys.executable} mptcplab_bootstrap=false mptcplab_remote_root={tmp_path / 'remote'}\n")
    f = tmp_path / "c.yml"
    f.write_text(yaml.safe_dump({
        "name": "resume", "labs": [{"lab": "mtu", "scenarios": ["tcp-a"]}],
        # campaign order (no shuffle): box-a first, then here, which the test kills
        "targets": [{"name": "box-a", "kind": "ansible"}, {"name": "here"}],
        "inventory": "hosts.ini", "repetitions": 1, "shuffle": False,
        "run": {"quick": True, "no_calibrate": True}}, sort_keys=False))
    return f


def _item(out: Path, target: str) -> Path:
    found = list((out / "items").glob(f"mtu__{target}__r1__*"))
    return found[0] if found else out / "items" / "none"


def _wait(cond: Callable[[], object], p: subprocess.Popen[bytes], timeout: float) -> None:
    t0 = time.monotonic()
    while not cond():
        assert p.poll() is None, f"the campaign ended early (exit {p.returncode})"
        assert time.monotonic() - t0 < timeout, "timed out"
        time.sleep(0.5)


def test_killed_campaign_resumes_merges_and_compares(tmp_path: Path) -> None:
    f, out = _campaign(tmp_path), tmp_path / "out"
    argv = [*CLI, "campaign", str(f), "--out", str(out)]
    p = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(lambda: complete_runs(_item(out, "box-a") / "results"), p, 240)
        # the second item has created its namespaces: it is measuring
        _wait(lambda: any(n.startswith("mpl") for n in _started_namespaces(_item(out, "here"))), p, 120)
        p.send_signal(signal.SIGKILL)
        p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    first = complete_runs(_item(out, "box-a") / "results")
    assert len(first) == 1
    _wait_gone(_item(out, "here"))  # the killed item's engine tears down on its own (parent-death signal)
    assert complete_runs(_item(out, "here") / "results") == [], "the killed item must not count as finished"

    r = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 work item(s), 1 finished earlier, 1 to run" in r.stdout
    # nothing measured twice: one complete run per item, the finished one untouched
    assert complete_runs(_item(out, "box-a") / "results") == first
    here = complete_runs(_item(out, "here") / "results")
    assert len(here) == 1
    item = json.loads((_item(out, "here") / "item.json").read_text())
    assert item["exit"] == 0 and item["target"] == "here"
    # each result keeps its host's fingerprint; the Ansible one ran the synced checkout
    ran = load_manifest(first[0]).command_line or [""]
    assert ran[0].startswith(str(tmp_path / "remote" / "box-a" / "checkout")), ran
    assert load_manifest(here[0]).kernel == load_manifest(first[0]).kernel
    assert not (tmp_path / "remote" / "box-a" / "items" / _item(out, "box-a").name).exists()
    # merged per target, and compared
    for target in ("box-a", "here"):
        fp = json.loads((out / "merged" / "mtu" / target / "fingerprint.json").read_text())
        assert fp["target"] == target and len(fp["runs"]) == 1 and fp["kernels"]
    c = subprocess.run([*CLI, "compare", str(out), "--no-figures"], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    assert c.returncode == 0, c.stderr
    md = (out / "compare" / "compare.md").read_text()
    gp = next(line for line in md.splitlines() if line.startswith("| tcp-a |"))
    assert gp.count("(n=1)") == 2, gp  # one measured goodput per target column
    for d in (_item(out, "box-a"), _item(out, "here")):
        made = {n for run in (d / "results" / "mtu").glob("2*") for n in created_namespaces(run)}
        assert made and not made & netns(), "namespaces left behind"


def _started_namespaces(item: Path) -> set[str]:
    return {n for run in (item / "results" / "mtu").glob("2*") for n in created_namespaces(run)}


def _wait_gone(item: Path, timeout: float = 90) -> None:
    """Until the killed item's run is marked incomplete and its namespaces are gone."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        runs = list((item / "results" / "mtu").glob("2*"))
        if runs and all(not (r / ".owner").exists() for r in runs) and not _started_namespaces(item) & netns():
            return
        time.sleep(0.5)
    raise AssertionError(f"the killed item {item.name} did not tear down")

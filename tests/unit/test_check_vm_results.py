"""vagrant/check-vm-results.py on hand-made run directories (the VM run itself is make test-vm)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mptcplab.results.summary import build_summary_model

SCRIPT = Path(__file__).resolve().parents[2] / "vagrant" / "check-vm-results.py"
TCG = {"virtualization": "qemu", "software_emulated_cpu": True, "source": "systemd-detect-virt"}
KERNEL = "6.12.0-vm"


def rep(name: str, *, verified: bool = True, negotiated: bool = True) -> dict[str, Any]:
    return {"name": name, "rep": 1, "goodput_mbps": 10.0, "warnings": [],
            "mptcp": {"requested": True, "negotiated": negotiated, "fallback": not negotiated,
                      "verified": verified, "subflows": 2, "expected_paths": ["A", "B"]},
            "subflows": [{"path": "A", "share": 0.5}, {"path": "B", "share": 0.5}]}


def run_dir(tmp: Path, reps: list[dict[str, Any]], *, backend: str = "containerlab",
            summary_extra: dict[str, Any] | None = None) -> Path:
    d = tmp / "run"
    d.mkdir()
    s = build_summary_model("mtu", "r1", KERNEL, True, True, reps, None, [], TCG).to_json()
    (d / "summary.json").write_text(json.dumps({**s, **(summary_extra or {})}))
    (d / "manifest.json").write_text(json.dumps({"lab": "mtu", "complete": True, "kernel": KERNEL,
                                                 "backend": backend}))
    return d


def check(d: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(d), KERNEL], capture_output=True, text=True)


def test_a_good_vm_run_passes(tmp_path: Path) -> None:
    p = check(run_dir(tmp_path, [rep("mptcp-uniform"), rep("mptcp-bottleneck"), rep("mptcp-reverse")]))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "3 MPTCP-verified" in p.stdout and "results format 1" in p.stdout


def test_each_problem_is_one_line(tmp_path: Path) -> None:
    p = check(run_dir(tmp_path, [rep("mptcp-uniform", verified=False), rep("mptcp-bottleneck", negotiated=False)],
                      backend="netns"))
    assert p.returncode == 1
    lines = p.stdout.splitlines()
    assert any("backend 'netns'" in x for x in lines)
    assert any("mptcp-uniform rep1: MPTCP not verified" in x for x in lines)
    assert any("mptcp-bottleneck rep1: MPTCP requested but not negotiated" in x for x in lines)
    assert any("scenarios missing: mptcp-reverse" in x for x in lines)


def test_a_summary_from_a_newer_engine_is_refused(tmp_path: Path) -> None:
    p = check(run_dir(tmp_path, [rep("mptcp-uniform")], summary_extra={"format_version": 99}))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert "format_version: 99 is newer" in p.stderr

"""A run directory exists only with its manifest (issue 12 item 5): a run stopped
before the manifest is written leaves no directory, and a staging directory of a
killed run is removed by the next run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mptcplab import labrun
from mptcplab.lab.loader import load_lab
from mptcplab.labrun import RunOptions, create_run_dir, run_lab

LABS = Path(__file__).resolve().parents[2] / "labs"


def test_stopped_while_gathering_the_manifest_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tool_versions() runs every tool (seconds): a kill there used to leave an empty
    run directory. Here the 'kill' is a SystemExit raised from it."""
    def killed() -> dict[str, str]:
        raise SystemExit("killed while asking tools for their versions")

    monkeypatch.setattr(labrun, "tool_versions", killed)
    monkeypatch.setattr(labrun, "_clean_all", lambda backend: None)  # nothing to clean; needs no root
    lab = load_lab(LABS / "mtu")
    with pytest.raises(SystemExit):
        run_lab(lab, labrun.backends.get("netns").choose_emulator("nfqueue", [], dry_run=True),
                RunOptions(quick=True, scenarios=["tcp-a"], results_root=tmp_path))
    base = tmp_path / "mtu"
    assert not base.exists() or list(base.iterdir()) == []


def test_run_dir_appears_with_its_manifest(tmp_path: Path) -> None:
    run_id, d = create_run_dir(tmp_path, "mtu", {"lab": "mtu", "run_id": None, "complete": False})
    assert d == tmp_path / "mtu" / run_id
    assert json.loads((d / "manifest.json").read_text())["run_id"] == run_id
    assert [p.name for p in (tmp_path / "mtu").iterdir()] == [run_id]  # no staging left


def test_failed_manifest_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(path: Path, data: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(labrun.store, "write_json", full_disk)
    with pytest.raises(OSError):
        create_run_dir(tmp_path, "mtu", {"lab": "mtu"})
    assert list((tmp_path / "mtu").iterdir()) == []


def test_staging_of_a_dead_run_is_removed_by_the_next(tmp_path: Path) -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()  # its PID is now free: the "killed run"
    base = tmp_path / "mtu"
    dead = base / f".staging-20260101T000000Z-abcd-{p.pid}"
    dead.mkdir(parents=True)
    (dead / "manifest.json.tmp").write_text("{")
    live = base / f".staging-20260101T000000Z-ef01-{os.getpid()}"  # ours: still being made
    live.mkdir()
    run_id, _ = create_run_dir(tmp_path, "mtu", {"lab": "mtu"})
    assert sorted(x.name for x in base.iterdir()) == sorted([run_id, live.name])

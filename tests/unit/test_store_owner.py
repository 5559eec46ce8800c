"""Run directories appear whole, carry their owner while it works on them, and a run
whose owner died is marked by the next one (record/store.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mptcplab.errors import LabInputError
from mptcplab.record import store


def _dead_owner() -> dict[str, object]:
    p = subprocess.Popen(["true"])
    p.wait()
    rec = store.owner_record()
    rec["pid"] = p.pid
    return rec


def test_run_dir_appears_with_owner_and_first_manifest(tmp_path: Path) -> None:
    run_id, d = store.create_run_dir(tmp_path, "lab", lambda rid: {"run_id": rid, "complete": False})
    assert d.name == run_id and json.loads((d / "manifest.json").read_text())["run_id"] == run_id
    assert json.loads((d / store.OWNER).read_text())["pid"] == os.getpid()
    assert sorted(p.name for p in (tmp_path / "lab").iterdir()) == [run_id]  # no staging left
    assert store.owner_alive(store.owner_record())
    store.release(d)
    assert not (d / store.OWNER).exists()


def test_results_root_that_cannot_hold_a_run_is_bad_input(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(LabInputError) as e:
        store.create_run_dir(f, "lab")
    assert "--results" in str(e.value) and "\n" not in str(e.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_dead_owner_marked_live_and_complete_untouched(tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    dead, live, done = lab / "r-dead", lab / "r-live", lab / "r-done"
    for d in (dead, live, done):
        d.mkdir(parents=True)
        store.write_json(d / "manifest.json", {"complete": d is done})
    store.write_json(dead / store.OWNER, _dead_owner())
    (dead / "summary.json.tmp").write_text("half")
    store.write_json(live / store.OWNER, store.owner_record())
    staging = lab / (store.PARTIAL + "x")
    staging.mkdir()
    store.write_json(staging / store.OWNER, _dead_owner())
    before_done = (done / "manifest.json").read_bytes()

    assert store.mark_dead_runs(tmp_path) == [dead]
    m = json.loads((dead / "manifest.json").read_text())
    assert m["complete"] is False and m["incomplete_reason"].startswith("owner process died")
    assert not (dead / store.OWNER).exists() and not (dead / "summary.json.tmp").exists()
    assert (live / store.OWNER).exists() and "incomplete_reason" not in json.loads((live / "manifest.json").read_text())
    assert (done / "manifest.json").read_bytes() == before_done
    assert not staging.exists()
    assert store.mark_dead_runs(tmp_path) == []  # once


def test_write_json_leaves_no_tmp_on_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(self: Path, target: Path) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "replace", full)
    with pytest.raises(OSError):
        store.write_json(tmp_path / "x.json", {"a": 1})
    assert list(tmp_path.iterdir()) == []

"""A run directory exists only with its manifest (issue 12 item 5): a run stopped
before the manifest is written leaves no directory (how the directory is made whole:
record/store.py and tests/unit/test_store.py)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from mptcplab import backends
from mptcplab.lab.loader import load_lab
from mptcplab.run import RunOptions, run_lab
from mptcplab.run import lab as labrun

LABS = Path(__file__).resolve().parents[2] / "labs"


def test_stopped_while_gathering_the_manifest_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tool_versions() runs every tool (seconds): a kill there used to leave an empty
    run directory. Here the 'kill' is a SystemExit raised from it."""
    def killed() -> dict[str, str]:
        raise SystemExit("killed while asking tools for their versions")

    monkeypatch.setattr(labrun, "tool_versions", killed)
    monkeypatch.setattr(labrun, "clean_all", lambda backend: None)  # nothing to clean; needs no root
    lab = load_lab(LABS / "mtu")
    with pytest.raises(SystemExit):
        run_lab(lab, backends.get("netns").choose_emulator("nfqueue", [], dry_run=True),
                RunOptions(quick=True, scenarios=["tcp-a"], results_root=tmp_path))
    base = tmp_path / "mtu"
    assert not base.exists() or list(base.iterdir()) == []


def test_a_signal_right_after_the_run_directory_appears_marks_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's signal handling starts as soon as its directory exists: a SIGINT during the
    set-up that follows (here: while the directory's path form is chosen) marks the run
    interrupted, not a bare KeyboardInterrupt beside an unmarked directory."""
    def interrupted(run_dir: Path, _backend: object) -> Path:
        os.kill(os.getpid(), signal.SIGINT)
        return run_dir

    monkeypatch.setattr(labrun, "tool_versions", lambda: {})
    monkeypatch.setattr(labrun, "clean_all", lambda backend: None)
    monkeypatch.setattr(labrun, "run_dir_form", interrupted)
    lab = load_lab(LABS / "mtu")
    run_dir, summary = run_lab(lab, backends.get("netns").choose_emulator("nfqueue", [], dry_run=True),
                               RunOptions(quick=True, scenarios=["tcp-a"], results_root=tmp_path), log=lambda _: None)
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["complete"] is False and m["incomplete_reason"] == "interrupted by SIGINT"
    assert summary["complete"] is False and not (run_dir / ".owner").exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

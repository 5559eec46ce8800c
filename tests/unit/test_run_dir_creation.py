"""A run directory exists only with its manifest (issue 12 item 5): a run stopped
before the manifest is written leaves no directory (how the directory is made whole:
results/store.py and tests/unit/test_store.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mptcplab import labrun
from mptcplab.lab.loader import load_lab
from mptcplab.labrun import RunOptions, run_lab

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

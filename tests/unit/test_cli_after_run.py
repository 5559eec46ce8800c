"""A Ctrl-C after the run was marked (while its table is printed) does not turn a complete
run into an interrupted one: the command exits with the run's own status (the faults
suite's SIGINT at a random moment hit this window: exit 130 beside a complete run)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mptcplab import backends, cli, doctor, preflight
from mptcplab import run as labrun
from mptcplab.results import report

LABS = Path(__file__).resolve().parents[2] / "labs"


def _run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, summary: dict[str, Any]) -> int:
    emulator = backends.get("netns").choose_emulator("nfqueue", [], dry_run=True)
    monkeypatch.setattr(preflight, "check", lambda *a, **k: None)
    monkeypatch.setattr(preflight, "reachability",
                        lambda lab, *a, **k: SimpleNamespace(lab=lab, warnings=[], record={}, lines=[]))
    monkeypatch.setattr(doctor, "checks", lambda: [])
    monkeypatch.setattr(doctor, "lab_needs", lambda lab, c: [])
    monkeypatch.setattr(backends, "resolve", lambda *a: SimpleNamespace(
        name="netns", capabilities=backends.get("netns").capabilities, choose_emulator=lambda *a: emulator))
    monkeypatch.setattr(labrun, "run_lab", lambda *a: (tmp_path / "run", summary))

    def interrupted(_summary: dict[str, Any]) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "print_table", interrupted)
    return cli.main(["run", str(LABS / "mtu"), "--quick", "--scenario", "tcp-a", "--results", str(tmp_path)])


def test_an_invalid_run_keeps_its_status_and_says_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    summary = {"complete": True, "valid": False, "invalid_reasons": ["s rep 1: iperf3 error: x"]}
    assert _run(monkeypatch, tmp_path, summary) == 1
    assert capsys.readouterr().err.startswith("RUN INVALID: s rep 1: iperf3 error: x")


def test_a_valid_run_exits_0_and_an_incomplete_one_130(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(monkeypatch, tmp_path, {"complete": True, "valid": True, "invalid_reasons": []}) == 0
    assert "interrupted after the run finished" in capsys.readouterr().err
    assert _run(monkeypatch, tmp_path, {"complete": False, "valid": False, "invalid_reasons": []}) == 130

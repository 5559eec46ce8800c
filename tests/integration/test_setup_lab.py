"""The setup lab (NSDI 2012 Fig 10) end to end on the netns backend: one quick run of every
scenario (a churn of connect + close, TCP or MPTCP, beside 0, 100 or 1000 held MPTCP
connections), and notebooks/deployability.ipynb executed headless against it.

What is asserted holds in any 2-second run on a loaded host: every MPTCP connection proven
MPTCP from the capture (MP_CAPABLE in SYN, SYN/ACK and third ACK), none of the TCP ones, every
held connection established and MPTCP, the SYN -> SYN/ACK times present, positive and
nanosecond-resolved, the CDF figure written. Which is slower by how much is a measurement
(make lab-setup), not a test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mptcplab.results.read import load_summary

from .labkit import by_name, measured, run_notebook, run_quick

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.netns

SCENARIOS = [f"setup-{p}-held{n}" for p in ("tcp", "mptcp") for n in (0, 100, 1000)]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    rc, _ = run_quick(REPO / "labs/setup", root)
    assert rc == 0, rc
    return root


@pytest.fixture(scope="module")
def summary(results: Path) -> dict[str, Any]:
    return by_name(json.loads((results / "setup/latest/summary.json").read_text()))


def flow(rec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in rec["flows"] if f["name"] == name)


def test_every_scenario_ran(summary: dict[str, Any]) -> None:
    assert sorted(summary) == sorted(SCENARIOS)


@pytest.mark.parametrize("name", SCENARIOS)
def test_connections_proven_and_timed(summary: dict[str, Any], name: str) -> None:
    rec = summary[name]
    churn, hold = flow(rec, "churn"), flow(rec, "hold")
    mptcp = "-mptcp-" in name
    c = churn["connections"]
    # a 2 s churn of one connection at a time: hundreds at the least, each one timed
    assert c["connections_seen"] >= 100, c
    assert c["connections_unfinished"] == 0, c
    assert c["connections_mptcp"] == (c["connections_seen"] if mptcp else 0), c
    assert churn["verified"] is True and churn["churn"]["failed"] == 0, rec["warnings"]
    assert c["syn_synack_point"] == "srv:eth1" and c["syn_synack_n"] == c["connections_seen"]
    assert 0 < c["syn_synack_ms_p50"] <= c["syn_synack_ms_p91"] <= c["syn_synack_ms_p99"] <= c["syn_synack_ms_max"]
    assert 0 <= c["syn_synack_within_6us"] <= 1
    # the held connections: all of them established and MPTCP before the churn started
    held = int(name.rsplit("held", 1)[1])
    assert hold["role"] == "competing" and hold["hold"]["held"] == held, hold
    assert hold["connections"]["connections_seen"] == hold["connections"]["connections_mptcp"] == held
    assert hold["verified"] is (True if held else None)
    assert not [w for w in rec["warnings"] if w["code"] == "mptcp-fallback"], rec["warnings"]


def test_capture_is_nanosecond(results: Path) -> None:
    """The times are whole nanoseconds (a microsecond capture or the float seconds' 0.24 us
    rounding would put them on a coarse grid)."""
    csv = results / "setup/latest/scenarios/setup-mptcp-held0/rep1/flows/churn/connections.csv"
    ns = (pd.read_csv(csv)["syn_synack_ms"].dropna() * 1e6).round().astype("int64")
    assert (ns % 1000 != 0).mean() > 0.5  # not a microsecond grid
    assert (ns % 238 != 0).mean() > 0.5  # nor float64 epoch seconds' 2**-22 s
    log = (results / "setup/latest/scenarios/setup-mptcp-held0/rep1/commands.log").read_text()
    assert "--time-stamp-precision nano" in log


def test_metrics_and_figure(results: Path) -> None:
    s = load_summary(results / "setup/latest")
    findings = {f.id: f for f in s.findings}
    assert {"F10.1-mptcp-slower", "F10.2-ratio", "F10.3-grows-100", "F10.4-grows-1000"} <= set(findings)
    assert all(measured(f) for f in findings.values()), [(f.id, f.verdict) for f in findings.values()]
    assert "us" in (findings["F10.2-ratio"].evidence or "")
    fig = results / "setup/latest/figures/syn_synack_cdf.png"
    assert fig.is_file() and fig.stat().st_size > 10_000
    assert "syn_synack_cdf.png" in (results / "setup/latest/report.md").read_text()


def test_notebook_runs(results: Path) -> None:
    out = run_notebook("deployability", results, timeout=300)
    assert "setup-mptcp-held1000" in out and "F10.2-ratio" in out
    # the labs without a run here are said in one sentence each, not an error
    for lab in ("middlebox", "http"):
        assert f"**{lab}:**" in out, lab

"""Middleboxes on one path (nftables on a router): each run names the fallback or the missing
subflow with its code, and none is ever "verified". One quick run of a lab written here:

    client:eth1 - ra - rs - server        (path A, the initial subflow)
    client:eth2 - rb - rs                 (path B, the join)

ra or rb gets the middlebox; captures at both client interfaces and at the server, so the
analysis sees each option before and after the middlebox.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mptcplab.lab.loader import load_lab
from mptcplab.net.plan import network_for
from mptcplab.run import AnalysisJob, analyze
from mptcplab.traffic.base import ClientRun

from .labkit import by_name, codes, on_path, run_quick, write_lab

pytestmark = pytest.mark.netns

TOPOLOGY = {
    "nodes": {n: {"kind": "linux", "image": f"mptcplab/{'router' if n.startswith('r') else 'host'}:latest"}
              for n in ("client", "server", "ra", "rb", "rs")},
    "links": [
        {"endpoints": ["client:eth1", "ra:eth1"]},
        {"endpoints": ["client:eth2", "rb:eth1"]},
        {"endpoints": ["ra:eth2", "rs:eth1"]},
        {"endpoints": ["rb:eth2", "rs:eth2"]},
        {"endpoints": ["rs:eth3", "server:eth1"]},
    ],
}


def box(router: str, kind: str) -> dict[str, Any]:
    return {"nodes": {router: {"middlebox": [{"kind": kind}]}}}


EXPERIMENT = {
    "paths": {"A": "client:eth1", "B": "client:eth2"},
    "nodes": {
        "client": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0},
                                             "endpoints": [{"address": "client:eth2", "flags": ["subflow"]}]}},
        "server": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0}}},
        "ra": {"role": "router"}, "rb": {"role": "router"}, "rs": {"role": "router"},
    },
    "links": {"client:eth1": {"rate": "50mbit"}, "client:eth2": {"rate": "50mbit"}},
    "traffic": {"flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                                   "bind": "client:eth1", "mptcp": True, "duration": "2s", "cc": "cubic"}}},
    "capture": [{"point": "client:eth1"}, {"point": "client:eth2"}, {"point": "server:eth1"}],
    "calibration": {"enabled": False},
    "quick": {"duration": "2s", "repetitions": 1},
    "scenarios": [
        {"name": "clean", "description": "no middlebox: the control"},
        {"name": "drop-join-b", "override": box("rb", "drop-mp-join")},
        {"name": "strip-syn-a", "override": box("ra", "strip-mptcp-syn")},
        {"name": "strip-syn-b", "override": box("rb", "strip-mptcp-syn")},
        {"name": "strip-data-a", "override": box("ra", "strip-mptcp-data")},
        {"name": "strip-data-b", "override": box("rb", "strip-mptcp-data")},
    ],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, dict[str, Any]]]:
    """(lab directory, run directory, records by scenario)"""
    root = tmp_path_factory.mktemp("mbox")
    lab = write_lab(root / "labs", "mbox", TOPOLOGY, EXPERIMENT)
    _, summary = run_quick(lab, root / "results")
    run_dir = next((root / "results" / "mbox").glob("2*"))
    return lab, run_dir, by_name(summary)


@pytest.fixture(scope="module")
def recs(run: tuple[Path, Path, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    return run[2]


def test_failed_transfer_is_never_verified(run: tuple[Path, Path, dict[str, dict[str, Any]]],
                                           tmp_path: Path) -> None:
    """The clean scenario's real captures, analyzed again as if iperf3 had lost its control
    connection: the capture still shows two good subflows, the record must not say verified."""
    lab_dir, run_dir, _ = run
    lab = load_lab(lab_dir)
    sc = next(s for s in lab.scenarios if s.name == "clean")
    net = network_for(lab.topology, sc, "experiment.yml")
    rep = tmp_path / "rep1"
    shutil.copytree(run_dir / "scenarios" / "clean" / "rep1", rep)
    good = rep / "iperf3.json"

    def job(path: Path, rc: int) -> AnalysisJob:
        return AnalysisJob("clean", 1, {}, rep, sc.body, net, "main",
                           {"main": ClientRun(path, 0.0, "iperf3", rc)}, [], {}, [])

    assert analyze(job(good, 0)).mptcp.verified   # the control: same captures, good transfer
    bad = rep / "iperf3-failed.json"
    bad.write_text(json.dumps({"start": {}, "intervals": [],
                               "error": "control socket has closed unexpectedly"}))
    r = analyze(job(bad, 1))
    assert r.goodput_mbps == 0.0 and not r.mptcp.verified
    findings = r.model_dump()["findings"]  # kept by the record, not a field of its model
    assert findings[0]["code"] == "transfer-failed"
    assert "control socket has closed unexpectedly" in findings[0]["message"]
    assert any(w.code == "transfer-failed" and w.message.startswith("transfer failed") for w in r.warnings)


def test_without_a_middlebox_both_paths_verified(recs: dict[str, dict[str, Any]]) -> None:
    r = recs["clean"]
    assert r["mptcp"]["verified"], r["warnings"]
    assert codes(r) == [] and r["goodput_mbps"] > 0
    assert all(s["contributed"] for s in r["subflows"] if s["path"] in ("A", "B"))


def test_dropped_join_is_join_blocked(recs: dict[str, dict[str, Any]]) -> None:
    r = recs["drop-join-b"]
    assert not r["mptcp"]["verified"] and r["mptcp"]["negotiated"]
    assert codes(r) == ["join-blocked"], r["warnings"]
    (b,) = on_path(r, "B")
    assert b["kind"] == "mp_join" and not b["established"] and b["syn_attempts"] >= 1 and not b["syn_answered"]


def test_stripped_syn_on_the_initial_path_is_a_fallback(recs: dict[str, dict[str, Any]]) -> None:
    r = recs["strip-syn-a"]
    assert not r["mptcp"]["verified"] and not r["mptcp"]["negotiated"] and r["mptcp"]["fallback"]
    assert codes(r) == ["mptcp-fallback", "mptcp-option-removed", "no-join"], r["warnings"]
    removed = r["findings"][1]
    assert removed["path"] == "A" and removed["evidence"]["segment"] == "SYN"
    assert removed["evidence"]["with"] == ["client:eth1"] and removed["evidence"]["without"] == ["server:eth1"]
    # the transfer itself worked, as plain TCP
    assert r["goodput_mbps"] > 0


def test_stripped_syn_on_the_join_path_refuses_the_join(recs: dict[str, dict[str, Any]]) -> None:
    r = recs["strip-syn-b"]
    assert not r["mptcp"]["verified"] and r["mptcp"]["negotiated"]
    assert codes(r) == ["mptcp-option-removed", "join-refused"], r["warnings"]
    removed = r["findings"][0]
    assert removed["path"] == "B" and removed["evidence"]["segment"] == "SYN"
    assert removed["evidence"]["with"] == ["client:eth2"] and removed["evidence"]["without"] == ["server:eth1"]


def test_stripped_data_options_on_the_initial_path_fall_back(recs: dict[str, dict[str, Any]]) -> None:
    r = recs["strip-data-a"]
    assert not r["mptcp"]["verified"] and r["mptcp"]["fallback"]
    # the server got the third ACK without MP_CAPABLE and fell back; the client followed
    assert codes(r) == ["mptcp-fallback", "mptcp-option-removed", "no-join"], r["warnings"]
    assert r["findings"][1]["evidence"]["segment"] == "third ACK"
    assert "fell back to TCP" in r["findings"][2]["message"]


def test_stripped_data_options_on_the_join_path(recs: dict[str, dict[str, Any]]) -> None:
    r = recs["strip-data-b"]
    assert not r["mptcp"]["verified"] and r["mptcp"]["negotiated"] and not r["mptcp"]["fallback"]
    # the join's third ACK (its HMAC) lost MP_JOIN: the server resets the join
    assert codes(r) == ["mptcp-option-removed", "join-refused"], r["warnings"]
    assert r["findings"][0]["evidence"]["segment"] == "third ACK"
    assert "subflow limit" not in r["findings"][1]["message"]

"""The mtu lab end to end on the netns backend: real namespaces, real traffic, real
captures. One quick run (all scenarios, one short repetition) serves every test here."""

from __future__ import annotations

import json
import os
import runpy
from pathlib import Path

import pytest

from mptcplab.record.model import FORMAT_VERSION, load_manifest
from mptcplab.results.read import load_summary

from .labkit import run_notebook, run_repo_lab

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.netns


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_repo_lab("mtu", tmp_path_factory.mktemp("results"), 5, 13)  # 5 nodes x 13 scenarios


@pytest.fixture(scope="module")
def summary(quick_run: Path) -> dict:
    return json.loads((quick_run / "summary.json").read_text())


def by_name(summary: dict) -> dict[str, dict]:
    return {s["name"]: s for s in summary["scenarios"]}


def sub(s: dict, path: str) -> dict:
    subs = [x for x in s["subflows"] if x["path"] == path]
    assert subs, f"{s['name']}: no subflow on path {path}: {s['subflows']} {s['warnings']}"
    return subs[0]


def test_complete_with_every_scenario(summary: dict) -> None:
    assert summary["complete"] is True and summary["quick"] is True
    assert summary["format_version"] == FORMAT_VERSION
    assert summary["kernel"] == os.uname().release
    assert [s["name"] for s in summary["scenarios"]] == [
        "tcp-a", "tcp-b", "mptcp-uniform", "mptcp-bottleneck", "mptcp-reverse",
        "blackhole-probing-0", "blackhole-probing-1", "blackhole-probing-2",
        "blackhole-base-mss-576", "blackhole-base-mss-1024",
        "tcp-a-unshaped", "mptcp-uniform-unshaped", "mptcp-bottleneck-unshaped"]
    for s in summary["scenarios"]:
        assert s["rep"] == 1 and s["goodput_mbps"] >= 0


def test_tcp_paths(summary: dict) -> None:
    s = by_name(summary)
    a, b = s["tcp-a"], s["tcp-b"]
    assert not a["mptcp"]["negotiated"] and not b["mptcp"]["negotiated"]
    # shaped at 100 Mbit/s: never above it (goodput magnitudes belong to benchmarks,
    # not to tests on a shared machine; the run's own link checks judge them)
    assert 0 < a["goodput_mbps"] <= 100 and 0 < b["goodput_mbps"] <= 100
    assert sub(a, "A")["max_seg"] > 1500 - 52  # jumbo segments on the 9000 path
    sb = sub(b, "B")
    # PMTUD found the 1500 bottleneck: the first jumbo segments drew ICMP frag-needed
    # (they are in the client-side capture, hence max_seg), then segments fit 1500
    assert sb["median_seg"] <= 1500 - 40 and sb["icmp_frag_needed"] >= 1
    assert 1500 in sb["icmp_mtus"]


def test_bottlenecked_mptcp_uses_both_paths_with_their_own_mtu(summary: dict) -> None:
    s = by_name(summary)["mptcp-bottleneck"]
    assert s["mptcp"]["negotiated"] and s["mptcp"]["verified"], s["warnings"]
    a, b = sub(s, "A"), sub(s, "B")
    assert a["bytes"] > 0 and b["bytes"] > 0
    assert a["median_seg"] > 1500 and b["median_seg"] <= 1500 - 40
    assert b["icmp_frag_needed"] >= 1 and a["icmp_frag_needed"] == 0
    assert abs(a["share"] + b["share"] - 1) < 1e-6
    # the join SYN on B advertises its 9000-byte interface less 40: the bottleneck behind is unknown to it
    assert b["syn_mss"] == 8960, b
    join = next(f for f in summary["findings"] if f["id"] == "join-syn-advertises-jumbo-mss")
    assert join["verdict"] != "not measurable" and join["checks"][0]["estimate"] == 1.0, join


def test_uniform_mptcp_aggregates_two_paths(summary: dict) -> None:
    s = by_name(summary)
    u = s["mptcp-uniform"]
    assert u["mptcp"]["verified"], u["warnings"]
    # two identical paths: each subflow carries a substantial part of the data
    assert min(sub(u, "A")["share"], sub(u, "B")["share"]) > 0.25
    assert 0 < u["goodput_mbps"] <= 200


def test_reverse_starts_on_b(summary: dict) -> None:
    s = by_name(summary)["mptcp-reverse"]
    assert s["mptcp"]["negotiated"]
    assert sub(s, "B")["initial"] is True and sub(s, "A")["initial"] is False


def test_black_hole_scenarios_are_analyzed_and_explained(summary: dict) -> None:
    for name in ("blackhole-probing-0", "blackhole-probing-1", "blackhole-probing-2",
                 "blackhole-base-mss-576", "blackhole-base-mss-1024"):
        s = by_name(summary)[name]
        assert s["mptcp"]["negotiated"], name
        b = sub(s, "B")
        # the router dropped its ICMP: the client never sees frag-needed on B
        assert b["icmp_frag_needed"] == 0, name
        assert s["firewall"]["rb1"] >= 0, f"{name}: no black-hole counter read"
        if (b["max_seg"] or 0) > 1500 - 40:  # something too big for rb1's 1500 egress was sent
            assert s["firewall"]["rb1"] > 0, f"{name}: jumbo segments on B, yet the black hole dropped no ICMP"
        if b["bytes"] == 0 or not s["mptcp"]["verified"]:
            assert any("path B" in w["message"] for w in s["warnings"]), f"{name}: B idle but no reason given"


def test_published_comparison_present(summary: dict) -> None:
    pub = summary["published"]
    assert pub and all(r["paper_kernel"] for r in pub)
    for r in pub:
        if r["scenario"] is not None:
            assert r["this_n"] == 1 and r["this_kernel"] == summary["kernel"]


def test_manifest_is_self_describing(quick_run: Path) -> None:
    m = json.loads((quick_run / "manifest.json").read_text())
    assert m["complete"] and m["kernel"] == os.uname().release
    assert m["tools"]["iperf3"] and m["tools"]["tshark"]
    assert set(m["lab_files_sha256"]) == {"topology.clab.yml", "experiment.yml", "published.yml"}
    assert m["git"]["commit"] is None or len(m["git"]["commit"]) == 40
    # sysctls as read back from each node, per scenario
    assert m["sysctls"]["blackhole-probing-2"]["client"]["net.ipv4.tcp_mtu_probing"] == "2"
    assert m["sysctls"]["blackhole-base-mss-576"]["client"]["net.ipv4.tcp_base_mss"] == "576"
    assert m["sysctls"]["mptcp-bottleneck"]["ra"]["net.ipv4.ip_forward"] == "1"
    # the emulated links were measured
    cal = m["calibration"]["mptcp-bottleneck"]["rep1"]
    assert {c["link"] for c in cal} == {"client:eth1--ra:eth1", "client:eth2--rb1:eth1"}
    assert all(any(ch["quantity"] == "goodput_mbps" for ch in c["checks"]) for c in cal)


def test_the_vm_check_passes_it_but_for_the_host(quick_run: Path) -> None:
    """vagrant/check-vm-results.py (make test-vm's results stage) on a real run of the same
    lab: a sound run here differs from the VM's only in its backend (netns), its kind (a
    measurement, unless this CPU is emulated) and the timing problems that make a measurement
    on a loaded host invalid. Anything else it reports, no VM run could pass either."""
    check = runpy.run_path(str(REPO / "vagrant" / "check-vm-results.py"), run_name="check_vm_results")["check"]
    problems = check(load_summary(quick_run), load_manifest(quick_run), os.uname().release, quick_run.name)
    host = {("summary.json", "run_kind"), ("summary.json", "valid"), ("manifest.json", "backend")}
    assert [p.line(str(quick_run)) for p in problems if (p.record, p.field) not in host] == []


def test_results_files(quick_run: Path) -> None:
    rep = quick_run / "scenarios" / "mptcp-bottleneck" / "rep1"
    for f in ("iperf3.json", "timeseries.csv", "subflows.csv", "icmp.csv", "commands.log",
              "capture-client-eth1.pcap", "capture-client-eth2.pcap"):
        assert (rep / f).is_file(), f
    assert (quick_run / "report.md").read_text().count("mptcp-bottleneck") >= 1
    assert (quick_run / "summary.csv").is_file()
    assert list((quick_run / "figures").glob("*.png"))


def test_notebook_executes_against_the_run(quick_run: Path, tmp_path: Path) -> None:
    pytest.importorskip("nbformat")
    outputs = run_notebook("mtu", quick_run)
    assert "mptcp-bottleneck" in outputs

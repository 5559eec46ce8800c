"""The cc lab end to end on the netns backend: one quick run of every scenario (an MPTCP flow
with two subflows and a single-path TCP flow through one rate-limited bottleneck), and the
notebook executed headless against it.

What is asserted holds in any 3-second run on a loaded host: both flows measured and proven
from the captures (MPTCP on paths A and B, TCP on path T), the congestion control each flow
asked for, the bottleneck's rate as a ceiling on the flows' sum, shares and Jain's index
consistent with the goodputs, the paper's LIA numbers beside this run's LIA (mptcp_lia, BPF
struct_ops) ones, registered by the engine for the run. Which flow wins is a measurement (make
lab-cc), not a test: a 3-second share is mostly slow start."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mptcplab.cc import BPF_CCS

from .labkit import by_name, measured, run_notebook, run_repo_lab

REPO = Path(__file__).resolve().parents[2]
LIA = BPF_CCS["mptcp_lia"]
pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(LIA.problem() is not None, reason=f"the lab's LIA scenarios need mptcp_lia: {LIA.problem()}"),
]

SCENARIOS = [f"{t}-{m}-vs-{c}" for t in ("eth", "wlan") for m in ("lia", "reno", "cubic") for c in ("reno", "cubic")]
#: a scenario name's MPTCP part -> the congestion control its subflows ask for
MPTCP_CC = {"lia": "mptcp_lia", "reno": "reno", "cubic": "cubic"}
#: the bottleneck's rate per testbed (labs/cc/experiment.yml, br:eth2 egress)
BOTTLENECK_MBPS = {"eth": 25.0, "wlan": 10.0}


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_repo_lab("cc", tmp_path_factory.mktemp("results"), 6, len(SCENARIOS))  # 6 nodes per scenario


@pytest.fixture(scope="module")
def summary(quick_run: Path) -> dict[str, Any]:
    return json.loads((quick_run / "summary.json").read_text())


def flow(rec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in rec["flows"] if f["name"] == name)


def test_every_scenario_ran(summary: dict[str, Any]) -> None:
    assert summary["complete"] is True and summary["quick"] is True
    assert summary["kernel"] == os.uname().release
    assert [s["name"] for s in summary["scenarios"]] == SCENARIOS


@pytest.mark.parametrize("name", SCENARIOS)
def test_both_flows_measured_and_proven(summary: dict[str, Any], name: str) -> None:
    rec = by_name(summary)[name]
    mp, tcp = flow(rec, "mptcp"), flow(rec, "tcp")
    assert mp["role"] == tcp["role"] == "measured"
    # the MPTCP flow: verified from the capture, a subflow on each of its two paths carrying data
    assert mp["mptcp"]["verified"], rec["warnings"]
    assert {s["path"] for s in mp["subflows"] if s["established"] and s["bytes"] > 0} == {"A", "B"}
    assert all(s["dport"] == 5201 for s in mp["subflows"])
    # the single-path flow: plain TCP on path T only, to its own port
    assert not tcp["mptcp"]["requested"] and not tcp["mptcp"]["negotiated"]
    assert tcp["verified"] and [s["path"] for s in tcp["subflows"]] == ["T"]
    assert tcp["subflows"][0]["dport"] == 5202 and tcp["subflows"][0]["bytes"] > 0


@pytest.mark.parametrize("name", SCENARIOS)
def test_bottleneck_caps_the_flows_sum(summary: dict[str, Any], name: str) -> None:
    rec = by_name(summary)[name]
    g_mp, g_tcp = flow(rec, "mptcp")["goodput_mbps"], flow(rec, "tcp")["goodput_mbps"]
    cap = BOTTLENECK_MBPS[name.split("-")[0]]
    # both cross one tbf at the bottleneck's rate, so their sum stays near it: each iperf3 counts
    # over its own 3 s, and the two intervals are not the same 3 s (one flow ends first and the
    # other drains the queue alone): measured up to 4% over, bounded here at 15%, far below what
    # a missing or wrong shaper gives (the veths alone carry hundreds of Mbit/s). Two bulk flows
    # keep the bottleneck busy, but how busy in 3 s is timing on a loaded host (test_lia_cc saw
    # a pair fill 58 % of its bottleneck): the floor only says neither pair collapsed, as there
    assert 0.25 * cap < g_mp + g_tcp <= 1.15 * cap, (g_mp, g_tcp)
    assert g_mp > 0 and g_tcp > 0


@pytest.mark.parametrize("name", SCENARIOS)
def test_shares_and_jain_follow_from_the_goodputs(summary: dict[str, Any], name: str) -> None:
    rec = by_name(summary)[name]
    g1, g2 = flow(rec, "mptcp")["goodput_mbps"], flow(rec, "tcp")["goodput_mbps"]
    fair = rec["fairness"]
    assert fair["flows"] == 2
    # the record's goodputs are rounded (3 decimals): a share recomputed from them moves by
    # up to 0.0005 / (g1 + g2), about 1e-4 at a 10 Mbit/s bottleneck (0.390545 vs 0.390593 seen)
    assert fair["shares"]["mptcp"] == pytest.approx(g1 / (g1 + g2), abs=1e-3)
    assert fair["shares"]["mptcp"] + fair["shares"]["tcp"] == pytest.approx(1.0)
    assert fair["jain_index"] == pytest.approx((g1 + g2) ** 2 / (2 * (g1 * g1 + g2 * g2)), abs=1e-3)
    assert 0.5 <= fair["jain_index"] <= 1.0


def test_each_flow_ran_the_congestion_control_its_scenario_names(quick_run: Path) -> None:
    for name in SCENARIOS:
        _, mp_cc, _, tcp_cc = name.split("-")
        log = (quick_run / "scenarios" / name / "rep1" / "commands.log").read_text()
        clients = {m.group(1): m.group(2) for m in re.finditer(
            r"^ip netns exec \S+-(client|tcpclient) (?:mptcpize run )?iperf3 -c .* -C (\w+)", log, re.M)
            if " -p 529" not in m.group(0)}  # not the link checks' flows
        assert clients == {"client": MPTCP_CC[mp_cc], "tcpclient": tcp_cc}, (name, clients)
        # the MPTCP client really is MPTCP (mptcpize), the single-path one is not
        assert re.search(r"-client mptcpize run iperf3 -c .* -p 5201", log), name
        assert not re.search(r"-tcpclient mptcpize", log), name


def test_wlan_path_is_the_emulated_one(quick_run: Path) -> None:
    m = json.loads((quick_run / "manifest.json").read_text())
    for name in SCENARIOS:
        links = {c["link"]: c for c in m["calibration"][name]["rep1"]}
        bottleneck = links["br:eth2--server:eth1"]["configured"]
        assert bottleneck["rate_bps"] == BOTTLENECK_MBPS[name.split("-")[0]] * 1e6
        wlan = links.get("client:eth2--ap:eth1")
        if name.startswith("wlan-"):
            assert wlan is not None and wlan["configured"]["delay_s"] == 0.002
            rtt = next(c for c in wlan["checks"] if c["quantity"] == "rtt_min_ms")
            assert rtt["measured"] is not None and rtt["measured"] >= 3.5  # 4 ms configured, RTT both ways
        else:
            assert wlan is None  # Ethernet testbed: path B is not shaped


def test_paper_lia_numbers_beside_this_kernels_lia(summary: dict[str, Any], quick_run: Path) -> None:
    pub = summary["published"]
    assert len(pub) == 8
    for r in pub:
        assert r["metric"] == "flow_goodput_mbps" and r["flow"] in ("mptcp", "tcp")
        assert "LIA" in r["paper_kernel"] and "mptcp_lia" in r["paper_kernel"]
        assert r["scenario"].split("-")[1] == "lia"  # beside this kernel's LIA
        assert r["this_n"] == 1 and r["this_kernel"] == summary["kernel"]
        rec = by_name(summary)[r["scenario"]]
        assert r["this_value"] == pytest.approx(flow(rec, r["flow"])["goodput_mbps"])
    holds = {f["id"]: measured(f) for f in summary["findings"]}
    # decided on this run's cwnd series (tcp_probe in the LIA scenarios)
    assert holds["P002.12-lia-cwnd-flat"]
    assert holds["P002.12-lia-cwnd-vs-cubic"]
    assert all(holds[k] for k in holds if k.startswith("P002.8-"))  # decided on this run
    assert len([k for k in holds if k.startswith("P002.8-")]) == 8  # on LIA, and on uncoupled reno
    assert holds["P002.13-lia-weaker-than-reno"]
    for name in SCENARIOS:  # the engine registered mptcp_lia for the LIA scenarios, for them only
        rep = json.loads((quick_run / "scenarios" / name / "rep1" / "rep.json").read_text())
        assert ("mptcp_lia" in rep.get("congestion_controls", {})) == ("-lia-" in name), name
    report = (quick_run / "report.md").read_text()
    assert "## Flows measured together" in report
    assert "| eth-lia-vs-reno | tcp | TCP |" in report
    assert "flow_goodput_mbps (flow mptcp)" in report and "mptcp_lia" in report


@pytest.mark.parametrize("name", SCENARIOS)
def test_lia_scenarios_record_every_senders_cwnd_and_the_others_no_probe(quick_run: Path, name: str) -> None:
    probes = quick_run / "scenarios" / name / "rep1" / "probes"
    if "-lia-" not in name:
        assert not (probes / "subflow_series.csv").exists()  # tcp_probe is the LIA scenarios' only
        return
    series = pd.read_csv(probes / "subflow_series.csv")
    # the MPTCP flow's two subflow senders and the single-path TCP sender, each with samples
    # (P002.12 compares the TCP flow's cwnd with the subflows')
    have = series.dropna(subset=["snd_cwnd"]).groupby(["flow", "path"]).size()
    assert set(have.index) == {("mptcp", "A"), ("mptcp", "B"), ("tcp", "T")}, have
    assert (have >= 5).all(), have  # 3 s of 100 ms bins: most have an ACK
    cwnd = series["snd_cwnd"].dropna()
    assert (cwnd >= 1).all()
    rep = json.loads((probes.parent / "rep.json").read_text())
    assert rep["probes"]["tcp_probe"]["lost_events"] == 0
    # a cwnd above 2^21 (mptcp_lia's jumps, docs/cc-lia.md) is allowed, but then counted
    odd = rep["probes"]["tcp_probe"].get("cwnd_implausible", {})
    assert sum(v["samples"] for v in odd.values()) >= int((cwnd > 2**21).sum())


def test_notebook_executes_against_the_run(quick_run: Path) -> None:
    pytest.importorskip("nbformat")
    outputs = run_notebook("cc", quick_run)
    assert "eth-lia-vs-reno" in outputs and "wlan-cubic-vs-cubic" in outputs
    assert "Not the same implementation" in outputs and "here, LIA: MPTCP share" in outputs
    assert outputs.count("image/png") >= 3  # share plot and the two testbeds' time series

"""The capture analysis on a real two-path MPTCP run, checked against tshark.

One quick run (2 s) of a lab with two disjoint paths; the server announces its second address
(ADD_ADDR) and path B drops 3% of packets at random, so there are TCP retransmissions and
likely MPTCP-level re-sends. On the run's own capture files:

* the native reader and tshark agree field by field on every packet (analysis/oracle.py);
* where tshark's MPTCP analysis (analyze_mappings, intersubflows_retransmission) marks data
  re-sent across subflows, the analysis lists such a re-send no later;
* the repetition's record and files carry the depth: RTT per subflow, dsn.csv with mappings
  on both paths, mptcp_events.csv with the server's ADD_ADDR; the flow's aggregation benefit;
* with the server's points captured on the same host clock: one-way delay per subflow from
  the client's point to the server's, and reordering and head-of-line delay at the server.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from mptcplab.analysis import CaptureFile, oracle
from mptcplab.analysis.standalone import analyze_files

from .labkit import assert_status, run_quick, write_lab

pytestmark = [pytest.mark.netns,
              pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")]

TOPO = {"nodes": {n: {"kind": "linux", "image": f"mptcplab/{'router' if n.startswith('r') else 'host'}:latest"}
                  for n in ("client", "server", "ra", "rb")},
        "links": [{"endpoints": a, "mtu": 1500} for a in (["client:eth1", "ra:eth1"], ["client:eth2", "rb:eth1"],
                                                          ["ra:eth2", "server:eth1"], ["rb:eth2", "server:eth2"])]}
EXP = {
    "paths": {"A": "client:eth1", "B": "client:eth2"},
    "nodes": {
        "client": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 1}}},
        "server": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0}, "endpoints": [
            {"address": "server:eth2", "flags": ["signal"]}]}},
        "ra": {"role": "router"}, "rb": {"role": "router"},
    },
    "links": {"client:eth1": {"rate": "30mbit"}, "client:eth2": {"rate": "30mbit", "loss": "3%"}},
    "traffic": {"flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                                   "bind": "client:eth1", "mptcp": True, "duration": "2s", "cc": "cubic"}}},
    # the server's points too: one-way delay and the receiver's reordering need them
    "capture": [{"point": "client:eth1"}, {"point": "client:eth2"}, {"point": "server:eth1"},
                {"point": "server:eth2"}],
    "calibration": {"enabled": False},
    "quick": {"duration": "2s", "repetitions": 1},
    "scenarios": [{"name": "two-paths"}],
}


@pytest.fixture(scope="module")
def rep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("capana")
    lab = write_lab(root, "capana", TOPO, EXP)
    rc, summary = run_quick(lab, root / "results")
    assert_status(rc, summary)              # 1: the verdict may flag the lossy path; the files count here
    run = sorted((root / "results" / "capana").glob("2*/summary.json"))[-1].parent
    return run / "scenarios" / "two-paths" / "rep1"


def captures(d: Path) -> list[CaptureFile]:
    caps = [CaptureFile(d / f"capture-client-{i}.pcap", f"client:{i}") for i in ("eth1", "eth2")]
    assert all(c.path.is_file() for c in caps), list(d.iterdir())
    return caps


def test_native_reader_matches_tshark_on_the_run(rep_dir: Path) -> None:
    assert oracle.compare_files(captures(rep_dir)) == []


def test_mptcp_resends_across_subflows_are_marked_by_tshark(rep_dir: Path, tmp_path: Path) -> None:
    rec = json.loads((rep_dir / "rep.json").read_text())
    assert rec["mptcp"]["negotiated"] and isinstance(rec["mptcp"]["data_retransmissions"], int)
    x = pd.read_csv(rep_dir / "mptcp_retransmissions.csv")
    probes = x["window_probe"].astype(bool)
    assert int(probes.sum()) == rec["mptcp"]["data_window_probes"]
    x = x[~probes]
    assert len(x) == rec["mptcp"]["data_retransmissions"]
    # the same analysis standalone (it guesses what the lab said) gives the epoch of t0
    fa, _ = analyze_files([c.path for c in captures(rep_dir)], tmp_path / "standalone")
    assert fa.t0_epoch is not None and fa.mptcp_retransmissions == len(x)
    rj = fa.reinjections.to_pandas()
    cross = rj[~rj["same_subflow"].astype(bool)]
    # tshark marks re-sends in every MPTCP connection of the files (iperf3's control connection
    # is one): only those of the analyzed connection's subflows count
    theirs = oracle.tshark_reinjections([c.path for c in captures(rep_dir)], tmp_path,
                                        endpoints=[s.name for s in fa.subflows])
    # tshark marks packets whose bytes were sent before, we list data ranges mapped again
    # (tests/unit/test_depth.py says where the two differ): where tshark marks any, we list
    # a re-send across subflows no later than its first mark
    if theirs:
        first_mark = min(a for a, _ in theirs) - fa.t0_epoch
        assert len(cross) and cross["t"].min() <= first_mark + 1e-6


def main_subflows(rec: dict) -> dict[str, dict]:
    """Path -> the subflow that carried the most bytes on it (a join retried after a lost
    handshake packet on the lossy path can leave a second, nearly empty subflow there)."""
    subs: dict[str, dict] = {}
    for s in rec["subflows"]:
        if s["path"] not in subs or (s["bytes"] or 0) > (subs[s["path"]]["bytes"] or 0):
            subs[s["path"]] = s
    assert set(subs) == {"A", "B"}, rec["subflows"]
    return subs


def test_record_and_files_carry_the_depth(rep_dir: Path) -> None:
    rec = json.loads((rep_dir / "rep.json").read_text())
    subs = main_subflows(rec)
    for p, s in subs.items():
        # numbers from the sender's side: the client's own interface
        assert s["point"] == f"client:eth{'1' if p == 'A' else '2'}", s
        assert s["rtt_samples"] > 10 and 0 < s["rtt_median_ms"] < 1000, rec["subflows"]
    assert subs["B"]["retransmissions"] > 0          # 3% loss on B
    dsn = pd.read_csv(rep_dir / "dsn.csv")
    assert set(dsn.loc[dsn["kind"] == "map", "path"]) == {"A", "B"}
    assert dsn.loc[dsn["kind"] == "ack", "dsn"].max() > 1_000_000
    ev = pd.read_csv(rep_dir / "mptcp_events.csv")
    assert "ADD_ADDR" in set(ev["event"])
    # the aggregation benefit over the two 30 Mbit/s paths (with equal rates both cases of
    # Kaspar et al.'s formula are (g - 30) / 30)
    flow = rec["flows"][0]
    assert flow["path_capacity_mbps"] == {"A": 30.0, "B": 30.0}
    assert flow["aggregation_benefit"] == pytest.approx((flow["goodput_mbps"] - 30.0) / 30.0, abs=1e-3)


def test_one_way_delay_and_hol_at_the_server(rep_dir: Path) -> None:
    rec = json.loads((rep_dir / "rep.json").read_text())
    for s in main_subflows(rec).values():
        own = "eth1" if s["path"] == "A" else "eth2"
        assert s["owd_points"] == f"client:{own}->server:{own}" and s["hol_point"] == f"server:{own}"
        # two veth hops and a router: well under the RTT, above 0
        assert s["owd_samples"] > 50 and 0 < s["owd_median_ms"] <= s["rtt_median_ms"], rec["subflows"]
        assert s["hol_segments"] > 50 and 0 <= s["ooo_share"] <= 1
    m = rec["mptcp"]
    assert m["hol_segments"] == sum(s["hol_segments"] or 0 for s in rec["subflows"])
    assert 0 < m["ooo_share"] < 1 and m["hol_max_ms"] > 0      # two paths, 3% loss on B: some waits
    owd, hol = pd.read_csv(rep_dir / "owd.csv"), pd.read_csv(rep_dir / "hol.csv")
    assert set(owd["path"]) == set(hol["path"]) == {"A", "B"}
    assert int(hol["segments"].sum()) == m["hol_segments"]

"""Traffic kinds on real namespaces, one lab, one run (no --quick: each flow keeps its own
duration), asserting from the captures and the clients' reports:

* flood: a UDP flood bound to path B from +2 s for 2 s lowers subflow B's throughput while
  it runs (the measured flow's 100 ms series), and B recovers after it;
* two: two measured MPTCP flows, each analyzed on its own, shares and Jain's index;
* bytes: a byte-count transfer ends when its bytes are sent (well before its limit);
* http and churn (a lab of their own, both measured, at once): wrk against busybox httpd
  under mptcpize reports requests/s, every connection MPTCP in the capture; many short
  MPTCP connections, their count and SYN -> SYN/ACK latencies.

    client:eth1 - ra -+
                      rm - server        paths A and B, 40 Mbit/s each (the links into rm)
    client:eth2 - rb -+
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mptcplab.cli import main

from .labkit import by_name, created_namespaces, netns, write_lab

pytestmark = pytest.mark.netns

TOPO = {
    "nodes": {n: {"kind": "linux", "image": f"mptcplab/{'router' if n.startswith('r') else 'host'}:latest"}
              for n in ("client", "server", "ra", "rb", "rm")},
    "links": [{"endpoints": list(e)} for e in (("client:eth1", "ra:eth1"), ("client:eth2", "rb:eth1"),
                                               ("ra:eth2", "rm:eth1"), ("rb:eth2", "rm:eth2"),
                                               ("rm:eth3", "server:eth1"))],
}
MAIN = {"client": "client", "server": "server", "server_address": "server:eth1", "bind": "client:eth1",
        "mptcp": True, "cc": "cubic"}
FLOOD = {"kind": "udp", "client": "client", "server": "server", "server_address": "server:eth1",
         "bind": "client:eth2", "rate": "60mbit", "start": "2s", "duration": "2s", "port": 5301,
         "role": "competing"}


def flows(name: str) -> dict[str, Any]:
    return {"traffic": {"flows": {
        "flood": {"main": {**MAIN, "duration": "6s"}, "flood": FLOOD},
        "two": {"main": {**MAIN, "duration": "4s"}, "second": {**MAIN, "duration": "4s", "port": 5202}},
        "bytes": {"main": {**MAIN, "bytes": "20MB", "duration": "30s"}},
    }[name]}}


#: http and churn together, in a lab of their own (a scenario's override adds flows to the
#: base's, it cannot take the base's bulk flow away)
APPS = {
    "web": {"kind": "http", "client": "client", "server": "server", "server_address": "server:eth1",
            "duration": "3s", "connections": 4, "sizes": ["10KB", "100KB"]},
    "churn": {"kind": "churn", "client": "client", "server": "server", "server_address": "server:eth1",
              "bind": "client:eth1", "duration": "3s", "rate": 200},
}


EXP = {
    "paths": {"A": "client:eth1", "B": "client:eth2"},
    # shaped at the routers, not at the client: a UDP sender behind its own shaped qdisc is
    # paced by it (the local queue pushes back on the socket) and floods nothing
    "links": {"ra:eth2": {"rate": "40mbit"}, "rb:eth2": {"rate": "40mbit"}},
    "nodes": {
        "client": {"role": "host", "mptcp": {"limits": {"subflows": 2}, "endpoints": [
            {"address": "client:eth2", "flags": ["subflow"]}]}},
        "server": {"role": "host", "mptcp": {"limits": {"subflows": 2}}},
        "ra": {"role": "router"}, "rb": {"role": "router"}, "rm": {"role": "router"},
    },
    "traffic": {"flows": {"main": {**MAIN, "duration": "2s"}}},
    "capture": [{"point": "client:eth1"}, {"point": "client:eth2"}, {"point": "server:eth1"}],
    "calibration": {"enabled": False},
    "repetitions": 1,
    "scenarios": [{"name": n, "override": flows(n)} for n in ("flood", "two", "bytes")],
}
APPS_EXP = {**EXP, "traffic": {"flows": APPS}, "scenarios": [{"name": "apps"}]}


def run_lab(root: Path, name: str, exp: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    lab = write_lab(root, name, TOPO, exp)
    results = root / "results"
    rc = main(["run", str(lab), "--results", str(results)])
    runs = sorted((results / name).glob("2*/summary.json"))
    assert runs, f"no summary written (exit {rc})"
    made = created_namespaces(runs[-1].parent)
    assert made and made & netns() == set(), "the run left namespaces behind"
    return runs[-1].parent, json.loads(runs[-1].read_text())


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return run_lab(tmp_path_factory.mktemp("kinds"), "kinds", EXP)


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return run_lab(tmp_path_factory.mktemp("apps"), "apps", APPS_EXP)


def rep_dir(run_dir: Path, scenario: str) -> Path:
    return run_dir / "scenarios" / scenario / "rep1"


def flow_of(rec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in rec["flows"] if f["name"] == name)


def test_udp_flood_lowers_its_paths_subflow_while_it_runs(run: tuple[Path, dict[str, Any]]) -> None:
    run_dir, summary = run
    rec = by_name(summary)["flood"]
    assert rec["mptcp"]["verified"], rec["warnings"]
    ts = pd.read_csv(rep_dir(run_dir, "flood") / "timeseries.csv")
    b = ts[ts["path"] == "B"].groupby("t")["mbps"].sum()

    def mean(lo: float, hi: float) -> float:
        return float(b[(b.index >= lo) & (b.index < hi)].sum() / max(1, round((hi - lo) / 0.1)))

    # the flood starts 2 s after the measured client (t = 0 is its data connection's SYN,
    # a few tens of ms later) and lasts 2 s: windows keep clear of both edges
    before, during, after = mean(0.6, 1.8), mean(2.4, 3.7), mean(4.6, 5.8)
    assert before > 5, f"subflow B carried too little before the flood to compare: {before:.1f} Mbit/s"
    assert during < 0.5 * before, (before, during)
    assert after > 2 * during, (during, after)
    flood = flow_of(rec, "flood")
    assert flood["kind"] == "udp" and flood["verified"] is None  # UDP: nothing to prove from the capture
    # the flood's own report: about 2 s, and losses (60 Mbit/s into a 40 Mbit/s path)
    assert 1.5 < flood["duration_s"] < 3.5 and flood["udp"]["lost_packets"] > 0, flood
    assert 20 < flood["goodput_mbps"] < 45, flood


def test_two_measured_flows_are_analyzed_each_with_shares_and_jain(run: tuple[Path, dict[str, Any]]) -> None:
    run_dir, summary = run
    rec = by_name(summary)["two"]
    main_f, second = flow_of(rec, "main"), flow_of(rec, "second")
    for f, port in ((main_f, 5201), (second, 5202)):
        assert f["role"] == "measured" and f["server"].endswith(f":{port}")
        assert f["verified"] and f["mptcp"]["verified"], rec["warnings"]
        assert {s["path"] for s in f["subflows"] if s["established"]} == {"A", "B"}
        assert all(s["dport"] == port for s in f["subflows"])  # each followed its own connection
    d = rep_dir(run_dir, "two") / "flows" / "second"
    assert (d / "subflows.csv").is_file()
    # the second flow's MPTCP depth: its own DSN table and the summary fields in its record
    dsn = pd.read_csv(d / "dsn.csv")
    assert set(dsn["kind"]) == {"map", "ack"} and all(str(x).endswith(tuple(
        f":{s['sport']}" for s in second["subflows"])) for x in dsn["subflow"]), dsn["subflow"].unique()
    for table in ("mptcp_retransmissions.csv", "mptcp_events.csv", "owd.csv", "hol.csv", "icmp.csv", "timeseries.csv"):
        assert (d / table).is_file(), table
    assert second["mptcp"]["data_retransmissions"] is not None and second["mptcp"]["dss_checksum"] is not None
    shares = rec["fairness"]["shares"]
    assert shares["main"] + shares["second"] == pytest.approx(1.0)
    g1, g2 = main_f["goodput_mbps"], second["goodput_mbps"]
    # from the rounded goodputs the record holds: equal to a few parts in a million
    assert rec["fairness"]["jain_index"] == pytest.approx((g1 + g2) ** 2 / (2 * (g1 * g1 + g2 * g2)), rel=1e-4)
    assert 0.5 <= rec["fairness"]["jain_index"] <= 1.0
    agg = next(a for a in summary["aggregates"] if a["scenario"] == "two")
    assert agg["jain_mean"] == pytest.approx(rec["fairness"]["jain_index"])
    assert set(agg["flow_share_mean"]) == {"main", "second"}


def test_byte_count_transfer_ends_when_the_bytes_are_sent(run: tuple[Path, dict[str, Any]]) -> None:
    _, summary = run
    rec = by_name(summary)["bytes"]
    f = flow_of(rec, "main")
    report = json.loads((run[0] / "scenarios" / "bytes" / "rep1" / "iperf3.json").read_text())
    # the sender's count: iperf3 ends the test when the last byte is written, so the
    # receiver's count misses what was still in flight
    sent = report["end"]["sum_sent"]["bytes"]
    assert 20_000_000 <= sent < 21_000_000, sent  # iperf3 -n rounds up to whole writes
    # 20 MB over two 40 Mbit/s paths: seconds, not the 30 s limit
    assert 1.0 < f["duration_s"] < 15, f["duration_s"]
    assert not f["stopped"] and rec["mptcp"]["verified"], rec["warnings"]


def test_http_reports_requests_per_second_every_connection_mptcp(apps: tuple[Path, dict[str, Any]]) -> None:
    run_dir, summary = apps
    rec = by_name(summary)["apps"]
    f = flow_of(rec, "web")
    assert f["http"]["requests"] > 20 and f["http"]["requests_per_s"] > 5, f
    assert f["http"]["latency_p50_ms"] is not None and f["http"]["latency_p99_ms"] >= f["http"]["latency_p50_ms"]
    c = f["connections"]
    # busybox httpd closes after each response: wrk opens about one connection per request
    assert c["connections_seen"] >= f["http"]["requests"] // 2, c
    assert c["connections_mptcp"] == c["connections_seen"], c
    assert f["verified"] and rec["mptcp"]["verified"], rec["warnings"]  # web is the primary flow
    conns = pd.read_csv(rep_dir(run_dir, "apps") / "flows" / "web" / "connections.csv")
    done = conns[conns["established"]]
    assert len(done) == c["connections_seen"] and done["mptcp"].all()
    # only wrk's last handshakes, cut off at its duration's end, may be unfinished
    assert len(conns) == c["connections_seen"] + c["connections_unfinished"] and c["connections_unfinished"] <= 8, c


def test_churn_reports_connections_and_syn_synack_latencies(apps: tuple[Path, dict[str, Any]]) -> None:
    _, summary = apps
    rec = by_name(summary)["apps"]
    f = flow_of(rec, "churn")
    done = f["churn"]["completed"]
    # 200/s asked for 3 s; the Python client opens one connection at a time beside wrk on 2
    # cores, so it falls behind its pace (168 done at 56/s seen in CI): many all the same
    assert done >= 50, f["churn"]
    c = f["connections"]
    assert c["connections_seen"] >= done and c["connections_mptcp"] == c["connections_seen"], c
    assert c["syn_synack_point"] == "server:eth1" and c["syn_synack_n"] >= done
    assert 0 < c["syn_synack_ms_p50"] <= c["syn_synack_ms_p99"] <= c["syn_synack_ms_max"], c
    assert f["verified"], rec["warnings"]

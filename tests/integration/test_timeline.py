"""The timeline and the controller hook on real namespaces (issue 11 items 1 and 5).

Two paths from a dual-homed client to a single-homed server:
    path A: client:eth1 - ra - server        path B: client:eth2 - rb - ra - server
captured at the server (every subflow passes there, and a capture on an interface the
timeline takes down would end with it). Each scenario is one quick run of 6 s; the
assertions read the capture's 100 ms series (timeseries.csv) and events.csv, whose
``capture_s`` puts every event on the series' axis.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from .labkit import run_quick, write_lab

pytestmark = pytest.mark.netns

TOPO = {
    "nodes": {n: {"kind": "linux", "image": f"mptcplab/{'router' if n.startswith('r') else 'host'}:latest"}
              for n in ("client", "server", "ra", "rb")},
    "links": [{"endpoints": ["client:eth1", "ra:eth1"]}, {"endpoints": ["client:eth2", "rb:eth1"]},
              {"endpoints": ["rb:eth2", "ra:eth3"]}, {"endpoints": ["ra:eth2", "server:eth1"]}],
}
DOWN, UP = 2.0, 4.0


def scenario(name: str, events: list[dict[str, Any]], **override: Any) -> dict[str, Any]:
    return {"name": name, "override": {"traffic": {"events": events}, **override}}


EXP: dict[str, Any] = {
    "paths": {"A": "client:eth1", "B": "client:eth2"},
    "nodes": {
        "client": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0},
                                             "endpoints": [{"address": "client:eth2", "flags": ["subflow"]}]}},
        "server": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0}}},
        "ra": {"role": "router"}, "rb": {"role": "router"},
    },
    "links": {"client:eth1": {"rate": "20mbit"}, "client:eth2": {"rate": "20mbit"}},
    "traffic": {"flows": {"main": {"client": "client", "server": "server", "server_address": "server:eth1",
                                   "bind": "client:eth1", "mptcp": True, "duration": "6s", "cc": "cubic"}}},
    "capture": [{"point": "server:eth1"}],
    "calibration": {"enabled": False},
    "quick": {"duration": "6s", "repetitions": 1},
    "scenarios": [
        scenario("down-ip-link", [{"at": DOWN, "action": "link_down", "link": "client:eth2"},
                                  {"at": UP, "action": "link_up", "link": "client:eth2"}]),
        scenario("down-drop", [{"at": DOWN, "action": "link_down", "link": "client:eth2", "how": "drop"},
                               {"at": UP, "action": "link_up", "link": "client:eth2", "how": "drop"}]),
        scenario("rate", [{"at": DOWN, "action": "link_change", "link": "client:eth1", "rate": "4mbit"}]),
        scenario("backup", [{"at": DOWN, "action": "endpoint_flags", "node": "client", "address": "client:eth2",
                             "flags": "backup"}]),
        {"name": "flows", "override": {"traffic": {
            "flows": {"bg": {"client": "client", "server": "server", "server_address": "server:eth1",
                             "bind": "client:eth1", "mptcp": False, "port": 5202, "role": "competing",
                             "duration": "6s", "cc": "cubic"}},
            "events": [{"at": 1.5, "action": "flow_start", "flow": "bg"},
                       {"at": 3.5, "action": "flow_stop", "flow": "bg"}]}}},
        {"name": "delay", "override": {
            "links": {"client:eth1": {"rate": "20mbit", "delay": "2ms"}},
            "traffic": {"events": [{"at": DOWN, "action": "link_change", "link": "client:eth1", "delay": "30ms"}]}}},
        {"name": "controller", "override": {
            "links": {"client:eth1": {"rate": "20mbit"}, "client:eth2": {"rate": "4mbit"}},
            "controllers": [{"name": "backup_slowest", "node": "client", "interval": "100ms",
                             "params": {"warmup": "1.5s"}}]}},
    ],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("timeline")
    lab = write_lab(root, "timeline", TOPO, EXP)
    rc, _ = run_quick(lab, root / "results")
    run_dir = (root / "results" / "timeline" / "latest").resolve()
    assert run_dir.is_dir(), f"no run directory (exit {rc})"
    return run_dir


def rep_dir(run_dir: Path, name: str) -> Path:
    return run_dir / "scenarios" / name / "rep1"


def events(run_dir: Path, name: str) -> list[dict[str, str]]:
    with (rep_dir(run_dir, name) / "events.csv").open() as f:
        return list(csv.DictReader(f))


def path_bytes(run_dir: Path, name: str, path: str, t0: float, t1: float) -> float:
    """Bytes of ``path`` in the 100 ms bins starting in [t0, t1) (capture axis)."""
    ts = pd.read_csv(rep_dir(run_dir, name) / "timeseries.csv")
    d = ts[(ts["path"].astype(str) == path) & (ts["t"] >= t0 - 1e-9) & (ts["t"] < t1 - 1e-9)]
    return float(d["bytes"].sum())


def on_time(rows: list[dict[str, str]], source: str = "timeline") -> list[dict[str, str]]:
    mine = [r for r in rows if r["source"] == source]
    assert mine, f"no {source} event in events.csv"
    for r in mine:
        assert r["rc"] == "0", r
        assert r["capture_s"], f"event without a capture time: {r}"
    return mine


@pytest.mark.parametrize("name", ["down-ip-link", "down-drop"])
def test_path_down_stops_its_bytes_and_up_resumes_them(run: Path, name: str) -> None:
    rows = on_time(events(run, name))
    for r in rows:  # the scheduler keeps its times: within 10 ms of plan
        assert abs(float(r["actual_s"]) - float(r["planned_s"])) <= 0.010, r
    down = float(next(r for r in rows if r["action"] == "link_down")["capture_s"])
    up = float(next(r for r in rows if r["action"] == "link_up")["capture_s"])
    before = path_bytes(run, name, "B", down - 1.0, down)
    gone = path_bytes(run, name, "B", down + 0.3, up)  # a few RTTs (and tbf's 50 ms queue) after
    after = path_bytes(run, name, "B", up, up + 2.5)
    assert before > 100_000, f"path B carried too little before the event to judge: {before}"
    # retransmissions of the stalled subflow may still reach the capture: a trickle at most
    assert gone < 0.05 * before * (up - down - 0.3), (before, gone)
    assert after > 50_000, f"path B did not resume after link_up: {after} bytes"
    assert path_bytes(run, name, "A", down + 0.3, up) > 100_000, "path A must carry the transfer meanwhile"


def test_rate_change_shows_in_the_100ms_series(run: Path) -> None:
    rows = on_time(events(run, "rate"))
    at = float(rows[0]["capture_s"])
    before = path_bytes(run, "rate", "A", at - 1.5, at) / 1.5
    after = path_bytes(run, "rate", "A", at + 0.5, at + 3.0) / 2.5
    # 20 -> 4 Mbit/s: the series must show most of the drop
    assert after < 0.5 * before, (before, after)
    assert after * 8 / 1e6 < 5.0, f"path A above its new 4 Mbit/s: {after * 8 / 1e6:.2f} Mbit/s"


def test_backup_endpoint_stops_carrying_new_data(run: Path) -> None:
    rows = on_time(events(run, "backup"))
    at = float(rows[0]["capture_s"])
    before = path_bytes(run, "backup", "B", at - 1.5, at)
    b_after = path_bytes(run, "backup", "B", at + 0.5, at + 3.5)
    a_after = path_bytes(run, "backup", "A", at + 0.5, at + 3.5)
    assert before > 100_000, before
    assert a_after > 1_000_000, "path A must be active for B to stay idle as backup"
    assert b_after < 0.05 * a_after, (b_after, a_after)


def test_controller_decision_is_recorded_and_takes_effect(run: Path) -> None:
    rows = on_time(events(run, "controller"), source="controller:backup_slowest")
    decision = rows[0]
    assert decision["action"] == "endpoint_flags" and "backup" in decision["commands"], decision
    # path B is the 4 Mbit/s one: its address is the one demoted
    assert "10.0.2." in decision["target"] and float(decision["planned_s"]) >= 1.5, decision
    assert (decision["node"], decision["flags"]) == ("client", "backup"), decision  # the typed columns
    at = float(decision["capture_s"])
    b_after = path_bytes(run, "controller", "B", at + 0.5, at + 3.0)
    a_after = path_bytes(run, "controller", "A", at + 0.5, at + 3.0)
    assert a_after > 1_000_000 and b_after < 0.05 * a_after, (a_after, b_after)


def test_flow_start_and_stop_from_the_timeline(run: Path) -> None:
    rows = on_time(events(run, "flows"))
    assert [r["action"] for r in rows] == ["flow_start", "flow_stop"]
    assert [r["flow"] for r in rows] == ["bg", "bg"]
    assert [r["result"] for r in rows] == ["started", "stopped (SIGINT)"]
    bg = json.loads((rep_dir(run, "flows") / "iperf3-bg.json").read_text())
    # started at 1.5 s, stopped at 3.5 s: about 2 s of its 6 s, and its JSON written on SIGINT
    seconds = bg["end"]["sum_sent"]["seconds"]
    assert 1.5 <= seconds <= 2.7, seconds
    # it moved data meanwhile (a TCP flow beside the MPTCP subflow on path A: its share is
    # small and noisy under load, so only that it ran is asserted)
    assert bg["end"]["sum_sent"]["bytes"] > 100_000, bg["end"]["sum_sent"]


def test_delay_change_reaches_both_delay_lines(run: Path) -> None:
    rows = on_time(events(run, "delay"))
    assert rows[0]["commands"].count("mptcplab-delayline-ctl") == 2, rows[0]["commands"]
    rep = json.loads((rep_dir(run, "delay") / "rep.json").read_text())
    stats = {k: v for k, v in rep["delay_line_stats"].items() if "eth1" in k and ("client" in k or "ra:" in k)}
    assert stats and all(v["delay_us"] == 30000 for v in stats.values()), stats

"""IPv6 labs run through the engine, verified from their captures:

    client:eth1 (path A, 20 Mbit/s) --\\
                                       r -- server:eth1
    client:eth2 (path B, 20 Mbit/s) --/

- v6: an IPv6-only lab (``addressing.pool: null``, ``pool6``); the flow connects to the
  server's v6 address, a second subflow from the client's eth2 endpoint: MPTCP negotiated
  over IPv6, both paths carried data, every subflow between v6 addresses.
- mixed-signal: dual stack, the connection over IPv6, the server announcing its IPv4
  address (a signal endpoint): the kernel joins a v6 (not v6-only) MPTCP socket over IPv4
  (mptcp_pm_addr_families_match: each subflow's two ends of one family), so one connection
  has an IPv6 and an IPv4 subflow.
- mixed-subflow: dual stack, the connection over IPv6, a client subflow endpoint with an
  IPv4 address: the kernel makes no subflow from it (its address is not of the family of
  the peer's address it would join), so only path A carries the connection.

One quick run, 3 s of traffic per scenario.
"""

from __future__ import annotations

from ipaddress import ip_address
from typing import Any

import pytest

from .labkit import by_name, on_path, run_quick, write_lab

pytestmark = pytest.mark.netns

SERVER6 = "fd00:35:0:3::2"  # server:eth1, link 2 of pool6 (the first /64 is kept free)
TOPO = {"nodes": {n: {"kind": "linux", "image": f"mptcplab/{'router' if n == 'r' else 'host'}:latest"}
                  for n in ("client", "r", "server")},
        "links": [{"endpoints": ["client:eth1", "r:eth1"]}, {"endpoints": ["client:eth2", "r:eth2"]},
                  {"endpoints": ["r:eth3", "server:eth1"]}]}


def dual() -> dict[str, Any]:
    """A dual-stack override: a fresh dict each time (a shared one would be a YAML anchor, refused)."""
    # on a dual-stack link 'client:eth1' names its IPv4 address: a v6 flow binds no ref there
    return {"addressing": {"pool": "10.0.0.0/16", "pool6": "fd00:35::/48"},
            "traffic": {"flows": {"main": {"bind": None}}}}


EXP = {
    "paths": {"A": "client:eth1", "B": "client:eth2"},
    "addressing": {"pool": None, "pool6": "fd00:35::/48"},
    "links": {"client:eth1": {"rate": "20mbit"}, "client:eth2": {"rate": "20mbit"}},
    "nodes": {
        "client": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 1},
                                             "endpoints": [{"address": "client:eth2", "flags": ["subflow"]}]}},
        "r": {"role": "router"},
        "server": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0}}},
    },
    "traffic": {"flows": {"main": {"client": "client", "server": "server", "server_address": SERVER6,
                                   "bind": "client:eth1", "mptcp": True, "duration": "3s", "cc": "cubic"}}},
    "capture": [{"point": "client:eth1"}, {"point": "client:eth2"}],
    "calibration": {"enabled": False},
    "quick": {"duration": "3s", "repetitions": 1},
    "scenarios": [
        {"name": "v6", "description": "IPv6 only, two subflows from two v6 endpoints"},
        {"name": "mixed-signal", "description": "dual stack; v6 connection, the server announces its IPv4 address",
         "override": {**dual(), "nodes": {
             "client": {"mptcp": {"endpoints": []}},
             "server": {"mptcp": {"endpoints": [{"address": "server:eth1", "flags": ["signal"]}]}}}}},
        {"name": "mixed-subflow", "description": "dual stack; v6 connection, an IPv4 client subflow endpoint",
         "override": dual()},
    ],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("ipv6")
    lab = write_lab(root / "labs", "ipv6two", TOPO, EXP)
    _, summary = run_quick(lab, root / "results")
    return by_name(summary)


def carried(r: dict[str, Any], path: str) -> list[dict[str, Any]]:
    return [s for s in on_path(r, path) if s["established"] and (s["bytes"] or 0) > 0]


def version(addr: str) -> int:
    return ip_address(addr).version


def test_v6_only_two_paths_verified_from_the_capture(runs: dict[str, dict[str, Any]]) -> None:
    r = runs["v6"]
    assert r["mptcp"]["expected_paths"] == ["A", "B"]
    assert r["mptcp"]["verified"], r["warnings"]
    assert r["goodput_mbps"] > 0
    for p in ("A", "B"):
        subs = carried(r, p)
        assert len(subs) == 1, (p, r["subflows"])
        assert version(subs[0]["src"]) == version(subs[0]["dst"]) == 6, subs[0]
    assert {s["dst"] for s in r["subflows"]} == {SERVER6}


def test_v6_connection_joins_an_announced_ipv4_address(runs: dict[str, dict[str, Any]]) -> None:
    r = runs["mixed-signal"]
    assert r["mptcp"]["verified"], r["warnings"]
    subs = [s for s in r["subflows"] if s["established"] and (s["bytes"] or 0) > 0]
    assert sorted(version(s["dst"]) for s in subs) == [4, 6], r["subflows"]
    assert {s["path"] for s in subs} == {"A"}  # routing sends both to the server by path A
    initial = [s for s in subs if s["initial"]]
    assert len(initial) == 1 and initial[0]["dst"] == SERVER6


def test_ipv4_subflow_endpoint_makes_no_subflow_on_a_v6_connection(runs: dict[str, dict[str, Any]]) -> None:
    r = runs["mixed-subflow"]
    assert carried(r, "A") and all(version(s["src"]) == 6 for s in carried(r, "A"))
    assert carried(r, "B") == [], r["subflows"]

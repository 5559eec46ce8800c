"""Three paths with three different path MTUs (9000 / 4000 / 1500), in both shapes:

merge:    client:eth1 - ra -(9000)- rm             one single-homed server behind rm;
          client:eth2 - rb -(4000)- rm - server     the bottleneck of each path is the
          client:eth3 - rc -(1500)- rm             link into rm (PMTUD finds it)

disjoint: client:eth1 - ra -(9000)- server:eth1    each path ends on its own server
          client:eth2 - rb -(4000)- server:eth2    interface; no router reaches another
          client:eth3 - rc -(1500)- server:eth3    path's server address

Every subflow must be verified, carry segments that fit its own path (median payload at most
MTU - 40 and within 64 bytes of it: TCP timestamps take 12), and the disjoint shape must work
with the server announcing eth2/eth3 (ADD_ADDR) and, without the announcements, say why the
joins fail and what would work. One quick run per lab, 2 s of traffic per scenario.
"""

from __future__ import annotations

from typing import Any

import pytest

from .labkit import by_name, codes, on_path, run_quick, write_lab

pytestmark = pytest.mark.netns

MTU = {"A": 9000, "B": 4000, "C": 1500}


def image(n: str) -> str:
    return f"mptcplab/{'router' if n.startswith('r') else 'host'}:latest"


def topology(links: list[tuple[str, str, int]], nodes: list[str]) -> dict[str, Any]:
    return {"nodes": {n: {"kind": "linux", "image": image(n)} for n in nodes},
            "links": [{"endpoints": [a, b], "mtu": m} for a, b, m in links]}


PATHS = {"A": "client:eth1", "B": "client:eth2", "C": "client:eth3"}
FLOW = {"client": "client", "server": "server", "server_address": "server:eth1", "bind": "client:eth1",
        "mptcp": True, "duration": "2s", "cc": "cubic"}
COMMON = {
    "paths": PATHS,
    "links": {ep: {"rate": "40mbit"} for ep in PATHS.values()},
    "traffic": {"flows": {"main": FLOW}},
    "capture": [{"point": ep} for ep in PATHS.values()],
    "calibration": {"enabled": False},
    "quick": {"duration": "2s", "repetitions": 1},
}
ROUTERS = {r: {"role": "router"} for r in ("ra", "rb", "rc")}

MERGE_TOPO = topology(
    [("client:eth1", "ra:eth1", 9000), ("client:eth2", "rb:eth1", 9000), ("client:eth3", "rc:eth1", 9000),
     ("ra:eth2", "rm:eth1", 9000), ("rb:eth2", "rm:eth2", 4000), ("rc:eth2", "rm:eth3", 1500),
     ("rm:eth4", "server:eth1", 9000)],
    ["client", "server", "ra", "rb", "rc", "rm"])
MERGE_EXP = {
    **COMMON,
    "nodes": {
        "client": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0}, "endpoints": [
            {"address": "client:eth2", "flags": ["subflow"]}, {"address": "client:eth3", "flags": ["subflow"]}]}},
        "server": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0}}},
        **ROUTERS, "rm": {"role": "router"},
    },
    "scenarios": [{"name": "merge"}],
}

DISJOINT_TOPO = topology(
    [("client:eth1", "ra:eth1", 9000), ("client:eth2", "rb:eth1", 9000), ("client:eth3", "rc:eth1", 9000),
     ("ra:eth2", "server:eth1", 9000), ("rb:eth2", "server:eth2", 4000), ("rc:eth2", "server:eth3", 1500)],
    ["client", "server", "ra", "rb", "rc"])
DISJOINT_EXP = {
    **COMMON,
    "nodes": {
        "client": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 2}}},
        "server": {"role": "host", "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0}, "endpoints": [
            {"address": "server:eth2", "flags": ["signal"]}, {"address": "server:eth3", "flags": ["signal"]}]}},
        **ROUTERS,
    },
    "scenarios": [
        {"name": "signal", "description": "the server announces eth2 and eth3 (ADD_ADDR)"},
        {"name": "joins-to-eth1", "description": "no announcements; client subflow endpoints join server:eth1",
         "override": {"nodes": {
             "client": {"mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0}, "endpoints": [
                 {"address": "client:eth2", "flags": ["subflow"]},
                 {"address": "client:eth3", "flags": ["subflow"]}]}},
             "server": {"mptcp": {"endpoints": []}}}}},
    ],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("three")
    out: dict[str, dict[str, Any]] = {}
    for name, topo, exp in (("merge3", MERGE_TOPO, MERGE_EXP), ("disjoint3", DISJOINT_TOPO, DISJOINT_EXP)):
        lab = write_lab(root / "labs", name, topo, exp)
        _, summary = run_quick(lab, root / "results")
        out.update(by_name(summary))
    return out


def assert_three_paths_fit_their_mtu(r: dict[str, Any]) -> None:
    assert r["mptcp"]["expected_paths"] == ["A", "B", "C"]
    assert r["mptcp"]["verified"], r["warnings"]
    assert codes(r) == [] and r["goodput_mbps"] > 0
    for p, mtu in MTU.items():
        subs = [s for s in on_path(r, p) if s["established"] and s["contributed"]]
        assert len(subs) == 1, (p, r["subflows"])
        med = subs[0]["median_seg"]
        assert mtu - 40 - 64 <= med <= mtu - 40, (p, med)


def test_merging_paths_three_subflows_each_with_its_own_mtu(runs: dict[str, dict[str, Any]]) -> None:
    assert_three_paths_fit_their_mtu(runs["merge"])


def test_disjoint_paths_with_announced_addresses(runs: dict[str, dict[str, Any]]) -> None:
    r = runs["signal"]
    assert len(r["add_addrs"]) == 2
    assert_three_paths_fit_their_mtu(r)
    # each join went to the announced address of its own path, not to server:eth1
    dsts = {p: on_path(r, p)[0]["dst"] for p in ("B", "C")}
    assert set(dsts.values()) == set(r["add_addrs"])


def test_disjoint_paths_joining_eth1_say_why_and_what_works(runs: dict[str, dict[str, Any]]) -> None:
    r = runs["joins-to-eth1"]
    assert r["mptcp"]["negotiated"] and not r["mptcp"]["verified"]
    assert codes(r) == ["join-unreachable", "join-unreachable"], r["warnings"]
    for f, p in zip(r["findings"], ("B", "C"), strict=True):
        assert f["path"] == p
        assert "ICMP destination unreachable (net unreachable)" in f["message"]
        assert "announce the server's addresses (signal endpoints" in f["message"]
        assert "or connect the paths" in f["message"]

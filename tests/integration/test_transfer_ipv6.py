"""The verified transfer (kind ``transfer``) over IPv6 only, two paths, verified from the capture:

    client:eth1 (path A, 8 Mbit/s) --\\
                                      r -- server:eth1
    client:eth2 (path B, 8 Mbit/s) --/

The client's socket is AF_INET6 (its family follows the server's v6 address), its source is
its ``bind`` interface's v6 address; the server listens on ``::`` (IPV6_V6ONLY off), and the
client's subflow endpoint on eth2 (its v6 address: the lab has no IPv4) joins over path B.
The capture shows MPTCP negotiated, a subflow per path carrying data, every packet between
v6 addresses; the two SHA-256 agree.

One quick run, one scenario, a 3 MB transfer (about 2 s); the engine removes its namespaces
(their names unique per run) even when the traffic fails, which run_quick asserts.
"""

from __future__ import annotations

import json
from ipaddress import ip_address
from pathlib import Path
from typing import Any

import pytest

from .labkit import on_path, run_scenario, tshark_fields

pytestmark = pytest.mark.netns

TOPO = {"nodes": {n: {"kind": "linux", "image": f"mptcplab/{'router' if n == 'r' else 'host'}:latest"}
                  for n in ("client", "r", "server")},
        "links": [{"endpoints": ["client:eth1", "r:eth1"]}, {"endpoints": ["client:eth2", "r:eth2"]},
                  {"endpoints": ["r:eth3", "server:eth1"]}]}

EXP = {
    "paths": {"A": "client:eth1", "B": "client:eth2"},
    "addressing": {"pool": None, "pool6": "fd00:36::/48"},
    "links": {"client:eth1": {"rate": "8mbit"}, "client:eth2": {"rate": "8mbit"}},
    "nodes": {
        "client": {"role": "host", "mptcp": {"limits": {"subflows": 1, "add_addr_accepted": 0},
                                             "endpoints": [{"address": "client:eth2", "flags": ["subflow"]}]}},
        "r": {"role": "router"},
        "server": {"role": "host", "mptcp": {"limits": {"subflows": 1, "add_addr_accepted": 0}}},
    },
    "traffic": {"flows": {"main": {"kind": "transfer", "client": "client", "server": "server",
                                   "server_address": "server:eth1", "bind": "client:eth1", "mptcp": True,
                                   "bytes": "3MB", "seed": 35, "duration": "15s"}}},
    "capture": [{"point": "client:eth1"}, {"point": "client:eth2"}],
    "calibration": {"enabled": False},
    "quick": {"duration": "15s", "repetitions": 1},
    "scenarios": [{"name": "v6-transfer", "description": "IPv6 only: a verified transfer over two subflows"}],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return run_scenario(tmp_path_factory.mktemp("transfer6"), "transfer6", TOPO, EXP, "v6-transfer")



def test_the_transfer_arrived_intact_over_mptcp(run: tuple[Path, dict[str, Any]]) -> None:
    run_dir, r = run
    rep = run_dir / r["dir"]
    client = json.loads((rep / "transfer-main.client.json").read_text())
    server = json.loads((rep / "transfer-main.server.json").read_text())
    assert client["mptcp"] is True and "error" not in client, client
    assert server["bytes"] == client["bytes"] == 3_000_000
    assert server["received_sha256"] == client["sent_sha256"] and server["differs"]["differing_bytes"] == 0


def test_two_v6_subflows_carried_data_by_the_analysis(run: tuple[Path, dict[str, Any]]) -> None:
    _, r = run
    assert r["mptcp"]["verified"], r["warnings"]
    for path, initial in (("A", True), ("B", False)):
        subs = [s for s in on_path(r, path) if s["established"] and (s["bytes"] or 0) > 0]
        assert len(subs) == 1 and subs[0]["initial"] is initial, (path, r["subflows"])
        assert ip_address(subs[0]["src"]).version == ip_address(subs[0]["dst"]).version == 6, subs[0]
    # one connection: both subflows to the server's one address, from two client addresses
    subs = [s for s in r["subflows"] if s["established"]]
    assert len({s["dst"] for s in subs}) == 1 and len({s["src"] for s in subs}) == 2, r["subflows"]


def test_the_capture_itself_shows_mp_capable_mp_join_and_data_per_path(run: tuple[Path, dict[str, Any]]) -> None:
    """Read the two captures directly (tshark), not through the analysis: path A holds the
    MP_CAPABLE SYN, path B the MP_JOIN SYN, each carries payload, and no IPv4 packet at all."""
    run_dir, r = run
    rep = run_dir / r["dir"]
    a, b = rep / "capture-client-eth1.pcap", rep / "capture-client-eth2.pcap"
    # MPTCP option subtypes: 0 MP_CAPABLE, 1 MP_JOIN; SYN without ACK = the client's opening
    syn = "tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.options.mptcp.subtype == {}"
    assert tshark_fields(a, "ipv6.src", where=syn.format(0)), "no MP_CAPABLE SYN on path A"
    assert tshark_fields(b, "ipv6.src", where=syn.format(1)), "no MP_JOIN SYN on path B"
    for pcap in (a, b):
        data = tshark_fields(pcap, "tcp.len", where="ipv6 && tcp.len > 0 && tcp.dstport == 7100")
        sent = sum(int(x[0]) for x in data)
        assert sent > 100_000, (pcap.name, sent)
        assert tshark_fields(pcap, "ip.src", where="ip") == [], f"IPv4 packets in {pcap.name}"

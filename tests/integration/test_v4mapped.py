"""An IPv4-mapped run (mptcp_join.sh's v4mapped_tests, "signal address IPv4-mapped"), verified
from the capture:

    client:eth1 10.0.1.2 -- server:eth1 10.0.1.1   (path A, 8 Mbit/s)
    client:eth2 10.0.2.2 -- server:eth2 10.0.2.1   (path B, 8 Mbit/s)

The verified transfer (kind ``transfer``) connects an AF_INET6 socket to
``server_address: '::ffff:10.0.1.1'``; the server announces ``::ffff:10.0.2.1`` (a signal
endpoint given mapped, ``ip mptcp endpoint add ::ffff:10.0.2.1 dev eth2 signal``); the
client accepts one ADD_ADDR and joins it. On the wire everything is IPv4: the MP_CAPABLE
SYN on path A, the ADD_ADDR (this kernel, 6.18, announces the address as given, an IPv6
ADD_ADDR of ::ffff:10.0.2.1), the MP_JOIN SYN to 10.0.2.1 on path B, and the data on both;
no IPv6 packet at all. The analysis calls MPTCP verified and the two
SHA-256 agree.

One quick run, one scenario, a 3 MB transfer (about 2 s); the engine removes its namespaces
(their names unique per run) even when the traffic fails, which run_quick asserts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .labkit import on_path, run_scenario, tshark_fields

pytestmark = pytest.mark.netns

TOPO = {"nodes": {n: {"kind": "linux", "image": "mptcplab/host:latest"} for n in ("client", "server")},
        "links": [{"endpoints": ["client:eth1", "server:eth1"]}, {"endpoints": ["client:eth2", "server:eth2"]}]}
ADDR = {"client:eth1": "10.0.1.2", "client:eth2": "10.0.2.2", "server:eth1": "10.0.1.1", "server:eth2": "10.0.2.1"}
PORT = 7100

EXP = {
    "paths": {"A": "client:eth1", "B": "client:eth2"},
    "addressing": {"addresses": {ep: f"{ip}/24" for ep, ip in ADDR.items()}},
    "links": {"client:eth1": {"rate": "8mbit"}, "client:eth2": {"rate": "8mbit"}},
    "nodes": {
        "client": {"role": "host", "mptcp": {"limits": {"subflows": 1, "add_addr_accepted": 1}}},
        "server": {"role": "host", "mptcp": {"limits": {"subflows": 1, "add_addr_accepted": 0},
                                             "endpoints": [{"address": "::ffff:10.0.2.1", "flags": ["signal"]}]}},
    },
    "traffic": {"flows": {"main": {"kind": "transfer", "client": "client", "server": "server",
                                   "server_address": "::ffff:10.0.1.1", "bind": "client:eth1", "mptcp": True,
                                   "port": PORT, "bytes": "3MB", "seed": 35, "duration": "15s"}}},
    "capture": [{"point": "client:eth1"}, {"point": "client:eth2"}],
    "calibration": {"enabled": False},
    "quick": {"duration": "15s", "repetitions": 1},
    "scenarios": [{"name": "mapped", "description": "IPv4-mapped server address and signal endpoint"}],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return run_scenario(tmp_path_factory.mktemp("v4mapped"), "v4mapped", TOPO, EXP, "mapped")



def test_the_commands_keep_the_mapped_literals(run: tuple[Path, dict[str, Any]]) -> None:
    run_dir, r = run
    log = (run_dir / r["dir"] / "commands.log").read_text()
    assert "mptcp endpoint add ::ffff:10.0.2.1 dev eth2 signal" in log
    assert "::ffff:10.0.1.1" in log and "::ffff:a00:101" not in log


def test_mptcp_was_negotiated_on_ipv4_and_the_announced_address_carried_data(
        run: tuple[Path, dict[str, Any]]) -> None:
    """Read the captures directly (tshark), not through the analysis."""
    run_dir, r = run
    rep = run_dir / r["dir"]
    a, b = rep / "capture-client-eth1.pcap", rep / "capture-client-eth2.pcap"
    # MPTCP option subtypes: 0 MP_CAPABLE, 1 MP_JOIN, 3 ADD_ADDR; SYN without ACK = the client's opening
    syn = "ip && tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.options.mptcp.subtype == {}"
    assert tshark_fields(a, "ip.src", "ip.dst", where=syn.format(0)) == [[ADDR["client:eth1"], ADDR["server:eth1"]]]
    # the server's ADD_ADDR (echo 0): 6.18 sends the endpoint as given, an IPv6 ADD_ADDR of
    # ::ffff:10.0.2.1 (28 bytes), inside an IPv4 packet; an IPv4 ADD_ADDR would do as well
    announced = tshark_fields(a, "tcp.options.mptcp.ipv4", "tcp.options.mptcp.ipv6",
                        where=f"ip.src == {ADDR['server:eth1']} && tcp.options.mptcp.subtype == 3")
    assert announced and all(set(row) - {""} <= {ADDR["server:eth2"], "::ffff:10.0.2.1"} and set(row) != {""}
                             for row in announced), announced
    joins = tshark_fields(b, "ip.src", "ip.dst", where=syn.format(1))
    assert joins and set(map(tuple, joins)) == {(ADDR["client:eth2"], ADDR["server:eth2"])}, joins
    for pcap, path in ((a, "A"), (b, "B")):
        data = tshark_fields(pcap, "tcp.len", where=f"ip && tcp.len > 0 && tcp.dstport == {PORT}")
        sent = sum(int(x[0]) for x in data)
        assert sent > 300_000, (path, sent)
        assert tshark_fields(pcap, "ipv6.src", where="ipv6") == [], f"IPv6 packets in {pcap.name}"


def test_the_result_calls_it_verified_and_the_transfer_intact(run: tuple[Path, dict[str, Any]]) -> None:
    run_dir, r = run
    assert r["mptcp"]["verified"], r["warnings"]
    assert not [w for w in r["warnings"] if "NEVER FORMED" in w or "NOT VERIFIED" in w], r["warnings"]
    b = [s for s in on_path(r, "B") if s["established"] and (s["bytes"] or 0) > 0]
    assert len(b) == 1 and b[0]["initial"] is False and b[0]["dst"] == ADDR["server:eth2"], r["subflows"]
    rep = run_dir / r["dir"]
    client = json.loads((rep / "transfer-main.client.json").read_text())
    server = json.loads((rep / "transfer-main.server.json").read_text())
    assert client["mptcp"] is True and server["bytes"] == client["bytes"] == 3_000_000
    assert server["received_sha256"] == client["sent_sha256"]

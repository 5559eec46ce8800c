"""Host filters (nodes.<host>.middlebox, mptcplab/middlebox/nft.py): the kernel's
mptcp_join.sh filters on a host, not a router, two hosts joined by two links:

    client:eth1 10.36.1.2 ---- server:eth1 10.36.1.1
    client:eth2 10.36.2.2 ---- server:eth2 10.36.2.1

* drop-add-addr on the client's output (add_addr_timeout_tests): the server announces
  10.36.2.1, the client's echoes never leave, so the server sends ADD_ADDR again each
  add_addr_timeout (1 s): AddAddrTx >= 2 and the filter's counter shows the dropped echoes;
* block-tcp of 10.36.2.2 on the server's input (subflows_error_tests' REJECT): the client's
  join from 10.36.2.2 is tried and answered by ICMP port unreachable; the capture at
  server:eth2 holds its SYNs and no SYN/ACK, and no join from it is counted by the server.

One quick run, two scenarios of a 3 MB transfer at 8 Mbit/s per link (about 3 s each); the
engine's namespaces carry its unique per-run prefix and are removed even when the traffic
fails, which run_quick asserts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .labkit import nstat, rep_of, run_once, tshark_fields

pytestmark = pytest.mark.netns

TOPO = {"nodes": {n: {"kind": "linux", "image": "mptcplab/host:latest"} for n in ("client", "server")},
        "links": [{"endpoints": ["client:eth1", "server:eth1"]}, {"endpoints": ["client:eth2", "server:eth2"]}]}

ADDR = {f"{n}:eth{i}": f"10.36.{i}.{1 if n == 'server' else 2}/24" for n in ("client", "server") for i in (1, 2)}
LIMITS = {"subflows": 1, "add_addr_accepted": 1}

EXP = {
    "paths": {"A": "client:eth1", "B": "client:eth2"},
    "addressing": {"addresses": ADDR},
    "links": {"client:eth1": {"rate": "8mbit"}, "client:eth2": {"rate": "8mbit"}},
    "nodes": {"client": {"role": "host", "mptcp": {"limits": dict(LIMITS)}},
              "server": {"role": "host", "mptcp": {"limits": dict(LIMITS)}}},
    "traffic": {"flows": {"main": {"kind": "transfer", "client": "client", "server": "server",
                                   "server_address": "server:eth1", "bind": "client:eth1", "mptcp": True,
                                   "bytes": "3MB", "seed": 36, "duration": "15s"}}},
    "probes": {"nstat": True},
    "capture": [{"point": "server:eth1", "snaplen": 128}, {"point": "server:eth2", "snaplen": 128}],
    "calibration": {"enabled": False},
    "quick": {"duration": "15s", "repetitions": 1},
    "scenarios": [
        {"name": "add-addr-dropped", "description": "the client's ADD_ADDR echoes dropped on its output",
         "override": {"nodes": {
             "server": {"sysctls": {"net.mptcp.add_addr_timeout": 1},
                        "mptcp": {"endpoints": [{"address": "server:eth2", "flags": ["signal"]}]}},
             "client": {"middlebox": [{"kind": "drop-add-addr", "direction": "out"}]}}}},
        {"name": "source-rejected", "description": "the server rejects TCP from the client's eth2 address",
         "override": {"nodes": {
             "server": {"middlebox": [{"kind": "block-tcp", "source": "10.36.2.2", "action": "reject"}]},
             "client": {"mptcp": {"endpoints": [{"address": "client:eth2", "flags": ["subflow"]}]}}}}},
    ],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    return run_once(tmp_path_factory.mktemp("hostfilters"), "hostfilters", TOPO, EXP)





def test_dropped_echoes_make_the_server_announce_again(run: tuple[Path, dict[str, Any]]) -> None:
    rep, rec = rep_of(run, "add-addr-dropped")
    assert nstat(rec, "server", "MPTcpExtAddAddrTx") >= 2, rec["probes"]["nstat"]
    assert nstat(rec, "client", "MPTcpExtAddAddr") >= 2
    assert nstat(rec, "client", "MPTcpExtEchoAddTx") >= 2  # echoed each time, and each echo dropped
    assert nstat(rec, "server", "MPTcpExtEchoAdd") == 0
    assert rec["middlebox"]["client"] == nstat(rec, "client", "MPTcpExtEchoAddTx")
    # the announced address is still used: the join to 10.36.2.1 forms
    assert nstat(rec, "server", "MPTcpExtMPJoinAckRx") == 1
    # and the capture at the server: ADD_ADDR (subtype 3) sent at least twice, no echo arrives
    adds = tshark_fields(rep / "capture-server-eth1.pcap", "ip.src", where="tcp.options.mptcp.subtype == 3")
    assert sum(1 for (src,) in adds if src == "10.36.1.1") >= 2, adds
    assert not any(src == "10.36.1.2" for (src,) in adds), adds


def test_a_rejected_source_makes_no_join(run: tuple[Path, dict[str, Any]]) -> None:
    rep, rec = rep_of(run, "source-rejected")
    assert nstat(rec, "client", "MPTcpExtMPJoinSynTx") >= 1  # the join was tried
    assert nstat(rec, "server", "MPTcpExtMPJoinSynRx") == 0  # and never reached the server's TCP
    assert nstat(rec, "client", "MPTcpExtMPJoinSynAckRx") == 0
    assert rec["middlebox"]["server"] >= 1
    pcaps = sorted(rep.glob("capture-server-eth*.pcap"))
    assert pcaps, sorted(p.name for p in rep.iterdir())
    # ICMP errors quote the SYN: their inner header would match too
    syn_from = "!icmp && ip.src == 10.36.2.2 && tcp.flags.syn == 1"
    syns = [r for p in pcaps for r in tshark_fields(p, "tcp.flags.ack", where=syn_from)]
    assert syns, "no SYN from the rejected source in the capture: the filter proved nothing"
    syn_to = "!icmp && ip.dst == 10.36.2.2 && tcp.flags.syn == 1"
    answers = [r for p in pcaps for r in tshark_fields(p, "ip.src", where=syn_to)]
    assert answers == []
    # each answered by the server's ICMP port unreachable (iptables REJECT's default)
    unreach = [r for p in pcaps for r in tshark_fields(p, "ip.src", where="icmp.type == 3 && icmp.code == 3")]
    assert len(unreach) >= 1
    # the transfer itself goes on over the first subflow
    client = json.loads((rep / "transfer-main.client.json").read_text())
    server = json.loads((rep / "transfer-main.server.json").read_text())
    assert server["received_sha256"] == client["sent_sha256"]

"""The ``laminar`` endpoint flag (Linux 6.18), set through the kernel's mptcp_pm netlink by
timeline/upm_tool.py ``endpoint-add`` (iproute2 6.1 cannot), and what it does: mptcp_join.sh's
laminar_endp_tests "without a laminar endpoint" / "with a laminar endpoint".

    client:eth1 10.37.1.2 -- server:eth1 10.37.1.1   (path A, the initial subflow)
    client:eth2 10.37.2.2 -- server:eth2 10.37.2.1   (path B, announced; TCP from 10.37.2.2 rejected)
    client:eth3 10.37.3.2 -- server:eth3 10.37.3.1   (path C)

The server announces 10.37.2.1 and rejects TCP from 10.37.2.2 (a host filter block-tcp). Without
a laminar endpoint the client's join to the announced address leaves from the source its route
gives, 10.37.2.2, and is rejected: no join. With 10.37.3.2 as a laminar endpoint (eth3) the
join leaves from 10.37.3.2, on eth3, and forms. The kernel lists the flag: iproute2 6.1 shows
the bit it does not know as ``rawflags 20`` (MPTCP_PM_ADDR_FLAG_LAMINAR), read back from a
namespace of this test's own; the timeline's endpoint_add with laminar runs the same tool.

One quick run, two scenarios of a 2 MB transfer at 8 Mbit/s per link (about 3 s each); the
engine's namespaces carry its unique per-run prefix and are removed even when the traffic
fails (run_quick asserts it), the test's own namespace in a finally.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mptcplab.net.mptcp import netlink_endpoint_argv, parse_endpoints

from .labkit import netns, nstat, rep_of, run_once, tshark_fields

pytestmark = pytest.mark.netns

LINKS = (1, 2, 3)
TOPO = {"nodes": {n: {"kind": "linux", "image": "mptcplab/host:latest"} for n in ("client", "server")},
        "links": [{"endpoints": [f"client:eth{i}", f"server:eth{i}"]} for i in LINKS]}
ADDR = {f"{n}:eth{i}": f"10.37.{i}.{1 if n == 'server' else 2}" for n in ("client", "server") for i in LINKS}
LIMITS = {"subflows": 2, "add_addr_accepted": 2}

EXP = {
    "paths": {"A": "client:eth1", "B": "client:eth2", "C": "client:eth3"},
    "addressing": {"addresses": {ep: f"{ip}/24" for ep, ip in ADDR.items()}},
    "links": {f"client:eth{i}": {"rate": "8mbit"} for i in LINKS},
    "nodes": {"client": {"role": "host", "mptcp": {"limits": dict(LIMITS)}},
              "server": {"role": "host",
                         "middlebox": [{"kind": "block-tcp", "source": ADDR["client:eth2"], "action": "reject"}],
                         "mptcp": {"limits": {"subflows": 2, "add_addr_accepted": 0},
                                   "endpoints": [{"address": ADDR["server:eth2"], "flags": ["signal"]}]}}},
    "traffic": {"timeline_zero": "connection",
                "flows": {"main": {"kind": "transfer", "client": "client", "server": "server",
                                   "server_address": "server:eth1", "bind": "client:eth1", "mptcp": True,
                                   "bytes": "2MB", "seed": 37, "duration": "15s"}}},
    "probes": {"nstat": True},
    "capture": [{"point": f"server:eth{i}", "snaplen": 128} for i in LINKS],
    "calibration": {"enabled": False},
    "quick": {"duration": "15s", "repetitions": 1},
    "scenarios": [
        {"name": "routed", "description": "no laminar endpoint: the join leaves from the routed source"},
        {"name": "laminar", "description": "10.37.3.2 a laminar endpoint; the timeline adds 10.37.1.2 laminar",
         "override": {
             "nodes": {"client": {"mptcp": {"endpoints": [{"address": ADDR["client:eth3"], "flags": ["laminar"]}]}}},
             "traffic": {"events": [{"at": 0.2, "action": "endpoint_add", "node": "client",
                                     "address": "client:eth1", "flags": ["laminar"]}]}}},
    ],
}
MP_JOIN_SYN = "!icmp && tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.options.mptcp.subtype == 1"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    return run_once(tmp_path_factory.mktemp("laminar"), "laminar", TOPO, EXP)




def _joins(rep: Path) -> list[tuple[str, str, str]]:
    """Every MP_JOIN SYN the server's capture points saw: (point, source, destination)."""
    return [(p.stem.removeprefix("capture-"), src, dst) for p in sorted(rep.glob("capture-server-eth*.pcap"))
            for src, dst in tshark_fields(p, "ip.src", "ip.dst", where=MP_JOIN_SYN)]


def test_the_kernel_lists_the_flag() -> None:
    ns = f"mpltest-lam{os.getpid()}"
    assert ns not in netns()
    sh = ["ip", "netns", "exec", ns]
    try:
        subprocess.run(["ip", "netns", "add", ns], check=True)
        subprocess.run(["ip", "-n", ns, "link", "add", "lam0", "type", "veth", "peer", "name", "lam1"], check=True)
        subprocess.run(["ip", "-n", ns, "addr", "add", "10.37.9.2/24", "dev", "lam0"], check=True)
        argv = netlink_endpoint_argv("10.37.9.2", dev="lam0", eid=9, port=None, flags=["subflow", "laminar"])
        added = subprocess.run([*sh, *argv], capture_output=True, text=True, timeout=30)
        assert added.returncode == 0 and added.stdout.strip() == "endpoint-add: done", added
        shown = subprocess.run(["ip", "-n", ns, "mptcp", "endpoint", "show"], capture_output=True, text=True,
                               check=True).stdout
        assert "rawflags 20" in shown, shown  # iproute2 6.1: the bit it has no name for, the kernel's laminar
        (ep,) = parse_endpoints(shown)
        assert (str(ep.address), ep.id, ep.flags) == ("10.37.9.2", 9, ("subflow", "laminar")), shown
        # the kernel's refusal, in one line with its extended ack: the same endpoint again (id 9 taken: EBUSY)
        again = subprocess.run([*sh, *argv], capture_output=True, text=True, timeout=30)
        assert again.returncode == 1 and again.stderr.count("\n") == 1, again
        assert again.stderr.startswith("endpoint-add: ") and "duplicate" in again.stderr, again.stderr
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    assert ns not in netns()


def test_without_a_laminar_endpoint_the_join_leaves_from_the_rejected_source(
        run: tuple[Path, dict[str, Any]]) -> None:
    rep, rec = rep_of(run, "routed")
    joins = _joins(rep)
    assert joins and {(src, dst) for _, src, dst in joins} == {(ADDR["client:eth2"], ADDR["server:eth2"])}, joins
    assert nstat(rec, "client", "MPTcpExtMPJoinSynTx") == 1
    assert nstat(rec, "server", "MPTcpExtMPJoinSynRx") == 0 and nstat(rec, "client", "MPTcpExtMPJoinSynAckRx") == 0
    assert nstat(rec, "client", "MPTcpExtAddAddr") >= 1


def test_with_a_laminar_endpoint_the_join_leaves_from_it(run: tuple[Path, dict[str, Any]]) -> None:
    rep, rec = rep_of(run, "laminar")
    log = (rep / "commands.log").read_text()
    assert f"upm_tool.py endpoint-add --address {ADDR['client:eth3']} --dev eth3 --flags laminar" in log
    assert "mptcp endpoint add 10.37.3.2" not in log
    # the join to the announced address, from the laminar endpoint, on its interface (eth3)
    joins = _joins(rep)
    assert {(pt, src, dst) for pt, src, dst in joins} == {("server-eth3", ADDR["client:eth3"], ADDR["server:eth2"])}, \
        joins
    for counter, node in (("MPTcpExtMPJoinSynTx", "client"), ("MPTcpExtMPJoinSynRx", "server"),
                          ("MPTcpExtMPJoinSynAckRx", "client"), ("MPTcpExtMPJoinAckRx", "server")):
        assert nstat(rec, node, counter) == 1, (counter, rec["probes"]["nstat"])
    c = [s for s in rec["subflows"] if s["src"] == ADDR["client:eth3"] and s["established"]]
    assert c and (c[0]["bytes"] or 0) > 0, rec["subflows"]
    client = json.loads((rep / "transfer-main.client.json").read_text())
    server = json.loads((rep / "transfer-main.server.json").read_text())
    assert server["received_sha256"] == client["sent_sha256"]


def test_the_timelines_laminar_endpoint_ran_the_tool(run: tuple[Path, dict[str, Any]]) -> None:
    rep, _ = rep_of(run, "laminar")
    with (rep / "events.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["action"] == "endpoint_add"]
    assert len(rows) == 1, rows
    (row,) = rows
    assert row["rc"] == "0" and row["flags"] == "laminar", row
    assert f"endpoint-add --address {ADDR['client:eth1']} --dev eth1 --flags laminar" in row["commands"], row

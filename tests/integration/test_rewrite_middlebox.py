"""The rewriting middleboxes (mptcplab-mbox on a router, NFQUEUE) in one quick run of a
lab written here, the two-path lab of test_middlebox.py:

    client:eth1 - ra - rs - server        (path A, the initial subflow)
    client:eth2 - rb - rs                 (path B, the join)

- isn: rs adds an offset to the client's sequence numbers (both subflows cross rs):
  the captures on the two sides of rs see different raw sequence numbers, MPTCP is still
  negotiated and both subflows carry data (DSS maps relative to each side's ISN);
- flip-*: ra inverts a payload byte of path A's data segments (NSDI 2012 §3): with DSS
  checksums on both ends the kernel counts MPTcpExtDataCsumErr and reacts (1 subflow:
  MP_FAIL and fallback; 2 subflows: the subflow is reset); with checksums off nothing
  notices (counters 0).
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from .labkit import by_name, codes, run_quick, write_lab
from .test_middlebox import EXPERIMENT as BASE
from .test_middlebox import TOPOLOGY

pytestmark = pytest.mark.netns

def flip(csum: bool, subflows: int) -> dict[str, Any]:
    ends: dict[str, Any] = {n: {"sysctls": {"net.mptcp.checksum_enabled": 1}} if csum else {}
                            for n in ("client", "server")}
    if subflows == 1:
        ends["client"]["mptcp"] = {"limits": {"subflows": 0, "add_addr_accepted": 0}, "endpoints": []}
    return {"nodes": {"ra": {"middlebox": [{"kind": "modify-payload", "after": 100, "every": 100}]}, **ends}}


EXPERIMENT = copy.deepcopy(BASE)
EXPERIMENT["probes"] = {"nstat": True}
EXPERIMENT["scenarios"] = [
    {"name": "isn", "override": {"nodes": {"rs": {"middlebox": [{"kind": "rewrite-isn", "offset": 123456789}]}}}},
    {"name": "flip-csum-1sf", "override": flip(True, 1)},
    {"name": "flip-csum-2sf", "override": flip(True, 2)},
    {"name": "flip-nocsum-2sf", "override": flip(False, 2)},
]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    root = tmp_path_factory.mktemp("rewrite")
    lab = write_lab(root / "labs", "rewrite", TOPOLOGY, EXPERIMENT)
    _, summary = run_quick(lab, root / "results")
    return next((root / "results" / "rewrite").glob("2*")), by_name(summary)


def rep_dir(run: tuple[Path, dict[str, dict[str, Any]]], name: str) -> Path:
    return run[0] / "scenarios" / name / "rep1"


def mbox_stats(rec: dict[str, Any]) -> dict[str, Any]:
    assert not any(s and "mbox" in s for s in (rec.get("delay_line_stats") or {}).values())
    (st,) = [s for s in (rec.get("daemon_stats") or {}).values() if s and "mbox" in s]
    return st


def mib(run: tuple[Path, dict[str, dict[str, Any]]], name: str, node: str) -> dict[str, int]:
    df = pd.read_csv(rep_dir(run, name) / "probes" / "nstat.csv")
    df = df[df.node == node]
    return dict(zip(df.counter, df.delta, strict=True))


def syn_seqs(pcap: Path) -> set[tuple[str, int]]:
    """(client port, raw sequence number) of every SYN in a capture (tshark: the oracle)."""
    out = subprocess.run(["tshark", "-r", str(pcap), "-Y", "tcp.flags.syn==1 && tcp.flags.ack==0",
                          "-T", "fields", "-e", "tcp.srcport", "-e", "tcp.seq_raw"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return {(port, int(seq)) for port, seq in (line.split("\t") for line in out if line)}


def test_isn_rewriting_keeps_mptcp(run: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    r = run[1]["isn"]
    st = mbox_stats(r)
    assert st["seq_rewritten"] > 0 and st["ack_rewritten"] > 0 and st["untracked"] == 0, st
    assert r["mptcp"]["verified"], r["warnings"]
    assert all(s["contributed"] for s in r["subflows"] if s["path"] in ("A", "B")), r["subflows"]
    d = rep_dir(run, "isn")
    client = syn_seqs(d / "capture-client-eth1.pcap") | syn_seqs(d / "capture-client-eth2.pcap")
    server = syn_seqs(d / "capture-server-eth1.pcap")
    # the same SYNs (both subflows of the data connection, iperf3's control connection)
    assert len(server) >= 3 and {p for p, _ in client} == {p for p, _ in server}
    assert not client & server  # raw seq differs across the router ...
    assert {(p, (s + 123456789) % 2**32) for p, s in client} == server  # ... by the offset


def nonzero(m: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in m.items() if v and k.startswith("MPTcpExt")}


def test_one_subflow_payload_modification_is_mp_fail_and_fallback(
        run: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    """The receiver's DSS checksum fails: it sends MP_FAIL, the sender answers with an
    infinite mapping (fallback to TCP on the one subflow), as RFC 8684 §3.7 says."""
    assert mbox_stats(run[1]["flip-csum-1sf"])["flipped"] > 0
    srv, cli = mib(run, "flip-csum-1sf", "server"), mib(run, "flip-csum-1sf", "client")
    assert srv.get("MPTcpExtDataCsumErr", 0) > 0 and srv.get("MPTcpExtMPFailTx", 0) > 0, nonzero(srv)
    assert cli.get("MPTcpExtMPFailRx", 0) > 0 and cli.get("MPTcpExtInfiniteMapTx", 0) > 0, nonzero(cli)
    assert run[1]["flip-csum-1sf"]["mptcp"]["fallback"]


def test_two_subflow_payload_modification_resets_the_subflow(run: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    """With another subflow, the receiver resets the corrupted one (MP_FAIL + MP_TCPRST)
    and the data goes on over path B."""
    r = run[1]["flip-csum-2sf"]
    assert mbox_stats(r)["flipped"] > 0
    srv, cli = mib(run, "flip-csum-2sf", "server"), mib(run, "flip-csum-2sf", "client")
    assert srv.get("MPTcpExtDataCsumErr", 0) > 0 and srv.get("MPTcpExtMPRstTx", 0) > 0, nonzero(srv)
    assert cli.get("MPTcpExtMPRstRx", 0) > 0 and cli.get("MPTcpExtInfiniteMapTx", 0) == 0, nonzero(cli)
    (b,) = [s for s in r["subflows"] if s["path"] == "B"]
    assert b["contributed"] and r["goodput_mbps"] > 20
    # the capture's verdict says so: a subflow reset, not a fallback to TCP
    assert "mp-fail-subflow-reset" in codes(r), codes(r)
    assert not r["mptcp"]["fallback"]
    assert "mp-fail-subflow-reset" not in codes(run[1]["flip-csum-1sf"])


def test_payload_modification_undetected_without_checksums(run: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    st = mbox_stats(run[1]["flip-nocsum-2sf"])
    assert st["flipped"] > 0, st
    for node in ("client", "server"):
        m = mib(run, "flip-nocsum-2sf", node)
        assert m.get("MPTcpExtDataCsumErr", 0) == 0 and m.get("MPTcpExtMPFailTx", 0) == 0

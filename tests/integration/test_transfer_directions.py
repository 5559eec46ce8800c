"""The verified transfer's directions and fast close (kind ``transfer``), proved from the capture:

    client:eth1 -- server:eth1 (16 Mbit/s)

Three scenarios of one quick run: ``download`` (the server sends 1 MB), ``both`` (each side
sends 1 MB at once on the one connection), ``fastclose`` (both ways, the client closes after
64 KB sent and read with the server's data unread). Read from the capture with tshark, not
through the analysis: download's payload flows server -> client only, both's each way; the
fast close shows an MP_FASTCLOSE option (subtype 7) sent by the client, and the client's
MPTcpExtMPFastcloseTx moved by one (the nstat probe). Each direction's bytes verified by the
kind (SHA-256), the fast close not called a failure. About 10 s; the engine removes its
namespaces (unique per run) even when the traffic fails, which run_quick asserts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .labkit import rep_record, run_once, tshark_fields

pytestmark = pytest.mark.netns

PORT = 7100
MB = 1_000_000
TOPO = {"nodes": {n: {"kind": "linux", "image": "mptcplab/host:latest"} for n in ("client", "server")},
        "links": [{"endpoints": ["client:eth1", "server:eth1"]}]}

EXP = {
    "paths": {"A": "client:eth1"},
    "links": {"client:eth1": {"rate": "16mbit"}},
    "nodes": {"client": {"role": "host"}, "server": {"role": "host"}},
    "traffic": {"flows": {"main": {"kind": "transfer", "client": "client", "server": "server",
                                   "server_address": "server:eth1", "bind": "client:eth1", "mptcp": True,
                                   "bytes": "1MB", "seed": 35, "duration": "15s", "port": PORT}}},
    "probes": {"nstat": True},
    "capture": [{"point": "server:eth1", "snaplen": 128}],
    "calibration": {"enabled": False},
    "quick": {"duration": "15s", "repetitions": 1},
    "scenarios": [
        {"name": "download", "description": "the server sends",
         "override": {"traffic": {"flows": {"main": {"direction": "download"}}}}},
        {"name": "both", "description": "each side sends at once",
         "override": {"traffic": {"flows": {"main": {"direction": "both"}}}}},
        {"name": "fastclose", "description": "the client closes with the server's data unread",
         "override": {"traffic": {"flows": {"main": {"direction": "both", "fastclose": "client",
                                                     "bytes": "64KB"}}}}},
    ],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    return run_once(tmp_path_factory.mktemp("transferdir"), "transferdir", TOPO, EXP)



def _payload(run_dir: Path, r: dict[str, Any]) -> tuple[int, int]:
    """TCP payload bytes client -> server and server -> client in the capture."""
    pcap = run_dir / r["dir"] / "capture-server-eth1.pcap"
    up = sum(int(x[0]) for x in tshark_fields(pcap, "tcp.len", where=f"tcp.len > 0 && tcp.dstport == {PORT}"))
    down = sum(int(x[0]) for x in tshark_fields(pcap, "tcp.len", where=f"tcp.len > 0 && tcp.srcport == {PORT}"))
    return up, down


def test_download_carries_the_data_server_to_client(run: tuple[Path, dict[str, Any]]) -> None:
    run_dir, recs = run
    up, down = _payload(run_dir, recs["download"])
    assert down >= MB and up < 10_000, (up, down)
    t = rep_record(run_dir, "download")["flows"][0]["transfer"]
    assert t["verdict"] == "equal" and t["upload"] is None, t
    assert t["download"]["sent_bytes"] == t["download"]["received_bytes"] == MB, t["download"]


def test_both_carries_the_data_both_ways(run: tuple[Path, dict[str, Any]]) -> None:
    run_dir, recs = run
    up, down = _payload(run_dir, recs["both"])
    assert up >= MB and down >= MB, (up, down)
    t = rep_record(run_dir, "both")["flows"][0]["transfer"]
    assert t["verdict"] == "equal" and t["received_bytes"] == 2 * MB, t
    for leg in (t["upload"], t["download"]):
        assert leg["verdict"] == "equal" and leg["received_bytes"] == MB and leg["differing_bytes"] == 0, leg


def test_fastclose_shows_mp_fastclose_from_the_client_and_its_counter(run: tuple[Path, dict[str, Any]]) -> None:
    run_dir, recs = run
    r = recs["fastclose"]
    pcap = run_dir / r["dir"] / "capture-server-eth1.pcap"
    # MP_FASTCLOSE is MPTCP option subtype 7 (RFC 8684 section 3.5), here from the client's port
    fast = tshark_fields(pcap, "tcp.srcport", "tcp.dstport", where="tcp.options.mptcp.subtype == 7")
    assert fast and all(int(dst) == PORT for _, dst in fast), fast
    rep = rep_record(run_dir, "fastclose")
    nstat = rep["probes"]["nstat"]
    assert nstat["client"].get("MPTcpExtMPFastcloseTx") == 1, nstat
    assert nstat["server"].get("MPTcpExtMPFastcloseRx") == 1, nstat
    assert not nstat["server"].get("MPTcpExtMPFastcloseTx"), nstat
    # the truncated transfer is no failure: what each side read is intact, the reset expected
    t = rep["flows"][0]["transfer"]
    assert t["fastclose"] == "client" and t["reset"] is True and t["verdict"] == "equal", t
    assert t["upload"]["received_bytes"] == t["download"]["received_bytes"] == 64_000, t
    assert t["download"]["sent_bytes"] >= 64_000, t["download"]
    assert not rep["flows"][0].get("iperf3_error"), rep["flows"][0]
    # the MPTCP verification does not take the expected reset for an error
    assert rep["mptcp"]["verified"], rep["warnings"]

"""Every connection in a capture (analysis/connlist.py), on captures built packet by packet
(pcapkit.py via test_depth.Conn): two MPTCP connections with a join each and a plain TCP one."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pcapkit as K
import pytest
from test_depth import ACK, C1, C2, PSH, SYN, Conn

from mptcplab.analysis import CaptureFile, pcapread
from mptcplab.analysis.connlist import COLUMNS, list_connections
from mptcplab.analysis.standalone import analyze_files, describe

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")

S2 = "10.0.3.3"


def three_connections() -> list[tuple[float, bytes]]:
    main = Conn()
    main.handshakes()
    main.data(1, 101, 1, 1)
    main.data(2, 701, 1001, 1)
    second = Conn(port=5202, cport=41000, kc=0x0102030405060708, ks=0x1112131415161718)
    second.t = 200.0
    second.handshakes()
    second.data(1, 101, 1, 1, n=300)
    plain = Conn(s=S2, port=80, cport=42000)        # a plain TCP connection: no MPTCP option
    plain.t = 300.0
    plain.add(C1, 42000, S2, 80, 10, 0, SYN, b"")
    plain.add(S2, 80, C1, 42000, 50, 11, SYN | ACK, b"")
    plain.add(C1, 42000, S2, 80, 11, 51, ACK, b"")
    plain.add(C1, 42000, S2, 80, 11, 51, ACK | PSH, b"", b"g" * 40)
    plain.add(S2, 80, C1, 42000, 51, 51, ACK | PSH, b"", b"h" * 500)
    return sorted(main.frames + second.frames + plain.frames, key=lambda f: f[0])


def test_every_connection_and_its_subflows(tmp_path: Path) -> None:
    path = K.write_pcap(tmp_path / "all.pcap", three_connections())
    got = list_connections(pcapread.extract([CaptureFile(path, "p")]), ["p"]).to_pandas()
    assert list(got.columns) == COLUMNS
    assert got["connection"].nunique() == 3
    rows = {r.subflow: r for r in got.itertuples()}
    a, b = rows[f"{C1}:40000"], rows[f"{C2}:40001"]
    assert (a.kind, b.kind, a.mptcp, b.mptcp) == ("mp_capable", "mp_join", True, True)
    assert {a.connection, b.connection} == {f"{C1}:40000->10.0.3.2:5201"}
    assert (a.bytes_to_server, b.bytes_to_server, a.established, b.established) == (1000, 1000, True, True)
    c = rows[f"{C2}:41001"]                          # the second connection's join, on port 5202
    assert c.connection == f"{C1}:41000->10.0.3.2:5202" and c.server == "10.0.3.2:5202"
    p = rows[f"{C1}:42000"]
    assert (p.kind, p.mptcp, p.server, p.bytes_to_server, p.bytes_to_client) == ("tcp", False, f"{S2}:80", 40, 500)
    # connections in order of first SYN, times from the capture's first packet
    assert list(dict.fromkeys(got["connection"]))[0] == a.connection and a.first_t == 0.0
    assert p.first_t == pytest.approx(200.0)


def test_analyze_command_lists_the_other_connections(tmp_path: Path) -> None:
    path = K.write_pcap(tmp_path / "all.pcap", three_connections())
    fa, g = analyze_files([path], tmp_path / "out")
    assert (g.connections, g.mptcp_connections) == (3, 2)
    assert len(pd.read_csv(tmp_path / "out" / "capture_connections.csv")) == 5
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["capture_connections"] == {
        "connections": 3, "mptcp": 2}
    assert any("3 connection(s) in the capture, 2 of them MPTCP" in line for line in describe(fa, g))


def test_nothing_to_list_without_a_syn(tmp_path: Path) -> None:
    c = Conn()
    c.data(1, 101, 1, 1)
    path = K.write_pcap(tmp_path / "nosyn.pcap", c.frames)
    assert list_connections(pcapread.extract([CaptureFile(path, "p")]), ["p"]).is_empty


def test_analyze_command_exports_the_packet_table_when_asked(tmp_path: Path) -> None:
    from mptcplab.analysis.packets import COLUMNS as PACKET_COLUMNS
    from mptcplab.cli import main

    path = K.write_pcap(tmp_path / "all.pcap", three_connections())
    assert main(["analyze", str(path), "--out", str(tmp_path / "a")]) == 0
    assert not (tmp_path / "a" / "packets.csv").exists()
    assert main(["analyze", str(path), "--out", str(tmp_path / "b"), "--packets"]) == 0
    pk = pd.read_csv(tmp_path / "b" / "packets.csv")
    assert list(pk.columns) == list(PACKET_COLUMNS) and len(pk) == len(three_connections())

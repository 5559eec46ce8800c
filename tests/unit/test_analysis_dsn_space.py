"""The data sequence space on captures made anywhere (issue 33): v1's implicit mapping of
data carried with MP_CAPABLE, 4-octet DSNs widened across subflows past 2^31 and 2^32, RTT
labelled by where the capture was taken, and every data byte delivered exactly once."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pcapkit as K
import pytest
from test_depth import ACK, C1, C2, SPEC, Conn, S

from mptcplab.analysis import CaptureFile, FlowAnalysis, analyze_flow, delivery, depth, pcapread
from mptcplab.analysis.depth import rtt_kind
from mptcplab.analysis.flows import (
    find_subflows,
    group_connections,
    only_joins_off_port,
    orient_tcp,
    pick_data_connection,
)
from mptcplab.analysis.pcapread import extract
from mptcplab.analysis.sides import capture_end
from mptcplab.analysis.standalone import analyze_files, describe

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")

SYN, PSH = 0x02, 0x08


def analyze(c: Conn, tmp_path: Path) -> FlowAnalysis:
    return analyze_flow([CaptureFile(c.write(tmp_path / "c.pcap"), "p")], SPEC)


def test_data_on_the_mp_capable_ack_is_mapped_in_dsn_csv(tmp_path: Path) -> None:
    # tshark (mptcp.analyze_mappings) gives frame 3 mptcp.dsn 1, its own related mapping, 1000 bytes
    c = Conn()
    c.add(C1, 40000, S, 5201, 100, 0, SYN, K.mp_capable())
    c.add(S, 5201, C1, 40000, 500, 101, SYN | ACK, K.mp_capable(sendkey=c.ks))
    c.add(C1, 40000, S, 5201, 101, 501, ACK | PSH, K.mp_capable(sendkey=c.kc, recvkey=c.ks, dll=1000), b"d" * 1000)
    c.data(1, 1101, 1001, 1001)
    c.ack(1, 2101, 2001)
    r = analyze(c, tmp_path)
    maps = r.dsn.to_pandas()[r.dsn.to_pandas()["kind"] == "map"]
    assert list(maps["dsn"]) == [1, 1001] and list(maps["ssn"]) == [1, 1001] and list(maps["length"]) == [1000, 1000]
    assert r.reinjections.is_empty and r.mptcp_events.is_empty      # neither a re-send nor an infinite mapping
    assert r.hol_connection["hol_segments"] == 2 and r.hol_connection["ooo_share"] == 0.0


def _received(path: Path) -> tuple[int, dict[str, list[int]]]:
    """(the data sender's IDSN, subflow -> relative DSNs of the segments delivery() placed)."""
    pk = extract([CaptureFile(path, "p")])
    t = orient_tcp(pk, SPEC.server_port, SPEC.join_ports)
    conns = group_connections(only_joins_off_port(find_subflows(t, ["p"], True), SPEC.server_port))
    cid = pick_data_connection(conns)
    assert cid is not None
    conn = conns[cid]
    deep = depth.depth(pk, t, conn, SPEC.paths, True, 0.0)
    assert deep.idsn is not None
    dl = delivery.delivery(pk, t, conn, SPEC.paths, True, 0.0, deep.idsn, same_clock=False)
    return deep.idsn, {n: [int(x - np.uint64(deep.idsn)) for x in st] for n, (st, _, _) in dl.received.items()}


@pytest.mark.parametrize("past", [1 << 31, 1 << 32, 5 << 31])
def test_4_octet_dsns_of_a_late_join_are_widened_across_subflows(tmp_path: Path, past: int) -> None:
    """The join's first 4-octet DSN lies ``past`` bytes after the IDSN: next to the IDSN alone
    it would be placed a multiple of 4 GB too low (or, past 2 GB, below the IDSN)."""
    c = Conn()
    c.handshakes()
    steps = [1 + k * (past // 8) for k in range(8)]          # A: each step under 2^31
    ssn = 1
    for rel in steps:
        c.add(C1, 40000, S, 5201, 100 + ssn, 501, ACK | PSH,
              K.dss(dsn=(c.dc + rel) % 2**32, dsn64=False, ssn=ssn, dll=1000), b"d" * 1000)
        ssn += 1000
    late = 1 + past
    c.add(C2, 40001, S, 5201, 701, 901, ACK | PSH, K.dss(dsn=(c.dc + late) % 2**32, dsn64=False, ssn=1, dll=1000),
          b"e" * 1000)
    c.add(C1, 40000, S, 5201, 100 + ssn, 501, ACK | PSH,
          K.dss(dsn=(c.dc + late + 1000) % 2**32, dsn64=False, ssn=ssn, dll=1000), b"d" * 1000)
    _, got = _received(c.write(tmp_path / "c.pcap"))
    assert got == {f"{C1}:40000": [*steps, late + 1000], f"{C2}:40001": [late]}


def _one_subflow(at_server: bool, fast: bool = False) -> Conn:
    """An upload on one subflow with a 20 ms path, captured at the server (the data receiver)
    or at the client (the data sender); the receiver ACKs each segment 1 ms after it.
    ``fast``: a handshake whose two gaps are alike and tens of microseconds (a lab path)."""
    c = Conn()
    near, far = (0.00002, 0.00003) if fast else (0.0005, 0.02) if at_server else (0.02, 0.0005)
    c.add(C1, 40000, S, 5201, 100, 0, SYN, K.mp_capable(), dt=near)
    c.add(S, 5201, C1, 40000, 500, 101, SYN | ACK, K.mp_capable(sendkey=c.ks), dt=far)
    c.add(C1, 40000, S, 5201, 101, 501, ACK, K.mp_capable(sendkey=c.kc, recvkey=c.ks), dt=0.001)
    for k in range(5):
        c.data(1, 101 + 1000 * k, 1 + 1000 * k, 1 + 1000 * k, dt=0.001 if at_server else 0.02)
        c.ack(1, 1101 + 1000 * k, 1001 + 1000 * k, dt=0.01)
    return c


@pytest.mark.parametrize(("at_server", "kind"), [(True, "ack_delay"), (False, "path")])
def test_rtt_at_the_data_receiver_is_labelled_ack_delay(tmp_path: Path, at_server: bool, kind: str) -> None:
    path = _one_subflow(at_server).write(tmp_path / "c.pcap")
    r = analyze_flow([CaptureFile(path, "p")], SPEC)
    name = f"{C1}:40000"
    assert r.rtt_kind == {name: kind} and r.to_dict()["rtt_kind"] == {name: kind}
    fa, g = analyze_files([path], tmp_path / "out")
    line = next(x for x in describe(fa, g) if name in x and "bytes" in x)
    if at_server:
        assert fa.subflows[0].rtt_median_ms == pytest.approx(1.0)       # the ACK delay, not 20 ms
        assert "ACK delay median 1.0 ms" in line and "not the path RTT" in line and "rtt median" not in line
    else:
        assert fa.subflows[0].rtt_median_ms == pytest.approx(20.0) and "path rtt median 20.0 ms" in line
    assert list(pd.read_csv(tmp_path / "out" / "subflows.csv")["rtt_kind"]) == [kind]


def test_capture_end_from_the_handshake_gaps() -> None:
    fl = np.array([SYN, SYN, SYN | ACK, ACK, ACK])
    fc = np.array([True, True, False, True, False])
    # the first SYN went unanswered: the gap counts from the retransmitted one
    assert capture_end(np.array([0.0, 1.0, 1.02, 1.0201, 1.03]), fl, fc) == "client"
    assert capture_end(np.array([0.0, 1.0, 1.0001, 1.02, 1.03]), fl, fc) == "server"
    assert capture_end(np.array([0.0, 1.0, 1.01, 1.02, 1.03]), fl, fc) == "middle"
    assert capture_end(np.array([0.0, 1.0]), fl[2:4], fc[2:4]) is None     # no SYN captured


def test_a_handshake_too_fast_to_tell_places_no_end() -> None:
    fl = np.array([SYN, SYN | ACK, ACK])
    fc = np.array([True, False, True])
    assert capture_end(np.array([1.0, 1.000026, 1.00004]), fl, fc) is None      # 26 and 14 us
    assert rtt_kind(None, True) == "unknown" and rtt_kind("server", True) == "ack_delay"
    assert rtt_kind("client", False) == "ack_delay" and rtt_kind("middle", False) == "partial"


def test_the_labs_receiver_node_says_ack_delay(tmp_path: Path) -> None:
    path = _one_subflow(True, fast=True).write(tmp_path / "c.pcap")
    spec = dataclasses.replace(SPEC, receiver_node="server")
    assert analyze_flow([CaptureFile(path, "server:eth0")], spec).rtt_kind == {f"{C1}:40000": "ack_delay"}
    assert analyze_flow([CaptureFile(path, "client:eth1")], spec).rtt_kind == {f"{C1}:40000": "unknown"}
    assert analyze_flow([CaptureFile(path, "server:eth0")], SPEC).rtt_kind == {f"{C1}:40000": "unknown"}

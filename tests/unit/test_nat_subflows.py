"""A NAT between capture points: one subflow, two 4-tuples (analysis/flows.merge_translated),
on hand-made captures of tests/unit/test_depth.py's connection."""

from __future__ import annotations

from pathlib import Path

import pcapkit as K
from test_depth import C1, C2, SPEC, Conn, reinjection_conn

from mptcplab.analysis import CaptureFile, analyze_flow, pcapread
from mptcplab.analysis.standalone import guess_spec, nat_addresses

NAT = {C1: "10.0.9.1", C2: "10.0.9.2"}


class Beyond(Conn):
    """The same packets as a point beyond a NAT sees them: client addresses rewritten, one
    router hop further from the client (TTL 63)."""

    def __init__(self, nat: dict[str, str], **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.nat = nat

    def add(self, src: str, sp: int, dst: str, dp: int, seq: int, ack: int, fl: int, opts: bytes,
            payload: bytes = b"", dt: float = 0.001) -> None:
        seg = K.tcp(sp, dp, seq, ack, fl, opts, payload)
        self.frames.append((self.t, K.eth(K.ipv4(self.nat.get(src, src), self.nat.get(dst, dst), 6, seg, ttl=63))))
        self.t += dt


def beyond() -> Conn:
    """reinjection_conn's packets as a server-side point beyond the NAT sees them."""
    c = Beyond(NAT)
    c.handshakes()
    c.data(1, 101, 1, 1)
    c.data(1, 1101, 1001, 1001)
    c.data(2, 701, 1001, 1)
    c.data(2, 1701, 2001, 1001)
    c.data(1, 101, 1, 1)
    c.ack(1, 2101, 3001)
    c.ack(2, 2701, 3001)
    return c


def captures(tmp: Path) -> list[CaptureFile]:
    return [CaptureFile(reinjection_conn().write(tmp / "client.pcap"), "client:eth1"),
            CaptureFile(beyond().write(tmp / "server.pcap"), "server:eth1")]


def test_a_subflow_seen_through_a_nat_is_one_subflow(tmp_path: Path) -> None:
    fa = analyze_flow(captures(tmp_path), SPEC)
    assert [(s.path, s.src) for s in fa.subflows] == [("A", C1), ("B", C2)]
    assert [s.translated for s in fa.subflows] == [{"server:eth1": f"{NAT[C1]}:40000"},
                                                   {"server:eth1": f"{NAT[C2]}:40001"}]
    # the one re-send of the connection, not the same data seen again beyond the NAT
    assert fa.mptcp_retransmissions == 1


def test_one_point_seeing_both_4_tuples_keeps_them_apart(tmp_path: Path) -> None:
    """Two 4-tuples at one point are two connections, whatever their ISNs."""
    both = reinjection_conn()
    both.frames += beyond().frames
    fa = analyze_flow([CaptureFile(both.write(tmp_path / "both.pcap"), "p")], SPEC)
    assert all(not s.translated for s in fa.subflows)
    assert fa.warnings and {w.code for w in fa.warnings} == {"unknown-path"}


def test_the_guess_leaves_translated_addresses_out_of_the_paths(tmp_path: Path) -> None:
    pk = pcapread.extract(captures(tmp_path))
    syns = pk.take((pk.arr("flags") & 0x12) == 0x02)
    assert nat_addresses(syns) == set(NAT.values())
    assert set(guess_spec(pk).paths) == {C1, C2}

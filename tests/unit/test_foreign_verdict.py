"""The verdict of ``mptcplab analyze`` on a file made elsewhere (FlowSpec.foreign): only what
the file shows; the contribution rule's lab assumptions left out (contribution.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pcapkit as K
import pytest
from test_mptcp_versions import connection

from mptcplab.analysis import pcapread
from mptcplab.analysis.model import TOO_SMALL
from mptcplab.analysis.mpversion import idsn, token
from mptcplab.analysis.standalone import analyze_files

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")

SYN, ACK, PSH = 0x02, 0x10, 0x08
C1, C2, S = "10.0.1.2", "10.0.2.2", "10.0.3.2"
KC, KS = 0x1111222233334444, 0x5555666677778888


def write(path: Path, frames: list[bytes]) -> Path:
    return K.write_pcap(path, [(100 + i / 1000, f) for i, f in enumerate(frames)])


def test_small_two_subflow_v0_capture_is_verified_and_says_it_is_small(tmp_path: Path) -> None:
    tok = int.from_bytes(hashlib.sha1(KS.to_bytes(8, "big")).digest()[:4], "big")
    fa, _ = analyze_files([write(tmp_path / "v0.pcap", connection(0, tok))], tmp_path / "out")
    assert fa.mptcp_negotiated and fa.mptcp_version == 0 and len(fa.subflows) == 2
    assert all(s.contributed for s in fa.subflows)
    assert not any("did not contribute" in d for d in fa.diagnostics)
    assert fa.verified
    assert [w.code for w in fa.warnings] == [TOO_SMALL] and "too small to judge" in fa.warnings[0]


def test_plain_tcp_of_the_same_size_verified_too(tmp_path: Path) -> None:
    frames = [K.eth(K.ipv4(C1, S, 6, K.tcp(40000, 5201, 100, 0, SYN))),
              K.eth(K.ipv4(S, C1, 6, K.tcp(5201, 40000, 500, 101, SYN | ACK))),
              K.eth(K.ipv4(C1, S, 6, K.tcp(40000, 5201, 101, 501, ACK | PSH, payload=b"d" * 3000))),
              K.eth(K.ipv4(S, C1, 6, K.tcp(5201, 40000, 501, 3101, ACK)))]
    fa, _ = analyze_files([write(tmp_path / "tcp.pcap", frames)], tmp_path / "out")
    assert fa.verified and not fa.mptcp_negotiated


def two_subflows(a_segments: int, b_segments: int) -> list[bytes]:
    """v1: A carries ``a_segments`` of 1448 bytes, then B ``b_segments``; each acknowledged."""
    dc, out = idsn(KC, 1), []

    def seg(src: str, sp: int, dst: str, dp: int, seq: int, ack: int, fl: int, opts: bytes, pl: bytes = b"") -> None:
        out.append(K.eth(K.ipv4(src, dst, 6, K.tcp(sp, dp, seq, ack, fl, opts, pl))))

    seg(C1, 40000, S, 5201, 100, 0, SYN, K.mp_capable())
    seg(S, 5201, C1, 40000, 500, 101, SYN | ACK, K.mp_capable(sendkey=KS))
    seg(C1, 40000, S, 5201, 101, 501, ACK, K.mp_capable(sendkey=KC, recvkey=KS))
    seg(C2, 40001, S, 5201, 700, 0, SYN, K.mp_join_syn(token(KS, 1)))
    seg(S, 5201, C2, 40001, 900, 701, SYN | ACK, K.mp_join_synack())
    seg(C2, 40001, S, 5201, 701, 901, ACK, K.mp_join_ack())
    seg(S, 5201, C2, 40001, 901, 701, ACK, K.dss(data_ack=dc + 1))
    d = 1
    for on, n in ((1, a_segments), (2, b_segments)):
        c, p, isn, sack = (C1, 40000, 101, 501) if on == 1 else (C2, 40001, 701, 901)
        for i in range(n):
            seg(c, p, S, 5201, isn + i * 1448, sack, ACK | PSH, K.dss(dsn=dc + d, ssn=1 + i * 1448, dll=1448),
                b"x" * 1448)
            d += 1448
            seg(S, 5201, c, p, sack, isn + (i + 1) * 1448, ACK, K.dss(data_ack=dc + d))
    return out


def test_subflow_that_carried_everything_contributed(tmp_path: Path) -> None:
    fa, _ = analyze_files([write(tmp_path / "one.pcap", two_subflows(30, 0))], tmp_path / "out")
    a, b = fa.subflows
    assert a.share == 1.0 and a.contributed
    assert not any("did not contribute" in d and a.name in d for d in fa.diagnostics)
    assert not b.contributed      # B did carry nothing: said so
    assert fa.diagnostics == ["path B: subflow established but carried no data (no ICMP frag-needed seen)"]


def test_floor_still_names_a_subflow_that_carried_next_to_nothing(tmp_path: Path) -> None:
    fa, _ = analyze_files([write(tmp_path / "bh.pcap", two_subflows(30, 1))], tmp_path / "out")
    a, b = fa.subflows
    assert a.contributed and not b.contributed and not fa.verified
    assert any("did not contribute" in d and b.name in d for d in fa.diagnostics)
    assert not fa.warnings


def test_both_carrying_their_part_is_verified_without_the_span_rule(tmp_path: Path) -> None:
    # B carries one burst at the end (a fifth of the time would fail the lab's span rule)
    fa, _ = analyze_files([write(tmp_path / "two.pcap", two_subflows(60, 11))], tmp_path / "out")
    assert all(s.contributed for s in fa.subflows) and fa.verified

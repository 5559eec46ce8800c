"""MPTCP v0 (RFC 6824) beside v1 (RFC 8684): the version the handshake agreed decides the hash
of the keys (token, IDSN: SHA-1 in v0, SHA-256 in v1), and 4-octet DSNs are widened in
sending order (mpversion.py); the version is reported."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pcapkit as K
import pytest

from mptcplab.analysis import CaptureFile, pcapread
from mptcplab.analysis.analyze import analyze_flow
from mptcplab.analysis.model import FlowAnalysis, FlowSpec
from mptcplab.analysis.mpversion import idsn, token, widen
from mptcplab.analysis.standalone import analyze_files, describe

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")

SYN, ACK, PSH = 0x02, 0x10, 0x08
C1, C2, S = "10.0.1.2", "10.0.2.2", "10.0.3.2"
KC, KS = 0x1111222233334444, 0x5555666677778888
SPEC = FlowSpec(S, 5201, {C1: "A", C2: "B"}, ("A", "B"), True)


def sha1_low64(key: int) -> int:
    return int.from_bytes(hashlib.sha1(key.to_bytes(8, "big")).digest()[-8:], "big")


def sha1_top32(key: int) -> int:
    return int.from_bytes(hashlib.sha1(key.to_bytes(8, "big")).digest()[:4], "big")


def connection(ver: int, join_token: int, dsn64: bool = False, steps: tuple[int, ...] = (1, 1001)) -> list[bytes]:
    """A two-subflow connection of version ``ver``: v0 sends the keys in the SYN and SYN/ACK
    (RFC 6824 3.1), v1 only from the SYN/ACK; data on A at the relative DSNs ``steps`` (1000
    bytes each), then one segment on the join; the DSNs as 4 octets unless ``dsn64``."""
    dc = sha1_low64(KC) if ver == 0 else idsn(KC, 1)
    out: list[bytes] = []

    def seg(src: str, sp: int, dst: str, dp: int, seq: int, ack: int, fl: int, opts: bytes, pl: bytes = b"") -> None:
        out.append(K.eth(K.ipv4(src, dst, 6, K.tcp(sp, dp, seq, ack, fl, opts, pl))))

    seg(C1, 40000, S, 5201, 100, 0, SYN, K.mp_capable(ver=ver, sendkey=KC if ver == 0 else None))
    seg(S, 5201, C1, 40000, 500, 101, SYN | ACK, K.mp_capable(ver=ver, sendkey=KS))
    seg(C1, 40000, S, 5201, 101, 501, ACK, K.mp_capable(ver=ver, sendkey=KC, recvkey=KS))
    seg(C2, 40001, S, 5201, 700, 0, SYN, K.mp_join_syn(join_token))
    seg(S, 5201, C2, 40001, 900, 701, SYN | ACK, K.mp_join_synack())
    seg(C2, 40001, S, 5201, 701, 901, ACK, K.mp_join_ack())
    seg(S, 5201, C2, 40001, 901, 701, ACK, K.dss(data_ack=(dc + 1) % 2**32, ack64=False))
    ssn = 1
    for rel in steps:
        seg(C1, 40000, S, 5201, 100 + ssn, 501, ACK | PSH,
            K.dss(dsn=(dc + rel) % (2**64 if dsn64 else 2**32), dsn64=dsn64, ssn=ssn, dll=1000), b"d" * 1000)
        ssn += 1000
    last = steps[-1] + 1000
    seg(C2, 40001, S, 5201, 701, 901, ACK | PSH,
        K.dss(dsn=(dc + last) % (2**64 if dsn64 else 2**32), dsn64=dsn64, ssn=1, dll=1000), b"e" * 1000)
    seg(S, 5201, C1, 40000, 501, 100 + ssn, ACK, K.dss(data_ack=(dc + last + 1000) % 2**32, ack64=False))
    return out


def analyze(tmp_path: Path, frames: list[bytes]) -> FlowAnalysis:
    path = K.write_pcap(tmp_path / "c.pcap", [(100 + i / 1000, f) for i, f in enumerate(frames)])
    return analyze_flow([CaptureFile(path, "p")], SPEC)


def test_v0_hashes_with_sha1_and_reports_its_version(tmp_path: Path) -> None:
    assert idsn(KC, 0) == sha1_low64(KC) and token(KS, 0) == sha1_top32(KS)
    r = analyze(tmp_path, connection(0, sha1_top32(KS)))
    assert r.mptcp_negotiated and r.mptcp_version == 0 and r.to_dict()["mptcp_version"] == 0
    assert len(r.subflows) == 2                                  # the join matched by its SHA-1 token
    maps = r.dsn.to_pandas()[r.dsn.to_pandas()["kind"] == "map"]
    assert sorted(set(maps["dsn"])) == [1, 1001, 2001]           # relative to the SHA-1 IDSN
    assert r.dsn.to_pandas()[r.dsn.to_pandas()["kind"] == "ack"]["dsn"].max() == 3001


def test_v1_join_is_matched_by_the_sha256_token_only(tmp_path: Path) -> None:
    r = analyze(tmp_path, connection(1, sha1_top32(KS), dsn64=True))
    assert r.mptcp_version == 1
    assert len(r.subflows) == 1 and r.connections == 2          # a SHA-1 token names no v1 connection
    ok = analyze(tmp_path, connection(1, token(KS, 1), dsn64=True))
    assert len(ok.subflows) == 2 and sorted(set(ok.dsn.to_pandas().query("kind == 'map'")["dsn"])) == [1, 1001, 2001]


def test_4_octet_dsns_follow_the_sequence_past_2_to_the_31(tmp_path: Path) -> None:
    # each step under 2^31, their sum far beyond: widened next to the IDSN alone they would wrap back
    steps = (1, 1 + (3 << 29), 1 + (6 << 29), 1 + (9 << 29), 1 + (12 << 29))
    r = analyze(tmp_path, connection(0, sha1_top32(KS), steps=steps))
    maps = r.dsn.to_pandas()[r.dsn.to_pandas()["kind"] == "map"]
    assert sorted(set(maps["dsn"])) == [*steps, steps[-1] + 1000]


def test_widen_unwraps_a_run_of_4_octet_values_in_order() -> None:
    ref = (5 << 32) + 0xF0000000
    low = [0xF0000001, 0x30000000, 0x70000000, 0xB0000000, 0xF0000000, 0x10]
    got = widen(np.array(low, dtype=np.uint64), np.zeros(len(low), dtype=bool), ref)
    assert [int(x) for x in got] == [(5 << 32) + 0xF0000001, (6 << 32) + 0x30000000, (6 << 32) + 0x70000000,
                                     (6 << 32) + 0xB0000000, (6 << 32) + 0xF0000000, (7 << 32) + 0x10]


def test_summary_names_the_version(tmp_path: Path) -> None:
    path = K.write_pcap(tmp_path / "v0.pcap", [(100 + i / 1000, f) for i, f in
                                               enumerate(connection(0, sha1_top32(KS)))])
    fa, g = analyze_files([path], tmp_path / "out")
    assert any("MPTCP v0 (RFC 6824)" in line for line in describe(fa, g))

"""A segment without a DSS of its own takes the mapping whose subflow sequence range holds it
(analysis/mapping.py), not the last mapping seen: a retransmission arriving after later
mappings then fills its own hole (receiver-side capture with loss)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pcapkit as K
import pytest

from mptcplab.analysis import CaptureFile, pcapread
from mptcplab.analysis.analyze import analyze_flow
from mptcplab.analysis.mapping import data_starts
from mptcplab.analysis.model import FlowSpec
from mptcplab.analysis.mpversion import idsn

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")

SYN, ACK, PSH = 0x02, 0x10, 0x08
C, S = "10.0.1.2", "10.0.3.2"
KC, KS = 0x1111222233334444, 0x5555666677778888


def test_receiver_side_retransmission_maps_to_its_own_dsn(tmp_path: Path) -> None:
    dc = idsn(KC, 1)
    frames: list[tuple[float, bytes]] = []

    def seg(src: str, sp: int, dst: str, dp: int, seq: int, ack: int, fl: int, opts: bytes, pl: bytes = b"") -> None:
        frames.append((100 + len(frames) / 1000, K.eth(K.ipv4(src, dst, 6, K.tcp(sp, dp, seq, ack, fl, opts, pl)))))

    seg(C, 40000, S, 5201, 100, 0, SYN, K.mp_capable())
    seg(S, 5201, C, 40000, 500, 101, SYN | ACK, K.mp_capable(sendkey=KS))
    seg(C, 40000, S, 5201, 101, 501, ACK, K.mp_capable(sendkey=KC, recvkey=KS))

    def data(i: int, mapping: bool) -> None:     # 1000-byte segment i (0-based); mappings of 3 segments
        m = K.dss(dsn=dc + 1 + 3000 * (i // 3), ssn=1 + 3000 * (i // 3), dll=3000) if mapping else b""
        seg(C, 40000, S, 5201, 101 + 1000 * i, 501, ACK | PSH, m, b"d" * 1000)

    data(0, True)
    data(2, False)          # segment 1 lost before the receiver's capture point
    data(3, True)
    data(4, False)
    data(5, False)
    data(1, False)          # its retransmission, after the second mapping
    seg(S, 5201, C, 40000, 501, 6101, ACK, K.dss(data_ack=dc + 6001))
    spec = FlowSpec(S, 5201, {C: "A"}, ("A",), True)
    r = analyze_flow([CaptureFile(K.write_pcap(tmp_path / "rx.pcap", frames), "server:eth0")], spec)
    h = r.hol_connection
    assert h["hol_segments"] == 6 and h["hol_never"] == 0
    assert h["ooo_share"] == pytest.approx(4 / 6, abs=1e-3)      # 2, 3, 4 and 5 waited for 1


def test_mapping_found_by_range_with_a_grown_mapping() -> None:
    own = np.array([True, True, False, False, False])
    ssn = np.array([1, 1, 0, 0, 0])
    dll = np.array([1000, 3000, 0, 0, 0])            # the chunk's mapping grew from 1000 to 3000 bytes
    dsn = np.array([101, 101, 0, 0, 0], dtype=np.uint64)
    rel = np.array([1, 1001, 2001, 1, 3001])
    start, found = data_starts(rel, own, dsn, ssn, dll)
    assert list(found) == [True, True, True, True, False]
    assert [int(x) for x in start[found]] == [101, 1101, 2101, 101]

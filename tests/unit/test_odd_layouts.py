"""Captures laid out as the lab never makes them: a client on the server's port number, a
capture that starts mid-connection, a client that resets a subflow with a reason."""

from __future__ import annotations

from pathlib import Path

import pcapkit as K
import pytest

from mptcplab.analysis import CaptureFile, pcapread
from mptcplab.analysis.analyze import analyze_flow
from mptcplab.analysis.model import FlowSpec
from mptcplab.analysis.mpversion import idsn, token
from mptcplab.analysis.standalone import analyze_files, describe

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")

SYN, ACK, PSH, RST = 0x02, 0x10, 0x08, 0x04
C1, C2, S = "10.0.1.2", "10.0.2.2", "10.0.3.2"
KC, KS = 0x1111222233334444, 0x5555666677778888


class Frames:
    def __init__(self) -> None:
        self.out: list[tuple[float, bytes]] = []

    def add(self, src: str, sp: int, dst: str, dp: int, seq: int, ack: int, fl: int, opts: bytes,
            pl: bytes = b"") -> None:
        self.out.append((100 + len(self.out) / 1000, K.eth(K.ipv4(src, dst, 6, K.tcp(sp, dp, seq, ack, fl, opts, pl)))))

    def write(self, path: Path) -> Path:
        return K.write_pcap(path, self.out)


def handshake(f: Frames, cport: int = 40000, sport: int = 5201) -> None:
    f.add(C1, cport, S, sport, 100, 0, SYN, K.mp_capable())
    f.add(S, sport, C1, cport, 500, 101, SYN | ACK, K.mp_capable(sendkey=KS))
    f.add(C1, cport, S, sport, 101, 501, ACK, K.mp_capable(sendkey=KC, recvkey=KS))


def data(f: Frames, n: int, cport: int = 40000, sport: int = 5201, first: int = 0) -> None:
    dc = idsn(KC, 1)
    for i in range(first, first + n):
        f.add(C1, cport, S, sport, 101 + 1000 * i, 501, ACK | PSH,
              K.dss(data_ack=idsn(KS, 1) + 1, dsn=dc + 1 + 1000 * i, ssn=1 + 1000 * i, dll=1000), b"d" * 1000)
        f.add(S, sport, C1, cport, 501, 101 + 1000 * (i + 1), ACK, K.dss(data_ack=dc + 1 + 1000 * (i + 1)))


def test_client_on_the_servers_port_number_is_not_a_fallback(tmp_path: Path) -> None:
    f = Frames()
    handshake(f, cport=5201)
    data(f, 3, cport=5201)
    fa, g = analyze_files([f.write(tmp_path / "same.pcap")], tmp_path / "out")
    assert g.server_port == 5201 and g.direction == "upload" and list(g.paths) == [C1]
    assert fa.mptcp_negotiated and not fa.fallback and fa.verified
    assert len(fa.subflows) == 1 and fa.subflows[0].src == C1 and fa.subflows[0].bytes == 3000
    assert not any("fallback" in d for d in fa.diagnostics)


def test_capture_started_mid_connection_is_mptcp_in_use(tmp_path: Path) -> None:
    f = Frames()
    data(f, 5, first=10)                    # no SYN, no MP_CAPABLE: DSS on every segment
    fa, g = analyze_files([f.write(tmp_path / "mid.pcap")], tmp_path / "out")
    text = "\n".join(describe(fa, g))
    assert "MPTCP in use, handshake not captured" in text and "MPTCP not requested" not in text
    assert not fa.fallback and not fa.verified
    assert [x.code for x in fa.findings if "in use" in x.message] == ["handshake-not-captured"]
    assert (fa.dsn.to_pandas()["kind"] == "map").sum() == 5                 # the depth analysis ran


def test_mp_tcprst_reason_read_from_the_client_too(tmp_path: Path) -> None:
    f = Frames()
    handshake(f)
    f.add(C2, 40001, S, 5201, 700, 0, SYN, K.mp_join_syn(token(KS, 1)))
    f.add(S, 5201, C2, 40001, 900, 701, SYN | ACK, K.mp_join_synack())
    f.add(C2, 40001, S, 5201, 701, 901, ACK, K.mp_join_ack())
    f.add(S, 5201, C2, 40001, 901, 701, ACK, K.dss(data_ack=idsn(KC, 1) + 1))
    data(f, 2)
    f.add(C2, 40001, S, 5201, 701, 901, RST | ACK, K.mp_tcprst(flags=0, reason=5))   # the client gives up on B
    spec = FlowSpec(S, 5201, {C1: "A", C2: "B"}, ("A", "B"), True)
    r = analyze_flow([CaptureFile(f.write(tmp_path / "rst.pcap"), "p")], spec)
    b = next(s for s in r.subflows if s.src == C2)
    assert b.rst and b.rst_reason == 5

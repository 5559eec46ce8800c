"""ICMPv6 in the verdict: "packet too big" counts as ICMPv4 "fragmentation needed" and
"destination unreachable" as ICMPv4's, on hand-made IPv6 captures (pcapkit.py)."""

from __future__ import annotations

import struct
from pathlib import Path

import pcapkit as K
import pytest

from mptcplab.analysis import CaptureFile, FlowSpec, analyze_flow, pcapread

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")
SYN, ACK, PSH = 0x02, 0x10, 0x08
C, S, R = "fd00:1::2", "fd00:3::2", "fd00:1::1"
SPEC = FlowSpec(S, 5201, {C: "A"}, ("A",), False)


def frame(src: str, dst: str, nh: int, payload: bytes) -> bytes:
    return K.eth(K.ipv6(src, dst, nh, payload), ethertype=0x86DD)


def seg(seq: int, ack: int, fl: int, payload: bytes = b"", frm: str = C) -> bytes:
    sp, dp = (40000, 5201) if frm == C else (5201, 40000)
    src, dst = (C, S) if frm == C else (S, C)
    return K.ipv6(src, dst, 6, K.tcp(sp, dp, seq, ack, fl, b"", payload))


def test_packet_too_big_counts_as_frag_needed(tmp_path: Path) -> None:
    big = seg(101, 501, ACK | PSH, b"x" * 1400)
    frames = [(1.0, K.eth(seg(100, 0, SYN), 0x86DD)), (1.001, K.eth(seg(500, 101, SYN | ACK, frm=S), 0x86DD)),
              (1.002, K.eth(seg(101, 501, ACK), 0x86DD)), (1.003, K.eth(big, 0x86DD)),
              (1.004, frame(R, C, 58, K.icmp6_too_big(1280, big[:1232]))),
              (1.005, K.eth(seg(101, 501, ACK | PSH, b"y" * 1200), 0x86DD)),
              (1.006, K.eth(seg(501, 1301, ACK, frm=S), 0x86DD))]
    r = analyze_flow([CaptureFile(K.write_pcap(tmp_path / "c.pcap", frames), "c")], SPEC)
    (a,) = r.subflows
    assert (a.icmp_frag_needed, a.icmp_mtus) == (1, [1280]) and a.icmp_first_t == pytest.approx(0.004, abs=1e-6)
    assert bool(r.icmp_events.to_pandas()["icmp6"].iloc[0]) and int(r.icmp_events.to_pandas()["type"].iloc[0]) == 2


def test_icmp6_unreachable_names_its_code(tmp_path: Path) -> None:
    syn = seg(100, 0, SYN)
    unreach = struct.pack("!BBHI", 1, 1, 0, 0) + syn      # administratively prohibited
    frames = [(1.0, K.eth(syn, 0x86DD)), (1.001, frame(R, C, 58, unreach))]
    r = analyze_flow([CaptureFile(K.write_pcap(tmp_path / "u.pcap", frames), "c")], SPEC)
    assert r.subflows[0].icmp_frag_needed == 0 and not r.verified
    text = " ".join(r.diagnostics)
    assert "ICMPv6 destination unreachable (communication administratively prohibited) from fd00:1::1" in text

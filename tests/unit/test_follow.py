"""`mptcplab analyze --follow` (analysis/follow.py): capture files still being written are
analyzed again whenever they grew, until they stop growing."""

from __future__ import annotations

from pathlib import Path

import pcapkit as K
import pytest

from mptcplab.analysis import pcapread
from mptcplab.analysis.follow import follow
from mptcplab.cli import main

SYN, ACK, PSH = 0x02, 0x10, 0x08
C, S = "10.0.1.2", "10.0.3.2"


def frames(n: int) -> list[tuple[float, bytes]]:
    """A plain TCP upload: handshake, then ``n`` data segments of 100 bytes."""
    out = [(1.0, K.eth(K.ipv4(C, S, 6, K.tcp(40000, 5201, 10, 0, SYN)))),
           (1.001, K.eth(K.ipv4(S, C, 6, K.tcp(5201, 40000, 90, 11, SYN | ACK))))]
    out += [(1.002 + k / 1000, K.eth(K.ipv4(C, S, 6, K.tcp(40000, 5201, 11 + 100 * k, 91, ACK | PSH,
                                                         payload=b"p" * 100)))) for k in range(n)]
    return out


def test_analyzed_again_while_the_files_grow_then_stops(tmp_path: Path) -> None:
    f = tmp_path / "c.pcap"
    K.write_pcap(f, frames(1))
    growth = [3, 6]                      # the capture grows during the first two intervals only
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        if growth:
            K.write_pcap(f, frames(growth.pop(0)))

    sizes: list[int] = []
    n = follow([f], 0.5, lambda: sizes.append(f.stat().st_size), idle_rounds=3, sleep=sleep)
    assert n == 3 and len(slept) == 5 and set(slept) == {0.5}
    assert sizes == sorted(sizes) and len(set(sizes)) == 3


@pytest.mark.skipif(not pcapread.library_path().is_file(), reason="native capture reader not built")
def test_analyze_follow_rewrites_the_tables_and_waits_for_packets(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    f = K.write_pcap(tmp_path / "c.pcap", frames(4))
    assert main(["analyze", str(f), "--out", str(tmp_path / "a"), "--follow", "0.01"]) == 0
    text = capsys.readouterr().out
    assert text.count(" packets; MPTCP negotiated=False; subflows: A 400 B") == 1    # one round: no growth
    assert (tmp_path / "a" / "tcp_seq.csv").is_file() and "data connection" in text
    empty = K.write_pcap(tmp_path / "e.pcap", [])
    assert main(["analyze", str(empty), "--out", str(tmp_path / "b"), "--follow", "0.01"]) == 0
    text = capsys.readouterr().out
    assert "waiting:" in text and "nothing analyzed" in text
    assert main(["analyze", str(f), "--follow", "0"]) == 2

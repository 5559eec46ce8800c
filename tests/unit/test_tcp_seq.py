"""Each subflow's TCP sequence/ACK numbers, window and timestamps (analysis/tcpseq.py,
mptcpanalyzer's ``plot tcp_attr``), the figure beside the DSN graph, and `mptcplab analyze`
writing both.

A hand-made connection gives the right answer by construction (a sequence space that wraps,
a duplicate ACK left out, a window update kept); on a recorded capture the relative numbers
are checked against tshark's own (``tcp.seq``, ``tcp.len``, ``tcp.options.timestamp.tsval``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pcapkit as K
import pytest

from mptcplab.analysis import CaptureFile, FlowSpec, analyze_packets, pcapread
from mptcplab.analysis.standalone import analyze_files
from mptcplab.analysis.tcpseq import COLUMNS
from mptcplab.cli import main
from mptcplab.results.figures import plot_tcp_seq

DATA = Path(__file__).resolve().parents[1] / "data"
pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")

SYN, ACK, PSH = 0x02, 0x10, 0x08
C, S = "10.0.1.2", "10.0.3.2"
ISN_C, ISN_S = 2**32 - 150, 5000     # the client's sequence space wraps during the transfer


def upload(path: Path) -> Path:
    frames: list[tuple[float, bytes]] = []

    def add(fwd: bool, seq: int, ack: int, fl: int, ts: tuple[int, int], n: int = 0, win: int = 502) -> None:
        sp, dp, src, dst = (40000, 5201, C, S) if fwd else (5201, 40000, S, C)
        seg = K.tcp(sp, dp, seq, ack, fl, K.timestamps(*ts), b"x" * n, win=win)
        frames.append((10.0 + len(frames) * 0.001, K.eth(K.ipv4(src, dst, 6, seg))))

    add(True, ISN_C, 0, SYN, (1, 0))
    add(False, ISN_S, ISN_C + 1, SYN | ACK, (100, 1))
    add(True, ISN_C + 1, ISN_S + 1, ACK, (2, 100))
    add(True, ISN_C + 1, ISN_S + 1, ACK | PSH, (3, 100), n=100)
    add(True, ISN_C + 101, ISN_S + 1, ACK | PSH, (4, 100), n=100)      # crosses 2^32
    add(False, ISN_S + 1, ISN_C + 101, ACK, (101, 3))
    add(False, ISN_S + 1, ISN_C + 201, ACK, (102, 4))
    add(False, ISN_S + 1, ISN_C + 201, ACK, (103, 4))                   # duplicate: left out
    add(False, ISN_S + 1, ISN_C + 201, ACK, (104, 4), win=900)          # window update: kept
    return K.write_pcap(path, frames)


def table(path: Path) -> pd.DataFrame:
    pk = pcapread.extract([CaptureFile(path, "p")])
    fa = analyze_packets(pk, ["p"], FlowSpec(S, 5201, {C: "A"}, ("A",), False), tcp_seq=True)
    assert fa.tcp_seq is not None
    return fa.tcp_seq.to_pandas()


def test_relative_numbers_across_the_wrap_and_only_where_they_move(tmp_path: Path) -> None:
    t = table(upload(tmp_path / "u.pcap"))
    assert list(t.columns) == COLUMNS and set(t["subflow"]) == {f"{C}:40000"} and set(t["path"]) == {"A"}
    snd, rcv = t[t["side"] == "sender"], t[t["side"] == "receiver"]
    assert list(zip(snd["seq"], snd["len"], snd["ack"].astype(object), strict=True)) == \
        [(0, 0, pd.NA), (1, 0, 1), (1, 100, 1), (101, 100, 1)]
    assert list(zip(rcv["seq"], rcv["ack"], rcv["win"], strict=True)) == \
        [(0, 1, 502), (1, 101, 502), (1, 201, 502), (1, 201, 900)]
    assert list(snd["tsval"]) == [1, 2, 3, 4] and list(rcv["tsecr"]) == [1, 3, 4, 4]
    assert t["t"].iloc[0] == pytest.approx(0.0) and t["t"].is_monotonic_increasing


def test_without_the_timestamps_option_the_columns_are_empty(tmp_path: Path) -> None:
    seg = K.tcp(40000, 5201, 7, 0, SYN)
    p = K.write_pcap(tmp_path / "n.pcap", [(1.0, K.eth(K.ipv4(C, S, 6, seg)))])
    t = table(p)
    assert len(t) == 1 and t["tsval"].isna().all() and t["ack"].isna().all() and t["seq"].iloc[0] == 0


def test_the_figure_draws_segments_acks_and_the_window(tmp_path: Path) -> None:
    fig = plot_tcp_seq(table(upload(tmp_path / "u.pcap")))
    top, bottom = fig.axes[:2]
    # the segments are one line broken between bars (figures._bars), the ACKs a step line
    assert [str(ln.get_label()).rsplit(": ", 1)[-1] for ln in top.lines] == ["segments", "ACK"]
    assert len(bottom.lines) == 1
    assert plot_tcp_seq(pd.DataFrame(columns=COLUMNS)).axes[0].texts     # the empty figure says why


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_recorded_capture_agrees_with_tsharks_relative_numbers(tmp_path: Path) -> None:
    files = [DATA / "mptcp_pmtud_download__client_eth1.pcap", DATA / "mptcp_pmtud_download__client_eth2.pcap"]
    fa, _ = analyze_files(files, tmp_path / "out")
    assert fa.tcp_seq is not None and len(fa.subflows) == 2
    t = fa.tcp_seq.to_pandas()
    for s in fa.subflows:
        assert s.point
        mine = t[(t["subflow"] == s.name) & (t["len"] > 0)]
        ours = {(int(a), int(b), -1 if pd.isna(c) else int(c))
                for a, b, c in zip(mine["seq"], mine["len"], mine["tsval"], strict=True)}
        r = subprocess.run(["tshark", "-n", "-r", str(DATA / f"{s.point}.pcap"),
                            "-Y", f"tcp.len > 0 && tcp.port == {s.sport} && !icmp", "-T", "fields",
                            "-e", "tcp.seq", "-e", "tcp.len", "-e", "tcp.options.timestamp.tsval"],
                           capture_output=True, text=True, check=True)
        theirs = {tuple(int(x) if x else -1 for x in line.split("\t")) for line in r.stdout.splitlines() if line}
        assert ours and ours == theirs


def test_analyze_command_writes_the_table_and_the_figure(tmp_path: Path) -> None:
    out = tmp_path / "a"
    assert main(["analyze", str(upload(tmp_path / "u.pcap")), "--out", str(out), "--figures"]) == 0
    assert len(pd.read_csv(out / "tcp_seq.csv")) == 8 and (out / "figures" / "tcp_seq.png").is_file()

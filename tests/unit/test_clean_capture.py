"""`mptcplab analyze --clean` (analysis/clean.py, mptcpanalyzer's ``clean_pcap``): the tcpdump
filter built from the analyzed connection's 4-tuples, the commands, and the copy they make."""

from __future__ import annotations

import shutil
from pathlib import Path

import pcapkit as K
import pytest

from mptcplab.analysis import CaptureFile, SubflowResult, pcapread
from mptcplab.analysis.clean import clean_commands, clean_path, subflow_filter
from mptcplab.cli import main

SYN, ACK, PSH = 0x02, 0x10, 0x08
C1, C2, S = "10.0.1.2", "10.0.2.2", "10.0.3.2"


def sub(src: str, sport: int, dst: str = S, dport: int = 5201) -> SubflowResult:
    return SubflowResult(path=None, src=src, sport=sport, dst=dst, dport=dport, initial=True, established=True,
                         bytes=0, retrans_bytes=0, retransmissions=0, share=0.0, segments=0, median_seg=None,
                         max_seg=None, max_frame=None, icmp_frag_needed=0, icmp_first_t=None, icmp_mtus=[],
                         first_data_t=None, last_data_t=None, syn_attempts=1, rst=False)


def test_filter_matches_each_four_tuple_both_ways_and_only_tcp() -> None:
    f = subflow_filter([sub(C2, 40001), sub(C1, 40000), sub(C1, 40000)])   # repeated: once
    assert " ".join(f) == (
        "tcp and ( ( src host 10.0.1.2 and src port 40000 and dst host 10.0.3.2 and dst port 5201 )"
        " or ( src host 10.0.3.2 and src port 5201 and dst host 10.0.1.2 and dst port 40000 )"
        " or ( src host 10.0.2.2 and src port 40001 and dst host 10.0.3.2 and dst port 5201 )"
        " or ( src host 10.0.3.2 and src port 5201 and dst host 10.0.2.2 and dst port 40001 ) )")
    assert all(" " not in w for w in f)     # one word per argument: nothing for a shell to split
    v6 = subflow_filter([sub("fd00::2", 40000, "fd00::1")])
    assert "fd00::2" in v6 and "fd00::1" in v6


def test_no_subflow_no_filter_no_command(tmp_path: Path) -> None:
    assert subflow_filter([]) == ()
    assert clean_commands([tmp_path / "a.pcap"], [], tmp_path) == []


def test_one_tcpdump_per_file(tmp_path: Path) -> None:
    files = [tmp_path / "client_eth1.pcapng", tmp_path / "client_eth2.pcap"]
    cmds = clean_commands(files, [sub(C1, 40000)], tmp_path / "out")
    assert [c.argv[:7] for c in cmds] == [
        ("tcpdump", "-n", "--time-stamp-precision", "nano", "-r", str(f), "-w") for f in files]
    assert [c.argv[7] for c in cmds] == [str(tmp_path / "out" / "client_eth1.clean.pcap"),
                                         str(tmp_path / "out" / "client_eth2.clean.pcap")]
    assert cmds[0].argv[8:] == subflow_filter([sub(C1, 40000)]) and cmds[0].node is None


def two_connections(path: Path) -> Path:
    """An MPTCP-less connection with data (the one the analysis picks) and a second, smaller one."""
    frames = []
    for i, (c, port, n) in enumerate([(C1, 40000, 3), (C2, 40500, 1)]):
        t = 1.0 + i
        frames.append((t, K.eth(K.ipv4(c, S, 6, K.tcp(port, 5201, 10, 0, SYN)))))
        frames.append((t + 0.001, K.eth(K.ipv4(S, c, 6, K.tcp(5201, port, 90, 11, SYN | ACK)))))
        for k in range(n):
            seg = K.tcp(port, 5201, 11 + 100 * k, 91, ACK | PSH, payload=b"p" * 100)
            frames.append((t + 0.002 + k / 1000, K.eth(K.ipv4(c, S, 6, seg))))
    frames.append((3.0, K.eth(K.ipv4(C1, "10.0.9.9", 6, K.tcp(40000, 5201, 1, 0, SYN)))))  # other host, same ports
    return K.write_pcap(path, sorted(frames))


@pytest.mark.skipif(not pcapread.library_path().is_file() or shutil.which("tcpdump") is None,
                    reason="native capture reader not built, or no tcpdump")
def test_analyze_clean_keeps_only_the_analyzed_connection(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = two_connections(tmp_path / "cap.pcap")
    out = tmp_path / "a"
    assert main(["analyze", str(src), "--out", str(out), "--clean", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "[host] tcpdump -n --time-stamp-precision nano -r" in text and "src port 40000" in text
    assert not clean_path(src, out).exists()
    assert main(["analyze", str(src), "--out", str(out), "--clean"]) == 0
    kept = pcapread.extract([CaptureFile(clean_path(src, out), "p")]).to_pandas()
    assert len(kept) == 5 and set(kept["ip_dst"].astype(str)) == {S, C1}
    assert set(kept["sport"].astype(int)) | set(kept["dport"].astype(int)) == {40000, 5201}

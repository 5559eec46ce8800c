"""Capture files from anywhere (analysis/capfile.py before the native reader): compressed,
cut short, every link type libpcap reads, pcapng with interfaces of different link types
and snap lengths. The files are written byte by byte here (pcapkit.py)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pandas as pd
import pcapkit as K
import pytest

from mptcplab.analysis import CaptureFile, oracle, pcapread
from mptcplab.analysis.standalone import analyze_files
from mptcplab.errors import RunFailed

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

C, S = "10.0.1.2", "10.0.3.2"
ACK, PSH = 0x10, 0x08
V4 = K.ipv4(C, S, 6, K.tcp(40000, 5201, 5, 6, ACK | PSH, K.dss(data_ack=3, dsn=9, ssn=1, dll=30), b"a" * 30))
V6 = K.ipv6("fd00::2", "fd00::1", 6, K.tcp(40001, 5201, 7, 8, ACK, K.dss(data_ack=4), b"b" * 20))


def read(path: Path) -> pd.DataFrame:
    return pcapread.extract([CaptureFile(path, "p")]).to_pandas()


def assert_both_decoded(pk: pd.DataFrame) -> None:
    assert list(pk["ip_src"]) == [C, "fd00::2"] and list(pk["sport"]) == [40000, 40001]
    assert list(pk["tlen"]) == [30, 20] and pk["dsn"].iloc[0] == 9 and pk["data_ack"].iloc[1] == 4
    assert not pk["malformed"].any()


FRAMINGS = {
    "ppp": (K.LINKTYPE_PPP, K.ppp(V4), K.ppp(V6, 0x57)),
    "ppp-no-hdlc-pfc": (K.LINKTYPE_PPP, K.ppp(V4, hdlc=False, compressed=True), K.ppp(V6, 0x57, hdlc=False)),
    "ppp-hdlc-50": (50, K.ppp(V4), K.ppp(V6, 0x57)),
    "raw-12": (12, V4, V6),
    "raw-14": (14, V4, V6),
    "raw-101": (K.LINKTYPE_RAW, V4, V6),
    "null-le": (K.LINKTYPE_NULL, K.null(V4), K.null(V6, 30)),
    "null-be": (K.LINKTYPE_NULL, K.null(V4, big=True), K.null(V6, 24, big=True)),
    "loop": (K.LINKTYPE_LOOP, K.null(V4, big=True), K.null(V6, 28, big=True)),
    "sll": (K.LINKTYPE_SLL, K.sll(V4), K.sll(V6, 0x86DD)),
    "sll2": (K.LINKTYPE_SLL2, K.sll2(V4), K.sll2(V6, 0x86DD)),
    "vlan": (K.LINKTYPE_ETHERNET, K.eth(V4, vlan=7), K.eth(V6, 0x86DD, vlan=8)),
    "qinq": (K.LINKTYPE_ETHERNET, b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02" + bytes.fromhex("88a8000a8100000b0800") + V4,
             b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02" + bytes.fromhex("810000038100000486dd") + V6),
}


@pytest.mark.parametrize("name", sorted(FRAMINGS))
def test_every_link_type_decoded(tmp_path: Path, name: str) -> None:
    lt, a, b = FRAMINGS[name]
    pk = read(K.write_pcap(tmp_path / f"{name}.pcap", [(5.0, a), (6.0, b)], lt))
    assert_both_decoded(pk)
    assert list(pk["frame"]) == [1, 2] and list(pk["t"]) == [5.0, 6.0]


def test_pcapng_interfaces_of_different_link_types_snaplens_and_clocks(tmp_path: Path) -> None:
    ifaces = [(K.LINKTYPE_ETHERNET, 65535, None), (K.LINKTYPE_SLL2, 262144, 9), (K.LINKTYPE_PPP, 1500, 3)]
    pkts = [(0, 10.5, K.eth(V4)), (1, 11.25, K.sll2(V6, 0x86DD)), (2, 12.0, K.ppp(V4)),
            (0, 13.0, K.eth(b"\0" * 28, 0x0806))]          # an ARP-like frame: no IP, still frame 4
    pk = read(K.write_pcapng(tmp_path / "multi.pcapng", ifaces, pkts))
    assert list(pk["frame"]) == [1, 2, 3, 4] and list(pk["t"]) == [10.5, 11.25, 12.0, 13.0]
    assert list(pk["ip_src"])[:3] == [C, "fd00::2", C] and pk["ip_src"].iloc[3] == ""
    assert list(pk["tlen"])[:3] == [30, 20, 30] and not pk["malformed"].any()
    assert pk.attrs["warnings"] == []


def test_gzip_compressed_capture_read_as_the_plain_one(tmp_path: Path) -> None:
    plain = K.write_pcap(tmp_path / "c.pcap", [(5.0, K.eth(V4)), (6.0, K.eth(V6, 0x86DD))])
    gz = tmp_path / "c.pcap.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    assert_both_decoded(read(gz))
    ng = K.write_pcapng(tmp_path / "d.pcapng", [(K.LINKTYPE_PPP, 65535, None)], [(0, 1.0, K.ppp(V4)),
                                                                                 (0, 2.0, K.ppp(V6, 0x57))])
    gzng = tmp_path / "d.pcapng.gz"
    gzng.write_bytes(gzip.compress(ng.read_bytes()))
    assert_both_decoded(read(gzng))                              # compressed and rewritten


@pytest.mark.parametrize("size", [0, 3, 10, 23])
def test_file_shorter_than_its_header_is_truncated(tmp_path: Path, size: int) -> None:
    whole = K.write_pcap(tmp_path / "w.pcap", [(5.0, K.eth(V4))]).read_bytes()
    cut = tmp_path / "short.pcap"
    cut.write_bytes(whole[:size])
    with pytest.raises(RunFailed, match=r"short\.pcap: truncated"):
        read(cut)


def test_30_byte_file_is_truncated_not_without_tcp(tmp_path: Path) -> None:
    whole = K.write_pcap(tmp_path / "w.pcap", [(5.0, K.eth(V4))]).read_bytes()
    cut = tmp_path / "thirty.pcap"
    cut.write_bytes(whole[:30])
    with pytest.raises(RunFailed, match=r"thirty\.pcap: truncated") as e:
        analyze_files([cut], tmp_path / "out")
    assert "no TCP packets" not in str(e.value) and "\n" not in str(e.value)
    ng = K.write_pcapng(tmp_path / "n.pcapng", [(1, 65535, None)], [(0, 1.0, K.eth(V4))], cut_last=20)
    with pytest.raises(RunFailed, match=r"n\.pcapng: truncated"):
        read(ng)
    tiny = tmp_path / "t.pcapng"
    tiny.write_bytes(ng.read_bytes()[:20])
    with pytest.raises(RunFailed, match=r"t\.pcapng: truncated"):
        read(tiny)


def test_pcapng_cut_mid_packet_keeps_the_complete_ones(tmp_path: Path) -> None:
    ifaces = [(K.LINKTYPE_ETHERNET, 65535, None), (K.LINKTYPE_PPP, 65535, None)]
    path = K.write_pcapng(tmp_path / "cut.pcapng", ifaces, [(0, 1.0, K.eth(V4)), (1, 2.0, K.ppp(V6, 0x57)),
                                                            (0, 3.0, K.eth(V4))], cut_last=30)
    pk = read(path)
    assert_both_decoded(pk)
    assert len(pk.attrs["warnings"]) == 1 and "cut.pcapng truncated" in pk.attrs["warnings"][0]


def test_unknown_format_keeps_libpcaps_reason(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"x" * 64)
    with pytest.raises(RunFailed, match=r"junk\.pcap: unknown file format"):
        read(junk)


@needs_tshark
@pytest.mark.parametrize("name", ["ppp", "raw-101", "null-le", "loop", "qinq"])
def test_link_types_agree_with_tshark(tmp_path: Path, name: str) -> None:
    lt, a, b = FRAMINGS[name]
    path = K.write_pcap(tmp_path / f"{name}.pcap", [(5.0, a), (6.0, b)], lt, nano=True)
    assert oracle.compare_files([CaptureFile(path, "p")]) == []


def test_snap_lengths_alone_differ(tmp_path: Path) -> None:
    ifaces = [(K.LINKTYPE_ETHERNET, 65535, None), (K.LINKTYPE_ETHERNET, 96, None)]
    pk = read(K.write_pcapng(tmp_path / "snap.pcapng", ifaces, [(0, 1.0, K.eth(V4)), (1, 2.0, K.eth(V6, 0x86DD))]))
    assert_both_decoded(pk)


def test_link_type_not_decoded_is_said_with_no_tcp(tmp_path: Path) -> None:
    path = K.write_pcap(tmp_path / "wifi.pcap", [(1.0, b"\x08\x00" + V4)], 105)     # 802.11
    from mptcplab.errors import LabInputError
    with pytest.raises(LabInputError, match=r"no TCP packets.*wifi\.pcap: link type 105 not decoded"):
        analyze_files([path], tmp_path / "out")

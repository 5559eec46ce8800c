"""The native capture reader (native/pcapread via analysis/pcapread.py).

* against tshark, field by field (analysis/oracle.py), on every capture in tests/data and on
  hand-made files covering each link type, IPv6 with extension headers, VLAN tags, every
  MPTCP option subtype and the ICMP errors;
* against the RFC 8684 layouts the files were built from (pcapkit.py), so the decoding is
  checked where tshark is not installed too;
* robustness: a file cut mid-packet, garbage frames (the reader runs inside the Python
  process: it must never read past a buffer).
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pcapkit as K
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mptcplab.analysis import CaptureFile, oracle, packets, pcapread
from mptcplab.analysis.table import Table

DATA = Path(__file__).resolve().parents[1] / "data"
pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

C, S = "10.0.1.2", "10.0.3.2"
SYN, ACK, PSH, RST = 0x02, 0x10, 0x08, 0x04


def read(path: Path, point: str = "p") -> pd.DataFrame:
    return pcapread.extract([CaptureFile(path, point)]).to_pandas()


def mptcp_frames() -> list[bytes]:
    """One packet per MPTCP option form (IPv4 over Ethernet)."""
    def seg(opts: bytes, flags: int = ACK, payload: bytes = b"", fwd: bool = True) -> bytes:
        src, dst, sp, dp = (C, S, 40000, 5201) if fwd else (S, C, 5201, 40000)
        return K.eth(K.ipv4(src, dst, 6, K.tcp(sp, dp, 1000, 2000, flags, opts, payload)))
    return [
        seg(K.mp_capable(), SYN),
        seg(K.mp_capable(sendkey=0xA1B2C3D4E5F60718), SYN | ACK, fwd=False),
        seg(K.mp_capable(sendkey=0x0102030405060708, recvkey=0xA1B2C3D4E5F60718)),
        seg(K.mp_capable(sendkey=1, recvkey=2, dll=100), ACK | PSH, b"x" * 100),
        seg(K.mp_capable(flags=0x81, sendkey=1, recvkey=2, dll=100, csum=0xBEEF), ACK | PSH, b"x" * 100),
        seg(K.mp_join_syn(token=0xDEADBEEF, addr_id=3, backup=True), SYN),
        seg(K.mp_join_synack(addr_id=5), SYN | ACK, fwd=False),
        seg(K.mp_join_ack()),
        seg(K.dss(data_ack=2**40 + 5)),
        seg(K.dss(data_ack=77, ack64=False)),
        seg(K.dss(data_ack=9, dsn=2**50 + 1, ssn=1, dll=1448), ACK | PSH, b"y" * 1448),
        seg(K.dss(data_ack=9, ack64=False, dsn=123456, dsn64=False, ssn=5, dll=10, csum=0x1234), ACK | PSH, b"z" * 10),
        seg(K.dss(dsn=2**33, ssn=99, dll=1, fin=True), ACK | PSH, b"f"),
        seg(K.add_addr("10.0.2.9", 2, hmac=0x0102030405060708), fwd=False),
        seg(K.add_addr("10.0.2.9", 2, echo=True)),
        seg(K.add_addr("10.0.2.8", 4, port=5202, hmac=0x0102030405060708), fwd=False),
        seg(K.add_addr("fd00::9", 6, port=5203, hmac=1), fwd=False),
        seg(K.remove_addr([2, 4, 6])),
        seg(K.mp_prio(True)),
        seg(K.mp_fail(2**45 + 3)),
        seg(K.mp_fastclose(0x1122334455667788), RST),
        seg(K.mp_tcprst(flags=0x1, reason=6), RST | ACK, fwd=False),
        seg(K.dss(data_ack=1) + K.add_addr("10.0.2.7", 8, hmac=1), fwd=False),   # two subtypes
        seg(K.timestamps(0xFEDCBA98, 12345) + K.dss(data_ack=2, dsn=3, ssn=1, dll=5), ACK | PSH, b"t" * 5),
    ]


def test_every_mptcp_option_decoded_as_built(tmp_path: Path) -> None:
    pk = read(K.write_pcap(tmp_path / "mp.pcap", [(1.0 + i / 1000, f) for i, f in enumerate(mptcp_frames())]))
    assert len(pk) == 24 and not pk["malformed"].any()
    row = pk.iloc
    assert list(pk["mp"].iloc[:8]) == [1, 1, 1, 1, 1, 2, 2, 2]
    assert row[0]["mpc_ver"] == 1 and row[0]["mpc_flags"] == 1 and pd.isna(row[0]["sendkey"])
    assert row[1]["sendkey"] == 0xA1B2C3D4E5F60718 and pd.isna(row[1]["recvkey"])
    assert row[2]["sendkey"] == 0x0102030405060708 and row[2]["recvkey"] == 0xA1B2C3D4E5F60718
    assert row[3]["dll"] == 100 and not row[3]["csum"]
    assert row[4]["dll"] == 100 and row[4]["csum"] and row[4]["mpc_flags"] == 0x81
    assert row[5]["recvtok"] == 0xDEADBEEF and row[5]["addr_id"] == 3 and row[5]["backup"] == 1
    assert row[6]["addr_id"] == 5 and row[6]["backup"] == 0 and pd.isna(row[6]["recvtok"])
    assert row[8]["data_ack"] == 2**40 + 5 and row[8]["dack64"] and pd.isna(row[8]["dsn"])
    assert row[9]["data_ack"] == 77 and not row[9]["dack64"]
    assert (row[10]["dsn"], row[10]["ssn"], row[10]["dll"], row[10]["dsn64"], row[10]["csum"]) == \
        (2**50 + 1, 1, 1448, True, False)
    assert (row[11]["dsn"], row[11]["ssn"], row[11]["dsn64"], row[11]["csum"]) == (123456, 5, False, True)
    assert row[12]["datafin"] and pd.isna(row[12]["data_ack"]) and row[12]["dsn"] == 2**33
    assert row[13]["addaddr"] == "10.0.2.9" and row[13]["addr_id"] == 2 and not row[13]["add_echo"]
    assert row[14]["add_echo"] and pd.isna(row[14]["add_port"])
    assert row[15]["addaddr"] == "10.0.2.8" and row[15]["add_port"] == 5202
    assert row[16]["addaddr"] == "fd00::9" and row[16]["add_port"] == 5203
    assert row[17]["rm_ids"] == "2,4,6" and row[17]["mp"] == 1 << packets.REMOVE_ADDR
    assert row[18]["backup"] == 1 and row[18]["mp"] == 1 << packets.MP_PRIO
    assert row[19]["fail_dsn"] == 2**45 + 3
    assert row[20]["recvkey"] == 0x1122334455667788 and row[20]["mp"] == 1 << packets.MP_FASTCLOSE
    assert row[21]["rst_reason"] == 6 and row[21]["rst_flags"] == 1
    assert row[22]["mp"] == (1 << packets.DSS) | (1 << packets.ADD_ADDR) and row[22]["addaddr"] == "10.0.2.7"
    assert (pk["tlen"].iloc[10], pk["seq"].iloc[10], pk["ack"].iloc[10]) == (1448, 1000, 2000)
    # the timestamps option before the DSS: both decoded; absent elsewhere
    assert (row[23]["tsval"], row[23]["tsecr"], row[23]["dsn"]) == (0xFEDCBA98, 12345, 3)
    assert pk["tsval"].iloc[:23].isna().all() and pk["tsecr"].iloc[:23].isna().all()


def link_frames() -> dict[str, tuple[int, list[bytes]]]:
    """The same kinds of packet under each link type, and IPv6 with extension headers."""
    t4 = K.ipv4(C, S, 6, K.tcp(40000, 5201, 5, 6, ACK, K.dss(data_ack=3), b"a" * 30))
    t6 = K.ipv6("fd00::2", "fd00::1", 6, K.tcp(40001, 5201, 7, 8, ACK | PSH, K.dss(dsn=11, ssn=1, dll=20), b"b" * 20),
                ext=[(0, b"\x01\x02\x00\x00"), (60, b"\x01\x02\x00\x00")])
    big = K.ipv4(C, S, 6, K.tcp(40000, 5201, 9, 6, ACK, K.dss(data_ack=3, dsn=1, ssn=1, dll=8948)), total=9000)
    fn = K.ipv4("10.0.2.1", C, 1, K.icmp_frag_needed(1500, big[:80]), ttl=63)
    big6 = K.ipv6("fd00::2", "fd00::1", 6, K.tcp(40001, 5201, 9, 8, ACK))
    ptb = K.ipv6("fd00::fe", "fd00::2", 58, K.icmp6_too_big(1280, big6))
    return {
        "eth": (K.LINKTYPE_ETHERNET, [K.eth(t4), K.eth(t6, 0x86DD), K.eth(fn), K.eth(ptb, 0x86DD),
                                      K.eth(t4, vlan=7), K.eth(t4 + b"\0" * 20)]),   # Ethernet padding
        "sll": (K.LINKTYPE_SLL, [K.sll(t4), K.sll(t6, 0x86DD), K.sll(fn)]),
        "sll2": (K.LINKTYPE_SLL2, [K.sll2(t4), K.sll2(t6, 0x86DD), K.sll2(fn)]),
        "raw": (K.LINKTYPE_RAW, [t4, t6, fn, ptb]),
    }


@pytest.mark.parametrize("name", ["eth", "sll", "sll2", "raw"])
def test_link_types_ipv6_and_icmp_decoded(tmp_path: Path, name: str) -> None:
    lt, frames = link_frames()[name]
    pk = read(K.write_pcap(tmp_path / f"{name}.pcap", [(5.0 + i, f) for i, f in enumerate(frames)], lt))
    assert len(pk) == len(frames)
    assert pk["ip_src"].iloc[0] == C and pk["sport"].iloc[0] == 40000 and pk["tlen"].iloc[0] == 30
    assert pk["data_ack"].iloc[0] == 3
    # IPv6 through a hop-by-hop and a destination options header
    assert pk["ip_src"].iloc[1] == "fd00::2" and pk["tlen"].iloc[1] == 20 and pk["dsn"].iloc[1] == 11
    # frag needed quoting a 9000-byte segment: the TCP fields are the quoted segment's
    fn = pk.iloc[2]
    assert (fn["icmp_type"], fn["icmp_code"], fn["icmp_mtu"]) == (3, 4, 1500)
    assert (fn["q_src"], fn["q_dst"], fn["q_len"]) == (C, S, 9000) and fn["sport"] == 40000
    assert fn["ip_src"] == "10.0.2.1" and fn["ip_ttl"] == 63 and fn["seq"] == 9
    if name in ("eth", "raw"):
        ptb = pk.iloc[3]
        assert ptb["icmp6"] and (ptb["icmp_type"], ptb["icmp_mtu"]) == (2, 1280) and ptb["q_src"] == "fd00::2"
        assert list(packets.frag_needed(Table.from_pandas(pk))) == [False, False, True, True] + [False] * (len(pk) - 4)
    if name == "eth":
        assert pk["sport"].iloc[4] == 40000 and pk["ip_len"].iloc[5] == pk["ip_len"].iloc[0]
        assert pk["tlen"].iloc[5] == 30     # padding after the IP packet is not payload


@needs_tshark
@pytest.mark.parametrize("name", ["eth", "sll", "sll2", "raw", "mptcp"])
def test_hand_made_files_agree_with_tshark(tmp_path: Path, name: str) -> None:
    if name == "mptcp":
        lt, frames = K.LINKTYPE_ETHERNET, mptcp_frames()
    else:
        lt, frames = link_frames()[name]
    path = K.write_pcap(tmp_path / f"{name}.pcap", [(7.0 + i * 0.001, f) for i, f in enumerate(frames)], lt,
                        nano=True)
    assert oracle.compare_files([CaptureFile(path, "p")]) == []


SCENARIOS = sorted({p.name.split("__")[0] for p in DATA.glob("*.pcap")})


@needs_tshark
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_recorded_captures_agree_with_tshark(scenario: str) -> None:
    caps = [CaptureFile(p, p.stem.split("__")[1]) for p in sorted(DATA.glob(f"{scenario}__*.pcap"))]
    assert caps
    assert oracle.compare_files(caps) == []


def test_time_is_read_to_the_nanosecond(tmp_path: Path) -> None:
    f = K.eth(K.ipv4(C, S, 6, K.tcp(1, 2, 3, 4, ACK)))
    pk = read(K.write_pcap(tmp_path / "ns.pcap", [(1795403833.123456789, f)], nano=True))
    assert abs(pk["t"].iloc[0] - 1795403833.123456789) < 5e-7


def test_capture_cut_mid_packet_keeps_the_complete_ones(tmp_path: Path) -> None:
    f = K.eth(K.ipv4(C, S, 6, K.tcp(40000, 5201, 1, 1, ACK, payload=b"p" * 100)))
    path = K.write_pcap(tmp_path / "cut.pcap", [(1.0, f), (2.0, f), (3.0, f)], cut_last=50)
    pk = read(path, "client:eth1")
    assert len(pk) == 2 and list(pk["tlen"]) == [100, 100]
    assert pk.attrs["warnings"] == [
        "client:eth1: cut.pcap truncated: the last packet was cut short (capture stopped mid-write)"]


def test_snaplen_cut_inside_the_options_is_flagged_not_misread(tmp_path: Path) -> None:
    f = K.eth(K.ipv4(C, S, 6, K.tcp(40000, 5201, 1, 1, ACK, K.dss(data_ack=3, dsn=1, ssn=1, dll=1000), b"p" * 1000)))
    pk = read(K.write_pcap(tmp_path / "snap.pcap", [(1.0, f)], snaplen=14 + 20 + 20 + 6))
    assert pk["malformed"].iloc[0] and pd.isna(pk["dsn"].iloc[0])
    assert pk["tlen"].iloc[0] == 1000 and pk["seq"].iloc[0] == 1   # lengths come from the headers


def test_several_files_share_address_and_point_categories(tmp_path: Path) -> None:
    a = K.write_pcap(tmp_path / "a.pcap", [(1.0, K.eth(K.ipv4(C, S, 6, K.tcp(1, 2, 3, 4, ACK))))])
    b = K.write_pcap(tmp_path / "b.pcap", [(2.0, K.eth(K.ipv4("10.0.2.2", S, 6, K.tcp(1, 2, 3, 4, ACK))))])
    pk = pcapread.extract([CaptureFile(a, "x:eth1"), CaptureFile(b, "x:eth2")]).to_pandas()
    assert list(pk["ip_src"]) == [C, "10.0.2.2"] and list(pk["point"]) == ["x:eth1", "x:eth2"]
    assert list(pk["frame"]) == [1, 1]
    assert pk["ip_src"].cat.categories.equals(pk["q_dst"].cat.categories)


def test_missing_file_and_not_a_capture(tmp_path: Path) -> None:
    from mptcplab.errors import RunFailed
    with pytest.raises(RunFailed, match="missing"):
        read(tmp_path / "nope.pcap")
    (tmp_path / "junk.pcap").write_bytes(b"this is not a capture file at all")
    with pytest.raises(RunFailed, match="cannot read capture"):
        read(tmp_path / "junk.pcap")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=200), min_size=1, max_size=30), st.sampled_from(
    [K.LINKTYPE_ETHERNET, K.LINKTYPE_RAW, K.LINKTYPE_SLL, K.LINKTYPE_SLL2]))
def test_garbage_frames_never_crash(tmp_path_factory: pytest.TempPathFactory, frames: list[bytes], lt: int) -> None:
    path = K.write_pcap(tmp_path_factory.mktemp("fuzz") / "g.pcap", [(1.0, f) for f in frames], lt)
    pk = read(path)
    assert len(pk) == len(frames) and (pk["frame"].to_numpy() == np.arange(1, len(frames) + 1)).all()


def test_mutated_mptcp_packets_never_crash(tmp_path: Path) -> None:
    """Real packet layouts with random bytes flipped and random cuts: option lengths that lie,
    header lengths past the end, truncated quoted headers."""
    rnd = random.Random(19)
    base = mptcp_frames() + link_frames()["eth"][1]
    frames = []
    for _ in range(3000):
        f = bytearray(rnd.choice(base))
        for _ in range(rnd.randint(1, 6)):
            f[rnd.randrange(len(f))] = rnd.randrange(256)
        frames.append(bytes(f[:rnd.randint(0, len(f))]))
    pk = read(K.write_pcap(tmp_path / "m.pcap", [(1.0, f) for f in frames]))
    assert len(pk) == len(frames)

"""MPTCP depth (analysis/depth.py): DSN series, MPTCP-level retransmissions, RTT, events.

MPTCP-level retransmissions are cross-checked against tshark's own MPTCP analysis
(mptcp.analyze_mappings with intersubflows_retransmission) on a hand-made connection with a
known reinjection and on the recorded captures; the rest against connections built packet by
packet (pcapkit.py), where the right answer is known by construction.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pcapkit as K
import pytest

from mptcplab.analysis import CaptureFile, FlowAnalysis, FlowSpec, analyze_flow, oracle, pcapread
from mptcplab.analysis.depth import REINJECTION_COLUMNS, _reinjections
from mptcplab.analysis.flows import tokens_of_key
from mptcplab.analysis.mpversion import idsn, widen
from mptcplab.analysis.standalone import analyze_files
from mptcplab.analysis.table import Table
from mptcplab.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None or shutil.which("mergecap") is None,
                                  reason="tshark/mergecap not installed")

SYN, ACK, PSH, RST = 0x02, 0x10, 0x08, 0x04
C1, C2, S = "10.0.1.2", "10.0.2.2", "10.0.3.2"
KC, KS = 0x1111222233334444, 0x5555666677778888
SPEC = FlowSpec(S, 5201, {C1: "A", C2: "B"}, ("A", "B"), True)


class Conn:
    """A two-subflow MPTCP connection written packet by packet, 1 ms apart: the initial
    subflow from C1 to ``s``:``port``, the join from C2 to ``s``:``join_port`` (default: the
    same port); ``cport``: the initial subflow's client port (the join's is the next one)."""

    def __init__(self, s: str = S, port: int = 5201, join_port: int | None = None, cport: int = 40000,
                 kc: int = KC, ks: int = KS) -> None:
        self.frames: list[tuple[float, bytes]] = []
        self.t = 100.0
        self.s, self.port, self.jport, self.cport = s, port, join_port or port, cport
        self.kc, self.ks = kc, ks
        self.dc, self.ds = idsn(kc, 1), idsn(ks, 1)

    def add(self, src: str, sp: int, dst: str, dp: int, seq: int, ack: int, fl: int, opts: bytes,
            payload: bytes = b"", dt: float = 0.001) -> None:
        self.frames.append((self.t, K.eth(K.ipv4(src, dst, 6, K.tcp(sp, dp, seq, ack, fl, opts, payload)))))
        self.t += dt

    def ends(self, on: int) -> tuple[str, int, int]:
        """Subflow ``on`` (1: initial, 2: the join): client address, client port, server port."""
        return (C1, self.cport, self.port) if on == 1 else (C2, self.cport + 1, self.jport)

    def handshakes(self) -> None:
        s, (c1, p1, s1), (c2, p2, s2) = self.s, self.ends(1), self.ends(2)
        self.add(c1, p1, s, s1, 100, 0, SYN, K.mp_capable())
        self.add(s, s1, c1, p1, 500, 101, SYN | ACK, K.mp_capable(sendkey=self.ks))
        self.add(c1, p1, s, s1, 101, 501, ACK, K.mp_capable(sendkey=self.kc, recvkey=self.ks))
        self.add(c2, p2, s, s2, 700, 0, SYN, K.mp_join_syn(tokens_of_key(self.ks)[0], addr_id=1))
        self.add(s, s2, c2, p2, 900, 701, SYN | ACK, K.mp_join_synack())
        self.add(c2, p2, s, s2, 701, 901, ACK, K.mp_join_ack())
        self.add(s, s2, c2, p2, 901, 701, ACK, K.dss(data_ack=(self.dc + 1) % 2**64))

    def data(self, on: int, seq: int, dsn_rel: int, ssn: int, n: int = 1000, dt: float = 0.001) -> None:
        src, sp, dp = self.ends(on)
        self.add(src, sp, self.s, dp, seq, 501 if on == 1 else 901, ACK | PSH,
                 K.dss(data_ack=(self.ds + 1) % 2**64, dsn=(self.dc + dsn_rel) % 2**64, ssn=ssn, dll=n), b"d" * n, dt)

    def ack(self, on: int, tcp_ack: int, data_ack_rel: int, opts: bytes = b"", dt: float = 0.001) -> None:
        dst, dp, sp = self.ends(on)
        self.add(self.s, sp, dst, dp, 501 if on == 1 else 901, tcp_ack, ACK,
                 K.dss(data_ack=(self.dc + data_ack_rel) % 2**64) + opts, dt=dt)

    def write(self, path: Path) -> Path:
        return K.write_pcap(path, self.frames)


def reinjection_conn(**conn: Any) -> Conn:
    """A connection whose join re-sends a range of the initial subflow (``conn``: Conn's)."""
    c = Conn(**conn)
    c.handshakes()
    c.data(1, 101, 1, 1)
    c.data(1, 1101, 1001, 1001)
    c.data(2, 701, 1001, 1)             # B sends A's second range again: a reinjection
    c.data(2, 1701, 2001, 1001)
    c.data(1, 101, 1, 1)                # A repeats its first segment: TCP-level only
    c.ack(1, 2101, 3001)
    c.ack(2, 2701, 3001)
    return c


def analyze(path: Path) -> FlowAnalysis:
    return analyze_flow([CaptureFile(path, "p")], SPEC)


def test_reinjection_found_with_its_first_carrier(tmp_path: Path) -> None:
    r = analyze(reinjection_conn().write(tmp_path / "r.pcap"))
    assert len(r.reinjections.to_pandas()) == 1
    x = r.reinjections.to_pandas().iloc[0]
    assert (x["subflow"], x["path"], x["dsn"], x["length"]) == (f"{C2}:40001", "B", 1001, 1000)
    assert (x["first_subflow"], x["first_path"], bool(x["same_subflow"])) == (f"{C1}:40000", "A", False)
    assert x["first_t"] < x["t"]
    a, b = r.subflows
    assert (a.retransmissions, a.mptcp_retransmissions) == (1, 0)   # the TCP repeat is TCP-level
    assert (b.retransmissions, b.mptcp_retransmissions, b.mptcp_retrans_bytes) == (0, 1, 1000)
    # DSNs relative to the client's IDSN: the first byte is 1; the data ACK reaches 3001
    maps = r.dsn.to_pandas()[r.dsn.to_pandas()["kind"] == "map"]
    assert sorted(set(maps["dsn"])) == [1, 1001, 2001]
    assert r.dsn.to_pandas()[r.dsn.to_pandas()["kind"] == "ack"]["dsn"].max() == 3001


def test_same_subflow_resend_under_a_new_subflow_sequence_is_mptcp_level(tmp_path: Path) -> None:
    c = Conn()
    c.handshakes()
    c.data(1, 101, 1, 1)
    c.data(1, 1101, 1, 1001)            # same data, new place in the subflow's byte stream
    c.ack(1, 2101, 1001)
    r = analyze(c.write(tmp_path / "s.pcap"))
    assert len(r.reinjections.to_pandas()) == 1 and bool(r.reinjections.to_pandas()["same_subflow"].iloc[0])


def test_grown_and_repeated_mappings_are_not_retransmissions(tmp_path: Path) -> None:
    c = Conn()
    c.handshakes()
    # one 3000-byte chunk: its mapping on each of 3 segments, then grown to 4000 for a 4th
    for i in range(3):
        c.add(C1, 40000, S, 5201, 101 + 1000 * i, 501, ACK,
              K.dss(dsn=(c.dc + 1) % 2**64, ssn=1, dll=3000), b"x" * 1000)
    c.add(C1, 40000, S, 5201, 3101, 501, ACK, K.dss(dsn=(c.dc + 1) % 2**64, ssn=1, dll=4000), b"x" * 1000)
    c.data(2, 701, 4001, 1)
    c.ack(1, 4101, 5001)
    r = analyze(c.write(tmp_path / "g.pcap"))
    assert r.reinjections.to_pandas().empty and r.mptcp_retransmissions == 0


@needs_tshark
def test_reinjections_agree_with_tshark_on_a_hand_made_connection(tmp_path: Path) -> None:
    path = reinjection_conn().write(tmp_path / "r.pcap")
    r = analyze(path)
    t0 = r.t0_epoch or 0.0
    ours = [(round(t + t0, 6), round(f + t0, 6))
            for t, f in zip(r.reinjections.to_pandas()["t"], r.reinjections.to_pandas()["first_t"], strict=True)]
    theirs = [(round(a, 6), round(b, 6)) for a, b in oracle.tshark_reinjections([path], tmp_path)]
    assert ours == theirs and len(ours) == 1
    # restricted to the connection's subflows the mark stays; to another connection's, it goes
    mine = [s.name for s in r.subflows]
    assert len(oracle.tshark_reinjections([path], tmp_path, endpoints=mine)) == 1
    assert oracle.tshark_reinjections([path], tmp_path, endpoints=["192.0.2.99:1"]) == []


MPTCP_SCENARIOS = sorted({p.name.split("__")[0] for p in DATA.glob("mptcp_*__client_eth1.pcap")})


@needs_tshark
@pytest.mark.parametrize("scenario", MPTCP_SCENARIOS)
def test_reinjections_agree_with_tshark_on_recorded_captures(tmp_path: Path, scenario: str) -> None:
    """Where tshark's MPTCP analysis (it checks re-sends across subflows only) marks data sent
    again, we list a re-send across subflows no later than its first mark.

    The definitions differ, so the lists are not equal: tshark marks packets whose bytes
    were sent before on another subflow, each segment, and a TCP retransmission of re-sent
    data again; we list mappings (a data range mapped again: on another subflow, or on the
    same one under a new subflow sequence number), once per re-sending mapping, including
    bytes the first subflow had mapped but not yet sent when the scheduler moved them
    (recorded join_rst and b_starved runs have those)."""
    files = sorted(DATA.glob(f"{scenario}__client_eth*.pcap"))
    direction = "download" if "download" in scenario else "upload"
    spec = FlowSpec(S, 5201, {C1: "A", C2: "B"}, ("A", "B"), True, direction)  # type: ignore[arg-type]
    r = analyze_flow([CaptureFile(f, f.stem.split("__")[1]) for f in files], spec)
    theirs = oracle.tshark_reinjections(files, tmp_path, endpoints=[s.name for s in r.subflows])
    x = r.reinjections.to_pandas()[~r.reinjections.to_pandas()["same_subflow"].astype(bool)]
    assert (x["length"] > 0).all() and (x["first_t"] < x["t"]).all()
    if theirs:
        assert len(x) and x["t"].min() + (r.t0_epoch or 0) <= min(a for a, _ in theirs) + 1e-6


@needs_tshark
def test_tshark_marks_in_another_connection_are_left_out(tmp_path: Path) -> None:
    """A CI run's capture (tests/data/ctrl_resend, its first 0.5 s): iperf3's server re-sent
    a byte of the MPTCP control connection on that connection's other subflow 0.2 s before the
    data connection's first re-send. tshark marks both; only the analyzed connection's count."""
    files = [DATA / "ctrl_resend" / f"client_{d}.pcap" for d in ("eth1", "eth2")]
    fa, _ = analyze_files(files, tmp_path / "a")
    t0 = fa.t0_epoch or 0.0
    cross = fa.reinjections.to_pandas()[~fa.reinjections.to_pandas()["same_subflow"].astype(bool)]
    every = oracle.tshark_reinjections(files, tmp_path)
    mine = oracle.tshark_reinjections(files, tmp_path, endpoints=[s.name for s in fa.subflows])
    assert len(cross) and mine and len(mine) < len(every)
    assert min(a for a, _ in every) - t0 < cross["t"].min() - 0.1           # the control byte
    assert abs(min(a for a, _ in mine) - t0 - cross["t"].min()) < 1e-3      # the data re-send


def test_recorded_pmtud_run_has_one_reinjection_at_the_black_hole() -> None:
    """Path B's first 9000-byte segments are lost to PMTUD; the scheduler re-sends that data on A."""
    files = [DATA / "mptcp_pmtud__client_eth1.pcap", DATA / "mptcp_pmtud__client_eth2.pcap"]
    r = analyze_flow([CaptureFile(f, f.stem) for f in files], SPEC)
    x = r.reinjections.to_pandas()
    assert len(x) == 1 and x["path"].iloc[0] == "A" and x["first_path"].iloc[0] == "B"
    icmp_t = r.subflows_on("B")[0].icmp_first_t
    assert icmp_t is not None and x["first_t"].iloc[0] <= icmp_t + 0.05


def test_a_range_resent_many_times_counts_once_per_resend(tmp_path: Path) -> None:
    """labs/middlebox row d (tests/data/README.md): the client re-sends the same data range
    every ~200 ms on its one subflow. One row per re-send comes near the kernel's own
    MPTCPRetrans counter (59); one row per pair of overlapping mappings made 1,830."""
    fa, _ = analyze_files([DATA / "dss_strip" / "client_eth1.pcap"], tmp_path / "a")
    x = fa.reinjections.to_pandas()
    assert abs(len(x) - 59) <= 2 and x["same_subflow"].astype(bool).all()
    assert (x["length"] > 0).all() and (x["first_t"] < x["t"]).all()
    assert fa.mptcp_retrans_bytes == int(x["length"].sum())
    assert x["first_t"].nunique() < len(x)      # many re-sends go back to one first carrier


def test_a_zero_window_probe_is_not_a_retransmission(tmp_path: Path) -> None:
    """Linux probes a zero MPTCP-level window with one byte below its data ACK (a byte the
    receiver has): the row says window_probe, the counts leave it out; one byte not yet
    acknowledged, sent again, is a retransmission."""
    c = Conn()
    c.handshakes()
    c.data(1, 101, 1, 1)
    c.ack(1, 1101, 1001)                # data-level: bytes 1..1000 acknowledged
    c.data(1, 1101, 1000, 1001, n=1)    # the probe: byte 1000 again, under a new SSN
    c.data(1, 1102, 1001, 1002)
    c.data(1, 2102, 1001, 2002, n=1)    # byte 1001, not acknowledged yet: a re-send
    c.ack(1, 2103, 2001)
    r = analyze(c.write(tmp_path / "probe.pcap"))
    x = r.reinjections.to_pandas()
    assert list(zip(x["dsn"], x["window_probe"], strict=True)) == [(1000, True), (1001, False)]
    assert (r.mptcp_retransmissions, r.mptcp_retrans_bytes, r.mptcp_window_probes) == (1, 1, 1)
    assert r.subflows_on("A")[0].mptcp_retransmissions == 1


def test_data_queued_on_a_slow_subflow_and_sent_first_elsewhere_is_a_late_original() -> None:
    """labs/rcvbuf TB-EMU2 (docs/labs/rcvbuf.md): the 3G subflow has 64 KB mapped at t=30
    and its tail still queued; at t=37 the sender re-sends a 32 KB chunk on WiFi that starts
    inside the 3G mapping and runs 7,896 bytes past it; at t=39 3G sends its next mapping,
    those 7,896 bytes, in place (its DSN - SSN offset unchanged). On the wire the WiFi copy
    came first, so the 3G copy is a re-send here; the sender counted the WiFi one
    (MPTcpExtMPTCPRetrans), and the row says late_original. The WiFi re-sends that follow
    one another in their own subflow's order are a chain of re-sends, not late."""
    def resends(rows: list[tuple[float, str, str, int, int, int]]) -> list[tuple[float, str, int, bool]]:
        maps = pd.DataFrame(rows, columns=["t", "path", "subflow", "dsn", "length", "ssn"]).assign(kind="map")
        x = _reinjections(Table.from_pandas(maps)).to_pandas()
        return list(zip(x["t"], x["path"], x["length"], x["late_original"].astype(bool), strict=True))

    assert resends([
        # t, path, subflow, dsn, length, ssn
        (0.0, "3G", "g", 0, 64_080, 100),
        (1.0, "WiFi", "w", 120_000, 40_000, 5_000),           # new data on WiFi
        (7.0, "WiFi", "w", 39_248, 32_728, 45_000),           # re-send: [39,248, 71,976)
        (9.0, "3G", "g", 64_080, 7_896, 64_180),              # 3G's queued tail, in place: late
        (12.0, "3G", "g", 20_000, 1_000, 72_076),             # a real re-send on 3G (offset changes)
    ]) == [(7.0, "WiFi", 24_832, False), (9.0, "3G", 7_896, True), (12.0, "3G", 1_000, False)]
    assert resends([
        (0.0, "3G", "g", 0, 64_080, 100),
        (7.0, "WiFi", "w", 0, 32_728, 45_000),                # re-send of 3G's first half
        (10.0, "WiFi", "w", 32_728, 31_352, 77_728),          # and of its second, in place: a chain
    ]) == [(7.0, "WiFi", 32_728, False), (10.0, "WiFi", 31_352, False)]


def random_mappings(rng: np.random.Generator) -> pd.DataFrame:
    """A few mappings on up to 3 subflows over a short data range: overlaps, same-key
    (grown, repeated) mappings, duplicates, equal times and missing paths all come up."""
    n = int(rng.integers(0, 25))
    sub = rng.integers(0, 3, n)
    dsn = rng.integers(1, 60, n)
    return pd.DataFrame({
        "t": rng.integers(0, 12, n) / 4, "path": np.array(["A", "B", None], dtype=object)[sub],
        "subflow": np.array(["s0", "s1", "s2"])[sub], "kind": "map", "dsn": dsn,
        "length": rng.integers(0, 15, n), "ssn": dsn - rng.integers(0, 3, n) * 20,
    })


def reinjections_brute_force(maps: pd.DataFrame, acks: pd.DataFrame) -> pd.DataFrame:
    """The rules of the depth module's docstring, byte by byte: for each mapping (in data
    sequence order, as the analysis sorts them), the mappings before it in (time, that
    order) whose range overlaps it under another (subflow, DSN - SSN); the set of its bytes
    they carried; the earliest of those carrying the first such byte; a window probe when it
    is one byte below a data ACK sent at or before it."""
    u = maps.drop_duplicates(["subflow", "dsn", "ssn", "length"], keep="first")
    u = u[u["length"] > 0].sort_values(["dsn", "t"], kind="stable").reset_index(drop=True)
    t, path, sub = u["t"].tolist(), u["path"].tolist(), u["subflow"].tolist()
    start, length, ssn = (u[c].astype(int).tolist() for c in ("dsn", "length", "ssn"))

    def span(i: int) -> set[int]:
        return set(range(start[i], start[i] + length[i]))

    def earlier(i: int) -> list[int]:
        return [j for j in range(len(u)) if (t[j], j) < (t[i], i) and span(i) & span(j)
                and (sub[i], start[i] - ssn[i]) != (sub[j], start[j] - ssn[j])]

    def run_head(i: int) -> int:
        """The first mapping of i's run: its subflow's mappings in (SSN, order), walked back
        while the DSN - SSN offset stays i's."""
        mine = sorted((ssn[j], j) for j in range(len(u)) if sub[j] == sub[i])
        k = mine.index((ssn[i], i))
        while k > 0 and start[mine[k - 1][1]] - ssn[mine[k - 1][1]] == start[i] - ssn[i]:
            k -= 1
        return mine[k][1]

    resends = {i for i in range(len(u)) if earlier(i)}
    rows: list[tuple[object, ...]] = []
    for i in sorted(resends):
        sent = set().union(*(span(i) & span(j) for j in earlier(i)))
        x = min(sent)
        _, f = min((t[j], j) for j in earlier(i) if x in span(j))
        acked = max((a for ta, a in zip(acks["t"], acks["dsn"], strict=True) if ta <= t[i]), default=None)
        probe = length[i] == 1 and acked is not None and start[i] < acked
        late = run_head(i) not in resends
        rows.append((t[i], path[i], sub[i], x, len(sent), t[f], path[f], sub[f], sub[i] == sub[f], probe, late, i))
    out = pd.DataFrame(rows, columns=[*REINJECTION_COLUMNS, "order"])
    return out.sort_values(["t", "order"], kind="stable").drop(columns="order").reset_index(drop=True)


def test_reinjections_match_a_bytewise_brute_force() -> None:
    rng = np.random.default_rng(8684)
    found = probes = late = 0
    for _ in range(400):
        maps = random_mappings(rng)
        k = int(rng.integers(0, 4))
        acks = pd.DataFrame({"t": rng.integers(0, 12, k) / 4, "dsn": rng.integers(1, 70, k)})
        ours = _reinjections(Table.from_pandas(maps), Table.from_pandas(acks)).to_pandas()
        ref = reinjections_brute_force(maps, acks)
        pd.testing.assert_frame_equal(ours, ref, check_dtype=False)
        found += len(ours)
        probes += int(ours["window_probe"].sum())
        late += int(ours["late_original"].sum())
    assert found > 1000 and probes > 10     # the cases do overlap, and some are probes
    assert 10 < late < found / 2            # some re-sends continue their subflow's own data


def test_widen_picks_the_nearest_64_bit_value() -> None:
    ref = (7 << 32) + 0xFFFFFF00
    vals = np.array([ref, 0x10, 0xFFFFFFF0, (9 << 32) + 5, 6], dtype=np.uint64)
    is64 = np.array([True, False, False, True, False])
    assert list(widen(vals, is64, ref)) == [ref, (8 << 32) + 0x10, (7 << 32) + 0xFFFFFFF0, (9 << 32) + 5,
                                            (9 << 32) + 6]


def test_rtt_per_subflow_skips_retransmitted_segments(tmp_path: Path) -> None:
    c = Conn()
    c.handshakes()
    for i in range(5):                  # A: 5 ms between each segment and its ACK
        c.data(1, 101 + 1000 * i, 1 + 1000 * i, 1 + 1000 * i, dt=0.005)
        c.ack(1, 1101 + 1000 * i, 1001 + 1000 * i, dt=0.002)
    c.data(1, 5101, 5001, 5001, dt=0.030)
    c.data(1, 5101, 5001, 5001, dt=0.001)     # a retransmission: its ACK time is ambiguous
    c.ack(1, 6101, 6001)
    r = analyze(c.write(tmp_path / "rtt.pcap"))
    a = r.subflows_on("A")[0]
    assert a.rtt_samples == 5 and a.rtt_min_ms == pytest.approx(5.0, abs=0.01)
    assert a.rtt_median_ms == pytest.approx(5.0, abs=0.01)


def test_signalling_events_on_the_timeline(tmp_path: Path) -> None:
    c = Conn()
    c.handshakes()
    c.data(1, 101, 1, 1)
    c.ack(1, 1101, 1001, K.add_addr("10.0.4.2", 5, hmac=1))
    c.data(2, 701, 1001, 1)
    c.add(C2, 40001, S, 5201, 1701, 901, ACK, K.mp_prio(True))
    c.ack(2, 1701, 2001, K.remove_addr([5]))
    c.add(C1, 40000, S, 5201, 1101, 501, ACK,
          K.dss(data_ack=(c.ds + 1) % 2**64, dsn=(c.dc + 2001) % 2**64, ssn=1001, dll=0),
          b"i" * 10)                                   # infinite mapping: fallback
    c.add(C1, 40000, S, 5201, 1111, 501, ACK | PSH, K.dss(dsn=(c.dc + 2011) % 2**64, ssn=1011, dll=1, fin=True), b"f")
    c.add(S, 5201, C1, 40000, 501, 1112, RST, K.mp_fastclose(KC))
    c.add(S, 5201, C2, 40001, 901, 1701, RST, K.mp_tcprst(0, 4))
    r = analyze(c.write(tmp_path / "ev.pcap"))
    ev = r.mptcp_events.to_pandas()
    got = list(zip(ev["event"], ev["path"], ev["detail"], strict=True))
    assert got == [("ADD_ADDR", "A", "10.0.4.2 id=5"), ("MP_PRIO", "B", "backup=1"), ("REMOVE_ADDR", "B", "ids=5"),
                   ("infinite mapping", "A", "fallback (RFC 8684 3.7)"), ("DATA_FIN", "A", ""),
                   ("MP_FASTCLOSE", "A", ""), ("MP_TCPRST", "B", "reason=4")]
    assert list(ev["t"]) == sorted(ev["t"])


def test_checksum_presence(tmp_path: Path) -> None:
    c = Conn()
    c.handshakes()
    c.add(C1, 40000, S, 5201, 101, 501, ACK, K.dss(dsn=(c.dc + 1) % 2**64, ssn=1, dll=100, csum=0xABCD), b"c" * 100)
    r = analyze(c.write(tmp_path / "cs.pcap"))
    assert r.dss_checksum is True and r.checksum_required is False
    r2 = analyze(reinjection_conn().write(tmp_path / "r.pcap"))
    assert r2.dss_checksum is False


def test_analyze_command_guesses_the_run_and_writes_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = [DATA / "mptcp_pmtud_download__client_eth1.pcap", DATA / "mptcp_pmtud_download__client_eth2.pcap"]
    out = tmp_path / "out"
    assert main(["analyze", *map(str, files), "--out", str(out), "--figures"]) == 0
    text = capsys.readouterr().out
    assert "server port 5201" in text and "direction download" in text and "paths: A=10.0.1.2, B=10.0.2.2" in text
    s = json.loads((out / "summary.json").read_text())
    assert s["mptcp_negotiated"] and len(s["subflows"]) == 2
    for f in ("dsn.csv", "mptcp_events.csv", "mptcp_retransmissions.csv", "timeseries.csv", "icmp.csv",
              "subflows.csv", "figures/dsn.png", "figures/throughput.png"):
        assert (out / f).is_file(), f
    fa, g = analyze_files(files, tmp_path / "o2", server_port=5201, paths={C1: "X", C2: "Y"}, direction="download")
    assert {s.path for s in fa.subflows} == {"X", "Y"} and g.how[-1].startswith("MPTCP requested")
    assert main(["analyze", str(tmp_path / "none.pcap")]) == 2

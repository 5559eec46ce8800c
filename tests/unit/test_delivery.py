"""One-way delay, reordering and head-of-line delay (analysis/delivery.py) on connections built
packet by packet (pcapkit.py via test_depth.Conn), where the answers are known by construction.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pcapkit as K
import pytest
from test_depth import ACK, C1, C2, SPEC, Conn, S

from mptcplab.analysis import CaptureFile, FlowAnalysis, analyze_flow, pcapread
from mptcplab.analysis.delivery import HOL_KEYS, _bin_stats, hol_delays

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")


def test_hol_delays_of_a_hole_filled_later() -> None:
    # [0,10) at 1.0, [20,30) at 1.1 (hole [10,20)), [10,20) at 1.5, a copy of [0,10) at 2.0
    h = hol_delays(np.array([0, 20, 10, 0]), np.array([10, 10, 10, 10]), np.array([1.0, 1.1, 1.5, 2.0]))
    assert h == pytest.approx([0.0, 0.4, 0.0, 0.0])
    # a hole never filled: no finite delay; overlapping ranges with other boundaries
    h = hol_delays(np.array([0, 20, 5]), np.array([10, 5, 20]), np.array([1.0, 1.2, 1.3]))
    assert h == pytest.approx([0.0, 0.1, 0.0])
    assert np.isinf(hol_delays(np.array([0, 20]), np.array([10, 5]), np.array([1.0, 1.2])))[1]


def test_hol_delays_match_a_byte_by_byte_replay() -> None:
    """Random overlapping, duplicated and missing ranges against the definition replayed
    byte by byte: a byte's first arrival, readable when every byte before it has arrived."""
    rng = np.random.default_rng(7)
    for _ in range(30):
        n = int(rng.integers(1, 40))
        start, length = rng.integers(0, 200, n), rng.integers(1, 30, n)
        arrival = rng.random(n)
        first = np.full(260, np.inf)
        for s0, ln0, a0 in zip(start, length, arrival, strict=True):
            first[s0:s0 + ln0] = np.minimum(first[s0:s0 + ln0], a0)
        lo = int(start.min())
        want = [max(0.0, float(first[lo:s0].max()) - a0) if s0 > lo else 0.0
                for s0, a0 in zip(start, arrival, strict=True)]
        assert hol_delays(start, length, arrival) == pytest.approx(want)


def test_bin_stats_match_a_groupby() -> None:
    rng = np.random.default_rng(1)
    k, v = rng.integers(0, 7, 500), rng.normal(size=500)
    kb, n, lo, med, hi = _bin_stats(k, v)
    g = pd.Series(v).groupby(k).agg(["size", "min", "median", "max"])
    assert list(kb) == list(g.index) and list(n) == list(g["size"])
    assert np.allclose(lo, g["min"]) and np.allclose(med, g["median"]) and np.allclose(hi, g["max"])


def hole_conn() -> Conn:
    """Data 1-1000 on A, 2001-3000 on B 1 ms later (hole 1001-2000), 1001-2000 on A 5 ms later
    (its own segment in order); then 3001-4000 on B, in order."""
    c = Conn()
    c.handshakes()
    c.data(1, 101, 1, 1)
    c.data(2, 701, 2001, 1, dt=0.005)
    c.data(1, 1101, 1001, 1001)
    c.data(2, 1701, 3001, 1001)
    c.ack(1, 2101, 4001)
    return c


def test_known_hol_delay_at_the_receiver(tmp_path: Path) -> None:
    r = analyze_flow([CaptureFile(hole_conn().write(tmp_path / "server.pcap"), "server")], SPEC)
    a, b = r.subflows
    assert (a.hol_segments, a.ooo_share, a.hol_max_ms) == (2, 0.0, 0.0)
    assert (b.hol_segments, b.ooo_share, b.hol_never) == (2, 0.5, 0)
    assert b.hol_max_ms == pytest.approx(5.0, abs=1e-3)       # waited for A's 1001-2000
    assert r.hol_connection["ooo_share"] == 0.25 and r.hol_connection["hol_segments"] == 4
    assert int(r.hol.to_pandas()["ooo_bytes"].sum()) == 1000 and b.hol_point == "server"
    hol = r.hol.to_pandas()
    assert hol["hol_max_ms"].max() == pytest.approx(5.0, abs=1e-3) and int(hol["segments"].sum()) == 4
    assert r.owd.to_pandas().empty and r.owd_unavailable            # one point, and not said to share a clock


def two_points(tmp_path: Path, delay: float) -> list[CaptureFile]:
    """The hole connection seen at the client and, ``delay`` s later, at the server."""
    c = hole_conn()
    cli = K.write_pcap(tmp_path / "client.pcap", c.frames)
    srv = K.write_pcap(tmp_path / "server.pcap", [(t + delay, f) for t, f in c.frames])
    return [CaptureFile(cli, "client"), CaptureFile(srv, "server")]


def test_known_one_way_delay_between_two_points_on_one_clock(tmp_path: Path) -> None:
    r = analyze_flow(two_points(tmp_path, 0.0125), dataclasses.replace(SPEC, same_clock=True))
    for s in r.subflows:
        assert s.owd_samples == 2 and s.owd_points == "client->server"
        assert s.owd_median_ms == pytest.approx(12.5, abs=1e-3) and s.owd_min_ms == pytest.approx(12.5, abs=1e-3)
        assert s.hol_point == "server"
    assert r.owd_unavailable is None and set(r.owd.to_pandas()["subflow"]) == {f"{C1}:40000", f"{C2}:40001"}
    owd = r.owd.to_pandas()
    assert int(owd["samples"].sum()) == 4 and np.allclose(owd[["owd_min_ms", "owd_median_ms", "owd_max_ms"]], 12.5)
    assert r.subflows[1].hol_max_ms == pytest.approx(5.0, abs=1e-3)


def test_hol_only_at_the_named_receiver(tmp_path: Path) -> None:
    caps = two_points(tmp_path, 0.0125)
    spec = dataclasses.replace(SPEC, receiver_node="server")
    r = analyze_flow(caps[:1], spec)              # the client's point only: the sender's order
    # withheld: None, not 0 (not measured is no count)
    assert r.hol_connection == dict.fromkeys(HOL_KEYS) and r.hol.to_pandas().empty
    assert all(s.hol_point is None and s.hol_segments is None and s.hol_never is None for s in r.subflows)
    assert "not captured at the receiver (server)" in (r.hol_unavailable or "")
    r = analyze_flow(caps, spec)                  # one clock not claimed: no OWD pair, still the server
    assert {s.hol_point for s in r.subflows} == {"server"} and r.hol_unavailable is None
    assert r.subflows[1].hol_max_ms == pytest.approx(5.0, abs=1e-3)


def test_no_one_way_delay_without_one_clock(tmp_path: Path) -> None:
    r = analyze_flow(two_points(tmp_path, 0.0125), SPEC)
    assert all(s.owd_samples == 0 for s in r.subflows) and r.owd.to_pandas().empty
    assert "clock" in (r.owd_unavailable or "")


def test_segments_without_their_own_mapping_take_the_chunks(tmp_path: Path) -> None:
    # one 2000-byte mapping on A carried on its first segment only; B's 2001-3000 arrives
    # between A's two segments: the second A segment is 1001-2000, so B waits for it
    c = Conn()
    c.handshakes()
    c.add(C1, 40000, S, 5201, 101, 501, ACK, K.dss(dsn=(c.dc + 1) % 2**64, ssn=1, dll=2000), b"x" * 1000)
    c.data(2, 701, 2001, 1, dt=0.003)
    c.add(C1, 40000, S, 5201, 1101, 501, ACK, b"", b"x" * 1000)
    r = analyze_flow([CaptureFile(c.write(tmp_path / "s.pcap"), "s")], SPEC)
    assert r.subflows[1].hol_max_ms == pytest.approx(3.0, abs=1e-3) and r.subflows[0].ooo_share == 0.0


def test_metrics_from_a_repetition_record() -> None:
    from mptcplab.metrics import METRICS, Select
    from mptcplab.record.model import Repetition

    rep = Repetition.model_validate({
        "name": "x", "mptcp": {"ooo_share": 0.25, "hol_p95_ms": 4.0},
        "subflows": [{"path": "A", "bytes": 3000, "ooo_share": 0.0, "hol_p95_ms": 0.0, "owd_median_ms": 10.0},
                     {"path": "B", "bytes": 1000, "ooo_share": 1.0, "hol_p95_ms": 5.0, "owd_median_ms": 30.0},
                     {"path": "B", "bytes": 3000, "ooo_share": 0.0, "hol_p95_ms": 1.0, "owd_median_ms": 20.0}]})
    bare = Repetition.model_validate({"name": "old", "subflows": [{"path": "A", "bytes": 1}]})

    def v(name: str, r: Repetition, path: str | None = None) -> float | None:
        return METRICS[name].per_rep(r, Select(path=path))

    assert v("ooo_share", rep) == 0.25 and v("ooo_share", rep, "B") == pytest.approx(0.25)
    assert v("hol_p95_ms", rep) == 4.0 and v("hol_p95_ms", rep, "B") == 5.0
    assert v("owd_median_ms", rep, "B") == 30.0 and v("owd_median_ms", rep) == 30.0
    assert all(v(m, bare, p) is None for m in ("ooo_share", "hol_p95_ms", "owd_median_ms") for p in (None, "A"))


def test_analyze_command_measures_one_way_delay_only_when_told_one_clock(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mptcplab.cli import main

    files = [str(c.path) for c in two_points(tmp_path, 0.0125)]
    assert main(["analyze", *files, "--out", str(tmp_path / "a")]) == 0
    text = capsys.readouterr().out
    assert "one-way delay not available" in text and "25.0% of bytes out of order" in text
    assert (tmp_path / "a" / "hol.csv").is_file() and len((tmp_path / "a" / "owd.csv").read_text().splitlines()) == 1
    assert main(["analyze", *files, "--same-clock", "--figures", "--out", str(tmp_path / "b")]) == 0
    text = capsys.readouterr().out
    assert "one-way delay 10.0.1.2:40000 client->server: median 12.5 ms" in text
    assert "not available" not in text and (tmp_path / "b" / "figures" / "delivery.png").stat().st_size > 1000


DATA = Path(__file__).resolve().parents[1] / "data"
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def recorded_download() -> tuple[list[CaptureFile], FlowAnalysis]:
    files = sorted(DATA.glob("mptcp_pmtud_download__*.pcap"))        # client eth1, eth2, server eth0
    caps = [CaptureFile(f, f.stem.split("__")[1]) for f in files]
    spec = dataclasses.replace(SPEC, direction="download", same_clock=True)
    return caps, analyze_flow(caps, spec)


def test_recorded_download_measures_sender_to_receiver() -> None:
    _, r = recorded_download()
    for s in r.subflows:             # the server sends: its point first, the client's receives
        assert s.owd_points == f"server_eth0->client_eth{1 if s.path == 'A' else 2}"
        assert s.hol_point == s.owd_points.split("->")[1] and s.owd_samples > 100
        assert s.owd_min_ms is not None and s.owd_median_ms is not None and s.owd_p95_ms is not None
        assert 0 <= s.owd_min_ms <= s.owd_median_ms <= s.owd_p95_ms < 200
    h = r.hol_connection              # path B's black hole (PMTUD) makes A's data wait
    assert 0 < h["ooo_share"] < 1 and h["hol_p95_ms"] > 10


def tshark_segments(path: Path) -> pd.DataFrame:
    out = subprocess.run(["tshark", "-r", str(path), "-Y", "tcp.len > 0 && tcp.srcport == 5201", "-T", "fields",
                          "-e", "frame.time_epoch", "-e", "ip.dst", "-e", "tcp.dstport", "-e", "tcp.seq_raw",
                          "-e", "tcp.len"], check=True, capture_output=True, text=True).stdout
    rows = [ln.split("\t") for ln in out.splitlines() if ln]
    df = pd.DataFrame(rows, columns=["t", "dst", "port", "seq", "len"]).astype({"t": float})
    return df.drop_duplicates(["dst", "port", "seq", "len"], keep=False)     # sent twice: ambiguous


@needs_tshark
def test_one_way_delay_agrees_with_tshark_fields() -> None:
    """The oracle: tshark's frame times, raw sequence numbers and lengths at the two points,
    matched with pandas, give the same per-subflow delays."""
    caps, r = recorded_download()
    srv = tshark_segments(next(c.path for c in caps if c.point == "server_eth0"))
    for s in r.subflows:
        cli = tshark_segments(next(c.path for c in caps if c.point == s.hol_point))
        m = pd.merge(srv, cli, on=["dst", "port", "seq", "len"])
        m = m[(m["dst"] == s.src) & (m["port"] == str(s.sport))]
        d = (m["t_y"] - m["t_x"]) * 1e3
        assert len(d) == s.owd_samples
        assert float(d.median()) == pytest.approx(s.owd_median_ms, abs=2e-3)
        assert float(d.min()) == pytest.approx(s.owd_min_ms, abs=2e-3)

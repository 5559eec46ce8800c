"""Which copy reached the receiver first (analysis/usefulness.py): re-sends qualified as useful
or redundant (mptcpanalyzer's qualify_reinjections) and each subflow's first-delivered bytes
(its goodput contribution), on connections built packet by packet (pcapkit.py via
test_depth.Conn) and seen at the client and, each path's delay later, at the server."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pcapkit as K
import pytest
from test_depth import C1, C2, SPEC, Conn, reinjection_conn

from mptcplab.analysis import CaptureFile, FlowAnalysis, analyze_flow, pcapread
from mptcplab.analysis.depth import REINJECTION_COLUMNS
from mptcplab.analysis.table import Table
from mptcplab.analysis.usefulness import COLUMNS, first_bytes, qualify

pytestmark = pytest.mark.skipif(not pcapread.library_path().is_file(),
                                reason="native capture reader not built (make -C native)")

A, B = f"{C1}:40000", f"{C2}:40001"


def seen_at_both_ends(tmp_path: Path, c: Conn, delay_a: float, delay_b: float) -> FlowAnalysis:
    """``c`` captured at the client, and at the server each packet its path's delay later
    (the server's own packets leave at the client's time: only arrival order matters here)."""
    srv = []
    for t, f in c.frames:
        src = ".".join(str(b) for b in f[26:30])     # Ethernet + IPv4 source address
        srv.append((t + (delay_a if src == C1 else delay_b if src == C2 else 0.0), f))
    srv.sort(key=lambda x: x[0])
    caps = [CaptureFile(K.write_pcap(tmp_path / "client.pcap", c.frames), "client"),
            CaptureFile(K.write_pcap(tmp_path / "server.pcap", srv), "server")]
    return analyze_flow(caps, dataclasses.replace(SPEC, receiver_node="server"))


def test_a_resend_on_the_fast_path_is_useful(tmp_path: Path) -> None:
    # B re-sends A's 1001-2000 1 ms after A sent it; A takes 50 ms, B 5 ms: B's copy arrives
    # 44 ms before A's
    r = seen_at_both_ends(tmp_path, reinjection_conn(), 0.050, 0.005)
    assert {s.hol_point for s in r.subflows} == {"server"}
    x = r.reinjections.to_pandas().iloc[0]
    assert (x["subflow"], x["first_subflow"], x["useful"]) == (B, A, True)
    assert x["gain_ms"] == pytest.approx(44.0, abs=1e-3)
    assert x["first_arrival_t"] - x["arrival_t"] == pytest.approx(0.044, abs=1e-6)
    a, b = r.subflows
    assert (a.mptcp_retrans_useful, b.mptcp_retrans_useful) == (0, 1)
    # 1-1000 first on A; 1001-2000 first on B (the re-send), 2001-3000 only on B
    assert (a.first_bytes, b.first_bytes) == (1000, 2000)
    # per 100 ms bin of arrival in hol.csv: the goodput of each subflow over time
    assert r.hol.to_pandas().groupby("subflow")["first_bytes"].sum().to_dict() == {A: 1000, B: 2000}


def test_a_resend_on_the_slow_path_is_redundant(tmp_path: Path) -> None:
    r = seen_at_both_ends(tmp_path, reinjection_conn(), 0.005, 0.050)
    x = r.reinjections.to_pandas().iloc[0]
    assert x["useful"] is False and x["gain_ms"] == pytest.approx(-46.0, abs=1e-3)
    a, b = r.subflows
    assert (a.mptcp_retrans_useful, b.mptcp_retrans_useful) == (0, 0)
    assert (a.first_bytes, b.first_bytes) == (2000, 1000)
    assert (a.first_bytes or 0) + (b.first_bytes or 0) == 3000     # each data byte once
    assert r.hol.to_pandas().groupby("subflow")["first_bytes"].sum().to_dict() == {A: 2000, B: 1000}


def test_without_a_receiver_point_nothing_is_claimed(tmp_path: Path) -> None:
    c = reinjection_conn()
    caps = [CaptureFile(K.write_pcap(tmp_path / "client.pcap", c.frames), "client")]
    r = analyze_flow(caps, dataclasses.replace(SPEC, receiver_node="server"))
    assert list(r.reinjections.to_pandas().columns) == REINJECTION_COLUMNS + COLUMNS
    assert r.reinjections.to_pandas()["useful"].isna().all() and r.reinjections.to_pandas()["gain_ms"].isna().all()
    assert all(s.first_bytes is None and s.mptcp_retrans_useful is None for s in r.subflows)


def test_a_resend_on_the_same_subflow_is_not_qualified() -> None:
    reinj = pd.DataFrame([{"t": 0.002, "path": "A", "subflow": A, "dsn": 1, "length": 10, "first_t": 0.001,
                           "first_path": "A", "first_subflow": A, "same_subflow": True}], columns=REINJECTION_COLUMNS)
    received = {A: (np.array([101, 101], dtype=np.uint64), np.array([10, 10]), np.array([1.0, 1.1]))}
    q = qualify(Table.from_pandas(reinj), received, 100, 0.0).to_pandas()
    assert q["useful"].iloc[0] is None and np.isnan(q["arrival_t"].iloc[0])


def test_first_bytes_match_a_byte_by_byte_replay() -> None:
    """Random overlapping ranges on three subflows against the definition replayed byte by
    byte: each byte goes to the subflow of its earliest copy."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        received = {}
        owner = np.full(300, -1)
        when = np.full(300, np.inf)
        for j, name in enumerate("xyz"):
            n = int(rng.integers(0, 15))
            st, ln, ts = rng.integers(0, 250, n), rng.integers(1, 40, n), rng.random(n)
            received[name] = (st.astype(np.uint64) + np.uint64(2**64 - 100), ln, ts)  # across the 2^64 wrap
            for s0, l0, t0 in zip(st, ln, ts, strict=True):
                better = t0 < when[s0:s0 + l0]
                when[s0:s0 + l0][better] = t0
                owner[s0:s0 + l0][better] = j
        got = first_bytes(received, 2**64 - 100)
        want = {name: int((owner == j).sum()) for j, name in enumerate("xyz") if len(received[name][0])}
        assert got == want


def test_gain_figure(tmp_path: Path) -> None:
    from mptcplab.results.figures import plot_resend_gain

    r = seen_at_both_ends(tmp_path, reinjection_conn(), 0.050, 0.005)
    ax = plot_resend_gain(r.reinjections.to_pandas()).axes[0]
    legend = ax.get_legend()
    assert legend is not None and len(ax.get_lines()) == 2       # the CDF and the 0 line
    assert "1 re-sends" in legend.get_texts()[0].get_text()
    assert "No re-send qualified" in plot_resend_gain(r.reinjections.to_pandas().iloc[0:0]).axes[0].texts[0].get_text()

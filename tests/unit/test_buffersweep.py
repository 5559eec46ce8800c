"""The buffer-sweep tables (results/buffersweep.py) on hand-made records: name parsing,
the read-back buffer, wire minus application bytes, per-buffer statistics, the paper's
buffer formula and the latency PDF."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mptcplab.record.model import Manifest, Repetition, Summary
from mptcplab.results.buffersweep import (
    advertised_window,
    buffer_formula,
    delay_pdf,
    parse_label,
    per_buffer,
    resent_bytes,
    rmem_max,
    sweep_frame,
)


def rep(name: str, n: int, goodput: float, wifi: int, g3: int, retrans: int = 0, reinj: int = 0) -> Repetition:
    return Repetition.model_validate({
        "name": name, "rep": n, "goodput_mbps": goodput, "duration_s": 10.0,
        "mptcp": {"requested": g3 > 0, "negotiated": g3 > 0},
        "subflows": [{"path": "WiFi", "bytes": wifi, "share": wifi / (wifi + g3), "retrans_bytes": retrans,
                      "mptcp_retrans_bytes": reinj},
                     *([{"path": "3G", "bytes": g3, "share": g3 / (wifi + g3), "retrans_bytes": 0,
                         "mptcp_retrans_bytes": 0}] if g3 else [])]})


def summary(*reps: Repetition) -> Summary:
    return Summary.model_validate({"lab": "rcvbuf", "run_id": "r", "kernel": "k", "complete": True,
                                   "quick": False, "scenarios": [r.model_dump() for r in reps]})


MANIFEST = Manifest.model_validate({"sysctls": {
    "emu1-mptcp-rmem200k": {"server": {"net.ipv4.tcp_rmem": "4096 131072 200000"}},
    "fig6b-x0.1-mptcp-b250k": {"server": {"net.ipv4.tcp_rmem": "4096\t25000\t25000"}},
}})


@pytest.mark.parametrize(("name", "parsed"), [
    ("emu1-mptcp-rmem200k", ("emu1-mptcp", "rmem200k", 200_000)),
    ("emu1-tcp-3g-rmem2m", ("emu1-tcp-3g", "rmem2m", 2_000_000)),
    ("fig6b-x0.1-tcp-fast-b250k", ("fig6b-x0.1-tcp-fast", "b250k", 250_000)),
    ("dss-csum-on-mtu9000", None),
    ("fig7-mptcp", None),
    ("rmem200k", None),
])
def test_parse_label(name: str, parsed: tuple[str, str, int] | None) -> None:
    assert parse_label(name) == parsed


def test_rmem_max_is_the_read_back_third_value() -> None:
    assert rmem_max(MANIFEST, "emu1-mptcp-rmem200k") == 200_000
    assert rmem_max(MANIFEST, "fig6b-x0.1-mptcp-b250k") == 25_000  # tabs, as sysctl prints them
    assert rmem_max(MANIFEST, "emu1-mptcp-rmem200k", node="client") is None
    assert rmem_max(MANIFEST, "missing") is None


def test_resent_is_wire_minus_application_bytes() -> None:
    r = rep("emu1-mptcp-rmem200k", 1, 8.0, wifi=9_000_000, g3=1_500_000)
    # 8 Mbit/s for 10 s = 10 MB delivered; 10.5 MB went over the wire
    assert resent_bytes(r) == pytest.approx(500_000)
    no_goodput = Repetition.model_validate({"name": "x", "subflows": [{"path": "WiFi", "bytes": 5}]})
    assert resent_bytes(no_goodput) is None


def test_sweep_frame_and_per_buffer_statistics() -> None:
    s = summary(rep("emu1-mptcp-rmem200k", 1, 4.0, 4_000_000, 1_100_000, retrans=10, reinj=20),
                rep("emu1-mptcp-rmem200k", 2, 6.0, 6_000_000, 1_600_000),
                rep("emu1-mptcp-rmem200k", 3, 5.0, 5_000_000, 1_300_000),
                rep("dss-csum-on-mtu9000", 1, 900.0, 10, 0))
    f = sweep_frame(s, MANIFEST, paths=["WiFi", "3G"])
    assert list(f["scenario"].unique()) == ["emu1-mptcp-rmem200k"]  # dss is no buffer sweep
    assert list(f["rmem_max"]) == [200_000] * 3 and list(f["b_paper"]) == [200_000] * 3
    first = f.iloc[0]
    assert first["tcp_retrans_bytes"] == 10 and first["mptcp_retrans_bytes"] == 20
    assert first["share_WiFi"] + first["share_3G"] == pytest.approx(1.0)
    assert first["wire_mbps_3G"] == pytest.approx(1_100_000 * 8 / 10 / 1e6)  # bytes over the 10 s duration
    assert first["resent_bytes"] == pytest.approx(5_100_000 - 5_000_000)
    pb = per_buffer(f)
    row = pb.iloc[0]
    assert [row["median"], row["min"], row["max"], row["n"]] == [5.0, 4.0, 6.0, 3]
    assert per_buffer(f.iloc[0:0]).empty


def test_buffer_formula_is_the_papers_375kb() -> None:
    # Section 4.2: 8 + 2 Mbit/s with RTT_max 150 ms -> 375 KB; a full 2 s 3G queue -> 5.375 MB
    assert buffer_formula([8e6, 2e6], 0.150) == pytest.approx(375_000)
    assert buffer_formula([8e6, 2e6], 2.150) == pytest.approx(5_375_000)


def test_delay_pdf_bins_of_5ms_sum_to_one() -> None:
    pdf = delay_pdf(np.array([1.0, 2.0, 7.0, 12.0, math.nan]))
    assert pdf["bin_ms"].tolist()[:3] == [0.0, 5.0, 10.0]
    assert pdf["share"].tolist()[:3] == pytest.approx([0.5, 0.25, 0.25])
    assert pdf["share"].sum() == pytest.approx(1.0)
    assert delay_pdf([]).empty


def ss_rows(rows: list[tuple[float, str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["t", "node", "socket", "snd_wnd"])


def test_advertised_window_is_the_senders_snd_wnd() -> None:
    ss = ss_rows([(1.0, "client", "subflow", 100_000), (1.0, "client", "subflow", 120_000),
                  (1.0, "client", "msk", 999_999),           # the MPTCP socket has no window of its own
                  (1.0, "server", "subflow", 64_512),        # the receiver's own view is not the x-axis
                  (2.0, "client", "subflow", 180_000), (3.0, "client", "tcp", 60_000)])
    assert advertised_window(ss) == (180_000, 120_000)  # per sample 120k, 180k, 60k
    assert advertised_window(ss, sender="nobody") == (None, None)
    assert advertised_window(pd.DataFrame()) == (None, None)


def test_sweep_frame_reads_the_window_from_the_run(tmp_path: Path) -> None:
    r = rep("emu1-mptcp-rmem200k", 1, 5.0, 5_000_000, 1_000_000)
    d = tmp_path / r.rel_dir() / "probes"
    d.mkdir(parents=True)
    ss_rows([(1.0, "client", "subflow", 150_000), (2.0, "client", "subflow", 170_000)]).to_csv(
        d / "ss.csv", index=False)
    f = sweep_frame(summary(r, rep("emu1-mptcp-rmem200k", 2, 5.0, 5_000_000, 1_000_000)), MANIFEST,
                    run_dir=tmp_path)
    assert f["adv_window_max"].tolist()[0] == 170_000 and f["adv_window_median"].tolist()[0] == 160_000
    assert pd.isna(f["adv_window_max"].tolist()[1])  # rep 2 had no samples

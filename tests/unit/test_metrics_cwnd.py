"""metrics/cwnd.py: the congestion window over time (probes/subflow_series.csv) per flow and
path, with samples above 2^21 segments (mptcp_lia's cwnd jumps, docs/cc-lia.md) counted and
left out; and the probe analysis that puts a second flow's sender into the series and counts
those samples (probes/analysis.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mptcplab.analysis.model import SubflowResult
from mptcplab.lab.schema import Expectation
from mptcplab.metrics import METRICS, Select
from mptcplab.probes.join import implausible_windows, subflow_series
from mptcplab.record.model import Repetition
from mptcplab.results.findings import check

JUMP = 2**30 + 12345  # what mptcp_lia's subflows were seen jumping to


def _series(rows: list[tuple[float, str, str, float | None]]) -> pd.DataFrame:
    """(t, flow, path, cwnd) -> subflow_series.csv rows; cwnd None: a bin without an ACK."""
    return pd.DataFrame([{"t": t, "flow": f, "path": p, "subflow": f"{p}:1", "bytes": 1000, "mbps": 0.08,
                          "snd_cwnd": c, "samples": 0 if c is None else 3} for t, f, p, c in rows])


def _rep(run: Path, name: str, series: pd.DataFrame, probes: dict[str, Any] | None = None) -> Repetition:
    d = run / "scenarios" / name / "rep1"
    (d / "probes").mkdir(parents=True)
    series.to_csv(d / "probes" / "subflow_series.csv", index=False)
    rec: dict[str, Any] = {"name": name, "rep": 1, "dir": f"scenarios/{name}/rep1",
                           "flows": [{"name": "mptcp", "role": "measured"}, {"name": "tcp", "role": "measured"}]}
    if probes is not None:
        rec["probes"] = probes
    return Repetition.model_validate(rec).at_run_dir(run)


def value(metric: str, r: Repetition, **sel: Any) -> float | None:
    return METRICS[metric].per_rep(r, Select(**sel))


def lia_like(run: Path, name: str = "lia") -> Repetition:
    """2 s: subflow A flat at 10 with one bin jumped to 2^30, B at 10 then 12, the TCP flow
    (path T) growing 10 -> 29; a bin of A without an ACK."""
    rows: list[tuple[float, str, str, float | None]] = []
    for i in range(20):
        t = round(i * 0.1, 1)
        rows.append((t, "mptcp", "A", JUMP if i == 7 else None if i == 3 else 10))
        rows.append((t, "mptcp", "B", 10 if i < 15 else 12))
        rows.append((t, "tcp", "T", 10 + i))
    probes = {"tcp_probe": {"samples": 120, "cwnd_implausible": {
        "A:1": {"flow": "mptcp", "path": "A", "samples": 4, "of": 40, "max_cwnd": JUMP}}}}
    return _rep(run, name, _series(rows), probes)


def test_median_p95_and_initial_share_leave_the_jump_out(tmp_path: Path) -> None:
    r = lia_like(tmp_path)
    # A: 18 plausible bins, all at 10 (the jumped bin and the bin without an ACK are not samples)
    assert value("cwnd_median", r, path="A") == 10
    assert value("cwnd_p95", r, path="A") == 10  # with the jump in, the p95 would be 2^30
    assert value("cwnd_initial_share", r, path="A") == 1.0
    assert value("cwnd_initial_share", r, path="B") == pytest.approx(15 / 20)
    # no path: both subflows of the measured flow pooled (18 + 20 samples, 33 at 10)
    assert value("cwnd_initial_share", r) == pytest.approx(33 / 38)
    # the other flow by name: its own sender only
    assert value("cwnd_median", r, flow="tcp") == pytest.approx(19.5)
    assert value("cwnd_p95", r, flow="tcp") == pytest.approx(28.05)
    assert value("cwnd_median", r, flow="mptcp", path="T") is None  # that flow has no subflow there
    assert value("cwnd_median", r, flow="nosuch") is None


def test_window_selects_bins_on_the_series_axis(tmp_path: Path) -> None:
    r = lia_like(tmp_path)
    assert value("cwnd_median", r, flow="tcp", window=(0.0, 0.5)) == 12  # bins 0..4: 10..14
    assert value("cwnd_median", r, path="B", window=(1.5, 2.0)) == 12
    assert value("cwnd_median", r, path="B", window=(5.0, 6.0)) is None  # past the series' end


def test_implausible_samples_are_counted_from_the_record(tmp_path: Path) -> None:
    r = lia_like(tmp_path)
    assert value("cwnd_implausible", r) == 4
    assert value("cwnd_implausible", r, path="A") == 4
    assert value("cwnd_implausible", r, path="B") == 0
    assert value("cwnd_implausible", r, flow="tcp") == 0
    clean = _rep(tmp_path, "clean", _series([(0.0, "mptcp", "A", 10)]), {"tcp_probe": {"samples": 1}})
    assert value("cwnd_implausible", clean) == 0
    assert value("cwnd_implausible", _rep(tmp_path, "noprobe", _series([]))) is None


def test_no_series_no_value(tmp_path: Path) -> None:
    lost = Repetition.model_validate({"name": "gone", "rep": 1, "flows": [{"name": "mptcp", "role": "measured"}]})
    assert value("cwnd_median", lost.at_run_dir(tmp_path)) is None
    only_jumps = _rep(tmp_path, "j", _series([(0.0, "mptcp", "A", JUMP), (0.1, "mptcp", "A", None)]))
    assert value("cwnd_median", only_jumps, path="A") is None


def test_a_series_without_the_flow_column_is_the_measured_flows(tmp_path: Path) -> None:
    old = _series([(0.0, "", "A", 10), (0.1, "", "A", 14)]).drop(columns=["flow"])
    r = _rep(tmp_path, "old", old)
    assert value("cwnd_median", r, path="A") == 12
    assert value("cwnd_median", r, flow="mptcp", path="A") == 12
    assert value("cwnd_median", r, flow="tcp") is None


def test_the_papers_two_checks(tmp_path: Path) -> None:
    reps = {"lia": [lia_like(tmp_path)]}
    flat = Expectation.model_validate({"metric": "cwnd_median", "flow": "mptcp", "path": "A", "op": "==",
                                       "value": 10, "tolerance": 5})
    # one repetition: no interval, so each check is inconclusive; its point estimate decides the lean
    assert check(flat, "lia", reps)[0].leans is True
    tcp_above = Expectation.model_validate({"metric": "cwnd_median", "flow": "tcp", "op": ">",
                                            "than": {"scenario": "lia", "flow": "mptcp", "path": "B"}})
    c, evidence = check(tcp_above, "lia", reps)
    assert c.leans is True and "flow tcp" in evidence and "path B" in evidence
    tcp_flat = flat.model_copy(update={"flow": "tcp", "path": None, "tolerance": 2.0})
    assert check(tcp_flat, "lia", reps)[0].leans is False


def _sf(src: str, sport: int, path: str, dport: int = 5201) -> SubflowResult:
    return SubflowResult(path=path, src=src, sport=sport, dst="10.0.3.2", dport=dport, initial=True,
                         established=True, bytes=1, retrans_bytes=0, retransmissions=0, share=1.0, segments=1,
                         median_seg=None, max_seg=None, max_frame=None, icmp_frag_needed=0, icmp_first_t=None,
                         icmp_mtus=[], first_data_t=None, last_data_t=None, syn_attempts=1, rst=False)


def _samples(rows: list[tuple[str, int, int, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"event": "tcp_probe", "src": s, "sport": sp, "dst": "10.0.3.2",
                          "dport": 5201 if sp < 50000 else 5202, "snd_cwnd": c, "ssthresh": 7, "srtt_us": 1000,
                          "snd_wnd": 1, "t": t} for s, sp, c, t in rows])


def test_a_second_flows_sender_joins_the_series_on_the_measured_axis() -> None:
    t0 = 1000.0
    tcp_sf = _sf("10.0.4.2", 50001, "T", dport=5202)
    # the TCP flow's own capture axis starts 0.2 s later than the measured flow's
    ts = pd.DataFrame({"t": [0.0, 0.1], "path": ["T", "T"], "subflow": [tcp_sf.name] * 2, "bytes": [5, 6],
                       "mbps": [0.1, 0.2]})
    samples = _samples([("10.0.4.2", 50001, 10, t0 + 0.21), ("10.0.4.2", 50001, 14, t0 + 0.33)])
    s = subflow_series(ts, [tcp_sf], samples, t0, upload=True, flow="tcp", shift_s=0.2)
    assert list(s["flow"]) == ["tcp", "tcp"] and list(s["t"]) == [0.2, 0.3]
    assert list(s["bytes"]) == [5, 6] and list(s["snd_cwnd"]) == [10, 14]


def test_implausible_windows_counts_per_sender_and_names_the_flow() -> None:
    a, t = _sf("10.0.1.2", 40000, "A"), _sf("10.0.4.2", 50001, "T", dport=5202)
    samples = _samples([("10.0.1.2", 40000, 10, 1.0), ("10.0.1.2", 40000, JUMP, 1.1),
                        ("10.0.1.2", 40000, 2**31 - 1, 1.2), ("10.0.1.2", 40000, 12, 1.3),
                        ("10.0.4.2", 50001, 2**21, 1.0)])  # exactly 2^21: the largest plausible
    assert implausible_windows(samples, []) == {}
    odd = implausible_windows(samples, [("mptcp", [a], True), ("tcp", [t], True)])
    assert odd == {"10.0.1.2:40000": {"flow": "mptcp", "path": "A", "samples": 2, "of": 4, "max_cwnd": 2**31 - 1}}


def test_the_cwnd_figure_leaves_a_jump_out() -> None:
    from mptcplab.results.figures import plot_cwnd

    series = pd.DataFrame({"scenario": ["s"] * 3, "rep": [1] * 3, "t": [0.0, 0.1, 0.2], "path": ["A"] * 3,
                           "subflow": ["a:1"] * 3, "snd_cwnd": [10, JUMP, 11]})
    (ax,) = [a for a in plot_cwnd(series).axes if a.get_visible()]
    (line,) = ax.get_lines()
    assert pd.Series(line.get_ydata()).tolist() == [10, 11]

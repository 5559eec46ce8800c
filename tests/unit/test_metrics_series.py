"""metrics/series.py: windowed throughput and packets/s read from a repetition's
timeseries.csv, aligned to the measured flow's start through events.csv, and checked by a
finding across scenarios (the asym lab's before/after-removal and TCP-ratio findings)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from mptcplab.lab.schema import Expectation
from mptcplab.metrics import METRICS, Select
from mptcplab.metrics.series import capture_offset
from mptcplab.record.model import Repetition
from mptcplab.results.findings import check
from mptcplab.results.read import load_summary


def _rep(run: Path, name: str, per_bin: dict[str, list[int]], packets: bool = True,
         events: list[tuple[float, float]] | None = None) -> Repetition:
    """A repetition directory whose path P's subflow carried per_bin[P][i] bytes in bin i."""
    d = run / "scenarios" / name / "rep1"
    d.mkdir(parents=True)
    rows = []
    for path, bins in per_bin.items():
        for i, b in enumerate(bins):
            row = {"t": round(i * 0.1, 9), "path": path, "subflow": f"{path}:1", "bytes": b, "mbps": b * 8 / 0.1 / 1e6}
            if packets:
                row["packets"] = b // 1000
            rows.append(row)
    pd.DataFrame(rows).to_csv(d / "timeseries.csv", index=False)
    if events is not None:
        pd.DataFrame([{"planned_s": a, "actual_s": a, "action": "link_down", "capture_s": c}
                      for a, c in events]).to_csv(d / "events.csv", index=False)
    return Repetition.model_validate({"name": name, "rep": 1, "dir": f"scenarios/{name}/rep1"}).at_run_dir(run)


def value(metric: str, r: Repetition, **sel: object) -> float | None:
    return METRICS[metric].per_rep(r, Select(**sel))  # type: ignore[arg-type]


def test_window_means_per_path_and_connection(tmp_path: Path) -> None:
    # 10 s: A carries 10 kB per bin throughout, B 5 kB per bin for the first 5 s, then nothing
    r = _rep(tmp_path, "s2", {"A": [10_000] * 100, "B": [5_000] * 50 + [0] * 50})
    assert value("path_throughput_mbps", r, path="A", window=(0.0, 5.0)) == pytest.approx(0.8)
    assert value("path_throughput_mbps", r, path="B", window=(5.0, 10.0)) == 0.0
    assert value("throughput_mbps", r, window=(0.0, 5.0)) == pytest.approx(1.2)
    assert value("throughput_mbps", r, window=(5.0, 10.0)) == pytest.approx(0.8)
    assert value("throughput_mbps", r) == pytest.approx(1.0)  # no window: the whole series
    assert value("path_pps", r, path="B", window=(0.0, 5.0)) == pytest.approx(50.0)
    # a steady path has no variation; one that stops half-way has a lot
    assert value("path_pps_cv", r, path="A", window=(0.0, 10.0)) == 0.0
    assert value("path_pps_cv", r, path="B", window=(2.5, 7.5)) == pytest.approx(1.0)


def test_events_shift_the_window_onto_the_capture_axis(tmp_path: Path) -> None:
    # the SYN came 0.3 s after the client's spawn: events.csv says so (capture_s - actual_s)
    r = _rep(tmp_path, "x", {"A": [0] * 3 + [10_000] * 20 + [0] * 10}, events=[(1.0, 1.3), (2.0, 2.3)])
    assert capture_offset(r) == pytest.approx(0.3)
    # flow time [0, 2) is capture bins 3..22: all of A's data
    assert value("path_throughput_mbps", r, path="A", window=(0.0, 2.0)) == pytest.approx(0.8)


def test_no_value_rather_than_a_made_up_zero(tmp_path: Path) -> None:
    r = _rep(tmp_path, "short", {"A": [10_000] * 30}, packets=False)
    assert value("throughput_mbps", r, window=(5.0, 10.0)) is None  # series ended at 3 s
    assert value("throughput_mbps", r, window=(2.0, 4.0)) == pytest.approx(0.4)  # bins after the end count 0
    assert value("path_pps", r, path="A", window=(0.0, 1.0)) is None  # a run before the packets column
    lost = Repetition.model_validate({"name": "gone", "rep": 1}).at_run_dir(tmp_path)
    assert value("throughput_mbps", lost, window=(0.0, 1.0)) is None  # no timeseries.csv
    nowhere = Repetition.model_validate({"name": "s", "rep": 1, "dir": "scenarios/short/rep1"})
    assert nowhere.files_dir() is None and value("throughput_mbps", nowhere) is None


def test_load_summary_tells_each_repetition_its_run_directory(tmp_path: Path) -> None:
    _rep(tmp_path, "s2", {"A": [10_000] * 10})
    (tmp_path / "summary.json").write_text(json.dumps({
        "format_version": 1, "lab": "t", "run_id": "r", "kernel": "k", "complete": True, "quick": True,
        "scenarios": [{"name": "s2", "rep": 1, "dir": "scenarios/s2/rep1"}]}))
    r = load_summary(tmp_path).scenarios[0]
    assert r.files_dir() == tmp_path / "scenarios/s2/rep1"
    assert value("throughput_mbps", r) == pytest.approx(0.8)


def test_finding_before_after_and_ratio_to_tcp(tmp_path: Path) -> None:
    reps = {
        "tcp": [_rep(tmp_path, "tcp", {"A": [10_000] * 100})],
        "s2-linkdown": [_rep(tmp_path, "s2-linkdown", {"A": [4_000] * 50 + [9_500] * 50, "B": [300] * 50 + [0] * 50})],
    }
    after_gt_before = Expectation.model_validate({
        "metric": "throughput_mbps", "window": [5, 10], "op": ">",
        "than": {"scenario": "s2-linkdown", "window": [0, 5]}})
    c, evidence = check(after_gt_before, "s2-linkdown", reps)
    assert c.leans is True and "5-10 s" in evidence and "0-5 s" in evidence
    near_tcp = Expectation.model_validate({
        "metric": "throughput_mbps", "window": [5, 10], "op": ">=", "value": 0.9,
        "than": {"scenario": "tcp"}, "by": "ratio"})
    c, evidence = check(near_tcp, "s2-linkdown", reps)
    assert c.leans is True and c.estimate == pytest.approx(0.95) and "ratio" in evidence
    below_tcp_before = near_tcp.model_copy(update={"window": (0.0, 5.0)})
    assert check(below_tcp_before, "s2-linkdown", reps)[0].leans is False

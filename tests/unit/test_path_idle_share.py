"""metrics/series.py path_idle_share: the share of a path's 100 ms bins in which it stopped
(at most one data packet) between its first and last sending bin (Kato et al. 2020, Fig 4:
"repeats sending and stopping"), and a finding on it over repetitions."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mptcplab.lab.schema import Expectation
from mptcplab.metrics import METRICS, Select
from mptcplab.record.model import Repetition
from mptcplab.results.findings import check


def _rep(run: Path, name: str, packets: dict[str, list[int]], n: int = 1) -> Repetition:
    """A repetition whose path P's subflow sent packets[P][i] packets (1000 bytes each) in bin i."""
    d = run / "scenarios" / name / f"rep{n}"
    d.mkdir(parents=True)
    rows = [{"t": round(i * 0.1, 9), "path": p, "subflow": f"{p}:1", "bytes": k * 1000, "mbps": k * 0.08,
             "packets": k} for p, bins in packets.items() for i, k in enumerate(bins)]
    pd.DataFrame(rows).to_csv(d / "timeseries.csv", index=False)
    return Repetition.model_validate({"name": name, "rep": n, "dir": f"scenarios/{name}/rep{n}"}).at_run_dir(run)


def idle(r: Repetition, **sel: object) -> float | None:
    return METRICS["path_idle_share"].per_rep(r, Select(**sel))  # type: ignore[arg-type]


def test_stops_counted_only_between_the_first_and_last_sending_bin(tmp_path: Path) -> None:
    # A sends in every bin; B joins at bin 2, alternates 3 on / 1 off (the off bins: 0 packets or a
    # lone packet), and ends at bin 19, after which it is silent: that tail is not a stop
    b = [0, 0] + [9, 9, 9, 1] * 3 + [9, 9, 9, 0, 9, 9] + [0] * 4
    r = _rep(tmp_path, "s", {"A": [40] * 24, "B": b})
    assert idle(r, path="A") == 0.0
    assert idle(r, path="B") == pytest.approx(4 / 18)  # bins 2..19, 4 stops (3 lone packets, 1 empty)
    # a window, bins 0..9: B sends from bin 2 to bin 8; bin 9's stop at the window's edge cannot be
    # told from the path's end, so bins 2..8 hold one stop
    assert idle(r, path="B", window=(0.0, 1.0)) == pytest.approx(1 / 7)
    # the connection: A keeps it sending in every bin
    assert idle(r) == 0.0


def test_a_path_that_never_sends_has_no_value(tmp_path: Path) -> None:
    r = _rep(tmp_path, "s", {"A": [40] * 5, "B": [0, 1, 0, 1, 0]})
    assert idle(r, path="B") is None
    assert idle(r, path="C") is None
    lost = Repetition.model_validate({"name": "gone", "rep": 1}).at_run_dir(tmp_path)
    assert idle(lost, path="A") is None


def test_the_finding_needs_both_paths_to_stop_in_every_repetition(tmp_path: Path) -> None:
    steady = [40] * 25
    onoff = [9, 9, 9, 9, 0] * 5  # 4 stops in bins 0..23 (the last sending bin): 1/6
    reps = [_rep(tmp_path, "s", {"A": steady, "B": onoff}, n) for n in range(1, 6)]
    assert idle(reps[0], path="B") == pytest.approx(4 / 24)
    ok_b = Expectation.model_validate({"metric": "path_idle_share", "path": "B", "op": ">=", "value": 0.08})
    assert check(ok_b, "s", {"s": reps})[0].verdict == "holds"
    on_a = ok_b.model_copy(update={"path": "A"})
    assert check(on_a, "s", {"s": reps})[0].verdict == "does not hold"

"""metrics/cwnd.py cwnd_max: the largest per-bin congestion window of a flow's senders on a
path (Kato et al. 2020, Fig 6: the slow subflow peaks at ~700 packets), implausible samples
left out as for cwnd_median, and the finding's "around 700" check over repetitions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from mptcplab.lab.schema import Expectation
from mptcplab.metrics import METRICS, Select
from mptcplab.record.model import Repetition
from mptcplab.results.findings import check

JUMP = 2**30


def _rep(run: Path, n: int, b_cwnd: list[float | None], a_cwnd: float = 150) -> Repetition:
    """Path A flat at a_cwnd; path B's per-bin cwnd as given (None: a bin without an ACK)."""
    d = run / "scenarios" / "s" / f"rep{n}" / "probes"
    d.mkdir(parents=True)
    rows = []
    for i, c in enumerate(b_cwnd):
        t = round(i * 0.1, 1)
        rows.append({"t": t, "flow": "main", "path": "A", "subflow": "A:1", "bytes": 1, "mbps": 0.0,
                     "snd_cwnd": a_cwnd, "samples": 5})
        rows.append({"t": t, "flow": "main", "path": "B", "subflow": "B:1", "bytes": 1, "mbps": 0.0,
                     "snd_cwnd": c, "samples": 0 if c is None else 3})
    pd.DataFrame(rows).to_csv(d / "subflow_series.csv", index=False)
    rec: dict[str, Any] = {"name": "s", "rep": n, "dir": f"scenarios/s/rep{n}",
                           "flows": [{"name": "main", "role": "measured"}]}
    return Repetition.model_validate(rec).at_run_dir(run)


def cmax(r: Repetition, **sel: Any) -> float | None:
    return METRICS["cwnd_max"].per_rep(r, Select(**sel))


def test_the_peak_per_path_leaves_jumps_and_empty_bins_out(tmp_path: Path) -> None:
    r = _rep(tmp_path, 1, [10, 200, 690, None, 300, JUMP, 640])
    assert cmax(r, path="B") == 690  # not the 2^30 jump, not the 95th percentile
    assert cmax(r, path="A") == 150
    assert cmax(r) == 690  # both paths pooled
    assert cmax(r, path="B", window=(0.0, 0.2)) == 200  # bins 0 and 1
    assert cmax(r, path="C") is None
    assert cmax(r, path="B", flow="other") is None
    only_jump = _rep(tmp_path, 2, [JUMP, None])
    assert cmax(only_jump, path="B") is None


def test_around_700_holds_fails_or_straddles(tmp_path: Path) -> None:
    around = Expectation.model_validate({"metric": "cwnd_max", "path": "B", "op": "==", "value": 700,
                                         "tolerance": 70})

    def verdict(peaks: list[float], base: Path) -> str:
        reps = [_rep(base, n, [10, p, p / 2]) for n, p in enumerate(peaks, 1)]
        return check(around, "s", {"s": reps})[0].verdict

    assert verdict([680, 700, 710, 720, 690], tmp_path / "a") == "holds"
    assert verdict([900, 950, 1000, 880, 910], tmp_path / "b") == "does not hold"
    assert verdict([755, 909, 763, 774, 850], tmp_path / "c") == "inconclusive"

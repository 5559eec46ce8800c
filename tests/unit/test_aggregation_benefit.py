"""Kaspar et al.'s aggregation benefit (analysis/aggregation.py; mptcpanalyzer's
``aggr_benefit``): the formula at its reference points and edges, the capacities a flow is
compared with, the metric over repetitions and the report's column."""

from __future__ import annotations

import pytest

from mptcplab.analysis import FlowSpec
from mptcplab.analysis.aggregation import benefit, capacities_mbps
from mptcplab.record.model import Repetition
from mptcplab.results.aggregate import scenario_value
from mptcplab.results.summary import build_summary_model
from mptcplab.results.tables import scenario_table


@pytest.mark.parametrize(("goodput", "expected"), [
    (15.0, 1.0),      # the sum of the paths
    (12.5, 0.5),
    (10.0, 0.0),      # the best path alone
    (5.0, -0.5),
    (0.0, -1.0),      # nothing
    (20.0, 2.0),      # above the configured sum: not clamped
])
def test_two_paths(goodput: float, expected: float) -> None:
    assert benefit(goodput, {"A": 10.0, "B": 5.0}) == pytest.approx(expected)


def test_three_paths_compare_with_the_best_one() -> None:
    assert benefit(15.0, {"A": 10.0, "B": 5.0, "C": 5.0}) == pytest.approx(0.5)
    assert benefit(8.0, {"A": 5.0, "B": 10.0, "C": 5.0}) == pytest.approx(-0.2)


@pytest.mark.parametrize("caps", [
    {"A": 10.0},                    # one path: nothing to aggregate
    {"A": 10.0, "B": 0.0},          # a path of capacity 0 adds nothing: one path left
    {"A": 0.0, "B": 0.0},           # no capacity at all
    {"A": 10.0, "B": None},         # a capacity unknown: the sum is unknown
    {},
])
@pytest.mark.parametrize("goodput", [0.0, 5.0, 10.0, 12.0])
def test_undefined_without_two_known_capacities(caps: dict[str, float | None], goodput: float) -> None:
    assert benefit(goodput, caps) is None


def test_undefined_without_a_goodput() -> None:
    assert benefit(None, {"A": 10.0, "B": 5.0}) is None


def test_capacities_are_the_expected_non_backup_paths_rates() -> None:
    spec = FlowSpec("10.0.3.2", 5201, {}, ("A", "B", "C"), True, path_rates_bps={"A": 100e6, "B": 4e6, "C": 50e6},
                    backup_paths=("C",))
    assert capacities_mbps(spec) == {"A": 100.0, "B": 4.0}
    spec.path_rates_bps.pop("B")
    assert capacities_mbps(spec) == {"A": 100.0, "B": None}


def _rep(rep: int, ben: float | None) -> Repetition:
    return Repetition.model_validate({
        "name": "s", "rep": rep, "goodput_mbps": 10.0, "calibration_ok": True,
        "flows": [{"name": "main", "role": "measured", "goodput_mbps": 10.0, "aggregation_benefit": ben,
                   "path_capacity_mbps": {"A": 10.0, "B": 5.0}}]})


def test_metric_is_the_mean_over_repetitions_and_the_report_shows_it() -> None:
    reps = [_rep(1, 0.2), _rep(2, 0.4), _rep(3, None)]
    v = scenario_value(reps, "aggregation_benefit")
    assert v.value == pytest.approx(0.3) and v.n == 2
    assert scenario_value(reps, "aggregation_benefit", flow="main").value == pytest.approx(0.3)
    cpu = {"virtualization": "none", "software_emulated_cpu": False, "source": "test"}
    table = scenario_table(build_summary_model("lab", "r", "6.18", True, False, reps, None, [], cpu))
    assert table["aggregation benefit (mean ± std)"].iloc[0] == "0.30 ± 0.14"
    without = scenario_table(build_summary_model("lab", "r", "6.18", True, False, [_rep(1, None)], None, [], cpu))
    assert not any(c.startswith("aggregation benefit") for c in without.columns)

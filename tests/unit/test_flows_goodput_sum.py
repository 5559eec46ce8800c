"""metrics/flows.py flows_goodput_sum_mbps: what the measured flows sharing a bottleneck carry
together (labs/cc: MPTCP + TCP against the bottleneck's rate), none with one measured flow or a
measured flow without a goodput; a rate, so scaled with the links."""

from __future__ import annotations

from typing import Any

from mptcplab.lab.schema import Expectation
from mptcplab.metrics import METRICS, Select, metric_scales
from mptcplab.record.model import Repetition
from mptcplab.results.findings import check


def rep(n: int, flows: list[tuple[str, str, float | None]]) -> Repetition:
    f: list[dict[str, Any]] = [{"name": k, "role": role, "goodput_mbps": g} for k, role, g in flows]
    return Repetition.model_validate({"name": "s", "rep": n, "flows": f})


def total(r: Repetition) -> float | None:
    return METRICS["flows_goodput_sum_mbps"].per_rep(r, Select())


def test_the_sum_of_the_measured_flows_only() -> None:
    assert total(rep(1, [("mptcp", "measured", 2.5), ("tcp", "measured", 6.75)])) == 9.25
    # a competing flow (a flood) is not one of the flows the claim adds up
    assert total(rep(1, [("mptcp", "measured", 2.5), ("tcp", "measured", 6.75), ("flood", "competing", 5.0)])) == 9.25
    assert total(rep(1, [("mptcp", "measured", 9.0), ("flood", "competing", 1.0)])) is None  # one measured flow
    assert total(rep(1, [("mptcp", "measured", 2.5), ("tcp", "measured", None)])) is None  # unknown, not smaller
    assert metric_scales("flows_goodput_sum_mbps") and METRICS["flows_goodput_sum_mbps"].accepts == frozenset()


def test_filling_the_bottleneck_over_repetitions() -> None:
    fills = Expectation.model_validate({"metric": "flows_goodput_sum_mbps", "op": ">=", "value": 9})

    def verdict(sums: list[tuple[float, float]]) -> str:
        reps = [rep(n, [("mptcp", "measured", a), ("tcp", "measured", b)]) for n, (a, b) in enumerate(sums, 1)]
        return check(fills, "s", {"s": reps})[0].verdict

    assert verdict([(3.0, 6.4), (4.1, 5.3), (3.5, 6.0), (2.9, 6.5), (3.9, 5.5)]) == "holds"
    assert verdict([(2.0, 5.0), (2.5, 5.5), (3.0, 5.0), (2.2, 6.0), (2.8, 5.1)]) == "does not hold"
    assert verdict([(3.0, 6.4), (2.0, 5.0), (3.5, 6.0), (2.2, 6.0), (3.9, 5.5)]) == "inconclusive"

"""The metrics registry: one definition per metric, selections (path, flow, window) checked
by the lab schema, passed through to the metric, and named in the findings' evidence."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from mptcplab.lab.scale import metric_scales
from mptcplab.lab.schema import Expectation, PublishedValue
from mptcplab.metrics import METRICS, Metric, Select, refusal, register
from mptcplab.results.aggregate import scenario_value
from mptcplab.results.findings import check
from mptcplab.results.model import Repetition

SEEN: list[Select] = []


def _echo(r: Repetition, sel: Select) -> float | None:
    # value = the window's length, so a test sees which window reached the metric
    SEEN.append(sel)
    return None if sel.window is None else (sel.window[1] - sel.window[0]) * (r.goodput_mbps or 0)


@pytest.fixture
def windowed() -> Iterator[str]:
    name = "test_windowed_metric"
    register(Metric(name, _echo, "mean", "test", unit="Mbit/s", scales=True, accepts=frozenset({"window", "flow"})))
    try:
        yield name
    finally:
        METRICS.pop(name, None)
        SEEN.clear()


def test_core_metrics_are_registered_with_their_scaling() -> None:
    assert {"goodput_mbps", "subflow_share", "median_seg", "max_seg", "icmp_frag_needed", "jain_index"} <= set(METRICS)
    assert metric_scales("goodput_mbps") and not metric_scales("subflow_share") and not metric_scales("nope")


def test_a_name_registered_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register(Metric("goodput_mbps", lambda r, s: None, "mean", "again"))


def test_unknown_selector_in_a_definition_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown selectors"):
        Metric("x", lambda r, s: None, "mean", "x", accepts=frozenset({"colour"}))


@pytest.mark.parametrize(("kw", "msg"), [
    ({"metric": "no_such_metric"}, "unknown metric 'no_such_metric'"),
    ({"metric": "goodput_mbps", "flow": "bulk"}, "does not take flow"),
    ({"metric": "subflow_share", "path": "A", "window": [0, 5]}, "does not take window"),
    ({"metric": "goodput_mbps", "window": [5, 2]}, "0 <= start < end"),
    ({"metric": "goodput_mbps", "window": [-1, 2]}, "0 <= start < end"),
])
def test_schema_refuses_what_the_metric_cannot_take(kw: dict[str, object], msg: str) -> None:
    with pytest.raises(ValidationError, match=msg):
        Expectation.model_validate({**kw, "op": ">", "value": 1})
    with pytest.raises(ValidationError, match=msg):
        PublishedValue.model_validate({**kw, "id": "v", "scenario": None, "value": 1, "unit": "u", "where": "w"})


def test_the_right_operand_inherits_and_is_checked(windowed: str) -> None:
    Expectation.model_validate({"metric": windowed, "window": [0, 5], "op": ">", "than": {"scenario": "s"}})
    with pytest.raises(ValidationError, match="does not take window"):
        Expectation.model_validate({"metric": windowed, "window": [0, 5], "op": ">",
                                    "than": {"scenario": "s", "metric": "goodput_mbps"}})


def test_refusal_names_what_the_metric_takes() -> None:
    assert refusal("subflow_share", Select(path="A")) is None
    assert refusal("subflow_share", Select(flow="f")) == "metric subflow_share does not take flow (it takes path)"


def test_selection_reaches_the_metric_and_the_evidence(windowed: str) -> None:
    reps = [Repetition(name="s", rep=1, goodput_mbps=10.0), Repetition(name="s", rep=2, goodput_mbps=20.0)]
    v = scenario_value(reps, windowed, flow="bulk", window=(5.0, 7.0))
    assert v.value == 30.0 and v.n == 2
    assert SEEN[-1] == Select(path=None, flow="bulk", window=(5.0, 7.0))
    e = Expectation.model_validate({"metric": windowed, "flow": "bulk", "window": [5, 7], "op": ">",
                                    "than": {"scenario": "t", "window": [0, 5]}})
    t = [Repetition(name="t", rep=1, goodput_mbps=10.0)]
    holds, ev = check(e, "s", {"s": reps, "t": t})
    # 30 (2 s of window) against 10 x 5 = 50: does not hold, and both windows are named
    assert holds is False
    assert "of flow bulk, 5-7 s in s = 30" in ev and "of flow bulk, 0-5 s in t = 50" in ev

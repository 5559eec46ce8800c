"""The metrics registry: one definition per metric, selections (path, flow, window) checked
by the loader against it (the lab schema checks only their shape), passed through to the
metric, and named in the findings' evidence."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mptcplab.errors import LabInputError
from mptcplab.lab.metriccheck import check_metrics
from mptcplab.lab.schema import Expectation, Published, PublishedValue
from mptcplab.metrics import METRICS, Metric, Select, metric_scales, refusal, register
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


SOURCE = {"id": "s", "title": "t", "authors": ["a"], "year": 2026, "document": "d", "kernel": "k", "testbed": "t"}
FILE = Path("published.yml")


def published(value: dict[str, Any] | None = None, expect: Any = None) -> Published:
    """A published.yml with one value or one finding; the schema accepts any metric name."""
    values = [{"id": "v", "scenario": None, "value": 1, "unit": "u", "where": "w", **value}] if value else []
    finding = {"id": "f", "scenario": "s", "statement": "s", "where": "w", "expect": expect}
    return Published.model_validate({"source": SOURCE, "values": values, "findings": [finding] if expect else []})


def refused(pub: Published) -> LabInputError:
    with pytest.raises(LabInputError) as e:
        check_metrics(pub, FILE)
    assert e.value.file == str(FILE)
    return e.value


@pytest.mark.parametrize(("kw", "field", "msg"), [
    ({"metric": "no_such_metric"}, ".metric", "unknown metric 'no_such_metric'; known: "),
    ({"metric": "goodput_mbps", "flow": "bulk"}, "", "metric goodput_mbps does not take flow"),
    ({"metric": "subflow_share", "path": "A", "window": [0, 5]}, "", "metric subflow_share does not take window"),
])
def test_the_loader_refuses_what_the_registry_does_not_define(kw: dict[str, Any], field: str, msg: str) -> None:
    e = refused(published(value=kw))
    assert (e.field, e.problem[:len(msg)]) == ("values[0]" + field, msg)
    e = refused(published(expect={**kw, "op": ">", "value": 1}))
    assert (e.field, e.problem[:len(msg)]) == ("findings[0].expect" + field, msg)
    e = refused(published(expect=[{"fact": "established", "equals": True}, {**kw, "op": ">", "value": 1}]))
    assert (e.field, e.problem[:len(msg)]) == ("findings[0].expect[1]" + field, msg)


@pytest.mark.parametrize("window", [[5, 2], [-1, 2]])
def test_the_schema_refuses_a_window_that_is_not_one(window: list[float]) -> None:
    # the shape of a selection is the schema's: no registry needed
    with pytest.raises(ValidationError, match="0 <= start < end"):
        Expectation.model_validate({"metric": "goodput_mbps", "window": window, "op": ">", "value": 1})
    with pytest.raises(ValidationError, match="0 <= start < end"):
        PublishedValue.model_validate({"metric": "goodput_mbps", "window": window, "id": "v", "scenario": None,
                                       "value": 1, "unit": "u", "where": "w"})


def test_the_right_operand_inherits_and_is_checked(windowed: str) -> None:
    check_metrics(published(expect={"metric": windowed, "window": [0, 5], "op": ">", "than": {"scenario": "s"}}), FILE)
    e = refused(published(expect={"metric": windowed, "window": [0, 5], "op": ">",
                                  "than": {"scenario": "s", "metric": "goodput_mbps"}}))
    assert e.field == "findings[0].expect"  # the window is the expectation's, inherited
    assert e.problem == "metric goodput_mbps does not take window (it takes no selector)"
    e = refused(published(expect={"metric": windowed, "op": ">", "than": {"scenario": "s", "metric": "nope"}}))
    assert e.field == "findings[0].expect.than.metric" and e.problem.startswith("unknown metric 'nope'")


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


def test_the_lab_model_does_not_import_the_registry() -> None:
    """lab/schema.py and lab/scale.py parse and scale without mptcplab.metrics (which reads
    the result model): a published.yml parsed in a fresh interpreter leaves it unimported."""
    doc = {"source": SOURCE,
           "values": [{"id": "v", "scenario": None, "metric": "goodput_mbps", "flow": "f", "value": 1, "unit": "u",
                       "where": "w"}],
           "findings": [{"id": "f", "scenario": "s", "statement": "s", "where": "w",
                         "expect": {"metric": "goodput_mbps", "op": ">", "than": {"scenario": "t", "metric": "nope"}}}]}
    code = ("import json, sys; from mptcplab.lab import scale, schema; "
            "schema.Published.model_validate(json.loads(sys.argv[1])); "
            "print(sorted(m for m in sys.modules if m.startswith('mptcplab.metrics')))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(doc)], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"


def _registry_imported(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            # from mptcplab/lab/, ".." is mptcplab: `from ..metrics import X`, `from .. import metrics`
            base = ".".join(x for x in ("mptcplab" if node.level == 2 else "", node.module or "") if x)
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        if any(n == "mptcplab.metrics" or n.startswith("mptcplab.metrics.") for n in names):
            return True
    return False


def test_in_the_lab_package_only_the_loaders_check_imports_the_registry() -> None:
    lab = Path(__file__).resolve().parents[2] / "mptcplab" / "lab"
    assert {f.name for f in lab.glob("*.py") if _registry_imported(ast.parse(f.read_text()))} == {"metriccheck.py"}

"""The metrics registry: one declaration per metric (mptcplab/metricdecl.py) and one
computation per declaration (mptcplab/metrics/), selections (path, flow, window) checked by
the loader against the declarations (the lab schema checks only their shape), passed through
to the metric, and named in the findings' evidence."""

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
from mptcplab.metricdecl import DECLARED, declare
from mptcplab.metrics import METRICS, Select, check_registry, metric_scales, refusal, register
from mptcplab.record.model import Repetition
from mptcplab.results.aggregate import scenario_value
from mptcplab.results.findings import check

SEEN: list[Select] = []


def _echo(r: Repetition, sel: Select) -> float | None:
    # value = the window's length, so a test sees which window reached the metric
    SEEN.append(sel)
    return None if sel.window is None else (sel.window[1] - sel.window[0]) * (r.goodput_mbps or 0)


@pytest.fixture
def windowed() -> Iterator[str]:
    name = "test_windowed_metric"
    declare(name, "mean", "test", unit="Mbit/s", scales=True, accepts=frozenset({"window", "flow"}))
    register(name, _echo)
    try:
        yield name
    finally:
        METRICS.pop(name, None)
        DECLARED.pop(name, None)
        SEEN.clear()


def test_core_metrics_are_registered_with_their_scaling() -> None:
    assert {"goodput_mbps", "subflow_share", "median_seg", "max_seg", "icmp_frag_needed", "jain_index"} <= set(METRICS)
    assert metric_scales("goodput_mbps") and not metric_scales("subflow_share") and not metric_scales("nope")


def test_every_declared_metric_has_one_computation_and_every_computation_a_declaration() -> None:
    assert set(METRICS) == set(DECLARED)
    for name, m in METRICS.items():
        d = DECLARED[name]
        assert (m.over_reps, m.per_rep_text, m.unit, m.scales, m.accepts) == (
            d.over_reps, d.per_rep_text, d.unit, d.scales, d.accepts)


def test_a_name_registered_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register("goodput_mbps", lambda r, s: None)
    with pytest.raises(ValueError, match="declared twice"):
        declare("goodput_mbps", "mean", "again")


def test_a_computation_without_a_declaration_is_refused() -> None:
    with pytest.raises(ValueError, match="metric not_declared is not declared"):
        register("not_declared", lambda r, s: None)
    assert "not_declared" not in METRICS


def test_a_declaration_without_a_computation_is_refused() -> None:
    declare("declared_only", "mean", "x")
    try:
        with pytest.raises(RuntimeError, match="declared without a computation: declared_only"):
            check_registry()
    finally:
        DECLARED.pop("declared_only")
    check_registry()


def test_unknown_selector_in_a_definition_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown selectors"):
        declare("x", "mean", "x", accepts=frozenset({"colour"}))
    assert "x" not in DECLARED


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
    c, ev = check(e, "s", {"s": reps, "t": t})
    # 30 (2 s of window) against 10 x 5 = 50: leans does not hold, and both windows are named
    assert c.leans is False
    assert "of flow bulk, 5-7 s in s = 30" in ev and "of flow bulk, 0-5 s in t = 50" in ev


def test_the_lab_model_does_not_import_the_registry() -> None:
    """lab/schema/, lab/scale.py and the loader's check parse, scale and validate without
    mptcplab.metrics (which reads the result model): a published.yml parsed and checked in a
    fresh interpreter leaves it unimported."""
    doc = {"source": SOURCE,
           "values": [{"id": "v", "scenario": None, "metric": "goodput_mbps", "flow": "f", "value": 1, "unit": "u",
                       "where": "w"}],
           "findings": [{"id": "f", "scenario": "s", "statement": "s", "where": "w",
                         "expect": {"metric": "goodput_mbps", "op": ">", "than": {"scenario": "t", "metric": "nope"}}}]}
    code = ("import json, sys; from pathlib import Path; from mptcplab.errors import LabInputError; "
            "from mptcplab.lab import metriccheck, scale, schema; "
            "pub = schema.Published.model_validate(json.loads(sys.argv[1]))\n"
            "try: metriccheck.check_metrics(pub, Path('published.yml'))\n"
            "except LabInputError as e: print(e.field, e.problem)\n"
            "print(sorted(m for m in sys.modules if m.startswith(('mptcplab.metrics', 'mptcplab.results'))))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(doc)], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    # the check ran (goodput_mbps takes no flow) on the declarations alone
    assert out.stdout.splitlines() == ["values[0] metric goodput_mbps does not take flow (it takes no selector)", "[]"]


def _imported(tree: ast.AST, level: int) -> list[str]:
    """The modules a file ``level`` packages below mptcplab imports, as absolute names."""
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            # `level` dots up is mptcplab: from mptcplab/lab/ `from ..metrics import X`, `from .. import metrics`
            base = ".".join(x for x in ("mptcplab" if node.level == level else "", node.module or "") if x)
            out += [base] + [f"{base}.{a.name}" for a in node.names]
    return out


def test_no_file_of_the_lab_package_imports_the_registry() -> None:
    lab = Path(__file__).resolve().parents[2] / "mptcplab" / "lab"
    assert [f.name for f in sorted(lab.glob("*.py"))
            if any(n == "mptcplab.metrics" or n.startswith("mptcplab.metrics.")
                   for n in _imported(ast.parse(f.read_text()), 2))] == []


def test_the_declarations_import_nothing_of_the_package() -> None:
    decl = Path(__file__).resolve().parents[2] / "mptcplab" / "metricdecl.py"
    tree = ast.parse(decl.read_text())
    assert not any(isinstance(n, ast.ImportFrom) and n.level > 0 for n in ast.walk(tree))
    assert not [n for n in _imported(tree, 1) if n.startswith("mptcplab")]

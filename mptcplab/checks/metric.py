"""A metric comparison (``{metric, op, value | than, by, tolerance, statistic}``): a statistic
of one scenario's repetitions against a constant, another scenario's, or their difference or
ratio against a constant (within a tolerance for ==).

Its verdict comes from an interval of that statistic over the repetitions (checks/stats.py):
*holds* when the whole interval satisfies the claim, *does not hold* when none of it does,
*inconclusive* when it straddles the claim's boundary or the repetitions are too few for the
required confidence. The statistic is the median (Hodges-Lehmann between two scenarios)
unless the check names an extreme: ``min`` (a claim about every repetition) or ``max`` (about
some repetition), which are decided without an interval, as is a metric whose own aggregate
is such an extreme.
"""

from __future__ import annotations

import operator
import statistics
from typing import Literal

from pydantic import Field, model_validator

from ..metricdecl import DECLARED, Select, extreme_reading, metric_scales
from ..record.model import CheckStat, Verdict
from ..units import fmt_factor
from . import stats
from .base import (
    CheckKind,
    CheckStatistic,
    FlowUse,
    Judging,
    MetricName,
    MetricUse,
    Selected,
    SourceField,
    interval_text,
)

OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_EPS = 1e-6  # aggregates are floats: 0.1 + 0.2 == 0.3 must hold


class Operand(Selected):
    """The right-hand side of a comparison between scenarios: another scenario's aggregate.
    metric, path, flow and window default to the expectation's own."""

    scenario: str
    metric: MetricName | None = None


class Expectation(Selected, CheckKind):
    """A predicate on this run's aggregates.

    Left side: ``metric`` (of ``path``, ``flow`` and ``window`` where the metric takes them)
    in ``scenario``, by default the finding's scenario.
    Without ``than`` it is compared with ``value``; with ``than`` (another scenario's
    aggregate) it is compared with it directly, or ``by`` difference (left - right) or ratio
    (left / right) compared with ``value``. ``tolerance`` widens ``==`` to |x - value| <=
    tolerance (and narrows ``!=`` accordingly); the other operators take no tolerance.
    """

    metric: MetricName
    scenario: str | None = None
    op: Literal["==", "!=", "<", "<=", ">", ">="]
    value: float | None = None
    than: Operand | None = None
    by: Literal["difference", "ratio"] | None = None
    tolerance: float = Field(default=0.0, ge=0)
    #: where ``value`` and ``tolerance`` (or, without a value, the direction) come from
    source: SourceField | None = None
    statistic: CheckStatistic | None = None

    @model_validator(mode="after")
    def _complete(self) -> Expectation:
        if self.than is None and self.value is None:
            raise ValueError("needs value (a constant) or than (another scenario)")
        if self.by is not None and (self.than is None or self.value is None):
            raise ValueError("by: difference|ratio needs both than and value")
        if self.than is not None and self.by is None and self.value is not None:
            raise ValueError("than without by compares two scenarios directly: value is not used (add by)")
        if self.tolerance and self.op not in ("==", "!="):
            raise ValueError("tolerance applies to == and != only")
        return self

    def operand(self) -> Operand | None:
        """``than`` with what it leaves out (metric, path, flow, window) taken from this
        expectation: the right-hand side as findings measure it and the loader checks it."""
        o = self.than
        if o is None:
            return None
        return o.model_copy(update={
            "metric": o.metric or self.metric,
            "path": o.path if o.path is not None else self.path,
            "flow": o.flow if o.flow is not None else self.flow,
            "window": o.window if o.window is not None else self.window})

    # -- what it needs of the lab

    def scenarios(self, default: str | None) -> list[str]:
        return [x for x in (self.scenario or default, self.than.scenario if self.than else None) if x]

    def metric_uses(self) -> list[MetricUse]:
        # the name before the selection, the left side before the right; the right side with
        # what it inherits is refused where the expectation stands
        out = [MetricUse(".metric", self.metric)]
        if self.than is not None and self.than.metric is not None:
            out.append(MetricUse(".than.metric", self.than.metric))
        out.append(MetricUse("", self.metric, self))
        right = self.operand()
        if right is not None and right.metric is not None:
            out.append(MetricUse("", right.metric, right))
        return out

    def flow_uses(self) -> list[FlowUse]:
        out = [FlowUse(".flow", self.flow)]
        if self.than is not None:
            out.append(FlowUse(".than.flow", self.than.flow))
        return out

    # -- its verdict

    def evaluate(self, default_scenario: str | None, on: Judging) -> tuple[CheckStat, str]:
        """Its verdict from its statistic's interval, with the evidence in words. In a run
        scaled by ``on.factor`` an absolute rate is compared with the paper's x factor
        (lab/scale.py), and the evidence says so."""
        e, factor, reps = self, on.factor, on.reps
        value = e.value * factor if e.value is not None and _scaled(e) else e.value
        tolerance = e.tolerance * factor if _scaled(e) else e.tolerance
        target = _target(e, factor)
        left_name = e.scenario or default_scenario
        if left_name is None:
            return e.not_measurable("no scenario of this lab to measure it on", target)
        if left_name not in reps:
            return e.not_measurable(f"scenario {left_name} not run", target)
        lsel = Select(e.path, e.flow, e.window)
        xs = [x for x in on.per_rep(reps[left_name], e.metric, lsel) if x is not None]
        lname = _named(e.metric, lsel, left_name)
        if not xs:
            return e.not_measurable(f"no {lname} observed", target)
        stat = _statistic(e)
        if e.than is None:
            assert value is not None  # the schema requires value without than
            return _against_constant(e, stat, lname, xs, value, tolerance, target)
        right_name = e.than.scenario
        if right_name not in reps:
            return e.not_measurable(f"{lname}; scenario {right_name} not run", target)
        o = e.operand()
        assert o is not None and o.metric is not None  # than is set; operand() fills in its metric
        rsel = Select(o.path, o.flow, o.window)
        ys = [y for y in on.per_rep(reps[right_name], o.metric, rsel) if y is not None]
        rname = _named(o.metric, rsel, right_name)
        if not ys:
            return e.not_measurable(f"{lname}; no {rname} observed", target)
        paired = None
        if right_name == left_name:  # two statistics of the same repetitions: compare them pair by pair
            raw_x = on.per_rep(reps[left_name], e.metric, lsel)
            raw_y = on.per_rep(reps[right_name], o.metric, rsel)
            paired = [(x, y) for x, y in zip(raw_x, raw_y, strict=True) if x is not None and y is not None]
        return _between(e, stat, lname, xs, rname, ys, value, tolerance, target, paired)

    # -- the audit's words

    def claim(self, default_scenario: str | None) -> str:
        e = self
        left = f"{_side(e)} in {e.scenario or default_scenario}"
        if e.than is None:
            return f"{left} {e.op}{_value(e)}"
        o = e.operand()
        assert o is not None
        right = f"{o.metric}" + (f" (path {o.path})" if o.path else "") + (f" (flow {o.flow})" if o.flow else "") \
            + (f" ({o.window[0]:g}-{o.window[1]:g} s)" if o.window else "") + f" in {o.scenario}"
        if e.by is None:
            return f"{left} {e.op} {right}"
        return f"{e.by} {left} {'/' if e.by == 'ratio' else '-'} {right} {e.op}{_value(e)}"

    def audit_statistic(self, default_scenario: str | None, extremes: dict[str, str]) -> str:
        # results' _statistic decides the same way
        stat = self.statistic or extremes.get(self.metric) or "median"
        if stat in ("min", "max", "std"):
            return extreme_reading(stat, self.op)
        if self.than is not None:
            if self.than.scenario == (self.scenario or default_scenario):
                return f"paired {self.by or 'difference'}s, sign-test interval"
            return f"Hodges-Lehmann {self.by or 'difference'}, Moses interval"
        return "median, order-statistic interval"

    def problems(self, default_scenario: str | None) -> list[str]:
        o = self.operand()
        if o is not None and (o.scenario, o.metric, o.path, o.flow, o.window) == (
                self.scenario or default_scenario, self.metric, self.path, self.flow, self.window):
            return ["compares a statistic with itself (true by construction)"]
        return []


def _value(e: Expectation) -> str:
    if e.value is None:
        return ""
    return f" {e.value:g}" + (f" ± {e.tolerance:g}" if e.tolerance else "")


def _side(e: Expectation) -> str:
    sel = [x for x in (f"path {e.path}" if e.path else "", f"flow {e.flow}" if e.flow else "",
                       f"{e.window[0]:g}-{e.window[1]:g} s" if e.window else "") if x]
    return e.metric + (f" ({', '.join(sel)})" if sel else "")


def _compare(x: float, op: str, target: float, tolerance: float) -> bool:
    if op == "==":
        return abs(x - target) <= tolerance + _EPS
    if op == "!=":
        return abs(x - target) > tolerance + _EPS
    return bool(OPS[op](round(x, 6), target))


def _target(e: Expectation, factor: float = 1.0) -> str:
    if e.value is None:
        return e.op
    tol = f" ± {e.tolerance:g}" if e.tolerance else ""
    text = f"{e.op} {e.value:g}{tol}"
    if factor != 1 and _scaled(e):
        stol = f" ± {e.tolerance * factor:g}" if e.tolerance else ""
        text += f", compared scaled {fmt_factor(factor)}: {e.op} {e.value * factor:g}{stol}"
    return text


def _scaled(e: Expectation) -> bool:
    """Whether the expectation's constant is an absolute rate (scaled with the run): a
    value of a rate metric, or a difference of two; a ratio is unitless."""
    return e.value is not None and metric_scales(e.metric) and e.by != "ratio"


def _statistic(e: Expectation) -> str:
    """The statistic a check compares: its own, else the median for a metric whose
    aggregate is central, else the metric's own extreme (max, min, std)."""
    if e.statistic is not None:
        return e.statistic
    own = DECLARED[e.metric].over_reps
    return "median" if own in ("mean", "median") else own


def _extreme(xs: list[float], statistic: str) -> float:
    if statistic == "max":
        return max(xs)
    if statistic == "min":
        return min(xs)
    return statistics.stdev(xs) if len(xs) > 1 else 0.0


def _named(metric: str, sel: Select, scenario: str) -> str:
    of = sel.describe()
    return metric + (f" of {of}" if of else "") + f" in {scenario}"


def _why_inconclusive(v: Verdict, iv: stats.Interval) -> str:
    if v != stats.INCONCLUSIVE:
        return ""
    if not iv.enough:
        return (f": too few repetitions for a {stats.CONFIDENCE:.0%} interval "
                f"(the widest reaches {iv.confidence:.0%})")
    return ": the interval straddles the claim"


def _decided(e: Expectation, what: str, iv: stats.Interval, n: list[int], want: float, tol: float,
             target: str) -> tuple[CheckStat, str]:
    """The verdict of a claim on an interval, as a check's row and evidence."""
    v = stats.decide(iv, e.op, want, tol)
    row = CheckStat(verdict=v, statistic=what, estimate=iv.estimate, low=iv.low, high=iv.high,
                    confidence=iv.confidence, method=iv.method, n=n, target=target, source=e.source_text(),
                    leans=stats.point_side(iv.estimate, e.op, want, tol) if v == stats.INCONCLUSIVE else None)
    return row, f"{what} = {interval_text(iv, n)}; claim: {target} -> {v}{_why_inconclusive(v, iv)}"


def _against_constant(e: Expectation, stat: str, lname: str, xs: list[float], value: float, tolerance: float,
                      target: str) -> tuple[CheckStat, str]:
    what = f"{stat} of {lname}"
    if stat == "std":
        try:
            iv = stats.spread_interval(xs)
        except ValueError as err:
            return e.not_measurable(f"{what}: {err}", target)
        return _decided(e, what, iv, [len(xs)], value, tolerance, target)
    if stat != "median":
        x = _extreme(xs, stat)
        v: Verdict = stats.HOLDS if _compare(x, e.op, value, tolerance) else stats.FAILS
        row = CheckStat(verdict=v, statistic=what, estimate=x, method=extreme_reading(stat, e.op), n=[len(xs)],
                        target=target, source=e.source_text())
        return row, f"{what} = {x:.4g} (n = {len(xs)}; {extreme_reading(stat, e.op)}); paper: {target} -> {v}"
    iv = stats.median_interval(xs)
    v = stats.decide(iv, e.op, value, tolerance)
    row = CheckStat(verdict=v, statistic=what, estimate=iv.estimate, low=iv.low, high=iv.high,
                    confidence=iv.confidence, method=iv.method, n=[len(xs)], target=target, source=e.source_text(),
                    leans=stats.point_side(iv.estimate, e.op, value, tolerance) if v == stats.INCONCLUSIVE else None)
    return row, f"{what} = {interval_text(iv, [len(xs)])}; paper: {target} -> {v}{_why_inconclusive(v, iv)}"


def _between(e: Expectation, stat: str, lname: str, xs: list[float], rname: str, ys: list[float],
             value: float | None, tolerance: float, target: str,
             paired: list[tuple[float, float]] | None = None) -> tuple[CheckStat, str]:
    how = e.by or "difference"
    # a direct comparison (no ``by``) is the difference against 0
    want, tol = (value, tolerance) if e.by is not None else (0.0, e.tolerance)
    assert want is not None  # the schema requires value with by
    shown_target = target if e.by is not None else f"{lname} {e.op} {rname}"
    what = f"{how} {lname} {'/' if how == 'ratio' else '-'} {rname}"
    if stat == "std":
        try:
            iv = stats.spread_interval(xs, ys, how)
        except ValueError as err:
            return e.not_measurable(f"{what}: {err}", shown_target)
        return _decided(e, f"{how} of the stds, {what}", iv, [len(xs), len(ys)], want, tol, shown_target)
    if stat != "median":
        a, b = _extreme(xs, stat), _extreme(ys, stat)
        if how == "ratio" and b == 0:
            return e.not_measurable(f"{what}: a ratio to zero is not defined", shown_target)
        x = a / b if how == "ratio" else a - b
        v: Verdict = stats.HOLDS if _compare(x, e.op, want, tol) else stats.FAILS
        row = CheckStat(verdict=v, statistic=f"{how} of the {stat}s, {what}", estimate=x,
                        method=extreme_reading(stat, e.op), n=[len(xs), len(ys)], target=shown_target,
                        source=e.source_text())
        return row, (f"{how} of the {stat}s {x:.4g} ({lname} = {a:.4g}; {rname} = {b:.4g}); "
                     f"claim: {shown_target} -> {v}")
    try:
        iv = stats.paired_interval(paired, how) if paired else stats.shift_interval(xs, ys, how)
    except ValueError as err:
        return e.not_measurable(f"{what}: {err}", shown_target)
    v = stats.decide(iv, e.op, want, tol)
    n = [len(paired)] if paired else [len(xs), len(ys)]
    row = CheckStat(verdict=v, statistic=what, estimate=iv.estimate, low=iv.low, high=iv.high,
                    confidence=iv.confidence, method=iv.method, n=n, target=shown_target, source=e.source_text(),
                    leans=stats.point_side(iv.estimate, e.op, want, tol) if v == stats.INCONCLUSIVE else None)
    claim = f"paper: {how} {target}" if e.by is not None else f"claim: {how} {e.op} 0"
    sides = f"{lname} = {statistics.median(xs):.4g}, {rname} = {statistics.median(ys):.4g} (medians)"
    return row, f"{what} = {interval_text(iv, n)} [{sides}]; {claim} -> {v}{_why_inconclusive(v, iv)}"

"""A paper's findings as predicates on this run: holds, does not hold, or not measurable here.

An expectation (mptcplab/lab/schema/published.py Expectation) compares one scenario's aggregate (of a
path, a named flow, a time window: mptcplab/metrics/) with a
constant, with another scenario's aggregate, or their difference or ratio with a constant
(within a tolerance for ==); a capture fact (CaptureFact) asks whether every repetition's
capture shows a subflow with a property (established, an ICMP-reported MTU, ...). Every
aggregate is aggregate.py's one definition, so a finding reads the same number as the
summary and the report. A finding that needs what this lab
cannot provide says so with its reason instead of a verdict; one whose checks need another
kernel (``requires``: a release range, one of the project's patches) is judged only on a
kernel that has it, and elsewhere is "not measurable here" with this kernel named.

A verdict on several repetitions is one statistic's (the metric's median or mean), and the
repetitions may disagree with it: when some satisfy the expectation and some do not (a
comparison between scenarios: some pairs of their repetitions), the finding is marked
*within spread* and its evidence says how many agree. The verdict stands, but it rests on
a difference smaller than the run's own variation; more repetitions, not this run, can
settle it.
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ..kernelreq import PATCHES, in_range
from ..lab.scale import fmt_factor
from ..lab.schema import CaptureFact, Expectation, Finding, Published, Requires
from ..metricdecl import Select, metric_scales
from ..record.model import FindingRow, Repetition
from .aggregate import Value, scenario_value

OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_EPS = 1e-6  # aggregates are floats: 0.1 + 0.2 == 0.3 must hold


def _compare(x: float, op: str, target: float, tolerance: float) -> bool:
    if op == "==":
        return abs(x - target) <= tolerance + _EPS
    if op == "!=":
        return abs(x - target) > tolerance + _EPS
    return bool(OPS[op](round(x, 6), target))


def _describe(metric: str, sel: Select, scenario: str, v: Value, show_scenario: bool) -> str:
    of = sel.describe()
    what = metric + (f" of {of}" if of else "") + (f" in {scenario}" if show_scenario else "")
    return f"{what} = {v.value:.4g} ({v.statistic}, {v.n} rep{'' if v.n == 1 else 's'})"


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


class Checked(NamedTuple):
    holds: bool | None  # None: cannot be measured here (the evidence says why)
    evidence: str
    #: the repetitions fall on both sides of the verdict: how many agree (module docstring)
    spread: str | None = None


def _spread(xs: list[float], agrees: list[bool], label: str) -> str | None:
    """The note of a verdict the repetitions disagree on, from the values compared (one
    per repetition, or per pair of the two scenarios' repetitions, as ``label`` names
    them) and whether each satisfies the expectation."""
    if len(xs) < 2 or all(agrees) or not any(agrees):
        return None
    what = "repetitions" if label == "values" else "pairs of repetitions"
    return f"within spread: {sum(agrees)} of {len(xs)} {what} satisfy it ({label} {min(xs):.4g} to {max(xs):.4g})"


def _values(v: Value) -> list[float]:
    """The per-repetition values a spread is read from: none for a metric whose aggregate
    is an extreme (the max over repetitions: one repetition reaching it is the finding)."""
    return [x for x in v.per_rep if x is not None] if v.central else []


def check(e: Expectation, default_scenario: str | None,
          reps: dict[str, list[Repetition]], factor: float = 1.0) -> Checked:
    """Whether one expectation holds, with its evidence; holds None when it cannot be
    measured here. In a run scaled by ``factor`` an absolute rate is compared with the
    paper's x factor (lab/scale.py), and the evidence says so."""
    value = e.value * factor if e.value is not None and _scaled(e) else e.value
    tolerance = e.tolerance * factor if _scaled(e) else e.tolerance
    left_name = e.scenario or default_scenario
    if left_name is None:
        return Checked(None, "no scenario of this lab to measure it on")
    if left_name not in reps:
        return Checked(None, f"scenario {left_name} not run")
    lsel = Select(e.path, e.flow, e.window)
    left = scenario_value(reps[left_name], e.metric, e.path, flow=e.flow, window=e.window)
    if left.value is None:
        return Checked(None, f"no {e.metric} observed in {left_name}"
                       + (f" ({lsel.describe()})" if lsel.describe() else ""))
    across = e.than is not None
    lhs = _describe(e.metric, lsel, left_name, left, across)
    if e.than is None:
        assert value is not None  # the schema requires value without than
        xs = _values(left)
        return Checked(_compare(left.value, e.op, value, tolerance), f"{lhs}; paper: {_target(e, factor)}",
                       _spread(xs, [_compare(x, e.op, value, tolerance) for x in xs], "values"))
    right_name = e.than.scenario
    if right_name not in reps:
        return Checked(None, f"{lhs}; scenario {right_name} not run")
    o = e.operand()
    assert o is not None and o.metric is not None  # than is set; operand() fills in its metric
    r_metric = o.metric
    rsel = Select(o.path, o.flow, o.window)
    right = scenario_value(reps[right_name], r_metric, rsel.path, flow=rsel.flow, window=rsel.window)
    if right.value is None:
        return Checked(None, f"{lhs}; no {r_metric} observed in {right_name}")
    rhs = _describe(r_metric, rsel, right_name, right, True)
    pairs = [(a, b) for a in _values(left) for b in _values(right)]
    if e.by is None:
        holds = _compare(left.value, e.op, right.value, e.tolerance)
        return Checked(holds, f"{lhs} {e.op} {rhs}: {'yes' if holds else 'no'}",
                       _spread([a - b for a, b in pairs], [_compare(a, e.op, b, e.tolerance) for a, b in pairs],
                               "differences"))
    assert value is not None  # the schema requires value with by
    if e.by == "difference":
        x, how = left.value - right.value, "difference"
        xs = [a - b for a, b in pairs]
    else:
        if right.value == 0:
            return Checked(None, f"{lhs}; {rhs}: a ratio to zero is not defined")
        x, how = left.value / right.value, "ratio"
        xs = [a / b for a, b in pairs if b != 0]
    holds = _compare(x, e.op, value, tolerance)
    return Checked(holds, f"{how} {x:.4g} ({lhs}; {rhs}); paper: {how} {_target(e, factor)}",
                   _spread(xs, [_compare(y, e.op, value, tolerance) for y in xs], how + "s"))


def check_fact(c: CaptureFact, default_scenario: str | None, reps: dict[str, list[Repetition]]) -> Checked:
    """Whether a capture fact is true in every repetition of the scenario, with its evidence."""
    name = c.scenario or default_scenario
    if name is None:
        return Checked(None, "no scenario of this lab to observe it in")
    if name not in reps:
        return Checked(None, f"scenario {name} not run")
    want = f"contains {c.contains}" if c.contains is not None else f"= {c.equals}"
    what = f"a subflow on path {c.path}" if c.path else "a subflow"

    def seen(r: Repetition) -> bool:
        for s in r.subflows_on(c.path):
            v = getattr(s, c.fact)
            if (c.contains in v) if c.contains is not None else v == c.equals:
                return True
        return False

    n = sum(1 for r in reps[name] if seen(r))
    total = len(reps[name])
    holds = n == total
    scenario = f" in {name}" if c.scenario else ""
    return Checked(holds, f"{what} with {c.fact} {want}{scenario}: in {n} of {total} rep{'' if total == 1 else 's'}")


@dataclass(frozen=True)
class KernelFacts:
    """The kernel a run measured on: its release and the project's patches it carries
    (None: not recorded, as in a run older than manifest.json's kernel_patches)."""

    release: str | None = None
    patches: Collection[str] | None = None


def unmet(req: Requires, kernel: KernelFacts) -> str | None:
    """Why this kernel cannot judge a finding that requires ``req``; None when it can."""
    this = f"this kernel is {kernel.release}" if kernel.release else "this run's kernel is not recorded"
    if req.kernel_patch is not None:
        patch = PATCHES[req.kernel_patch]
        needs = f"needs the patched kernel ({req.kernel_patch}: {patch.description})"
        if kernel.patches is None:
            who = kernel.release or "this run's kernel"
            return f"{needs}; whether {who} carries it is not recorded"
        if req.kernel_patch not in kernel.patches:
            return f"{needs}; {this}, without it"
    if req.kernel is not None:
        ok = in_range(kernel.release, req.kernel) if kernel.release else None
        if ok is None:
            return f"needs a kernel {req.kernel}; {this}" + (", not a version" if kernel.release else "")
        if not ok:
            return f"needs a kernel {req.kernel}; {this}"
    return None


def evaluate(f: Finding, reps: dict[str, list[Repetition]], factor: float = 1.0,
             kernel: KernelFacts | None = None) -> FindingRow:
    row = FindingRow(id=f.id, scenario=f.scenario, statement=f.statement, where=f.where)
    if f.not_measurable:
        return row.model_copy(update={"evidence": f"not measurable here: {f.not_measurable}"})
    if not f.expectations:
        return row.model_copy(update={"evidence": "not checkable automatically"})
    on = ""
    if f.requires is not None:
        why = unmet(f.requires, kernel or KernelFacts())
        if why:
            return row.model_copy(update={"evidence": f"not measurable here: {why}"})
        assert kernel is not None  # unmet() says "not recorded" without one
        patch = f" ({f.requires.kernel_patch})" if f.requires.kernel_patch else ""
        on = f"on {kernel.release or 'this kernel'}{patch}: "
    results = [check_fact(e, f.scenario, reps) if isinstance(e, CaptureFact) else check(e, f.scenario, reps, factor)
               for e in f.expectations]
    verdicts = [c.holds for c in results]
    holds = False if False in verdicts else None if None in verdicts else True
    # the verdict rests on the checks that decided it: all of them when it holds, the
    # failing ones when it does not; it is within spread when those are
    deciding = [c for c in results if c.holds is holds]
    spread = holds is not None and (any(c.spread for c in deciding) if holds
                                    else all(c.spread for c in deciding))
    evidence = "; and ".join(c.evidence + (f" [{c.spread}]" if c.spread else "") for c in results)
    return row.model_copy(update={"holds_here": holds, "within_spread": spread, "evidence": on + evidence})


def findings_table(pub: Published | None, records: Sequence[Repetition], factor: float = 1.0,
                   kernel: KernelFacts | None = None) -> list[FindingRow]:
    if pub is None:
        return []
    by_name: dict[str, list[Repetition]] = {}
    for r in records:
        by_name.setdefault(r.name, []).append(r)
    return [evaluate(f, by_name, factor, kernel) for f in pub.findings]

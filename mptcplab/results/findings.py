"""A paper's findings as statistical statements on this run.

An expectation (mptcplab/lab/schema/published.py Expectation) compares a statistic of one
scenario's repetitions (a metric of a path, a named flow, a time window: mptcplab/metrics/)
with a constant, with another scenario's, or their difference or ratio with a constant
(within a tolerance for ==). Its verdict comes from an interval of that statistic over the
repetitions (results/stats.py): *holds* when the whole interval satisfies the claim, *does
not hold* when none of it does, *inconclusive* when it straddles the claim's boundary or
the repetitions are too few for the required confidence. The statistic is the median
(Hodges-Lehmann between two scenarios) unless the check names an extreme: ``min`` (a claim
about every repetition) or ``max`` (about some repetition), which are decided without an
interval, as is a metric whose own aggregate is such an extreme.

A capture fact (CaptureFact) asks whether every repetition's capture shows a subflow with a
property: it holds in every repetition, in none, or the repetitions disagree (inconclusive).

A finding that needs what this lab cannot provide says so with its reason; one whose checks
need another kernel (``requires``) is judged only on a kernel that has it, and elsewhere is
"not measurable here" with this kernel named. Every check carries the source of its claim
(the paper, a derivation, the project's convention) into the row.
"""

from __future__ import annotations

import operator
import statistics
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..kernelreq import PATCHES, in_range
from ..lab.scale import fmt_factor
from ..lab.schema import CaptureFact, Expectation, Finding, Published, Requires
from ..metricdecl import Select, extreme_reading, metric_scales
from ..metrics import METRICS
from ..record.model import CheckStat, FindingRow, Repetition, Verdict
from . import stats
from .aggregate import per_rep_values

OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_EPS = 1e-6  # aggregates are floats: 0.1 + 0.2 == 0.3 must hold


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
    own = METRICS[e.metric].over_reps
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


def _not_measurable(evidence: str, e: Expectation | CaptureFact, target: str | None = None) -> tuple[CheckStat, str]:
    return CheckStat(verdict="not measurable", target=target, source=_source(e)), evidence


def _source(e: Expectation | CaptureFact) -> str | None:
    return str(e.source) if e.source is not None else None


def _interval_text(iv: stats.Interval, n: list[int]) -> str:
    ns = " x ".join(str(k) for k in n)
    return f"{iv.estimate:.4g}, interval [{iv.low:.4g}, {iv.high:.4g}] at {iv.confidence:.0%} (n = {ns}; {iv.method})"


def _why_inconclusive(v: Verdict, iv: stats.Interval) -> str:
    if v != stats.INCONCLUSIVE:
        return ""
    if not iv.enough:
        return (f": too few repetitions for a {stats.CONFIDENCE:.0%} interval "
                f"(the widest reaches {iv.confidence:.0%})")
    return ": the interval straddles the claim"


def check(e: Expectation, default_scenario: str | None,
          reps: dict[str, list[Repetition]], factor: float = 1.0) -> tuple[CheckStat, str]:
    """One expectation's verdict from its statistic's interval, with the evidence in words.
    In a run scaled by ``factor`` an absolute rate is compared with the paper's x factor
    (lab/scale.py), and the evidence says so."""
    value = e.value * factor if e.value is not None and _scaled(e) else e.value
    tolerance = e.tolerance * factor if _scaled(e) else e.tolerance
    target = _target(e, factor)
    left_name = e.scenario or default_scenario
    if left_name is None:
        return _not_measurable("no scenario of this lab to measure it on", e, target)
    if left_name not in reps:
        return _not_measurable(f"scenario {left_name} not run", e, target)
    lsel = Select(e.path, e.flow, e.window)
    xs = [x for x in per_rep_values(reps[left_name], e.metric, e.path, flow=e.flow, window=e.window) if x is not None]
    lname = _named(e.metric, lsel, left_name)
    if not xs:
        return _not_measurable(f"no {lname} observed", e, target)
    stat = _statistic(e)
    if e.than is None:
        assert value is not None  # the schema requires value without than
        return _against_constant(e, stat, lname, xs, value, tolerance, target)
    right_name = e.than.scenario
    if right_name not in reps:
        return _not_measurable(f"{lname}; scenario {right_name} not run", e, target)
    o = e.operand()
    assert o is not None and o.metric is not None  # than is set; operand() fills in its metric
    rsel = Select(o.path, o.flow, o.window)
    ys = [y for y in per_rep_values(reps[right_name], o.metric, rsel.path, flow=rsel.flow, window=rsel.window)
          if y is not None]
    rname = _named(o.metric, rsel, right_name)
    if not ys:
        return _not_measurable(f"{lname}; no {rname} observed", e, target)
    paired = None
    if right_name == left_name:  # two statistics of the same repetitions: compare them pair by pair
        raw_x = per_rep_values(reps[left_name], e.metric, e.path, flow=e.flow, window=e.window)
        raw_y = per_rep_values(reps[right_name], o.metric, rsel.path, flow=rsel.flow, window=rsel.window)
        paired = [(x, y) for x, y in zip(raw_x, raw_y, strict=True) if x is not None and y is not None]
    return _between(e, stat, lname, xs, rname, ys, value, tolerance, target, paired)


def _against_constant(e: Expectation, stat: str, lname: str, xs: list[float], value: float, tolerance: float,
                      target: str) -> tuple[CheckStat, str]:
    what = f"{stat} of {lname}"
    if stat != "median":
        x = _extreme(xs, stat)
        v: Verdict = stats.HOLDS if _compare(x, e.op, value, tolerance) else stats.FAILS
        row = CheckStat(verdict=v, statistic=what, estimate=x, method=extreme_reading(stat, e.op), n=[len(xs)],
                        target=target, source=_source(e))
        return row, f"{what} = {x:.4g} (n = {len(xs)}; {extreme_reading(stat, e.op)}); paper: {target} -> {v}"
    iv = stats.median_interval(xs)
    v = stats.decide(iv, e.op, value, tolerance)
    row = CheckStat(verdict=v, statistic=what, estimate=iv.estimate, low=iv.low, high=iv.high,
                    confidence=iv.confidence, method=iv.method, n=[len(xs)], target=target, source=_source(e),
                    leans=stats.point_side(iv.estimate, e.op, value, tolerance) if v == stats.INCONCLUSIVE else None)
    return row, f"{what} = {_interval_text(iv, [len(xs)])}; paper: {target} -> {v}{_why_inconclusive(v, iv)}"


def _between(e: Expectation, stat: str, lname: str, xs: list[float], rname: str, ys: list[float],
             value: float | None, tolerance: float, target: str,
             paired: list[tuple[float, float]] | None = None) -> tuple[CheckStat, str]:
    how = e.by or "difference"
    # a direct comparison (no ``by``) is the difference against 0
    want, tol = (value, tolerance) if e.by is not None else (0.0, e.tolerance)
    assert want is not None  # the schema requires value with by
    shown_target = target if e.by is not None else f"{lname} {e.op} {rname}"
    what = f"{how} {lname} {'/' if how == 'ratio' else '-'} {rname}"
    if stat != "median":
        a, b = _extreme(xs, stat), _extreme(ys, stat)
        if how == "ratio" and b == 0:
            return _not_measurable(f"{what}: a ratio to zero is not defined", e, shown_target)
        x = a / b if how == "ratio" else a - b
        v: Verdict = stats.HOLDS if _compare(x, e.op, want, tol) else stats.FAILS
        row = CheckStat(verdict=v, statistic=f"{how} of the {stat}s, {what}", estimate=x,
                        method=extreme_reading(stat, e.op), n=[len(xs), len(ys)], target=shown_target,
                        source=_source(e))
        return row, (f"{how} of the {stat}s {x:.4g} ({lname} = {a:.4g}; {rname} = {b:.4g}); "
                     f"claim: {shown_target} -> {v}")
    try:
        iv = stats.paired_interval(paired, how) if paired else stats.shift_interval(xs, ys, how)
    except ValueError as err:
        return _not_measurable(f"{what}: {err}", e, shown_target)
    v = stats.decide(iv, e.op, want, tol)
    n = [len(paired)] if paired else [len(xs), len(ys)]
    row = CheckStat(verdict=v, statistic=what, estimate=iv.estimate, low=iv.low, high=iv.high,
                    confidence=iv.confidence, method=iv.method, n=n, target=shown_target, source=_source(e),
                    leans=stats.point_side(iv.estimate, e.op, want, tol) if v == stats.INCONCLUSIVE else None)
    claim = f"paper: {how} {target}" if e.by is not None else f"claim: {how} {e.op} 0"
    sides = f"{lname} = {statistics.median(xs):.4g}, {rname} = {statistics.median(ys):.4g} (medians)"
    return row, f"{what} = {_interval_text(iv, n)} [{sides}]; {claim} -> {v}{_why_inconclusive(v, iv)}"


def check_fact(c: CaptureFact, default_scenario: str | None,
               reps: dict[str, list[Repetition]]) -> tuple[CheckStat, str]:
    """Whether a capture fact is seen in every repetition of the scenario, with its evidence."""
    name = c.scenario or default_scenario
    if name is None:
        return _not_measurable("no scenario of this lab to observe it in", c)
    if name not in reps:
        return _not_measurable(f"scenario {name} not run", c)
    want = f"contains {c.contains}" if c.contains is not None else f"= {c.equals}"
    what = f"a subflow on path {c.path}" if c.path else "a subflow"

    def seen(r: Repetition) -> bool:
        for s in r.subflows_on(c.path):
            v = getattr(s, c.fact)
            if (c.contains in v) if c.contains is not None else v == c.equals:
                return True
        return False

    k = sum(1 for r in reps[name] if seen(r))
    total = len(reps[name])
    verdict = stats.agreement_verdict(k, total)
    lo, hi = stats.proportion_interval(k, total)
    scenario = f" in {name}" if c.scenario else ""
    row = CheckStat(verdict=verdict, statistic=f"share of repetitions with {what} with {c.fact} {want}{scenario}",
                    estimate=k / total, low=lo, high=hi, confidence=stats.CONFIDENCE,
                    method="exact binomial (Clopper-Pearson)", n=[total], target="every repetition",
                    source=_source(c))
    return row, (f"{what} with {c.fact} {want}{scenario}: in {k} of {total} rep{'' if total == 1 else 's'} "
                 f"-> {verdict}")


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


#: how a finding's checks combine ("and"): one failing check decides; an unmeasurable one
#: leaves the finding undecidable; an inconclusive one leaves it open
_PRECEDENCE: tuple[Verdict, ...] = ("does not hold", "not measurable", "inconclusive", "holds")


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    return next((v for v in _PRECEDENCE if v in verdicts), "not measurable")


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
    checks = [c for c, _ in results]
    evidence = "; and ".join(text for _, text in results)
    return row.model_copy(update={"verdict": combine([c.verdict for c in checks]), "checks": checks,
                                  "evidence": on + evidence})


def _by_scenario(records: Sequence[Repetition]) -> dict[str, list[Repetition]]:
    by_name: dict[str, list[Repetition]] = {}
    for r in records:
        by_name.setdefault(r.name, []).append(r)
    return by_name


def findings_table(pub: Published | None, records: Sequence[Repetition], factor: float = 1.0,
                   kernel: KernelFacts | None = None, setup: bool = False) -> list[FindingRow]:
    """The paper's findings judged on ``records``; ``setup``: published.yml's setup checks
    instead, judged the same way and reported apart."""
    if pub is None:
        return []
    by_name = _by_scenario(records)
    return [evaluate(f, by_name, factor, kernel) for f in (pub.setup_checks if setup else pub.findings)]

"""docs/findings-audit.md, written from the labs' published.yml: every finding with its
statistic, the source of its claim's value and tolerance, and what would make it fail; the
setup checks apart; and the problems that make a finding unfit to be counted.

The document is generated (``mptcplab audit``), never typed, so it cannot drift from the
lab files; tests/unit/test_findings_audit.py fails when it does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..metricdecl import DECLARED, extreme_reading
from .schema import CaptureFact, Expectation, Finding, Published

#: the confidence of every verdict's interval (results/stats.py CONFIDENCE); repeated here
#: because the lab layer does not import results/ (a test holds the two equal)
CONFIDENCE = 0.90


@dataclass(frozen=True)
class AuditedLab:
    name: str
    published: Published


def _esc(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _value(e: Expectation) -> str:
    if e.value is None:
        return ""
    return f" {e.value:g}" + (f" ± {e.tolerance:g}" if e.tolerance else "")


def _side(e: Expectation) -> str:
    sel = [x for x in (f"path {e.path}" if e.path else "", f"flow {e.flow}" if e.flow else "",
                       f"{e.window[0]:g}-{e.window[1]:g} s" if e.window else "") if x]
    return e.metric + (f" ({', '.join(sel)})" if sel else "")


def statistic_of(e: Expectation, extreme: str | None, paired: bool = False) -> str:
    """The statistic a check compares (results/findings.py decides the same way):
    ``extreme`` is the metric's own aggregate when it is max/min/std, else None."""
    stat = e.statistic or extreme or "median"
    if stat in ("min", "max", "std"):
        return extreme_reading(stat, e.op)
    if e.than is not None:
        if paired:
            return f"paired {e.by or 'difference'}s, sign-test interval"
        return f"Hodges-Lehmann {e.by or 'difference'}, Moses interval"
    return "median, order-statistic interval"


def claim_of(e: Expectation | CaptureFact, scenario: str | None) -> str:
    if isinstance(e, CaptureFact):
        want = f"contains {e.contains}" if e.contains is not None else f"= {e.equals}"
        where = f" on path {e.path}" if e.path else ""
        return f"capture: a subflow{where} with {e.fact} {want}, in {e.scenario or scenario} (every repetition)"
    left = f"{_side(e)} in {e.scenario or scenario}"
    if e.than is None:
        return f"{left} {e.op}{_value(e)}"
    o = e.operand()
    assert o is not None
    right = f"{o.metric}" + (f" (path {o.path})" if o.path else "") + (f" (flow {o.flow})" if o.flow else "") \
        + (f" ({o.window[0]:g}-{o.window[1]:g} s)" if o.window else "") + f" in {o.scenario}"
    if e.by is None:
        return f"{left} {e.op} {right}"
    return f"{e.by} {left} {'/' if e.by == 'ratio' else '-'} {right} {e.op}{_value(e)}"


def problems(f: Finding) -> list[str]:
    """Why a finding with checks cannot be counted as the paper's claim, as it stands."""
    out = []
    if f.expect is not None:
        if not f.fails_if:
            out.append("no fails_if (what would make it fail)")
        for place, e in f.located():
            if e.source is None:
                out.append(f"{place}: no source")
            if isinstance(e, Expectation) and e.than is not None:
                o = e.operand()
                if o is not None and (o.scenario, o.metric, o.path, o.flow, o.window) == (
                        e.scenario or f.scenario, e.metric, e.path, e.flow, e.window):
                    out.append(f"{place}: compares a statistic with itself (true by construction)")
    return out


def _extremes() -> dict[str, str]:
    """Each metric whose own aggregate over repetitions is an extreme (max, min, std)."""
    return {name: d.over_reps for name, d in DECLARED.items() if d.over_reps not in ("mean", "median")}


def _finding_rows(findings: Sequence[Finding], extremes: dict[str, str]) -> list[str]:
    rows = ["| id | claim of the paper (where) | check: statistic | source of the value and tolerance | fails if |",
            "|---|---|---|---|---|"]
    for f in findings:
        if not f.expectations:
            continue
        checks, sources = [], []
        for e in f.expectations:
            paired = isinstance(e, Expectation) and e.than is not None and e.than.scenario == (e.scenario or f.scenario)
            stat = "share of repetitions (every repetition)" if isinstance(e, CaptureFact) \
                else statistic_of(e, extremes.get(e.metric), paired)
            checks.append(f"{claim_of(e, f.scenario)}: {stat}")
            sources.append(str(e.source) if e.source is not None else "**missing**")
        req = f" (requires {f.requires.kernel_patch or f.requires.kernel})" if f.requires else ""
        rows.append(f"| `{f.id}`{req} | {_esc(f.statement)} ({_esc(f.where)}) | {_esc('; and '.join(checks))} | "
                    f"{_esc('; '.join(sources))} | {_esc(f.fails_if or '**missing**')} |")
    return rows


def _counts(pub: Published) -> tuple[int, int, int, int, dict[str, int]]:
    checked = [f for f in pub.findings if f.expectations]
    unmeasurable = [f for f in pub.findings if f.not_measurable]
    kinds = {"paper": 0, "derived": 0, "convention": 0, "missing": 0}
    for f in checked:
        for e in f.expectations:
            kinds[e.source.kind if e.source is not None else "missing"] += 1
    return len(pub.findings), len(checked), len(unmeasurable), len(pub.setup_checks), kinds


def render(labs: Sequence[AuditedLab]) -> str:
    """The whole document."""
    extremes = _extremes()
    out = ["# Findings audit", "",
           "Generated by `mptcplab audit` from each lab's `published.yml`; do not edit by hand "
           "(a test fails when this file and the lab files disagree).", "",
           "## How a verdict is reached", "",
           "Each check of a finding compares a statistic of the repetitions with the paper's claim "
           "(mptcplab/results/stats.py):", "",
           "- one scenario against a constant: the **median**, with the distribution-free order-statistic "
           "interval (exact binomial coverage);",
           "- two scenarios: the **Hodges-Lehmann** difference or ratio (median of the pairwise differences or "
           "ratios), with **Moses' interval** (exact Mann-Whitney coverage);",
           "- two statistics of the same repetitions (e.g. two time windows of one scenario): the median of the "
           "per-repetition differences or ratios, with the sign test's order-statistic interval;",
           "- `min` / `max` (a check that names them, or a metric aggregated so): a claim about every repetition "
           "(`max <= v`, `min >= v`) or some repetition (`max >= v`, `min <= v`), decided without an interval;",
           "- a capture fact: seen in every repetition (holds), in none (does not hold), or in some "
           "(inconclusive), with the Clopper-Pearson interval of the share.", "",
           f"Intervals are two-sided at {CONFIDENCE:.0%}: a claim of order (`<`, `>`) is decided at 95 % "
           "one-sided confidence, and a claim of equality within a tolerance (`==`) is the two one-sided tests "
           "(TOST) at 5 % each, the usual equivalence test. **holds**: the whole interval satisfies the claim; "
           "**does not hold**: none of it does; **inconclusive**: it straddles the claim's boundary, or the "
           f"repetitions are too few for {CONFIDENCE:.0%} (a median needs 5 repetitions, a comparison 3 of each "
           "scenario); **not measurable**: the run cannot decide it (the report says why).", "",
           "Every check names the **source** of its value and tolerance (or, for a comparison without a value, "
           "of its direction): `paper` (quoted, with its place), `derived` (the derivation in one sentence) or "
           "`convention` (the project's, with its justification). Every finding says what would make it fail "
           "(`fails_if`): a finding that cannot fail on any kernel is not a finding. Checks that only read back "
           "what the lab configured are **setup checks**, listed apart and never counted with the paper's "
           "claims.", "",
           "## Summary", "",
           "| lab | findings | with checks | not measurable by design | setup checks | sources: paper / derived / "
           "convention / missing | problems |",
           "|---|---|---|---|---|---|---|"]
    for lab in labs:
        n, checked, unmeasurable, setup, kinds = _counts(lab.published)
        probs = sum(len(problems(f)) for f in lab.published.all_findings())
        out.append(f"| {lab.name} | {n} | {checked} | {unmeasurable} | {setup} | {kinds['paper']} / "
                   f"{kinds['derived']} / {kinds['convention']} / {kinds['missing']} | {probs} |")
    out.append("")
    for lab in labs:
        pub = lab.published
        out += [f"## {lab.name}", "", f"Paper: {_esc(pub.source.title)} ({pub.source.year}); kernel of the paper: "
                f"{_esc(pub.source.kernel)}.", "", "### Findings with checks", ""]
        out += _finding_rows(pub.findings, extremes) + [""]
        nm = [f for f in pub.findings if f.not_measurable or not f.expectations]
        if nm:
            out += ["### Findings not measurable by this lab", "", "| id | claim of the paper (where) | why |",
                    "|---|---|---|"]
            out += [f"| `{f.id}` | {_esc(f.statement)} ({_esc(f.where)}) | "
                    f"{_esc(f.not_measurable or 'not checkable automatically')} |" for f in nm] + [""]
        if pub.setup_checks:
            out += ["### Setup checks (the lab's configuration read back; not counted)", ""]
            out += _finding_rows(pub.setup_checks, extremes) + [""]
        bad = [(f.id, p) for f in pub.all_findings() for p in problems(f)]
        if bad:
            out += ["### Problems", ""] + [f"- `{i}`: {p}" for i, p in bad] + [""]
    return "\n".join(out).rstrip() + "\n"

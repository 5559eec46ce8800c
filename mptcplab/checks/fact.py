"""A capture fact (``{fact, path, equals | contains}``): whether every repetition's capture
shows a subflow with a property. It holds in every repetition, in none, or the repetitions
disagree (inconclusive)."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from ..record.model import CheckStat, Repetition
from . import stats
from .base import CheckKind, Judging, SourceField


class CaptureFact(CheckKind):
    """A fact of the capture, per repetition: a subflow on ``path`` whose ``field`` equals
    ``equals`` (or, for a list field, contains ``contains``). Holds when it is true in every
    repetition of ``scenario`` (default: the finding's)."""

    fact: Literal["established", "syn_answered", "initial", "rst", "kind", "icmp_mtus", "max_frame", "max_seg",
                  "syn_mss"]
    path: str | None = None
    scenario: str | None = None
    equals: bool | int | str | None = None
    contains: int | None = None
    source: SourceField | None = None

    @model_validator(mode="after")
    def _one_test(self) -> CaptureFact:
        if (self.equals is None) == (self.contains is None):
            raise ValueError("give exactly one of equals and contains")
        if (self.contains is not None) != (self.fact == "icmp_mtus"):
            raise ValueError("contains is for the list field icmp_mtus, equals for the others")
        return self

    def _want(self) -> str:
        return f"contains {self.contains}" if self.contains is not None else f"= {self.equals}"

    def evaluate(self, default_scenario: str | None, on: Judging) -> tuple[CheckStat, str]:
        """Whether the fact is seen in every repetition of the scenario, with its evidence."""
        c = self
        name = c.scenario or default_scenario
        if name is None:
            return c.not_measurable("no scenario of this lab to observe it in")
        if name not in on.reps:
            return c.not_measurable(f"scenario {name} not run")
        want = c._want()
        what = f"a subflow on path {c.path}" if c.path else "a subflow"

        def seen(r: Repetition) -> bool:
            for s in r.subflows_on(c.path):
                v = getattr(s, c.fact)
                if (c.contains in v) if c.contains is not None else v == c.equals:
                    return True
            return False

        def recorded(r: Repetition) -> bool:
            return any(getattr(s, c.fact) is not None for s in r.subflows_on(c.path))

        if not any(recorded(r) for r in on.reps[name]):
            # a field no repetition has (records made before the analysis kept it, or a packet
            # no capture point saw) is not evidence against the claim
            return c.not_measurable(f"no repetition of {name} recorded {c.fact} for {what} (records made "
                                    "before the analysis kept it, or not captured)")
        k = sum(1 for r in on.reps[name] if seen(r))
        total = len(on.reps[name])
        verdict = stats.agreement_verdict(k, total)
        lo, hi = stats.proportion_interval(k, total)
        scenario = f" in {name}" if c.scenario else ""
        row = CheckStat(verdict=verdict, statistic=f"share of repetitions with {what} with {c.fact} {want}{scenario}",
                        estimate=k / total, low=lo, high=hi, confidence=stats.CONFIDENCE,
                        method="exact binomial (Clopper-Pearson)", n=[total], target="every repetition",
                        source=c.source_text())
        return row, (f"{what} with {c.fact} {want}{scenario}: in {k} of {total} rep{'' if total == 1 else 's'} "
                     f"-> {verdict}")

    def claim(self, default_scenario: str | None) -> str:
        where = f" on path {self.path}" if self.path else ""
        return (f"capture: a subflow{where} with {self.fact} {self._want()}, in {self.scenario or default_scenario} "
                f"(every repetition)")

    def audit_statistic(self, default_scenario: str | None, extremes: dict[str, str]) -> str:
        return "share of repetitions (every repetition)"

"""Which expanded scenarios a name or shell-style pattern selects: one rule for
``run --scenario`` (labrun.select_scenarios) and a lab's named subsets
(experiment.yml ``subsets:``, checked by the loader, resolved by resolve_subset)."""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from ..errors import LabInputError
from .model import Lab
from .schema import Published


def is_pattern(text: str) -> bool:
    return any(c in text for c in "*?[")


def matching(names: Iterable[str], wanted: str) -> list[str]:
    """The names ``wanted`` selects: every match of a pattern (``*``, ``?``, ``[...]``),
    else the one equal name; empty when none."""
    names = list(names)
    return fnmatch.filter(names, wanted) if is_pattern(wanted) else [n for n in names if n == wanted]


@dataclass(frozen=True)
class SubsetChoice:
    """A subset as a run applies it: its patterns and the repetitions per scenario, None when
    the scenarios keep their own (the subset names none, or --reps/--quick decide)."""

    name: str
    scenarios: list[str]
    repetitions: int | None

    def record(self, lab: Lab, selected: Collection[str]) -> dict[str, object]:
        """manifest.json's ``subset``: the subset, how much of the lab it runs, and the
        findings it cannot judge (the report says so)."""
        cov = finding_coverage(lab.published, selected)
        return {"name": self.name, "scenarios": self.scenarios, "repetitions": self.repetitions,
                "scenarios_run": len(selected), "scenarios_in_lab": len(lab.scenarios),
                "findings_not_run": cov.not_run, "findings_partly_run": cov.partly_run}

    def lines(self, lab: Lab, selected: Collection[str]) -> list[str]:
        """What the dry run and the run say before measuring."""
        cov = finding_coverage(lab.published, selected)
        out = [f"subset {self.name}: {len(selected)} of {len(lab.scenarios)} scenarios"]
        if cov.not_run:
            out.append(f"findings it cannot judge (no check's scenarios run): {', '.join(cov.not_run)}")
        if cov.partly_run:
            out.append(f"findings it judges in part (can come out 'no', not 'yes'): {', '.join(cov.partly_run)}")
        return out


def resolve_subset(lab: Lab, name: str, file: str = "command line", field: str = "--subset") -> SubsetChoice:
    """``run --subset NAME`` (or a campaign's ``subset:``, which names its own file and
    field): the lab's subset of that name, or a one-line error naming the subsets it has."""
    subsets = lab.experiment.subsets
    sub = subsets.get(name)
    if sub is None:
        have = ", ".join(sorted(subsets)) or "none"
        raise LabInputError(file, field, f"no subset {name!r} in {lab.path}/experiment.yml (have: {have})")
    return SubsetChoice(name, list(sub.scenarios), sub.repetitions)


def subset_names(lab: Lab, choice: SubsetChoice) -> list[str]:
    """The expanded scenarios a subset selects, in the lab's order (the loader has checked
    that each of its names and patterns selects one)."""
    names = [s.name for s in lab.scenarios]
    picked = {n for w in choice.scenarios for n in matching(names, w)}
    return [n for n in names if n in picked]


@dataclass(frozen=True)
class FindingCoverage:
    """What a selection of scenarios leaves out of published.yml's checkable findings:
    ``not_run``, none of whose checks has its scenarios run (unknown whatever the run
    shows), ``partly_run``, some of whose checks do (it can come out "no", never "yes")."""

    not_run: list[str]
    partly_run: list[str]


def finding_coverage(pub: Published | None, selected: Collection[str]) -> FindingCoverage:
    not_run: list[str] = []
    partly: list[str] = []
    for f in pub.all_findings() if pub is not None else []:
        # each check names the scenarios it reads (its kind's own rule, mptcplab/checks/)
        runs = [set(e.scenarios(f.scenario)) <= set(selected) for e in f.expectations]
        if runs and not any(runs):
            not_run.append(f.id)
        elif runs and not all(runs):
            partly.append(f.id)
    return FindingCoverage(not_run, partly)


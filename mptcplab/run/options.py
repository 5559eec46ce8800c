"""What a lab run is asked to do: its options (the command line's), which scenarios it
selects and how many repetitions each gets."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LabInputError
from ..lab.model import Lab, ScenarioRun
from ..lab.selection import SubsetChoice, matching, resolve_subset


@dataclass
class RunOptions:
    quick: bool = False
    reps: int | None = None
    scenarios: list[str] | None = None
    results_root: Path = Path("results")
    calibrate: bool = True
    argv: list[str] = field(default_factory=lambda: list(sys.argv))
    #: where nodes run: "netns" or "containerlab" (the CLI resolves "auto")
    backend: str = "netns"
    #: coded run-level warnings known before measuring (preflight.reachability)
    warnings: list[dict[str, str]] = field(default_factory=list)
    #: manifest.json's ``reachability`` (preflight.reachability's record)
    reachability: dict[str, Any] | None = None
    #: the lab's named subset this run applies (``--subset``): its patterns are ``scenarios``
    subset: SubsetChoice | None = None
    #: manifest.json's ``estimate`` (walltime.Estimate.record), made before measuring
    estimate: dict[str, Any] | None = None
    #: how many times a repetition whose delay line did not keep time is measured again
    #: (runner.measure_repetition; ``--late-retries``)
    late_retries: int = 1
    #: selected scenarios this kernel cannot judge, not run, with why (run/kernelgate.py;
    #: manifest.json ``not_on_this_kernel``)
    not_on_this_kernel: dict[str, str] = field(default_factory=dict)
    #: draw the report's figures (``--no-figures``: report.md alone)
    figures: bool = True

    @classmethod
    def with_subset(cls, lab: Lab, subset: str | None, **kw: Any) -> RunOptions:
        """Options for ``--subset NAME``: the subset's scenario patterns, and its repetitions
        unless --reps or --quick decide them (the command line wins, as over a scenario's own)."""
        if subset is None:
            return cls(**kw)
        choice = resolve_subset(lab, subset)
        if kw.get("reps") is None and not kw.get("quick"):
            kw["reps"] = choice.repetitions
        return cls(**{**kw, "scenarios": choice.scenarios}, subset=choice)


def select_scenarios(lab: Lab, wanted: list[str] | None) -> list[ScenarioRun]:
    """The scenarios named by ``--scenario``, in the lab's order. A name with a shell-style
    wildcard (``*``, ``?``, ``[...]``) selects every expanded scenario it matches, so a lab
    can name a subset of a sweep in one argument (``--scenario 'emu1-*-rmem200k'``); a name
    or pattern that selects nothing is an error, never silently an empty run."""
    if not wanted:
        return list(lab.scenarios)
    names = [s.name for s in lab.scenarios]
    selected: set[str] = set()
    for w in wanted:
        hits = matching(names, w)
        if not hits:
            raise LabInputError("command line", "--scenario", f"no scenario {w!r} in {lab.path}/experiment.yml "
                                f"(have: {', '.join(sorted(names))})")
        selected.update(hits)
    return [s for s in lab.scenarios if s.name in selected]


def run_scenarios(lab: Lab, opts: RunOptions) -> list[ScenarioRun]:
    """What the run measures: the selected scenarios but those this kernel cannot judge."""
    return [s for s in select_scenarios(lab, opts.scenarios) if s.name not in opts.not_on_this_kernel]


def repetitions(lab: Lab, opts: RunOptions, sc: ScenarioRun | None = None) -> int:
    """Repetitions of ``sc`` (of the lab when None): --reps, else the quick count, else the
    scenario's own ``repetitions`` (a scenario's override may set it: a paper ran its cases
    a different number of times), else the lab's."""
    if opts.reps is not None:
        if opts.reps < 1:
            raise LabInputError("command line", "--reps", "must be at least 1")
        return opts.reps
    if opts.quick:
        return lab.experiment.quick.repetitions
    return sc.body.repetitions if sc is not None else lab.experiment.repetitions


def uniform_repetitions(lab: Lab, opts: RunOptions, scenarios: Sequence[ScenarioRun]) -> int | None:
    """The one repetition count of these scenarios, None when they differ."""
    counts = {repetitions(lab, opts, sc) for sc in scenarios}
    return counts.pop() if len(counts) == 1 else None

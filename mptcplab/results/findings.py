"""A paper's findings as statistical statements on this run.

A finding's checks are plug-ins (mptcplab/checks/: one module per kind, listed in its
registry): a metric comparison decides on an interval of a statistic over the repetitions
(checks/stats.py), a capture fact on how many repetitions show it. This module judges each
check through its kind's own evaluation and combines the verdicts; it names no kind.

A finding that needs what this lab cannot provide says so with its reason; one whose checks
need another kernel (``requires``) is judged only on a kernel that has it, and elsewhere is
"not measurable here" with this kernel named. Every check carries the source of its claim
(the paper, a derivation, the project's convention) into the row.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ..checks.base import Judging
from ..kernelreq import PATCHES, has_symbol, in_range
from ..lab.schema import Check, Finding, Published, Requires
from ..metricdecl import Select
from ..record.model import CheckStat, FindingRow, Repetition, Verdict
from .aggregate import per_rep_values


def _per_rep(reps: Sequence[Repetition], metric: str, sel: Select) -> list[float | None]:
    return per_rep_values(reps, metric, sel.path, flow=sel.flow, window=sel.window)


def check(c: Check, default_scenario: str | None, reps: dict[str, list[Repetition]],
          factor: float = 1.0) -> tuple[CheckStat, str]:
    """One check's verdict with the evidence in words, by its kind's own evaluation; in a run
    scaled by ``factor`` an absolute rate is compared with the paper's x factor (lab/scale.py)."""
    return c.evaluate(default_scenario, Judging(reps, _per_rep, factor))


@dataclass(frozen=True)
class KernelFacts:
    """The kernel a run measured on: its release, the project's patches it carries and the
    symbols the lab's findings name (kernelreq.kallsyms: name -> type letters, None absent)
    (None: not recorded, as in a run older than manifest.json's kernel_patches or
    kernel_symbols)."""

    release: str | None = None
    patches: Collection[str] | None = None
    symbols: Mapping[str, str | None] | None = None


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
    for spec, want in [*((s, True) for s in req.kallsyms), *((s, False) for s in req.kallsyms_absent)]:
        # not recorded (a run before manifest.json's kernel_symbols): judged, and the evidence says so
        has = None if kernel.symbols is None else has_symbol(spec, kernel.symbols)
        if has is not None and has != want:
            needs = f"needs the kernel symbol {spec}" if want else f"needs a kernel without the symbol {spec}"
            who = kernel.release or "this run's kernel"
            return f"{needs}; {who} {'lacks' if want else 'has'} it"
    return None


def unrecorded_symbols(req: Requires, kernel: KernelFacts) -> list[str]:
    """The symbols ``req`` names that the run did not record (judged without them)."""
    specs = [*req.kallsyms, *req.kallsyms_absent]
    return [s for s in specs if kernel.symbols is None or has_symbol(s, kernel.symbols) is None]


#: how a finding's checks combine ("and"): one failing check decides; an unmeasurable one
#: leaves the finding undecidable; an inconclusive one leaves it open
_PRECEDENCE: tuple[Verdict, ...] = ("does not hold", "not measurable", "inconclusive", "holds")


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    return next((v for v in _PRECEDENCE if v in verdicts), "not measurable")


def combine_checks(checks: Sequence[CheckStat]) -> Verdict:
    """A finding's verdict from its checks, leaving out the skipped ones (what they read is not
    on this kernel: checks/counter.py); every check skipped: not measurable."""
    return combine([c.verdict for c in checks if not c.skipped])


def skipped_text(checks: Sequence[CheckStat]) -> str:
    """"2 of 11 checks skipped, not on this kernel: ...; " or nothing."""
    gone = [c for c in checks if c.skipped]
    if not gone:
        return ""
    return f"{len(gone)} of {len(checks)} checks skipped, not on this kernel: " \
           + ", ".join(c.brief or c.statistic or "?" for c in gone) + "; "


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
            return row.model_copy(update={"evidence": f"not measurable here: {why}", "kernel_lacks": why})
        assert kernel is not None  # unmet() says "not recorded" without one
        patch = f" ({f.requires.kernel_patch})" if f.requires.kernel_patch else ""
        on = f"on {kernel.release or 'this kernel'}{patch}: "
        if gone := unrecorded_symbols(f.requires, kernel):
            on += f"whether it has {', '.join(gone)} is not recorded (judged without that requirement); "
    results = [check(e, f.scenario, reps, factor) for e in f.expectations]
    checks = [c for c, _ in results]
    evidence = "; and ".join(text for _, text in results)
    return row.model_copy(update={"verdict": combine_checks(checks), "checks": checks,
                                  "evidence": on + skipped_text(checks) + evidence})


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

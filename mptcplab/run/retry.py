"""Which attempts of a repetition count: one that never started or that the host disturbed
(a late delay line) is measured again, the discarded attempt's files kept under ``failed/``
and the counting record saying so; an attempt that shows a fault is never re-measured."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..emulation.nfqueue import lateness_problem
from ..lab.model import ScenarioRun
from ..steps.base import RunContext
from ..traffic.base import ClientRun, Outcome, TrafficKind
from ..traffic.kinds import kind_of
from ..warncodes import coded
from .measure import Measured, RepRunner

#: code of the warning a repetition measured a second time carries (docs/results-format.md)
REPETITION_RETRIED = "repetition-retried"


def _outcomes(m: Measured) -> Iterator[tuple[str, ClientRun, TrafficKind[Any], Outcome]]:
    """Each client of the attempt, by flow name: its record, its kind, what its output says."""
    for name, client in sorted(m.job.clients.items()):
        kind = kind_of(m.job.body.traffic.flows[name])
        yield name, client, kind, kind.read(client.path)


def setup_failure(m: Measured) -> str | None:
    """Why the repetition measured nothing because a client's test never started (its kind's
    ``setup_errors``), naming the flow; None when every client got going."""
    for name, _, kind, outcome in _outcomes(m):
        why = kind.setup_failure(outcome)
        if why:
            return f"flow {name}: {why}"
    return None


def late_delay_lines(m: Measured) -> str | None:
    """Why the repetition's link emulation did not keep time (a delay line's lateness beyond
    its tolerance, ``emulation.nfqueue.lateness_problem``), naming the line; None when every
    line kept time or none ran."""
    for name, st in sorted((m.job.extra.get("delay_line_stats") or {}).items()):
        why = lateness_problem(st or {})
        if why:
            return f"delay line {name}: {why}"
    return None


def attempt_failed(m: Measured) -> str | None:
    """What, besides timing, went wrong in the attempt: a server that died by itself, a
    capture that died, a client that reported an error. Such an attempt is a result to report
    (the faults it shows must never be hidden behind a clean re-measure), so a late delay line
    does not get it measured again."""
    for name, client in sorted(m.job.clients.items()):
        if client.server_rc not in (0, None):
            return f"the server of flow {name} died"
    for name, _, _, outcome in _outcomes(m):
        if outcome.error:
            return f"flow {name}'s client reported an error"
    for point, st in sorted((m.job.extra.get("capture_stats") or {}).items()):
        if (st or {}).get("died") is not None:
            return f"the capture at {point} died"
    return None


def _keep_attempt(outdir: Path) -> tuple[Path, int]:
    """Move a repetition's files to ``failed/rep<N>-attempt<k>`` (the first free k: nothing
    is ever overwritten) and return where, with k."""
    k = 1
    while (kept := outdir.parent / "failed" / f"{outdir.name}-attempt{k}").exists():
        k += 1
    kept.parent.mkdir(parents=True, exist_ok=True)
    outdir.rename(kept)
    return kept, k


def measure_repetition(ctx: RunContext, scenario: ScenarioRun, rep: int, outdir: Path,
                       log: Callable[[str], None], runner: type[RepRunner] = RepRunner,
                       late_retries: int = 0) -> Measured:
    """Measure one repetition, again when an attempt measured nothing trustworthy; every
    discarded attempt's files are kept under ``failed/`` beside the repetitions, and the
    record that counts says so (code ``repetition-retried``).

    * a client's test never started (``setup_failure``): measured again, once;
    * a delay line did not keep time (``late_delay_lines``) and nothing else went wrong
      (``attempt_failed``): measured again, up to ``late_retries`` times (``--late-retries``).
      On this host such stalls come with the hypervisor's steal (issue 13: over 60 WLAN
      repetitions of labs/cc, rank correlation +0.92 between steal and the worst p99), not
      with the experiment, so a repetition the host disturbed is measured again rather than
      thrown into the average or invalidating the run. The last attempt counts whatever it
      shows: a line that is late every time still marks the run invalid."""
    m = runner(ctx, scenario, rep, outdir).measure()
    notes: list[str] = []
    why = setup_failure(m)
    if why is not None:
        kept, k = _keep_attempt(outdir)
        where = f"scenarios/{kept.parent.parent.name}/failed/{kept.name}"
        log(f"{scenario.name} rep {rep}: attempt {k} never started ({why}); its files are in {where}; "
            "measuring it again")
        notes.append(f"attempt {k} of this repetition never started ({why}): nothing was measured; "
                     f"its files are kept in {where}")
        m = runner(ctx, scenario, rep, outdir).measure()
    for _ in range(late_retries):
        why = late_delay_lines(m)
        if why is None or attempt_failed(m) is not None:
            break
        kept, k = _keep_attempt(outdir)
        where = f"scenarios/{kept.parent.parent.name}/failed/{kept.name}"
        log(f"{scenario.name} rep {rep}: attempt {k} disturbed ({why}); its files are in {where}; measuring it again")
        notes.append(f"attempt {k} of this repetition was disturbed ({why}): its files are kept in {where}")
        m = runner(ctx, scenario, rep, outdir).measure()
    if notes:
        last = f"; these numbers are attempt {len(notes) + 1}'s"
        m.job.warnings.append(coded(REPETITION_RETRIED, "; ".join(notes) + last))
    return m

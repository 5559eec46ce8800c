"""Running a lab: every scenario x repetition on a freshly built network.

Each repetition gets its own network (deploy takes well under a second), so no
PMTU exception, TCP metric or MPTCP state leaks from one repetition to the next.
Teardown runs on every exit path (normal end, error, Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .analysis import CaptureFile
from .analysis.labspec import backup_paths
from .capture import capture_file_name
from .emulation.nfqueue import lateness_problem
from .lab.model import ScenarioRun
from .lab.network import Network
from .lab.schema import ExperimentBody
from .linkcheck import RATE_CHECK_CC as LINK_CHECK_CC  # noqa: F401 - former name, kept importable
from .plan import build_plan
from .probes.analysis import OtherFlow, analyse_probes
from .results.model import UNCLASSIFIED, Repetition
from .sequence import Teardown, measurement_steps
from .steps import READY_TIMEOUT_S, Rep, RunContext, flow_duration, measured_flows
from .supervise import Supervisor
from .timeline.record import EVENTS_FILE, add_capture_time
from .traffic import kind_of
from .traffic.analyse import analyse_one, coded, config_diagnostics, expected_paths
from .traffic.base import Outcome, TrafficKind
from .traffic.fairness import jain_index, shares

__all__ = ["READY_TIMEOUT_S", "AnalysisJob", "DeferredSignals", "Interrupted", "Measured", "RepRunner", "RunContext",
           "analyse", "config_diagnostics", "expected_paths", "flow_duration", "install_signal_handlers",
           "restore_signal_handlers"]


class Interrupted(Exception):
    """SIGTERM/SIGINT during a run; teardown runs, the run is marked incomplete."""


_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def install_signal_handlers() -> dict[int, Any]:
    """Turn SIGTERM/SIGINT/SIGHUP into Interrupted; after the first one, further
    signals are ignored so the teardown it triggers is not itself interrupted.
    Returns the previous handlers (restore_signal_handlers)."""

    def handler(signum: int, _frame: Any) -> None:
        for s in _SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signal.Signals(signum).name)

    return {s: signal.signal(s, handler) for s in _SIGNALS}


def restore_signal_handlers(previous: dict[int, Any]) -> None:
    for s, h in previous.items():
        signal.signal(s, h)


class DeferredSignals:
    """While a run writes its last files (manifest, summary, report), SIGTERM/SIGINT/SIGHUP
    must not cut a write in half: from construction on they are recorded, not raised, and
    the run reads ``got`` when it is done (then marks itself interrupted). The caller
    restores the handlers it had (restore_signal_handlers)."""

    def __init__(self) -> None:
        self.got: str | None = None
        for s in _SIGNALS:
            signal.signal(s, self._record)

    def _record(self, signum: int, _frame: Any) -> None:
        self.got = self.got or signal.Signals(signum).name


@dataclass
class AnalysisJob:
    """Everything the analysis of one measured repetition needs (picklable: it runs
    in a worker process while the next repetition is measured)."""

    scenario: str
    rep: int
    sweep_point: dict[str, Any]
    out: Path
    body: ExperimentBody
    net: Network
    measured: str
    clients: dict[str, dict[str, Any]]
    calibration: list[dict[str, Any]]
    extra: dict[str, Any]
    #: the steps' plain-text warnings, and coded ones (dicts) of the runner's own
    warnings: list[str | dict[str, Any]]
    workers: int | None = None


@dataclass
class Measured:
    """A repetition whose network is gone and whose captures wait for analysis."""

    job: AnalysisJob
    sysctls: dict[str, dict[str, str]]
    seconds: float


class RepRunner:
    """One repetition of one scenario, from deploy to teardown: the steps of
    steps.py in order, teardown on every exit path. Analysis comes after (analyse)."""

    def __init__(self, ctx: RunContext, scenario: ScenarioRun, rep: int, outdir: Path) -> None:
        self.ctx = ctx
        self.sc = scenario
        self.rep = rep
        self.out = outdir

    def measure(self) -> Measured:
        """Deploy, check links, capture, run traffic, tear down. No analysis."""
        t0 = time.monotonic()
        self.out.mkdir(parents=True, exist_ok=False)
        cmdlog = (self.out / "commands.log").open("w", buffering=1)  # line-buffered: a kill keeps the log
        try:
            backend = self.ctx.make_backend(lambda line: print(line, file=cmdlog))
            plan = build_plan(self.ctx.lab.topology, self.sc, self.ctx.emulator, backend, self.out,
                              file=str(self.ctx.lab.path / "experiment.yml"))
            rep = Rep(self.ctx, self.sc, self.out, backend, plan, Supervisor(backend.node_argv, logdir=self.out))
            try:
                for step in measurement_steps():
                    step.run(rep)
            finally:
                Teardown().run(rep)
        finally:
            cmdlog.close()
        measured_name = measured_flows(self.sc.body)[0]  # the primary one: the record's top level
        job = AnalysisJob(self.sc.name, self.rep, self.sc.sweep_point, self.out, self.sc.body, plan.net,
                          measured_name, rep.clients, rep.calibration, rep.extra, list(rep.warnings))
        return Measured(job, rep.sysctls, time.monotonic() - t0)


#: code of the warning a repetition measured a second time carries (docs/results-format.md)
REPETITION_RETRIED = "repetition-retried"


def _outcomes(m: Measured) -> Iterator[tuple[str, dict[str, Any], TrafficKind[Any], Outcome]]:
    """Each client of the attempt, by flow name: its record, its kind, what its output says."""
    for name, client in sorted(m.job.clients.items()):
        kind = kind_of(m.job.body.traffic.flows[name])
        yield name, client, kind, kind.read(Path(client["path"]))


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
        if client.get("server_rc") not in (0, None):
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


def analyse(job: AnalysisJob) -> dict[str, Any]:
    """Captures and client reports of one repetition -> its record (also written to rep.json).

    Every flow is analysed on its own (traffic/analyse.py); the primary measured flow's
    numbers are also the record's top-level fields (format 1), the others are in ``flows``
    with the fairness across the measured ones.
    """
    body, net, out = job.body, job.net, job.out
    # coded warnings (docs/results-format.md): the steps' own are plain text (unclassified)
    warnings: list[dict[str, Any]] = [w if isinstance(w, dict) else coded(UNCLASSIFIED, w) for w in job.warnings]
    caps = [CaptureFile(out / capture_file_name(cp.point), cp.point) for cp in body.capture]
    parts = {name: analyse_one(name, flow, body, net, out, job.clients.get(name), caps, job.workers,
                               primary=name == job.measured)
             for name, flow in body.traffic.flows.items()}
    main = parts[job.measured]
    for p in parts.values():
        warnings += p.warnings
    fa = main.fa
    if fa is not None:
        # its tables (timeseries.csv, dsn.csv, ...) are written by analyse_one, each flow's
        add_capture_time(out / EVENTS_FILE, fa.t0_epoch)  # events on the time series' axis
        for trace in sorted(out.glob("controller-*.csv")):  # and the controllers' steps
            add_capture_time(trace, fa.t0_epoch)
    probes: dict[str, Any] = {}
    if fa is not None:
        primary = body.traffic.flows[job.measured]
        beside = [OtherFlow(n, p.fa, getattr(body.traffic.flows[n], "direction", "upload") == "upload")
                  for n, p in parts.items() if n != job.measured and p.fa is not None]
        probes, probe_warnings = analyse_probes(out, body, fa, getattr(primary, "direction", "upload") == "upload",
                                                backup_paths(body, primary), flow=job.measured, others=beside)
        warnings += [coded(UNCLASSIFIED, w) for w in probe_warnings]
    measured = [n for n, f in body.traffic.flows.items() if f.role == "measured"]
    goodputs = {n: parts[n].outcome.goodput_mbps or 0.0 for n in measured
                if parts[n].outcome.goodput_mbps is not None}
    share_of = shares(goodputs)
    for n, p in parts.items():
        p.record["share"] = share_of.get(n)
    fairness = {"flows": len(goodputs), "jain_index": jain_index(list(goodputs.values())), "shares": share_of}
    others = {n: p.outcome.goodput_mbps for n, p in parts.items() if n != job.measured}
    m = main.record
    record = {
        "name": job.scenario, "rep": job.rep, "dir": None,
        "sweep": job.sweep_point,
        **{k: m.get(k) for k in ("goodput_mbps", "sender_mbps", "retransmits", "duration_s", "iperf3_error", "cpu")},
        "goodput_mbps": m.get("goodput_mbps") or 0.0,
        "mptcp": m["mptcp"],
        "subflows": m.get("subflows", []),
        "add_addrs": m.get("add_addrs", []),
        "warnings": warnings,
        "findings": [f for p in parts.values() for f in p.findings],
        "calibration_ok": all(c["ok"] for c in job.calibration),
        "other_flows_goodput_mbps": others,
        "analysis_seconds": round(fa.analysis_seconds, 3) if fa is not None else None,
        "packets": fa.packets if fa is not None else None,
        "flows": [p.record for p in parts.values()],
        "fairness": fairness,
        # servers that ended by themselves with a failure (a crash, a kill from outside):
        # their side of the record is lost, the run is invalid (labrun._summary)
        "servers_died": {n: c["server_rc"] for n, c in sorted(job.clients.items())
                         if c.get("server_rc") not in (0, None)},
        **({"probes": probes} if probes else {}),
        **job.extra,
    }
    # the result model is the contract (docs/results-format.md): a record it cannot read fails here
    rep = Repetition.model_validate(record)
    (out / "rep.json").write_text(json.dumps(rep.model_dump(), indent=2, default=str))
    return record


def _coded(code: str, message: str, path: str | None = None) -> dict[str, Any]:
    """Former name of traffic.analyse.coded."""
    return coded(code, message, path)

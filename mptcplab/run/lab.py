"""A whole lab run: scenarios x repetitions into a results directory that is never left
half-written.

The order is the guarantee: the run directory appears with its manifest or not at all;
the signal handlers are installed at once; each repetition is measured, then analyzed in
the worker (worker.py) while the next is measured; summary.json is rewritten after every
analyzed repetition; on Ctrl-C, a kill or a crash the measured repetitions are analyzed
and kept, marked incomplete with the reason; the last files are written with signals
deferred, and only a complete run becomes ``latest``.
"""

from __future__ import annotations

import os
import time
import traceback
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .. import backends
from ..emulation.base import Emulator
from ..errors import HostNotReady, LabInputError, RunFailed
from ..lab import scale
from ..lab.loader import unsupported
from ..lab.model import Lab, ScenarioRun
from ..progress import Progress
from ..record import store
from ..record.manifest import git_state, host_facts, kernel_patches, tool_versions
from ..record.model import Repetition
from ..results.summary import summary_rows
from ..steps.base import RunContext
from ..traffic.kinds import KINDS
from ..units import rate_unit
from .kernelgate import kernel_symbols
from .measure import Measured, RepRunner
from .options import RunOptions, repetitions, run_scenarios, uniform_repetitions
from .record import analyze
from .retry import measure_repetition
from .rundir import clean_all, run_dir_form
from .signals import DeferredSignals, Interrupted, install_signal_handlers, restore_signal_handlers
from .verdicts import run_summary
from .worker import analysis_worker_init

REPO = Path(__file__).resolve().parents[2]


def initial_manifest(lab: Lab, emulator: Emulator, opts: RunOptions, facts: dict[str, Any],
                     scenarios: list[ScenarioRun], reps: int | None) -> dict[str, Any]:
    """manifest.json as the run directory first holds it: what is known before measuring
    (host facts, tools, git state, lab file hashes, options); the run fills in the rest."""
    return {
        "lab": lab.name, "run_id": None, "complete": False, "quick": opts.quick, "repetitions": reps,
        "late_retries": opts.late_retries,
        "command_line": opts.argv, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "finished": None, **facts, "backend": opts.backend, "link_emulation": emulator.name,
        "tools": tool_versions(), "git": git_state(REPO), "lab_files_sha256": lab.file_hashes,
        "scenarios": [s.name for s in scenarios], "sysctls": {}, "calibration": {},
        "scale": scale.manifest_record(lab), "reachability": opts.reachability,
        "subset": opts.subset.record(lab, [s.name for s in scenarios]) if opts.subset else None,
        "estimate": opts.estimate, "not_on_this_kernel": opts.not_on_this_kernel,
    }


class _Results:
    """The run's records as they are analyzed, and its files: summary.json after every
    repetition, and the last word (manifest.json, summary.json, summary.csv) written whole."""

    def __init__(self, lab: Lab, opts: RunOptions, facts: dict[str, Any], manifest: dict[str, Any],
                 planned: dict[str, int], reps: int | None, log: Callable[[str], None]) -> None:
        self.lab, self.opts, self.facts, self.manifest = lab, opts, facts, manifest
        self.planned, self.reps, self.log = planned, reps, log
        self.records: list[Repetition] = []
        self.pending: deque[tuple[Measured, Future[Repetition]]] = deque()
        self.run_id = ""
        self.run_dir = Path()

    def first_manifest(self, run_id: str) -> dict[str, Any]:
        self.manifest["run_id"] = run_id
        return self.manifest

    def measured(self, m: Measured, sc: ScenarioRun, rep: int, pool: ProcessPoolExecutor) -> None:
        """A repetition measured: its calibration and sysctls into the manifest, its analysis
        to the worker."""
        if m.job.calibration:
            self.manifest["calibration"].setdefault(sc.name, {})[f"rep{rep}"] = [
                c.model_dump() for c in m.job.calibration]
        if m.sysctls and rep == 1:
            self.manifest["sysctls"][sc.name] = m.sysctls
        m.job.workers = 1
        self.pending.append((m, pool.submit(analyze, m.job)))

    def collect(self, block: bool) -> None:
        """The analyses done so far (all of them with ``block``), each logged and summed up."""
        while self.pending and (block or self.pending[0][1].done()):
            m, fut = self.pending.popleft()
            rec = fut.result()
            rec.dir = str(m.job.out.relative_to(self.run_dir))
            self.records.append(rec)
            log_rep(self.log, rec, self.planned[rec.name], m.seconds, self.lab.scale)
            store.write_json(self.run_dir / "summary.json", self.summary(False))

    def summary(self, complete: bool) -> dict[str, Any]:
        return run_summary(self.lab, self.run_id, self.facts, complete, self.opts, self.records, self.reps,
                           self.run_dir)

    def write_final(self, done: bool, reason: str | None) -> dict[str, Any]:
        """The run's last word, written whole: manifest.json, summary.json and summary.csv."""
        self.manifest["complete"] = done
        if reason:
            self.manifest["incomplete_reason"] = reason
        self.manifest["kernel_patches"] = self.facts["kernel_patches"] = kernel_patches(self.facts["kernel"])
        store.write_json(self.run_dir / "manifest.json", self.manifest)
        final = self.summary(done)
        store.write_json(self.run_dir / "summary.json", final)
        summary_rows(self.records).to_csv(self.run_dir / "summary.csv", index=False)
        return final


def run_lab(lab: Lab, emulator: Emulator, opts: RunOptions,
            log: Callable[[str], None] = print) -> tuple[Path, dict[str, Any]]:
    unsupported(lab)
    scenarios = run_scenarios(lab, opts)
    planned = {sc.name: repetitions(lab, opts, sc) for sc in scenarios}
    reps = uniform_repetitions(lab, opts, scenarios)
    clean_all(opts.backend)  # whatever a killed earlier run left behind
    store.mark_dead_runs(opts.results_root)  # runs a kill -9 ended before they could say so
    facts = host_facts()  # before the run directory: a bad MPTCPLAB_CPU_EMULATION leaves nothing behind
    facts["kernel_symbols"] = kernel_symbols(lab)
    backend_cls = backends.get(opts.backend)
    res = _Results(lab, opts, facts, initial_manifest(lab, emulator, opts, facts, scenarios, reps), planned, reps,
                   log)
    manifest = res.manifest
    complete = False
    interrupted: str | None = None
    progress: Progress | None = None
    pool: ProcessPoolExecutor | None = None
    t_start = time.monotonic()
    # the directory appears with its manifest, or not at all (a kill leaves no empty run directory)
    res.run_id, res.run_dir = store.create_run_dir(opts.results_root, lab.name, res.first_manifest)
    run_dir = res.run_dir
    # at once, and the set-up below inside the handling: a signal landing between the run
    # directory and the handlers left the directory unmarked (exit 130, no reason; found by
    # the faults suite's SIGINT at a random moment)
    previous_handlers = install_signal_handlers()
    try:
        run_dir = res.run_dir = run_dir_form(run_dir, backend_cls)
        # on a terminal a live status line; every line of the run goes above it (progress.log)
        progress = Progress.for_run(sum(planned.values()), log)
        log = res.log = progress.log
        ctx = RunContext(lab, emulator, opts.quick, log=log, calibrate=opts.calibrate,
                         make_backend=lambda cmdlog: backend_cls.for_run(lab, run_dir, cmdlog), progress=progress)
        # Analysis of repetition k (tshark, CPU-heavy) runs in one niced worker process
        # while repetition k+1 is measured, so analyzing does not add to a run's wall time.
        # The measurement is protected: kernel packet processing and the real-time delay
        # lines preempt a nice-19 process, and a CPU-bound measurement is flagged anyway.
        pool = ProcessPoolExecutor(max_workers=1, initializer=analysis_worker_init, initargs=(os.getpid(),))
        for sc in scenarios:
            for rep in range(1, planned[sc.name] + 1):
                outdir = run_dir / "scenarios" / sc.name / f"rep{rep}"
                progress.begin(sc.name, rep, planned[sc.name])
                m = measure_repetition(ctx, sc, rep, outdir, log, RepRunner, late_retries=opts.late_retries)
                progress.finished()
                res.measured(m, sc, rep, pool)
                res.collect(block=False)
        res.collect(block=True)
        complete = True
    except Interrupted as e:
        complete = False  # a signal right after the last analysis still interrupts the run
        interrupted = f"interrupted by {e}"
        log(f"run {interrupted}; tearing down, finishing the analysis of measured repetitions; "
            f"results kept as incomplete in {run_dir}")
    except Exception as e:
        interrupted = f"failed: {type(e).__name__}: {e}"
        if isinstance(e, (LabInputError, HostNotReady, RunFailed)):
            raise  # already one line for the CLI
        # an unexpected failure (a command that timed out, a tool that misbehaved): the
        # user gets one line naming the kept run directory, the traceback goes beside it
        (run_dir / "traceback.txt").write_text(traceback.format_exc())
        raise RunFailed(f"{_one_line(e)}; the measured repetitions are kept as incomplete in {run_dir} "
                        f"(traceback in traceback.txt)") from e
    except BaseException as e:
        interrupted = f"failed: {type(e).__name__}: {e}"
        raise
    finally:
        # from here on a signal is recorded, not raised: the files below are written whole
        deferred = DeferredSignals()
        written = False
        try:
            clean_all(opts.backend)  # belt and braces: the rep runner already tore its network down
            if interrupted:
                try:  # measured repetitions are results too: keep them
                    res.collect(block=True)
                except Exception as e:  # noqa: BLE001 - the run is failing already; say so, keep going
                    log(f"analysis of a measured repetition failed: {e}")
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
            if progress is not None:
                progress.close()
            manifest["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            manifest["wall_seconds"] = round(time.monotonic() - t_start, 2)
            manifest["traffic_seconds"] = sum(r.duration_s or 0 for r in res.records)
            manifest["analysis"] = "one nice-19 worker process, overlapping the next repetition's measurement"
            summary = res.write_final(complete, interrupted)
            if not complete:
                store.release(run_dir)  # marked incomplete with its reason: nothing left to mark
            written = True
        finally:
            if not (complete and written):
                restore_signal_handlers(previous_handlers)
    if complete:
        try:
            if deferred.got is None:
                from ..results.report import write_report

                write_report(run_dir, figures=opts.figures)
            if deferred.got is not None:
                # Ctrl-C or a kill while the last files were written: the user asked the run to
                # stop before it was done, so it is not complete (nor latest), its results kept
                reason = f"interrupted by {deferred.got}"
                log(f"run {reason} while its results were written; results kept as incomplete in {run_dir}")
                summary = res.write_final(False, reason)
                store.release(run_dir)
            else:
                store.release(run_dir)  # before latest: a kill in between leaves a complete run, just not latest
                store.mark_latest(run_dir)
        finally:
            restore_signal_handlers(previous_handlers)
    return run_dir, summary


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:300]}{'...' if len(text) > 300 else ''}"


def log_rep(log: Callable[[str], None], rec: Repetition, reps: int, seconds: float, factor: float = 1.0) -> None:
    """One line per analyzed repetition: its goodput (or connections), MPTCP verdict, times,
    and each warning on a line of its own."""
    mp = rec.mptcp
    verdict = ("MPTCP verified" if mp.verified else "MPTCP NOT VERIFIED") if mp.requested else "TCP"
    flag = f"  [{len(rec.warnings)} warning(s)]" if rec.warnings else ""
    rate = "no goodput" if rec.goodput_mbps is None else f"{rec.goodput_mbps:.1f} {rate_unit(factor)}"
    primary = rec.flows[0] if rec.flows else None
    for kind in KINDS.values():  # the primary flow's kind may say more than a goodput (churn: connections)
        numbers = getattr(primary, kind.result_field, None) if kind.result_field else None
        # the kind reads its report as the record keeps it (TrafficKind.progress): what was set
        report = numbers.model_dump(exclude_unset=True) if isinstance(numbers, BaseModel) else None
        if report and (line := kind.progress(report)):
            rate = line
            break
    took = "" if rec.analysis_seconds is None else f", analyzed in {rec.analysis_seconds:.1f} s"
    log(f"{rec.name} rep {rec.rep}/{reps}: {rate}, {verdict}, measured in {seconds:.1f} s{took}{flag}")
    for w in rec.warnings:
        log(f"    ! {w.message}")

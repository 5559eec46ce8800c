"""A whole lab run: scenarios x repetitions into a results directory, or a dry run
that prints every command and creates nothing."""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import backends
from .analysis.verdict import exit_text
from .backends.base import Backend
from .emulation.base import Emulator
from .emulation.nfqueue import delayline_losses, lateness_problem
from .errors import HostNotReady, LabInputError, RunFailed
from .lab import scale
from .lab.loader import unsupported
from .lab.model import Lab, ScenarioRun
from .lab.selection import SubsetChoice, matching, resolve_subset
from .middlebox import rewrite
from .plan import build_plan
from .probes.procstat import steal_clause
from .progress import Progress
from .record import store
from .record.manifest import git_state, host_facts, kernel_patches, tool_versions
from .record.model import HostCpu
from .record.validity import cpu_bound_reason
from .results.summary import build_summary, summary_rows
from .runner import (
    DeferredSignals,
    Interrupted,
    Measured,
    RepRunner,
    RunContext,
    analyse,
    install_signal_handlers,
    measure_repetition,
    restore_signal_handlers,
)
from .sequence import Teardown, measurement_steps
from .steps.base import Rep
from .steps.base import render as render_steps

REPO = Path(__file__).resolve().parent.parent


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


def dry_run(lab: Lab, emulator: Emulator, opts: RunOptions, out: Callable[[str], None] = print,
            emulation_forced: bool = True, notes: Sequence[str] = ()) -> None:
    """Print, for each scenario, the exact commands a repetition runs: the run's own
    steps (sequence.py), asked for their commands instead of run. Runs none, creates
    nothing, needs no root. ``notes`` (the reachability estimate) follow the header
    line as comments."""
    backend_cls = backends.get(opts.backend)
    ctx = RunContext(lab, emulator, opts.quick, calibrate=opts.calibrate)
    selected = select_scenarios(lab, opts.scenarios)
    same = uniform_repetitions(lab, opts, selected)
    reps = f"{same}" if same is not None else "{" + ", ".join(
        f"{sc.name}: {repetitions(lab, opts, sc)}" for sc in selected) + "}"
    run_dir = _run_dir_form(opts.results_root / lab.name / "<run-id>", backend_cls)
    backend, naming = backend_cls.for_dry_run(lab, run_dir)
    how = "" if emulation_forced else \
        f" (not probed: a dry run creates nothing; a run picks {backend_cls.emulator_rule()})"
    scaled = f"; rates scaled ×{lab.scale:g} ({lab.scale_source})" if lab.scale != 1 else ""
    subset = f" (subset {opts.subset.name}: {' '.join(opts.subset.scenarios)})" if opts.subset else ""
    out(f"# lab {lab.name}: {len(selected)} scenario(s){subset} x {reps} repetition(s); "
        f"backend: {backend.name}; link emulation: {emulator.name}{how}; {naming}{scaled}")
    for line in notes:
        out(f"# {line}")
    for sc in select_scenarios(lab, opts.scenarios):
        wd = run_dir / "scenarios" / sc.name / "rep1"
        plan = build_plan(lab.topology, sc, emulator, backend, wd, file=str(lab.path / "experiment.yml"))
        out(f"\n## scenario {sc.name}" + (f": {sc.description}" if sc.description else ""))
        for line in backend.dry_run_notes(plan.net):
            out(line)
        rep = Rep(ctx, sc, wd, backend, plan)
        for line in render_steps(rep, [*measurement_steps(), Teardown()]):
            out(line)


def _run_dir_form(run_dir: Path, backend_cls: type[Backend]) -> Path:
    # bound into the nodes: paths in node commands must be absolute there
    return run_dir.absolute() if backend_cls.absolute_paths else run_dir


def _clean_all(backend: str) -> None:
    """What killed runs left: namespaces always (host probes make them on every
    backend), plus the backend's own, plus tracefs instances and engine congestion
    controls nobody alive holds (host-wide, any backend)."""
    from .cc.holds import clean as clean_ccs
    from .probes.tracefs import clean as clean_tracefs

    for cls in dict.fromkeys([backends.get("netns"), backends.get(backend)]):
        cls.clean()
    clean_tracefs()
    clean_ccs()


def run_lab(lab: Lab, emulator: Emulator, opts: RunOptions,
            log: Callable[[str], None] = print) -> tuple[Path, dict[str, Any]]:
    unsupported(lab)
    scenarios = select_scenarios(lab, opts.scenarios)
    planned = {sc.name: repetitions(lab, opts, sc) for sc in scenarios}
    reps = uniform_repetitions(lab, opts, scenarios)
    _clean_all(opts.backend)  # whatever a killed earlier run left behind
    store.mark_dead_runs(opts.results_root)  # runs a kill -9 ended before they could say so
    facts = host_facts()  # before the run directory: a bad MPTCPLAB_CPU_EMULATION leaves nothing behind
    backend_cls = backends.get(opts.backend)
    manifest: dict[str, Any] = {
        "lab": lab.name, "run_id": None, "complete": False, "quick": opts.quick, "repetitions": reps,
        "late_retries": opts.late_retries,
        "command_line": opts.argv, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "finished": None, **facts, "backend": opts.backend, "link_emulation": emulator.name,
        "tools": tool_versions(), "git": git_state(REPO), "lab_files_sha256": lab.file_hashes,
        "scenarios": [s.name for s in scenarios], "sysctls": {}, "calibration": {},
        "scale": scale.manifest_record(lab), "reachability": opts.reachability,
        "subset": opts.subset.record(lab, [s.name for s in scenarios]) if opts.subset else None,
        "estimate": opts.estimate,
    }

    def first_manifest(rid: str) -> dict[str, Any]:
        manifest["run_id"] = rid
        return manifest

    records: list[dict[str, Any]] = []
    complete = False
    interrupted: str | None = None
    progress: Progress | None = None
    pool: ProcessPoolExecutor | None = None
    pending: deque[tuple[Measured, Future[dict[str, Any]]]] = deque()
    t_start = time.monotonic()
    # the directory appears with its manifest, or not at all (a kill leaves no empty run directory)
    run_id, run_dir = store.create_run_dir(opts.results_root, lab.name, first_manifest)
    # at once, and the set-up below inside the handling: a signal landing between the run
    # directory and the handlers left the directory unmarked (exit 130, no reason; found by
    # the faults suite's SIGINT at a random moment)
    previous_handlers = install_signal_handlers()

    def collect(block: bool) -> None:
        while pending and (block or pending[0][1].done()):
            m, fut = pending.popleft()
            rec = fut.result()
            rec["dir"] = str(m.job.out.relative_to(run_dir))
            records.append(rec)
            _log_rep(log, rec, planned[rec['name']], m.seconds, lab.scale)
            store.write_json(run_dir / "summary.json",
                             _summary(lab, run_id, facts, False, opts, records, reps, run_dir))

    def write_final(done: bool, reason: str | None) -> dict[str, Any]:
        """The run's last word, written whole: manifest.json, summary.json and summary.csv."""
        manifest["complete"] = done
        if reason:
            manifest["incomplete_reason"] = reason
        manifest["kernel_patches"] = facts["kernel_patches"] = kernel_patches(facts["kernel"])
        store.write_json(run_dir / "manifest.json", manifest)
        final = _summary(lab, run_id, facts, done, opts, records, reps, run_dir)
        store.write_json(run_dir / "summary.json", final)
        summary_rows(records).to_csv(run_dir / "summary.csv", index=False)
        return final

    try:
        run_dir = _run_dir_form(run_dir, backend_cls)
        # on a terminal a live status line; every line of the run goes above it (progress.log)
        progress = Progress.for_run(sum(planned.values()), log)
        log = progress.log
        ctx = RunContext(lab, emulator, opts.quick, log=log, calibrate=opts.calibrate,
                         make_backend=lambda cmdlog: backend_cls.for_run(lab, run_dir, cmdlog), progress=progress)
        # Analysis of repetition k (tshark, CPU-heavy) runs in one niced worker process
        # while repetition k+1 is measured, so analysing does not add to a run's wall time.
        # The measurement is protected: kernel packet processing and the real-time delay
        # lines preempt a nice-19 process, and a CPU-bound measurement is flagged anyway.
        pool = ProcessPoolExecutor(max_workers=1, initializer=_analysis_worker_init, initargs=(os.getpid(),))
        for sc in scenarios:
            sc_reps = planned[sc.name]
            for rep in range(1, sc_reps + 1):
                outdir = run_dir / "scenarios" / sc.name / f"rep{rep}"
                progress.begin(sc.name, rep, sc_reps)
                m = measure_repetition(ctx, sc, rep, outdir, log, RepRunner, late_retries=opts.late_retries)
                progress.finished()
                if m.job.calibration:
                    manifest["calibration"].setdefault(sc.name, {})[f"rep{rep}"] = m.job.calibration
                if m.sysctls and rep == 1:
                    manifest["sysctls"][sc.name] = m.sysctls
                m.job.workers = 1
                pending.append((m, pool.submit(analyse, m.job)))
                collect(block=False)
        collect(block=True)
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
            _clean_all(opts.backend)  # belt and braces: the rep runner already tore its network down
            if interrupted:
                try:  # measured repetitions are results too: keep them
                    collect(block=True)
                except Exception as e:  # noqa: BLE001 - the run is failing already; say so, keep going
                    log(f"analysis of a measured repetition failed: {e}")
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
            if progress is not None:
                progress.close()
            manifest["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            manifest["wall_seconds"] = round(time.monotonic() - t_start, 2)
            manifest["traffic_seconds"] = sum(r["duration_s"] or 0 for r in records)
            manifest["analysis"] = "one nice-19 worker process, overlapping the next repetition's measurement"
            summary = write_final(complete, interrupted)
            if not complete:
                store.release(run_dir)  # marked incomplete with its reason: nothing left to mark
            written = True
        finally:
            if not (complete and written):
                restore_signal_handlers(previous_handlers)
    if complete:
        try:
            if deferred.got is None:
                from .results.report import write_report

                write_report(run_dir)
            if deferred.got is not None:
                # Ctrl-C or a kill while the last files were written: the user asked the run to
                # stop before it was done, so it is not complete (nor latest), its results kept
                reason = f"interrupted by {deferred.got}"
                log(f"run {reason} while its results were written; results kept as incomplete in {run_dir}")
                summary = write_final(False, reason)
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


def _analysis_worker_init(runner_pid: int) -> None:
    os.nice(19)
    # Ctrl-C goes to the whole process group: the parent decides, the worker finishes its job
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    # A runner killed with SIGKILL cannot stop its worker, which would wait for work
    # forever (issue 12: found by tests/faults). The kernel tells the worker instead
    # (parent-death signal); the worker leads its own process group so that its
    # tshark children go with it.
    os.setpgrp()
    signal.signal(signal.SIGTERM, _worker_exit)
    _set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != runner_pid:  # the runner died before the line above
        _worker_exit(signal.SIGTERM, None)


def _set_parent_death_signal(sig: int) -> None:
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(sig), 0, 0, 0)


def _worker_exit(_signum: int, _frame: object) -> None:
    os.killpg(os.getpgrp(), signal.SIGKILL)  # the worker and whatever it runs


def _log_rep(log: Callable[[str], None], rec: dict[str, Any], reps: int, seconds: float, factor: float = 1.0) -> None:
    mp = rec["mptcp"]
    verdict = ("MPTCP verified" if mp["verified"] else "MPTCP NOT VERIFIED") if mp["requested"] else "TCP"
    flag = f"  [{len(rec['warnings'])} warning(s)]" if rec["warnings"] else ""
    rate = "no goodput" if rec["goodput_mbps"] is None else f"{rec['goodput_mbps']:.1f} {scale.rate_unit(factor)}"
    churn = (rec.get("flows") or [{}])[0].get("churn")     # the primary flow's: it has no goodput
    if churn and churn.get("attempted") is not None:
        rate = (f"{churn.get('completed') or 0:,} of {churn['attempted']:,} connections"
                + (f" ({churn['rate_per_s']:.0f}/s)" if churn.get("rate_per_s") else ""))
    took = "" if rec["analysis_seconds"] is None else f", analysed in {rec['analysis_seconds']:.1f} s"
    log(f"{rec['name']} rep {rec['rep']}/{reps}: {rate}, {verdict}, measured in {seconds:.1f} s{took}{flag}")
    for w in rec["warnings"]:
        log(f"    ! {w['message'] if isinstance(w, dict) else w}")


def daemon_problems(rec: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What a repetition's daemons' stats say is wrong: (delay lines that did not keep time or
    lost packets: timing; rewriting middleboxes that rewrote nothing or lost packets: invalid).
    A delay line that did not keep time is told with the hypervisor's steal over the traffic
    (``host_cpu``, when recorded), so a reader sees whether steal came with the stalls."""
    host_cpu = rec.get("host_cpu")
    steal = f"; {steal_clause(HostCpu.model_validate(host_cpu))}" if host_cpu else ""
    timing: list[str] = []
    for name, st in (rec.get("delay_line_stats") or {}).items():
        timing += [f"{name}: {p}" for p in delayline_losses(st or {})]
        late = lateness_problem(st or {})
        if late:
            timing.append(f"{name}: {late}{steal}")
    invalid = [f"{name}: {problem}" for name, st in (rec.get("daemon_stats") or {}).items()
               for problem in rewrite.problems(st or {})]
    return timing, invalid


def _summary(lab: Lab, run_id: str, facts: dict[str, Any], complete: bool, opts: RunOptions,
             records: list[dict[str, Any]], reps: int | None, run_dir: Path | None = None) -> dict[str, Any]:
    timing: list[str] = []  # what makes timing numbers wrong: link calibration, CPU, delay line
    invalid: list[str] = []  # what makes the evidence itself wrong
    declared = {sc.name for sc in lab.scenarios if sc.body.cpu_bound}
    for r in records:
        tag = f"{r['name']} rep {r['rep']}"
        if not r["calibration_ok"]:
            timing.append(f"{tag}: emulated links out of tolerance")
        cpu = cpu_bound_reason(r["name"], r["rep"], (r.get("cpu") or {}).values(), r["name"] in declared)
        if cpu:
            timing.append(cpu)
        late, broken = daemon_problems(r)
        timing += [f"{tag}: {p}" for p in late]
        invalid += [f"{tag}: {p}" for p in broken]
        if r.get("iperf3_error"):
            invalid.append(f"{tag}: iperf3 error: {r['iperf3_error']}")
        for flow, rc in (r.get("servers_died") or {}).items():
            invalid.append(f"{tag}: the server of flow {flow} died before the run stopped it ({exit_text(rc)})")
        for pt, st in (r.get("capture_stats") or {}).items():
            if st.get("dropped"):
                invalid.append(f"{tag}: capture at {pt} dropped {st['dropped']} packets")
            if st.get("died") is not None:
                invalid.append(f"{tag}: capture at {pt} did not end as the run stopped it (exit status {st['died']})")
    return build_summary(lab.name, run_id, facts["kernel"], complete, opts.quick, records, lab.published, invalid,
                         facts["platform"], timing, repetitions_per_scenario=reps, scale=lab.scale,
                         run_warnings=opts.warnings, run_dir=run_dir,
                         kernel_patches=None if facts.get("kernel_patches") is None
                         else [p["name"] for p in facts["kernel_patches"] if p["present"]])

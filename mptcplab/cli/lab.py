"""Commands on one lab: run it, validate its files, rewrite a run's report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import backends
from ..errors import HostNotReady, LabInputError
from .options import rate_in_tbf


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    r = sub.add_parser("run", help="run a lab: every scenario x repetition, then analyze and report")
    r.add_argument("lab", help="lab directory (labs/mtu) or name (mtu)")
    r.add_argument("--quick", action="store_true", help="one repetition, short durations (what the tests use)")
    r.add_argument("--reps", type=int, help="repetitions per scenario (default: the lab's, at least 3)")
    which = r.add_mutually_exclusive_group()
    which.add_argument("--scenario", action="append",
                       help="run only this scenario, or those matching a shell-style pattern ('emu1-*'; repeatable)")
    which.add_argument("--subset", metavar="NAME",
                       help="run the lab's named subset of scenarios (experiment.yml `subsets:`, e.g. paper), "
                            "with its repetitions unless --reps or --quick say otherwise")
    r.add_argument("--dry-run", action="store_true", help="print every command a run would execute; run none")
    r.add_argument("--results", type=Path, default=Path("results"), help="results root (default: results/)")
    r.add_argument("--emulation", choices=["netem", "nfqueue"], help="force the link emulator")
    r.add_argument("--backend", choices=[*backends.names(), "auto"], default="auto",
                   help="where nodes run: " + "; ".join(f"{n}: {backends.DESCRIPTIONS[n]}" for n in backends.names())
                        + " (auto: the first of " + ", ".join(backends.AUTO_ORDER) + " this host can use)")
    r.add_argument("--no-calibrate", action="store_true", help="skip the per-run link checks (results marked so)")
    r.add_argument("--no-figures", action="store_true",
                   help="report.md without figures (`mptcplab report RUN_DIR` draws them later)")
    r.add_argument("--late-retries", type=int, default=1, metavar="N",
                   help="measure a repetition again, up to N times, when a delay line did not keep time "
                        "(host stalls; every attempt's files kept under failed/; default 1, 0: never)")
    r.add_argument("--rate-in-tbf", action="store_true",
                   help="nfqueue: rate and queue by tbf at the sender instead of the delay line (the default); "
                        "the queue is then hidden from local senders by TCP Small Queues (docs/architecture.md)")
    r.add_argument("--scale", metavar="F|auto",
                   help="scale every link rate by F in (0, 1], delays kept (overrides the lab's `scale`); "
                        "auto: the factor this machine's reachability estimate suggests")
    r.add_argument("--scale-reason", metavar="TEXT",
                   help="why --scale F (the measurement that shows the links need it); kept in the manifest "
                        "and the report's scale line")
    r.set_defaults(handler=cmd_run)

    v = sub.add_parser("validate", help="validate a lab's files; print its scenarios")
    v.add_argument("lab")
    v.add_argument("--host", action="store_true",
                   help="also check what only this host can answer (congestion controls, schedulers, sysctls)")
    v.set_defaults(handler=cmd_validate)

    au = sub.add_parser("audit", help="write docs/findings-audit.md from every lab's published.yml "
                                      "(each finding's statistic, source and what would make it fail)")
    au.add_argument("--labs", type=Path, default=Path("labs"), help="directory of the labs (default: labs/)")
    au.add_argument("--out", type=Path, default=Path("docs/findings-audit.md"))
    au.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 when --out differs from what the lab files give")
    au.set_defaults(handler=cmd_audit)

    rp = sub.add_parser("report", help="(re)write report.md and figures of a run directory")
    rp.add_argument("run_dir", type=Path)
    rp.set_defaults(handler=cmd_report)


def cmd_run(a: argparse.Namespace) -> int:
    from ..doctor import checks, lab_needs
    from ..lab.loader import load_lab, unsupported
    from ..net.plan import refuse_unsupported
    from ..preflight import check as preflight
    from ..preflight import reachability
    from ..run import RunOptions, dry_run, repetitions, run_lab, select_scenarios
    from ..run.kernelgate import gate, running_kernel
    from ..timeline.actions import check_timelines
    from ..walltime import estimate

    if a.late_retries < 0:
        raise LabInputError("command line", "--late-retries", f"{a.late_retries}: must be 0 or more")
    if a.scale_reason is not None and (a.scale is None or a.scale == "auto"):
        raise LabInputError("command line", "--scale-reason", "gives the reason of a --scale F; no factor was given")
    lab = load_lab(a.lab)
    unsupported(lab)
    opts = RunOptions.with_subset(lab, a.subset, quick=a.quick, reps=a.reps, scenarios=a.scenario,
                                  results_root=a.results, calibrate=not a.no_calibrate,
                                  late_retries=a.late_retries, figures=not a.no_figures)
    scenarios = select_scenarios(lab, opts.scenarios)
    # a case the kernel cannot judge is not run (as mptcp_join.sh's continue_if skips it)
    kgate = gate(lab, scenarios, running_kernel(lab))
    opts.not_on_this_kernel, scenarios = kgate.left, kgate.run
    if not scenarios:
        raise HostNotReady(f"lab {lab.name}: every scenario selected needs what this kernel lacks: "
                           + "; ".join(kgate.lines()))
    # what only the host can answer, before anything is created (dry runs included)
    preflight(lab, scenarios, results_root=a.results, dry_run=a.dry_run)
    backend = backends.resolve(a.backend, a.dry_run)
    opts.backend = backend.name
    repetitions(lab, opts)
    refuse_unsupported(backend, scenarios)
    emulator = rate_in_tbf(backend.choose_emulator(a.emulation, scenarios, a.dry_run), a.rate_in_tbf)
    # before measuring: can this machine carry the links, and at which scale (preflight.py)
    reach = reachability(lab, [s.name for s in scenarios] if opts.scenarios else None, emulator.name, a.scale,
                         scale_note=a.scale_reason)
    lab = reach.lab
    opts.warnings, opts.reachability = reach.warnings, reach.record
    est = estimate(lab, scenarios, lambda sc: repetitions(lab, opts, sc), opts.quick, a.results, opts.calibrate)
    opts.estimate = est.record()
    check_timelines(lab.topology, scenarios, emulator, str(lab.path / "experiment.yml"))  # before anything runs
    notes = [*kgate.lines(), *reach.lines, est.line(),
             *(opts.subset.lines(lab, [s.name for s in scenarios]) if opts.subset else [])]
    if a.dry_run:
        dry_run(lab, emulator, opts, emulation_forced=a.emulation is not None, notes=notes)
        return 0
    for line in notes:
        print(line)
    problems = lab_needs(lab, checks())
    if problems:
        raise HostNotReady(f"lab {lab.name} cannot run here: " + "; ".join(problems))
    run_dir, summary = run_lab(lab, emulator, opts)
    # the run is over and marked (its signal handling too): a Ctrl-C from here on interrupts
    # only this printing, and main() exits with the run's own status (a fault at a random
    # moment hit this window and read as an interrupted run that was complete)
    status = 130 if not summary["complete"] else 1 if not summary["valid"] else 0
    invalid = "RUN INVALID: " + "; ".join(summary["invalid_reasons"]) if status == 1 else None
    a.finished = (status, invalid)
    from ..results.report import print_table

    print()
    print(print_table(summary))
    print(f"\nresults: {run_dir}")
    print(f"report:  {run_dir / 'report.md'}" if summary["complete"] else "run INCOMPLETE: not marked latest")
    if invalid:
        print(invalid, file=sys.stderr)
        a.finished = (status, None)
    return status


def cmd_validate(a: argparse.Namespace) -> int:
    from ..lab.joinwarnings import join_warnings
    from ..lab.loader import load_lab, unsupported

    lab = load_lab(a.lab)
    unsupported(lab)
    if a.host:
        from ..preflight import check as preflight

        preflight(lab, lab.scenarios, dry_run=True)
    for w in join_warnings(lab):
        print(f"mptcplab: {w}", file=sys.stderr)
    print(f"{lab.path}: ok: lab {lab.name}, {len(lab.topology.topology.nodes)} nodes, "
          f"{len(lab.topology.topology.links)} links, {len(lab.scenarios)} scenarios:")
    for s in lab.scenarios:
        print(f"  {s.name}" + (f"  {s.sweep_point}" if s.sweep_point else ""))
    for name, sub in lab.experiment.subsets.items():
        reps = f", {sub.repetitions} repetition(s) each" if sub.repetitions else ""
        print(f"subset {name} (run --subset {name}{reps}): {' '.join(sub.scenarios)}")
    return 0


def cmd_audit(a: argparse.Namespace) -> int:
    from ..lab.audit import AuditedLab, render
    from ..lab.loader import load_lab
    from ..lab.schema import Published

    labs = []
    for d in sorted(p for p in a.labs.iterdir() if (p / "published.yml").is_file()):
        pub = load_lab(d).published
        if isinstance(pub, Published):
            labs.append(AuditedLab(d.name, pub))
    text = render(labs)
    if a.check:
        current = a.out.read_text() if a.out.is_file() else None
        if current != text:
            print(f"{a.out}: differs from the lab files' findings (run `mptcplab audit`)", file=sys.stderr)
            return 1
        return 0
    a.out.write_text(text)
    print(f"{a.out}: {len(labs)} labs")
    return 0


def cmd_report(a: argparse.Namespace) -> int:
    import json

    from ..results.report import write_report

    d: Path = a.run_dir
    if not d.exists():
        raise LabInputError("command line", "RUN_DIR", f"{d} does not exist")
    if not d.is_dir() or not (d / "summary.json").is_file():
        raise LabInputError("command line", "RUN_DIR", f"{d} is not a run directory (no summary.json; "
                            "give results/<lab>/<run-id> or results/<lab>/latest)")
    try:
        print(write_report(d))
    except json.JSONDecodeError as e:  # a damaged summary.json or manifest.json
        raise LabInputError("command line", "RUN_DIR", f"{d} has a damaged JSON file: {e}") from None
    return 0

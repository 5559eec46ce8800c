"""Command line: run, validate, clean, doctor, calibrate, report, analyze, campaign, compare, archive,
restore."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__
from .errors import HostNotReady, LabInputError, RunFailed

if TYPE_CHECKING:
    from collections.abc import Callable

    from .analysis.model import FlowAnalysis
    from .analysis.standalone import Guess
    from .emulation.base import Emulator


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mptcplab", description="Rerun published MPTCP experiments on this kernel.")
    p.add_argument("--version", action="version", version=f"mptcplab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run a lab: every scenario x repetition, then analyse and report")
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
    r.add_argument("--emulation", choices=["netem", "nfqueue"], help="force the link-emulation backend")
    r.add_argument("--backend", choices=["netns", "containerlab", "auto"], default="auto",
                   help="where nodes run: network namespaces, or containers deployed by containerlab "
                        "(auto: containerlab when it and a working Docker are present, else netns)")
    r.add_argument("--no-calibrate", action="store_true", help="skip the per-run link checks (results marked so)")
    r.add_argument("--late-retries", type=int, default=1, metavar="N",
                   help="measure a repetition again, up to N times, when a delay line did not keep time "
                        "(host stalls; every attempt's files kept under failed/; default 1, 0: never)")
    r.add_argument("--rate-in-tbf", action="store_true",
                   help="nfqueue: rate and queue by tbf at the sender instead of the delay line (the default); "
                        "the queue is then hidden from local senders by TCP Small Queues (docs/architecture.md)")
    r.add_argument("--scale", metavar="F|auto",
                   help="scale every link rate by F in (0, 1], delays kept (overrides the lab's `scale`); "
                        "auto: the factor this machine's reachability estimate suggests")

    v = sub.add_parser("validate", help="validate a lab's files; print its scenarios")
    v.add_argument("lab")
    v.add_argument("--host", action="store_true",
                   help="also check what only this host can answer (congestion controls, schedulers, sysctls)")

    c = sub.add_parser("clean", help="remove namespaces, containers and processes left by killed runs")
    c.add_argument("--all", action="store_true", help="also those of runs still alive")
    c.add_argument("--results", type=Path, default=Path("results"),
                   help="results root whose runs killed before they could say so are marked incomplete "
                        "(default: results/)")

    d = sub.add_parser("doctor", help="what the labs need and what this host has")
    d.add_argument("lab", nargs="?", help="also check what this lab needs")

    k = sub.add_parser("calibrate", help="measure an emulated link against its configuration")
    k.add_argument("--rate", required=True, help="e.g. 100mbit")
    k.add_argument("--delay", default="0ms", help="one-way delay, each direction, e.g. 40ms")
    k.add_argument("--jitter", help="e.g. 2ms (no reordering)")
    k.add_argument("--loss", help="random loss, e.g. 1%%")
    k.add_argument("--buffer", help="queue limit: bytes (150KB) or time at the rate (80ms)")
    k.add_argument("--mtu", type=int, default=1500)
    k.add_argument("--seconds", type=float, default=5.0, help="duration of the goodput and loss tests")
    # --emulation as `run` names it; --backend, its name before, still works
    k.add_argument("--emulation", "--backend", dest="emulation", choices=["netem", "nfqueue"],
                   help="force the link emulation")
    k.add_argument("--capture", action="store_true", help="tcpdump on both ends while measuring, as labs capture")
    k.add_argument("--rate-in-tbf", action="store_true",
                   help="nfqueue: rate and queue by tbf at the sender, not by the delay line (the default; "
                        "see emulation/nfqueue.py)")

    rp = sub.add_parser("report", help="(re)write report.md and figures of a run directory")
    rp.add_argument("run_dir", type=Path)

    cp = sub.add_parser("campaign", help="run a campaign: labs x targets x repetitions as resumable work items")
    cp.add_argument("campaign", type=Path, help="CAMPAIGN.yml (docs/campaigns.md)")
    cp.add_argument("--out", type=Path, help="campaign directory (default: results/campaigns/<name>)")
    cp.add_argument("--dry-run", action="store_true", help="list the work items and their exact commands; run none")
    cp.add_argument("--quick", action="store_true", help="every item runs --quick (other items than a full campaign's)")
    cp.add_argument("--scenario", action="append", help="only this scenario of each lab (repeatable)")
    cp.add_argument("--lab", action="append", help="only this lab (its name; repeatable)")
    cp.add_argument("--target", action="append", help="only this target (repeatable)")
    cp.add_argument("--reps", type=int, help="rounds per lab and target (default: the campaign's)")
    cp.add_argument("--seed", type=int, help="the shuffle's seed (default: the campaign's, else the recorded one)")
    cp.add_argument("--no-shuffle", action="store_true", help="run in campaign order (labs, targets, rounds)")
    cp.add_argument("--max-items", type=int, metavar="N",
                    help="run at most N unfinished items now, then stop; rerun the command for the rest")
    cp.add_argument("--records", type=Path, metavar="DIR",
                    help="keep finished items as records in DIR (captures left out, `mptcplab archive`): "
                         "restore those of items not finished here before running, pack each finished one after")

    cm = sub.add_parser("compare", help="one report: the same lab on several kernels/hosts beside the paper")
    cm.add_argument("inputs", nargs="+", type=Path, metavar="RUN_OR_CAMPAIGN",
                    help="run directories (results/<lab>/<run-id>) or campaign directories")
    cm.add_argument("--out", type=Path, help="where compare.md and its figures go "
                                             "(default: <first campaign>/compare, else ./compare)")
    cm.add_argument("--no-figures", action="store_true", help="markdown only")

    ar = sub.add_parser("archive", help="pack runs into records without their captures, to keep or move them")
    ar.add_argument("runs", nargs="+", type=Path, metavar="RUN_OR_CAMPAIGN",
                    help="run directories (results/<lab>/<run-id>), or campaign directories (each finished item)")
    ar.add_argument("--out", type=Path, required=True, help="directory the records (.tar.xz) are written to")
    rs = sub.add_parser("restore", help="unpack records made by `mptcplab archive` where their runs were")
    rs.add_argument("records", nargs="+", type=Path, metavar="RECORD", help="records (.tar.xz)")
    rs.add_argument("--into", type=Path, help="results root for a run's record (default: results), campaign "
                                              "directory for an item's (default: results/campaigns/<campaign>)")

    an = sub.add_parser("analyze", help="analyse capture files made elsewhere: tables, figures, verdict")
    an.add_argument("pcap", nargs="+", type=Path, help="pcap/pcapng files of one connection, one per capture point")
    an.add_argument("--out", type=Path, help="output directory (default: <first file>-analysis/)")
    an.add_argument("--server-port", type=int, help="the server's port (default: guessed)")
    an.add_argument("--path", action="append", metavar="LABEL=ADDRESS",
                    help="a path label for a client address, e.g. A=10.0.1.2 (repeatable; default: guessed)")
    an.add_argument("--direction", choices=["upload", "download"], help="data direction (default: guessed)")
    an.add_argument("--same-clock", action="store_true",
                    help="the files were captured on one host clock (one machine, e.g. network namespaces): "
                         "one-way delays between the capture points are measured; never for two machines")
    an.add_argument("--packets", action="store_true",
                    help="also write packets.csv: every packet's decoded TCP/MPTCP fields, one row per packet")
    an.add_argument("--clean", action="store_true",
                    help="also write <file>.clean.pcap per file: only the analysed connection's subflows "
                         "(tcpdump -r/-w with a filter on their 4-tuples), to open in Wireshark")
    an.add_argument("--dry-run", action="store_true",
                    help="with --clean: print the tcpdump commands instead of running them")
    an.add_argument("--follow", type=float, metavar="SECONDS",
                    help="files still being written (tcpdump -U -w): analyse again every SECONDS while they "
                         "grow, rewriting the tables and figures, until they stop growing or Ctrl-C")
    return p


def _rate_in_tbf(em: Emulator, asked: bool) -> Emulator:
    """``--rate-in-tbf``: the nfqueue emulator's rate and queue go back to tbf."""
    if asked:
        from .emulation.nfqueue import NfqueueEmulator

        if not isinstance(em, NfqueueEmulator):
            raise LabInputError("command line", "--rate-in-tbf", "needs the nfqueue emulation backend")
        em.rate_in_delayline = False
    return em


def _emulator(force: str | None) -> Emulator:
    """The emulator of `calibrate` (a line of network namespaces)."""
    from .emulation.hostprobe import netem_available
    from .emulation.select import select_emulator

    return select_emulator(force, netem_available() if force != "nfqueue" else False)


def cmd_run(a: argparse.Namespace) -> int:
    from . import backends
    from .doctor import checks, lab_needs
    from .lab.loader import load_lab, unsupported
    from .labrun import RunOptions, dry_run, repetitions, run_lab, select_scenarios
    from .preflight import check as preflight
    from .preflight import reachability
    from .timeline.actions import check_timelines
    from .walltime import estimate

    if a.late_retries < 0:
        raise LabInputError("command line", "--late-retries", f"{a.late_retries}: must be 0 or more")
    lab = load_lab(a.lab)
    unsupported(lab)
    opts = RunOptions.with_subset(lab, a.subset, quick=a.quick, reps=a.reps, scenarios=a.scenario,
                                  results_root=a.results, calibrate=not a.no_calibrate,
                                  late_retries=a.late_retries)
    scenarios = select_scenarios(lab, opts.scenarios)
    # what only the host can answer, before anything is created (dry runs included)
    preflight(lab, scenarios, results_root=a.results, dry_run=a.dry_run)
    backend = backends.resolve(a.backend, a.dry_run)
    opts.backend = backend.name
    repetitions(lab, opts)
    emulator = _rate_in_tbf(backend.choose_emulator(a.emulation, scenarios, a.dry_run), a.rate_in_tbf)
    # before measuring: can this machine carry the links, and at which scale (preflight.py)
    reach = reachability(lab, [s.name for s in scenarios] if opts.scenarios else None, emulator.name, a.scale)
    lab = reach.lab
    opts.warnings, opts.reachability = reach.warnings, reach.record
    est = estimate(lab, scenarios, lambda sc: repetitions(lab, opts, sc), opts.quick, a.results)
    opts.estimate = est.record()
    check_timelines(lab.topology, scenarios, emulator, str(lab.path / "experiment.yml"))  # before anything runs
    notes = [*reach.lines, est.line(), *(opts.subset.lines(lab, [s.name for s in scenarios]) if opts.subset else [])]
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
    from .results.report import print_table

    print()
    print(print_table(summary))
    print(f"\nresults: {run_dir}")
    print(f"report:  {run_dir / 'report.md'}" if summary["complete"] else "run INCOMPLETE: not marked latest")
    if invalid:
        print(invalid, file=sys.stderr)
        a.finished = (status, None)
    return status


def cmd_validate(a: argparse.Namespace) -> int:
    from .lab.loader import load_lab, unsupported
    from .lab.reach import join_warnings

    lab = load_lab(a.lab)
    unsupported(lab)
    if a.host:
        from .preflight import check as preflight

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


def cmd_clean(a: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        raise HostNotReady("clean removes network namespaces and processes of runs: run as root")
    from . import backends

    for name in backends.names():
        cls = backends.get(name)
        removed = cls.clean(all_runs=a.all)
        print(f"removed {len(removed)} {cls.cleans}" + (": " + " ".join(removed) if removed else ""))
    from .probes.tracefs import clean as clean_tracefs

    removed = clean_tracefs(all_runs=a.all)
    print(f"removed {len(removed)} tracefs instance(s)" + (": " + " ".join(removed) if removed else ""))
    from .cc.holds import clean as clean_ccs

    removed = clean_ccs(all_runs=a.all)
    print(f"unregistered {len(removed)} congestion control(s) no live run held"
          + (": " + " ".join(removed) if removed else ""))
    from .results.store import mark_dead_runs

    for d in mark_dead_runs(a.results):
        print(f"marked incomplete (owner process died): {d}")
    return 0


def cmd_doctor(a: argparse.Namespace) -> int:
    from .doctor import checks, lab_needs, reachability, render
    from .lab.loader import load_lab

    lab = load_lab(a.lab) if a.lab else None  # a bad lab fails in one line, before the host table
    items = checks()
    print(render(items))
    print("\n" + "\n".join(reachability(items, lab)))
    problems = [f"{i.name}: {i.fix}" for i in items if i.required and not i.ok]
    if lab is not None:
        problems = lab_needs(lab, items)
    if problems:
        print("\nlabs cannot run here until fixed:\n  " + "\n  ".join(problems))
        return 1
    print("\nall labs' requirements are met on this host")
    return 0


def cmd_calibrate(a: argparse.Namespace) -> int:
    from .calibrate import CalibrateRequest, calibrate, render

    req = CalibrateRequest(rate=a.rate, delay=a.delay, jitter=a.jitter, loss=a.loss, buffer=a.buffer, mtu=a.mtu,
                           seconds=a.seconds, capture=a.capture)
    from .calibrate import _line_lab

    _line_lab(req)  # validate before anything is created
    if os.geteuid() != 0:
        raise HostNotReady("calibrate creates network namespaces and qdiscs: run as root")
    em = _rate_in_tbf(_emulator(a.emulation), a.rate_in_tbf)
    from .emulation.linkmodel import LinkShape

    # a direction without delay has no delay line, so tbf keeps its rate
    paced = getattr(em, "rate_in_delayline", False) and LinkShape.parse(a.rate, a.delay, a.jitter).needs_delay
    print(f"link: rate {a.rate}, one-way delay {a.delay} each direction"
          + (f", jitter {a.jitter}" if a.jitter else "") + (f", loss {a.loss}" if a.loss else "")
          + (f", buffer {a.buffer}" if a.buffer else "") + f", MTU {a.mtu}; emulation: {em.name}"
          + (" (rate and queue in the delay line, no tbf)" if paced else ""))
    with tempfile.TemporaryDirectory(prefix="mptcplab-cal-") as wd:
        ok, checks = calibrate(req, em, Path(wd))
    print(render(checks))
    print("within tolerance" if ok else "OUT OF TOLERANCE")
    return 0 if ok else 1


def cmd_report(a: argparse.Namespace) -> int:
    import json

    from .results.report import write_report

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


def cmd_campaign(a: argparse.Namespace) -> int:
    import shlex

    from .campaign import executor
    from .campaign.planner import Overrides, new_seed, ordered, plan
    from .campaign.schema import load_campaign
    from .campaign.targets import KINDS, kind_of

    if a.max_items is not None and a.max_items < 1:
        raise LabInputError("command line", "--max-items", f"{a.max_items}: must be 1 or more")
    c, base = load_campaign(a.campaign)
    items = plan(c, base, str(a.campaign), Overrides(quick=a.quick, scenarios=a.scenario, repetitions=a.reps,
                                                     targets=a.target, labs=a.lab or []))
    inventory = (base / c.inventory).resolve() if c.inventory else None
    if inventory is not None and any(i.target.kind == "ansible" for i in items) and not inventory.is_file():
        raise LabInputError(str(a.campaign), "inventory", f"{inventory} does not exist")
    out: Path = a.out or Path("results") / "campaigns" / c.name
    recorded = executor.read_state(out) or {}
    # the seed: given now, else the campaign's, else the one this directory recorded (a
    # resumed campaign keeps its order), else a new one, recorded before anything runs
    seed = next(s for s in (a.seed, c.seed, recorded.get("seed"), new_seed()) if s is not None)
    shuffle = c.shuffle and not a.no_shuffle
    order = ordered(items, int(seed), shuffle)
    if a.dry_run:
        print(f"# campaign {c.name}: {len(order)} work item(s), "
              + (f"shuffled with seed {seed}" if shuffle else "in campaign order") + f"; directory {out}")
        for n, i in enumerate(order, 1):
            d = executor.item_dir(out, i)
            done = executor.finished(out, i)
            rec = a.records / f"{i.id}.tar.xz" if a.records else None
            print(f"\n## [{n}] {i.id}: lab {i.lab} round {i.round} on {i.target.name} ({i.target.kind})"
                  + (f": finished earlier ({done}), skipped" if done
                     else f": its record {rec} would be restored, skipped" if rec and rec.is_file() else ""))
            print(f"# runs {i.selection}")
            kind = kind_of(i.target, inventory)
            about = kind.record(i.target)
            if about:
                print("# target " + ", ".join(f"{k}: {v}" for k, v in about.items()))
            for name, data in kind.files(i, d).items():
                import json

                print(f"# {d / name}: {json.dumps(data, sort_keys=True)}")
            print(shlex.join(kind.argv(i, d)))
        return 0
    # what would make every item fail, said once before anything is created
    for k, cls in KINDS.items():
        mine = [i for i in order if i.target.kind == k]
        problem = cls(inventory).host_problem(mine) if mine else None
        if problem:
            raise HostNotReady(problem)
    from .campaign import records

    with executor.campaign_lock(out):
        executor.write_state(out, c, a.campaign, int(seed), shuffle, order, inventory)
        if a.records:
            records.restore_unfinished(out, order, a.records, c.name)
        try:
            outcomes = executor.execute(out, order, inventory, max_items=a.max_items)
        except executor.Stopped as e:
            print(f"campaign stopped by {e}; the running item was stopped (its run is kept as incomplete); "
                  f"rerun the same command to continue", file=sys.stderr)
            return 130
        finally:
            if a.records:
                records.pack_finished(out, order, a.records, c.name)
        from .campaign.merge import merge

        cols = merge(out)
    left = [o for o in outcomes if o.status == "incomplete"]
    later = sum(o.status == "left" for o in outcomes)
    print(f"campaign {c.name}: {sum(o.status == 'done' for o in outcomes)} item(s) run now, "
          f"{sum(o.status == 'skipped' for o in outcomes)} finished earlier, {len(left)} not finished"
          + (f", {later} left for a later run (--max-items): rerun the same command" if later else ""))
    print(f"merged: {len(cols)} lab x target column(s) in {out / 'merged'}; "
          f"compare them with: mptcplab compare {out}")
    return 1 if left else 0


def cmd_compare(a: argparse.Namespace) -> int:
    from .campaign.compare import write_compare
    from .campaign.executor import STATE

    for p in a.inputs:
        if not p.exists():
            raise LabInputError("command line", "RUN_OR_CAMPAIGN", f"{p} does not exist")
    first_campaign = next((p for p in a.inputs if (p / STATE).is_file()), None)
    out = a.out or (first_campaign / "compare" if first_campaign else Path("compare"))
    print(write_compare(list(a.inputs), out, figures=not a.no_figures))
    return 0


def cmd_archive(a: argparse.Namespace) -> int:
    from .campaign.executor import STATE, complete_runs, read_state
    from .campaign.targets import RESULTS
    from .results import archive

    for p in a.runs:
        if not p.is_dir():
            raise LabInputError("command line", "RUN_OR_CAMPAIGN", f"{p} is not a directory")
    for p in a.runs:
        if (p / STATE).is_file():
            state = read_state(p) or {}
            packed = [archive.pack_item(p, d.name, run[0], a.out, str(state.get("name", p.name)))
                      for d in sorted((p / "items").glob("*/")) if (run := complete_runs(d / RESULTS))]
        else:
            packed = [archive.pack_run(p, a.out)]
        for k in packed:
            print(f"{k.path}: {k.files} files ({k.bytes_in / 1e6:.1f} MB) in {k.path.stat().st_size / 1e6:.2f} MB; "
                  f"{k.left_out} file(s) ({k.left_out_bytes / 1e6:.0f} MB: captures, raw dumps) left out")
    return 0


def cmd_restore(a: argparse.Namespace) -> int:
    from .results import archive

    for rec in a.records:
        if not rec.is_file():
            raise LabInputError("command line", "RECORD", f"{rec} is not a file")
    for rec in a.records:
        index = archive.read_index(rec)
        into = a.into or (Path("results") if index["kind"] == "run"
                          else Path("results") / "campaigns" / str(index.get("campaign")))
        where, now = archive.restore(rec, into)
        print(f"{rec}: {'restored into' if now else 'already there:'} {where}")
    return 0


def cmd_analyze(a: argparse.Namespace) -> int:
    from .analysis.standalone import analyze_files, describe

    for f in a.pcap:
        if not f.is_file():
            raise LabInputError("command line", "PCAP", f"{f} is not a file")
    paths = None
    if a.path:
        paths = {}
        for item in a.path:
            label, sep, addr = item.partition("=")
            if not sep or not label or not addr:
                raise LabInputError("command line", "--path", f"{item!r}: expected LABEL=ADDRESS")
            paths[addr] = label
    out = a.out or a.pcap[0].with_name(a.pcap[0].stem + "-analysis")

    def run() -> tuple[FlowAnalysis, Guess]:
        return analyze_files(a.pcap, out, a.server_port, paths, a.direction, same_clock=a.same_clock,
                             packets=a.packets)

    if a.follow is not None:
        if a.follow <= 0:
            raise LabInputError("command line", "--follow", f"{a.follow}: expected seconds above 0")
        last = _follow(a.pcap, a.follow, run)
        if last is None:
            print("nothing analysed: no TCP packets in the files")
            return 0
        fa, g = last
    else:
        fa, g = run()
    print("\n".join(describe(fa, g)))
    print(f"tables and figures: {out}")
    if a.clean:
        _clean(a.pcap, fa, out, a.dry_run)
    return 0


def _follow(files: list[Path], interval: float,
            run: Callable[[], tuple[FlowAnalysis, Guess]]) -> tuple[FlowAnalysis, Guess] | None:
    """``analyze --follow``: analysis/follow.py's rounds, a status line each; the last analysis."""
    from .analysis.follow import follow, status_line

    last: list[tuple[FlowAnalysis, Guess]] = []

    def once() -> None:
        try:
            last[:] = [run()]
        except (LabInputError, RunFailed) as e:   # no TCP packet, or no file header, yet: just started
            print(f"{time.strftime('%H:%M:%S')} waiting: {e}", flush=True)
            return
        print(status_line(last[0][0]), flush=True)

    try:
        follow(files, interval, once)
    except KeyboardInterrupt:
        print("stopped")
    return last[0] if last else None


def _clean(files: list[Path], fa: FlowAnalysis, out: Path, dry_run: bool) -> None:
    """``analyze --clean``: the filtered copies (analysis/clean.py), or with --dry-run their commands."""
    from .analysis.clean import clean_commands, clean_path, run_commands

    cmds = clean_commands(files, fa.subflows, out)
    if not cmds:
        print("no filtered copy: the analysis found no connection to keep")
        return
    if dry_run:
        print("\n".join(c.render() for c in cmds))
        return
    for w in run_commands(cmds):
        print(f"warning: {w}")
    print("filtered copies: " + ", ".join(str(clean_path(f, out)) for f in files))


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    handlers = {"run": cmd_run, "validate": cmd_validate, "clean": cmd_clean, "doctor": cmd_doctor,
                "calibrate": cmd_calibrate, "report": cmd_report, "analyze": cmd_analyze,
                "campaign": cmd_campaign, "compare": cmd_compare, "archive": cmd_archive, "restore": cmd_restore}
    try:
        return handlers[a.command](a)
    except LabInputError as e:
        print(f"mptcplab: error: {e}", file=sys.stderr)
        return 2
    except HostNotReady as e:
        print(f"mptcplab: host not ready: {e}", file=sys.stderr)
        return 3
    except RunFailed as e:
        print(f"mptcplab: run failed: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        finished: tuple[int, str | None] | None = getattr(a, "finished", None)
        if finished is not None:  # after the run was marked: its status stands (cmd_run)
            status, unsaid = finished
            print(unsaid or "mptcplab: interrupted after the run finished", file=sys.stderr)
            return status
        # Ctrl-C outside a run's own handling (e.g. while its report is written): the run
        # directory keeps its owner record, so `mptcplab clean` or the next run marks it
        print("mptcplab: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        from .results.store import STORAGE_ERRNOS

        if e.errno in STORAGE_ERRNOS and a.command == "run":
            # a results directory that filled up (or went read-only) mid-run: the run tore
            # its network down on the way out; what it had written stays, marked incomplete
            where = e.filename or getattr(a, "results", None) or "the results directory"
            print(f"mptcplab: run failed: cannot write {where}: {e.strerror}; "
                  f"free space or choose another --results (the run is incomplete)", file=sys.stderr)
            return 1
        # last resort: whatever a subcommand did not foresee is one line, not a traceback
        if os.environ.get("MPTCPLAB_DEBUG") == "1":
            raise
        return _os_error(e)


def _os_error(e: OSError) -> int:
    what = e.strerror or str(e) or type(e).__name__
    where = f": {e.filename}" if e.filename else ""
    if isinstance(e, PermissionError):
        print(f"mptcplab: host not ready: {what}{where} (run as root?)", file=sys.stderr)
        return 3
    print(f"mptcplab: error: {what}{where} (MPTCPLAB_DEBUG=1 shows where)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())

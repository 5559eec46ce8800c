"""Running a campaign's work items, one at a time, resumably.

The campaign directory (default results/campaigns/<name>/):
  campaign.json                 the seed, the order, the items (written before any item runs)
  items/<item-id>/item.json     target, lab, round, command, exit status, start and end
  items/<item-id>/log.txt       the command's output
  items/<item-id>/results/<lab>/<run-id>/   the engine's run directory (fetched back by Ansible)

An item is finished when its results root holds a complete run (summary.json and
manifest.json both say complete): that, not a state file, is what a rerun skips, so a
campaign killed at any point continues where it stopped, and nothing is measured twice.
Items run one after another: one lab at a time per target (and the targets of one machine
do not disturb each other's timing). After a lab x target's planned rounds, extra rounds
(at most the campaign's ``remeasure``) are planned while a scenario is short of valid
repetitions (repvalid.py, the merge's rule); they are decided again from the result
directories on a rerun, so they too are never measured twice.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import re
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO

from ..errors import HostNotReady
from ..lab.loader import load_lab
from ..progress import clock_text
from ..record import store
from ..record.manifest import git_state
from ..record.model import ResultsFormatError, load_manifest
from ..results.read import load_summary
from . import repvalid
from .debs import REPO
from .planner import WorkItem
from .schema import Campaign
from .targets import RESULTS, kind_of

STATE = "campaign.json"
#: the engine's progress line of a repetition starting (mptcplab/progress.py, not on a
#: terminal): "[9/74] emu1-tcp-3g-rmem50k rep 1/1: elapsed 8:21, about 1:08:53 left"
PROGRESS = re.compile(rb"^\[\d+/\d+\] ")
#: after the item exits, how long its output is still read: a process it left behind
#: holding the pipe must not hold the campaign
DRAIN_S = 2.0
#: the longest a stopped item's clean-up (its kind's stop_argv) may take: the engine's
#: teardown, `mptcplab clean` and the fetch of what the item left
CLEAN_UP_S = 600.0


def item_dir(out: Path, item: WorkItem) -> Path:
    return out / "items" / item.id


def complete_runs(results_root: Path) -> list[Path]:
    """The complete run directories under an item's results root (a killed run's
    incomplete directory is kept, but it is not a result)."""
    runs = []
    for summary in sorted(results_root.glob("*/2*/summary.json")):
        d = summary.parent
        try:
            if load_summary(d).complete and load_manifest(d).complete:
                runs.append(d)
        except (ResultsFormatError, OSError):
            continue
    return runs


def finished(out: Path, item: WorkItem) -> Path | None:
    runs = complete_runs(item_dir(out, item) / RESULTS)
    return runs[0] if runs else None


def finished_items(out: Path) -> dict[str, Path]:
    """Every item of the campaign directory ``out`` that finished: its id -> its run (what
    ``finished`` says of one planned item, for the items a directory holds, planned or not)."""
    return {d.name: runs[0] for d in sorted((out / "items").glob("*/")) if (runs := complete_runs(d / RESULTS))}


def write_state(out: Path, c: Campaign, campaign_file: Path, seed: int, shuffle: bool,
                order: list[WorkItem], inventory: Path | None, remeasure: int | None = None) -> None:
    """``remeasure``: the extra rounds allowed now (default: the campaign's). The planned
    repetitions are the rounds of ``order`` (a --reps override included): the merge's n."""
    out.mkdir(parents=True, exist_ok=True)
    store.write_json(out / STATE, {
        "name": c.name, "campaign_file": str(campaign_file.resolve()), "seed": seed, "shuffle": shuffle,
        "repetitions": max((i.round for i in order), default=c.repetitions),
        "remeasure": c.remeasure if remeasure is None else remeasure,
        "inventory": str(inventory) if inventory else None,
        # the controller's checkout: what an Ansible target ran (its synced copy has no .git)
        "git": git_state(REPO),
        "targets": {t.name: {"kind": t.kind, "host": t.inventory_host if t.kind == "ansible" else None,
                             "description": t.description, **kind_of(t).record(t)} for t in c.targets},
        "order": [i.id for i in order],
        "items": {i.id: item_record(i) for i in order},
    })


def read_state(out: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((out / STATE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def item_record(i: WorkItem) -> dict[str, Any]:
    pool = {"pool": list(i.target.pool)} if i.target.pool else {}
    return {"target": i.target.name, "kind": i.target.kind,
            "host": i.on_host or (i.target.inventory_host if i.target.kind == "ansible" and not pool else None),
            **pool, "debs": i.target.debs,
            "lab": i.lab, "lab_dir": str(i.lab_dir), "round": i.round, "subset": i.subset,
            "scenarios": list(i.scenarios), "run": i.run.model_dump()}


@contextmanager
def campaign_lock(out: Path) -> Iterator[None]:
    """One campaign process per campaign directory: two would run the same item twice."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HostNotReady(f"another mptcplab campaign is running in {out}") from None
        yield


def _die_with_parent() -> None:
    # a campaign killed with SIGKILL cannot stop its item: the kernel sends SIGTERM
    # instead, which the engine turns into a clean teardown and an incomplete run
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)


class Stopped(Exception):
    """The campaign was asked to stop (SIGINT or SIGTERM); the running item was stopped too."""


@dataclass
class Outcome:
    item: WorkItem
    status: str  # "skipped" (finished earlier), "done", "incomplete", "left" (--max-items)
    run_dir: Path | None
    seconds: float = 0.0


def pump(p: subprocess.Popen[bytes], log: BinaryIO, echo: Callable[[str], None]) -> int:
    """Copy the item's output into its log as it comes, echo its progress lines (the
    engine's ETA reaches the campaign's console), and return its exit status. Reads until
    the output ends, or for DRAIN_S after the item exited (a process it left holding the
    pipe is no reason to wait)."""
    assert p.stdout is not None
    fd = p.stdout.fileno()
    os.set_blocking(fd, False)
    partial = b""
    until: float | None = None
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while until is None or time.monotonic() < until:
            if until is None and p.poll() is not None:
                until = time.monotonic() + DRAIN_S
            if not sel.select(timeout=0.2):
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                break  # every writer closed it
            log.write(chunk)
            log.flush()
            *lines, partial = (partial + chunk).split(b"\n")
            for line in lines:
                if PROGRESS.match(line):
                    echo(line.decode(errors="replace").rstrip())
    p.stdout.close()
    return p.wait()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Attempt:
    """One attempt at an item: its directory, item.json, log and process. ``stop`` may be
    called from any thread (a campaign stopping every host's item at once); ``clean_up``,
    once the stopped process has exited, runs what leaves the item's host clean."""

    def __init__(self, out: Path, item: WorkItem, inventory: Path | None) -> None:
        self.item = item
        self.dir = d = item_dir(out, item)
        d.mkdir(parents=True, exist_ok=True)
        self.kind = kind_of(item.target, inventory)
        self.kind.prepare(item, d)
        argv = self.kind.argv(item, d)
        self.record: dict[str, Any] = {**item_record(item), "id": item.id, "argv": argv, "started": _now(),
                                       "finished": None, "exit": None}
        if item.target.pool:  # the pool's host this attempt runs on (campaign.json's plan names none)
            self.record["host"] = item.host
        prior = _read_json(d / "item.json").get("attempts")
        if prior:
            self.record["attempts"] = prior
        store.write_json(d / "item.json", self.record)
        self.log = open(d / "log.txt", "ab")  # noqa: SIM115 - closed by wait()
        self.log_start = self.log.tell()
        self.stopped: list[str] = []
        self.stop_argv = self.kind.stop_argv(item, d)
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent,
                                        start_new_session=True)

    def stop(self, why: str) -> None:
        # the item leads its own session (a Ctrl-C reaches the campaign only): it is told
        # once, then the campaign waits for its teardown
        if not self.stopped:
            self.stopped.append(why)
            if self.stop_argv is None:
                self.process.send_signal(signal.SIGTERM)
                return
            # a kind with a clean-up (ansible): its whole session goes (ansible-playbook's
            # workers and connection processes too); the host is seen to by clean_up
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def clean_up(self, echo: Callable[[str], None]) -> int | None:
        """After a stopped attempt's process exited: its kind's stop command (the engine on
        the host stopped, `mptcplab clean` there, the item's directory removed), output to
        the item's log, recorded in item.json under ``stop``. Its exit status; None when the
        attempt was not stopped or its kind needs none. In a session of its own: a second
        Ctrl-C does not cut it short."""
        if not self.stopped or self.stop_argv is None:
            return None
        echo(f"stopped ({self.stopped[0]}): cleaning the host: {' '.join(self.stop_argv)}")
        t0 = time.monotonic()
        with open(self.dir / "log.txt", "ab") as log:
            log.write(f"\n# stopped ({self.stopped[0]}): {' '.join(self.stop_argv)}\n".encode())
            log.flush()
            try:
                rc = subprocess.run(self.stop_argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, timeout=CLEAN_UP_S, check=False).returncode
            except subprocess.TimeoutExpired:
                rc = -1
            except OSError as e:
                log.write(f"cannot run: {e}\n".encode())
                rc = -1
        secs = time.monotonic() - t0
        self.record["stop"] = {"why": self.stopped[0], "argv": self.stop_argv, "exit": rc,
                               "seconds": round(secs, 1)}
        store.write_json(self.dir / "item.json", self.record)
        log_txt = self.dir / "log.txt"
        echo(f"host {'clean' if rc == 0 else f'NOT cleaned (exit {rc}; see {log_txt})'} in {secs:.0f} s")
        return rc

    def wait(self, echo: Callable[[str], None]) -> int:
        """Pump the output until the item exits; its exit status, recorded in item.json."""
        try:
            rc = pump(self.process, self.log, echo)
        finally:
            self.log.close()
        self.record.update(finished=_now(), exit=rc)
        store.write_json(self.dir / "item.json", self.record)
        return rc

    def output(self) -> str:
        """What this attempt printed (the log holds every attempt's)."""
        with open(self.dir / "log.txt", "rb") as f:
            f.seek(self.log_start)
            return f.read().decode(errors="replace")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def run_item(out: Path, item: WorkItem, inventory: Path | None,
             echo: Callable[[str], None] = print) -> tuple[int, Path | None]:
    a = Attempt(out, item, inventory)

    def forward(signum: int, _frame: FrameType | None) -> None:
        a.stop(signal.Signals(signum).name)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        rc = a.wait(echo)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if a.stopped:
        a.clean_up(echo)
        raise Stopped(a.stopped[0])
    return rc, finished(out, item)


def execute(out: Path, order: list[WorkItem], inventory: Path | None,
            log: Callable[[str], None] = print, max_items: int | None = None,
            remeasure: int = 0) -> list[Outcome]:
    """Run every unfinished item in order; an item that does not finish is reported and the
    campaign goes on (a rerun tries it again). With ``max_items``, stop after that many items
    were run (a campaign longer than one sitting, run in parts: the rest are "left", and a
    rerun of the same command continues with them). With ``remeasure``, a lab x target whose
    planned rounds dropped repetitions gets up to that many extra rounds (``remeasure_all``)."""
    outcomes: list[Outcome] = []
    todo = [i for i in order if finished(out, i) is None]
    now = len(todo) if max_items is None else min(max_items, len(todo))
    log(f"campaign: {len(order)} work item(s), {len(order) - len(todo)} finished earlier, {len(todo)} to run"
        + (f", {now} of them now (--max-items)" if now < len(todo) else "")
        + (f"; up to {remeasure} more round(s) per lab x target where repetitions are dropped" if remeasure else ""))
    for i in order:
        done = finished(out, i)
        if done is not None:
            outcomes.append(Outcome(i, "skipped", done))
            continue
        n = sum(1 for o in outcomes if o.status not in ("skipped", "left")) + 1
        if n > now:
            outcomes.append(Outcome(i, "left", None))
            continue
        outcomes.append(_run_logged(out, i, inventory, log, f"[{n}/{now}]"))
        ran = [o.seconds for o in outcomes if o.status in ("done", "incomplete")]
        if now - n > 0:
            left = (now - n) * sum(ran) / len(ran)
            log(f"campaign: {n} of {now} item(s) run, about {clock_text(left)} left "
                f"(the mean item so far, {clock_text(sum(ran) / len(ran))}, times {now - n})")
    if remeasure:
        outcomes += remeasure_all(out, order, inventory, log, remeasure,
                                  None if max_items is None else max_items - sum(
                                      1 for o in outcomes if o.status in ("done", "incomplete")))
    return outcomes


def _run_logged(out: Path, i: WorkItem, inventory: Path | None, log: Callable[[str], None], tag: str) -> Outcome:
    log(f"{tag} {i.lab} round {i.round} on {i.target.name}: {i.selection}")
    t0 = time.monotonic()

    def echo(line: str, label: str = f"    {i.lab} r{i.round}: ") -> None:
        log(label + line)

    rc, run = run_item(out, i, inventory, echo)
    secs = time.monotonic() - t0
    where = item_dir(out, i) / "log.txt"
    log(f"    {'done' if run else f'NOT finished (exit {rc}; see {where})'} in {secs:.0f} s"
        + (f": {run}" if run else ""))
    return Outcome(i, "done" if run else "incomplete", run, secs)


def groups(order: list[WorkItem]) -> dict[str, list[WorkItem]]:
    """The planned rounds of each lab x target (one item key), in round order."""
    out: dict[str, list[WorkItem]] = {}
    for i in order:
        out.setdefault(i.key, []).append(i)
    return {k: sorted(v, key=lambda i: i.round) for k, v in out.items()}


def extra_items(order: list[WorkItem], remeasure: int) -> list[WorkItem]:
    """Every extra round the campaign may run (their records are restored and packed as the
    planned rounds' are): rounds repetitions+1 ... repetitions+remeasure of each lab x target."""
    return [replace(items[-1], round=items[-1].round + k)
            for items in groups(order).values() for k in range(1, remeasure + 1)]


def next_round(out: Path, items: list[WorkItem], remeasure: int,
               cpu_bound: set[str]) -> tuple[WorkItem | None, list[WorkItem], str | None]:
    """For one lab x target (``items``: its planned rounds): the extra round to run next (None:
    none needed, none allowed, or the planned rounds are not all finished), the extra rounds
    finished earlier, and why (None when nothing is short). The rule is the merge's
    (repvalid.select): a scenario is short while it has fewer valid repetitions than planned."""
    first, planned = items[0], items[-1].round
    rounds = []
    extras: list[WorkItem] = []
    for k in range(1, planned + remeasure + 1):
        it = replace(first, round=k)
        run = finished(out, it)
        if run is None:
            if k <= planned:
                return None, extras, None  # the planned rounds first: nothing to judge yet
            break
        if k > planned:
            extras.append(it)
        rounds.append((k, load_summary(run)))
    sel = repvalid.select(rounds, planned, cpu_bound, first.scenarios)
    short = sel.short()
    if not short:
        return None, extras, None
    why = "; ".join(_short_text(sel, s) for s in short)
    where = f"{first.lab} on {first.target.name}"
    if len(extras) >= remeasure:
        return None, extras, f"campaign: {where}: {why}; re-measure bound {remeasure} reached"
    nxt = replace(first, round=planned + len(extras) + 1)
    return nxt, extras, (f"campaign: {where}: {why}; re-measuring: round {nxt.round} "
                         f"(extra round {len(extras) + 1} of at most {remeasure})")


def _short_text(sel: repvalid.Selection, scenario: str) -> str:
    drops = [f"round {d.rep}: {'; '.join(d.reasons)}" for d in sel.dropped if d.scenario == scenario]
    return (f"{scenario} has {sel.valid(scenario)} of {sel.planned} planned repetitions valid"
            + (f" (dropped: {' | '.join(drops)})" if drops else ""))


def cpu_bound_scenarios(i: WorkItem) -> set[str]:
    """The scenarios the lab declares CPU-bound (as the merge reads them)."""
    try:
        lab = load_lab(i.lab_dir)
    except Exception:  # noqa: BLE001 - as merge._lab_facts: an unreadable lab exempts nothing
        return set()
    return {sc.name for sc in lab.scenarios if sc.body.cpu_bound}


def add_items(out: Path, items: list[WorkItem]) -> None:
    """Extra rounds into campaign.json: the merge reads only the items recorded there."""
    state = read_state(out)
    if state is None or not items:
        return
    recs = state.setdefault("items", {})
    order = state.setdefault("order", [])
    for i in items:
        recs[i.id] = item_record(i)
        if i.id not in order:
            order.append(i.id)
    store.write_json(out / STATE, state)


def remeasure_all(out: Path, order: list[WorkItem], inventory: Path | None, log: Callable[[str], None],
                  remeasure: int, budget: int | None = None) -> list[Outcome]:
    """After the planned rounds: each lab x target with a scenario short of valid repetitions
    gets another round while its extra rounds are fewer than ``remeasure``; ``budget``: how
    many items may still run now (--max-items), the rest are "left" for a rerun."""
    outcomes: list[Outcome] = []
    for items in groups(order).values():
        cpu_bound = cpu_bound_scenarios(items[0])
        while True:
            nxt, extras, why = next_round(out, items, remeasure, cpu_bound)
            new = [e for e in extras if all(o.item.id != e.id for o in outcomes)]
            add_items(out, new)
            outcomes += [Outcome(e, "skipped", finished(out, e)) for e in new]
            if why:
                log(why)
            if nxt is None:
                break
            add_items(out, [nxt])
            ran = sum(1 for o in outcomes if o.status in ("done", "incomplete"))
            if budget is not None and ran >= budget:
                outcomes.append(Outcome(nxt, "left", None))
                break
            o = _run_logged(out, nxt, inventory, log, f"[extra {nxt.round - items[-1].round}/{remeasure}]")
            outcomes.append(o)
            if o.run_dir is None:
                break  # not finished: a rerun measures it again
    return outcomes

"""Running a campaign's items on several hosts at once: one item per host at a time.

Each host is a slot (schema.Target.hosts: a pool's hosts, an ansible target's host, or "this
machine" for local and qemu targets, which therefore never run two items at once). A worker
thread per slot takes the next item its host may run: the longest expected first (the
classic longest-processing-time rule: the campaign ends soonest when the long items do not
come last), the campaign order among equals. Ansible runs each item (its own playbook run,
`--limit` to the host), so what crosses to a host is what a one-host campaign sends.

Faults: a host whose item reports it unreachable (targets.TargetKind.host_lost), or whose
result is not of the pool's declared class (schema.HostClass: a host of another kernel is
not interchangeable), takes no more items (a host lost after its item's complete result was
fetched, while the playbook cleans up, keeps that result: the measurement ended there); the item's attempt is kept under
``items/<id>/attempts/<n>-<host>/`` (never merged: the merge reads ``results/`` only) and the
item goes back to the queue for another host of its pool, at most ``max_attempts`` times. A
host is given up on only by its own worker, after its attempt's process has exited, so a
late result from a lost host cannot arrive after the item was handed on.

Stopping (SIGINT or SIGTERM to the campaign): every running item is told to stop (the engine
tears its run down, kept as incomplete); each host that had one is then cleaned by its kind's
stop command (Attempt.clean_up: an ansible host's engine stopped, `mptcplab clean` there, the
item's directory removed), all at once; the campaign waits for all of them, then raises
executor.Stopped; a rerun picks up exactly what is left (an item is finished when its
results root holds a complete run, as for one host).
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType

from ..progress import clock_text
from ..record import store
from ..record.model import load_manifest
from .executor import (
    Attempt,
    Outcome,
    Stopped,
    add_items,
    cpu_bound_scenarios,
    finished,
    groups,
    item_dir,
    next_round,
)
from .planner import WorkItem
from .schema import THIS_MACHINE

#: attempts of one item on different hosts before it is left for a rerun
MAX_ATTEMPTS = 3
#: an item's expected seconds when nothing of its kind ran yet: the longest-first order then
#: falls back to the campaign order
UNKNOWN_S = 0.0


def local_hosts(inventory: Path | None) -> frozenset[str]:
    """The inventory's hosts that are this machine (``ansible_connection=local``, or the
    implicit localhost): they share its slot, so a local ansible host never measures beside
    a local target. Asks ``ansible-inventory`` (any inventory format); none when it cannot."""
    if inventory is None:
        return frozenset()
    try:
        p = subprocess.run(["ansible-inventory", "-i", str(inventory), "--list"], capture_output=True, text=True,
                           timeout=120, check=False)
        hostvars = json.loads(p.stdout).get("_meta", {}).get("hostvars", {}) if p.returncode == 0 else {}
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(h for h, v in hostvars.items()
                     if h == "localhost" or (v or {}).get("ansible_connection") == "local")


def slot_of(host: str, local: frozenset[str]) -> str:
    return THIS_MACHINE if host in local else host


def item_slots(item: WorkItem, local: frozenset[str] = frozenset()) -> list[str]:
    """The machines an item may run on (a local inventory host is this machine)."""
    return list(dict.fromkeys(slot_of(h, local) for h in item.target.hosts))


def slots(items: Sequence[WorkItem], local: frozenset[str] = frozenset()) -> list[str]:
    """The machines the items may run on, each once, in campaign order."""
    return list(dict.fromkeys(s for i in items for s in item_slots(i, local)))


def parallel(items: Sequence[WorkItem], local: frozenset[str] = frozenset()) -> bool:
    """Whether more than one item can run at once (else executor.execute runs them in order)."""
    return len(slots(items, local)) > 1


def estimated_seconds(item: WorkItem) -> float:
    """An item's wall time as the engine estimates it before running (walltime.py: its
    scenarios' traffic plus the default overhead per repetition); UNKNOWN_S when its lab
    cannot be read."""
    from ..lab.loader import load_lab
    from ..walltime import estimate

    try:
        lab = load_lab(item.lab_dir)
    except Exception:  # noqa: BLE001 - only the order suffers; the item says why when it runs
        return UNKNOWN_S
    chosen = [s for s in lab.scenarios if s.name in item.scenarios]
    return estimate(lab, chosen, lambda _s: 1, item.run.quick).wall_seconds


def expected_seconds(out: Path, items: Sequence[WorkItem]) -> dict[str, float]:
    """Per item key: the mean duration of its finished rounds in this campaign directory
    (item.json's started and finished), else the engine's estimate: the expectation of the
    rounds still to run."""
    took: dict[str, list[float]] = {}
    for i in items:
        rec = out / "items" / i.id / "item.json"
        try:
            data = json.loads(rec.read_text())
            t0 = time.mktime(time.strptime(data["started"], "%Y-%m-%dT%H:%M:%SZ"))
            t1 = time.mktime(time.strptime(data["finished"], "%Y-%m-%dT%H:%M:%SZ"))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if finished(out, i) is not None and t1 >= t0:
            took.setdefault(i.key, []).append(t1 - t0)
    out_s = {k: sum(v) / len(v) for k, v in took.items()}
    for i in items:
        if i.key not in out_s:
            out_s[i.key] = estimated_seconds(i)
    return out_s


@dataclass
class _Queued:
    item: WorkItem
    index: int  # campaign order: the tie-break
    attempts: list[str] = field(default_factory=list)  # hosts tried, in order


@dataclass
class _State:
    queue: list[_Queued]
    expected: dict[str, float]
    alive: dict[str, bool]
    budget: int | None  # items that may still start (--max-items), None: all
    outcomes: list[Outcome] = field(default_factory=list)
    running: dict[str, Attempt] = field(default_factory=dict)  # host -> its attempt
    stop: list[str] = field(default_factory=list)
    lock: threading.Condition = field(default_factory=threading.Condition)
    local: frozenset[str] = frozenset()

    def pick(self, host: str) -> _Queued | None:
        """The next item this host may run (caller holds the lock): longest expected first."""
        mine = [q for q in self.queue if host in item_slots(q.item, self.local) and host not in q.attempts]
        if not mine:
            return None
        q = max(mine, key=lambda q: (self.expected.get(q.item.key, UNKNOWN_S), -q.index))
        self.queue.remove(q)
        return q

    def nobody_left_for(self, q: _Queued) -> bool:
        return not any(self.alive.get(h) and h not in q.attempts for h in item_slots(q.item, self.local))


def execute_pool(out: Path, order: list[WorkItem], inventory: Path | None,
                 log: Callable[[str], None] = print, max_items: int | None = None, remeasure: int = 0,
                 max_attempts: int = MAX_ATTEMPTS, local: frozenset[str] = frozenset()) -> list[Outcome]:
    """executor.execute on every host at once: the same items, the same directory, the same
    re-measure rule (planned rounds first, then extra rounds while a scenario is short)."""
    todo = [i for i in order if finished(out, i) is None]
    outcomes = [Outcome(i, "skipped", finished(out, i)) for i in order if i not in todo]
    now = len(todo) if max_items is None else min(max_items, len(todo))
    hosts = slots(order, local)
    log(f"campaign: {len(order)} work item(s), {len(order) - len(todo)} finished earlier, {len(todo)} to run"
        + (f", {now} of them now (--max-items)" if now < len(todo) else "")
        + f"; on {len(hosts)} host(s) at once: {', '.join(hosts)}"
        + (f"; up to {remeasure} more round(s) per lab x target where repetitions are dropped" if remeasure else ""))
    alive = dict.fromkeys(hosts, True)
    ran = run_batch(out, todo, inventory, log, alive, max_items, max_attempts, local)
    outcomes += ran
    if remeasure:
        budget = None if max_items is None else max_items - sum(o.status in ("done", "incomplete") for o in ran)
        outcomes += _remeasure(out, order, inventory, log, remeasure, alive, budget, max_attempts, local)
    return outcomes


def run_batch(out: Path, items: list[WorkItem], inventory: Path | None, log: Callable[[str], None],
              alive: dict[str, bool], budget: int | None = None,
              max_attempts: int = MAX_ATTEMPTS, local: frozenset[str] = frozenset()) -> list[Outcome]:
    """Run ``items`` on their hosts at once; their outcomes (``left``: not started, for the
    budget or for want of a live host)."""
    st = _State([_Queued(i, n) for n, i in enumerate(items)], expected_seconds(out, items), alive, budget,
                local=local)
    workers = [threading.Thread(target=_worker, args=(st, h, out, inventory, log, max_attempts),
                                name=f"campaign {h}", daemon=True)
               for h in slots(items, local) if alive.get(h, True)]
    for h in slots(items, local):
        alive.setdefault(h, True)

    def stop(signum: int, _frame: FrameType | None) -> None:
        with st.lock:
            if not st.stop:
                st.stop.append(signal.Signals(signum).name)
                for a in st.running.values():
                    a.stop(st.stop[0])
            st.lock.notify_all()

    main = threading.current_thread() is threading.main_thread()
    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
    try:
        for w in workers:
            w.start()
        for w in workers:
            while w.is_alive():
                w.join(0.2)  # a short join: the main thread must stay free for the signal handler
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    if st.stop:
        raise Stopped(st.stop[0])
    rest = []
    for q in st.queue:
        if st.nobody_left_for(q):
            log(f"campaign: {q.item.id} NOT run: no live host of {q.item.target.name} left")
            rest.append(Outcome(q.item, "incomplete", None))
        else:
            rest.append(Outcome(q.item, "left", None))
    return st.outcomes + rest


def _worker(st: _State, host: str, out: Path, inventory: Path | None, log: Callable[[str], None],
            max_attempts: int) -> None:
    while True:
        with st.lock:
            while True:
                if st.stop or not st.alive.get(host) or (st.budget is not None and st.budget <= 0):
                    return
                q = st.pick(host)
                if q is not None:
                    break
                if not st.running:
                    return
                # an item running elsewhere may come back (its host lost): wait for it
                st.lock.wait(0.5)
            if st.budget is not None:
                st.budget -= 1
            # the inventory host behind the slot (a local ansible host runs on "this machine")
            real = next(h for h in q.item.target.hosts if slot_of(h, st.local) == host)
            item = replace(q.item, on_host=None if real == THIS_MACHINE else real)
            q.attempts.append(host)
            tag = f"[{host}]"
            log(f"{tag} {item.lab} round {item.round} on {item.target.name}: {item.selection}"
                + (f" (attempt {len(q.attempts)})" if len(q.attempts) > 1 else ""))
            t0 = time.monotonic()
            try:
                attempt = Attempt(out, item, inventory)
            except OSError as e:  # the command itself cannot start: every item would fail the same way
                log(f"    {tag} cannot start {item.id}: {e}")
                st.outcomes.append(Outcome(item, "incomplete", None))
                st.alive[host] = False
                st.lock.notify_all()
                return
            st.running[host] = attempt

        def echo(line: str, label: str = f"    {tag} {item.lab} r{item.round}: ") -> None:
            log(label + line)

        rc = attempt.wait(echo)
        attempt.clean_up(echo)  # a stopped item's host: nothing of the item left there
        secs = time.monotonic() - t0
        run = finished(out, item)
        lost = attempt.kind.host_lost(rc, attempt.output()) if not attempt.stopped else None
        gone = None  # lost after its item's complete result came home: the result stands
        if run is not None:
            unlike = _not_of_class(item, run)
            if unlike is not None:
                lost = unlike
            elif lost is not None:
                gone, lost = lost, None
        with st.lock:
            del st.running[host]
            if lost is not None:
                st.alive[host] = False
                where = _keep_attempt(out, item, host, len(q.attempts), lost, attempt)
                if st.stop or len(q.attempts) >= max_attempts or st.nobody_left_for(q):
                    why = ("stopped" if st.stop else f"{len(q.attempts)} attempt(s) of at most {max_attempts}"
                           if len(q.attempts) >= max_attempts else "no other live host of its pool")
                    log(f"    {tag} lost ({lost}): {item.id} NOT finished ({why}; attempt kept in {where})")
                    st.outcomes.append(Outcome(item, "incomplete", None, secs))
                else:
                    log(f"    {tag} lost ({lost}): {item.id} goes to another host (attempt kept in {where}); "
                        f"{host} takes no more items")
                    st.queue.append(q)
                    st.expected.setdefault(item.key, secs)
            else:
                if gone is not None:
                    st.alive[host] = False
                    log(f"    {tag} lost ({gone}) after {item.id} came home: its result stands; "
                        f"{host} takes no more items")
                where = item_dir(out, item) / "log.txt"
                log(f"    {tag} {'done' if run else f'NOT finished (exit {rc}; see {where})'} in {secs:.0f} s"
                    + (f": {run}" if run else ""))
                st.outcomes.append(Outcome(item, "done" if run else "incomplete", run, secs))
                if run is not None:
                    _learn(st, item.key, secs)
            _eta(st, log)
            st.lock.notify_all()


def _learn(st: _State, key: str, secs: float) -> None:
    done = [o.seconds for o in st.outcomes if o.item.key == key and o.status == "done"]
    st.expected[key] = sum(done) / len(done) if done else secs


def _eta(st: _State, log: Callable[[str], None]) -> None:
    """The campaign's remaining time over its live hosts: the expected seconds of what is
    queued and running, spread over them (a lower bound when an item is longer than that)."""
    live = sum(1 for v in st.alive.values() if v)
    if not live or (not st.queue and not st.running):
        return
    known = [o.seconds for o in st.outcomes if o.status == "done"]
    mean = sum(known) / len(known) if known else None
    if mean is None:
        return
    left = sum(st.expected.get(q.item.key, mean) for q in st.queue)
    left += sum(st.expected.get(a.item.key, mean) for a in st.running.values()) / 2  # half done, on average
    busy = ", ".join(f"{h}: {a.item.lab} r{a.item.round}" for h, a in st.running.items())
    log(f"campaign: {len(st.outcomes)} item(s) ended, {len(st.queue)} queued, {len(st.running)} running"
        + (f" ({busy})" if busy else "") + f"; about {clock_text(left / live)} left on {live} host(s)")


def _not_of_class(item: WorkItem, run: Path) -> str | None:
    """Why a finished run's host is not of the class its target declares (None: it is)."""
    want = item.target.expect
    if want is None:
        return None
    try:
        m = load_manifest(run)
    except Exception as e:  # noqa: BLE001 - an unreadable manifest cannot vouch for its host
        return f"its manifest cannot be read ({e})"
    why = want.mismatch(m.kernel, m.cpu_model, m.cpu_count)
    return f"not of the pool's class: {why}" if why else None


def _keep_attempt(out: Path, item: WorkItem, host: str, n: int, why: str, attempt: Attempt) -> Path:
    """Move a lost attempt's results out of the item's results root (the merge never sees
    them) into attempts/<n>-<host>/, with why."""
    d = item_dir(out, item)
    keep = d / "attempts" / f"{n}-{host}"
    keep.mkdir(parents=True, exist_ok=True)
    if (d / "results").exists():
        (d / "results").rename(keep / "results")
    (keep / "why.txt").write_text(why + "\n")
    rec = {**attempt.record, "host": host, "lost": why}
    attempt.record.setdefault("attempts", []).append(
        {k: rec.get(k) for k in ("host", "started", "finished", "exit", "lost")})
    store.write_json(d / "item.json", attempt.record)
    return keep


def _remeasure(out: Path, order: list[WorkItem], inventory: Path | None, log: Callable[[str], None],
               remeasure: int, alive: dict[str, bool], budget: int | None, max_attempts: int,
               local: frozenset[str]) -> list[Outcome]:
    """executor.remeasure_all with each wave's extra rounds run at once: after a wave, every
    lab x target is judged again (the merge's rule), until none is short or all are bounded."""
    outcomes: list[Outcome] = []
    counted: set[str] = set()
    cpu = {k: cpu_bound_scenarios(items[0]) for k, items in groups(order).items()}
    while True:
        wave: list[WorkItem] = []
        for k, items in groups(order).items():
            nxt, extras, why = next_round(out, items, remeasure, cpu[k])
            new = [e for e in extras if e.id not in counted]
            counted.update(e.id for e in new)
            add_items(out, new)
            outcomes += [Outcome(e, "skipped", finished(out, e)) for e in new if not any(
                o.item.id == e.id for o in outcomes)]
            if why:
                log(why)
            if nxt is not None:
                add_items(out, [nxt])
                wave.append(nxt)
        if not wave:
            return outcomes
        if budget is not None and budget <= 0:
            return outcomes + [Outcome(i, "left", None) for i in wave]
        ran = run_batch(out, wave, inventory, log, alive, budget, max_attempts, local)
        counted.update(o.item.id for o in ran if o.status != "left")
        outcomes += ran
        if budget is not None:
            budget -= sum(o.status in ("done", "incomplete") for o in ran)
        if any(o.status != "done" for o in ran):
            return outcomes  # not finished: a rerun measures it again

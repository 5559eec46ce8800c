"""Runs resolved actions at their times, on a thread, with millisecond precision.

The clock is ``time.time()``: the one tcpdump stamps packets with, so an event's
time and the capture's packets share an axis. The thread runs SCHED_FIFO when it
may (root), sleeps until ``lead_s`` before the target, then spins on the clock.
bench/timeline_bench.py measures the result (actual - planned, 1000 no-op events 5 ms
apart, load ~10 on the shared 2-core host): SCHED_FIFO + spin p50 0.012 ms, p99 0.06
ms; normal priority, sleep only p50 0.14 ms, p99 18 ms (so without SCHED_FIFO the
thread does not spin). An action's commands run one after another; the
recorded time is when the first starts, and ``duration_ms`` says how long all took.

Controllers act through ``submit`` (now, on their own thread); both kinds of
records land in one list, written as events.csv.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..commands import Cmd
from ..record.model import Event
from .env import Resolved, fill
from .record import record

#: wake this long before an event's time, then spin: measured (bench/timeline_bench.py)
#: sleeps on the shared 2-core host overshoot by up to ~1-2 ms under load
DEFAULT_LEAD_S = 0.003
#: the longest single sleep, so stop() is honoured promptly
_MAX_NAP_S = 0.05
#: SCHED_FIFO priority of the timeline thread (below the delay lines' 10): a sleeper of
#: normal priority on the shared 2-core host woke up to 20+ ms late under load. The
#: thread sleeps almost always and spins at most ``lead_s`` per event, and the kernel's
#: RT throttling keeps 5% of the CPU for everyone else whatever happens.
RT_PRIO = 5


def realtime_thread(prio: int = RT_PRIO) -> bool:
    """Make the calling thread SCHED_FIFO (Linux: policy is per thread); False when
    not permitted (not root), and the scheduler then runs with normal priority.
    SCHED_RESET_ON_FORK: what the thread spawns (commands, a flow's iperf3 client)
    runs with normal priority; a real-time bulk sender would starve the host."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(prio))
        return True
    except (OSError, AttributeError):
        return False


@dataclass(frozen=True)
class Outcome:
    rc: int
    result: str
    commands: str


Execute = Callable[[Resolved], Outcome]


def wait_until(target: float, stop: threading.Event, clock: Callable[[], float] = time.time,
               lead_s: float = DEFAULT_LEAD_S) -> bool:
    """Return at ``clock() >= target`` (True), or False when ``stop`` is set first."""
    while True:
        remaining = target - clock()
        if remaining <= 0:
            return True
        if stop.is_set():
            return False
        if remaining > lead_s:
            time.sleep(min(remaining - lead_s, _MAX_NAP_S))
            continue
        while clock() < target:  # the last few milliseconds: spin
            pass
        return True


class Scheduler:
    def __init__(self, execute: Execute, clock: Callable[[], float] = time.time,
                 lead_s: float = DEFAULT_LEAD_S, rt_prio: int = RT_PRIO) -> None:
        self._execute = execute
        self._clock = clock
        self._lead = lead_s
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._records: list[Event] = []
        self._thread: threading.Thread | None = None
        self._pending: list[Resolved] = []
        self._zero: float | None = None
        self.realtime = False
        self._rt_prio = rt_prio  # 0: normal scheduling

    # ------------------------------------------------------------ timeline
    def start(self, items: list[Resolved], zero_event: threading.Event, zero: Callable[[], float | None]) -> None:
        """Run ``items`` (time order) on a thread, once ``zero_event`` is set; their
        times are relative to ``zero()`` read then."""
        self._pending = sorted(items, key=lambda r: r.planned_s)
        self._thread = threading.Thread(target=self._run, args=(zero_event, zero), name="timeline", daemon=True)
        self._thread.start()

    def _run(self, zero_event: threading.Event, zero: Callable[[], float | None]) -> None:
        self.realtime = self._rt_prio > 0 and realtime_thread(self._rt_prio)
        if not self.realtime:
            # measured (bench/timeline_bench.py --no-rt): a normal-priority thread that
            # spins uses up its time slice and is preempted, p99 132 ms against 18 ms
            # for sleeping only; spinning pays only when nothing preempts the thread
            self._lead = 0.0
        while not zero_event.wait(_MAX_NAP_S):
            if self._stop.is_set():
                return
        t0 = zero()
        if t0 is None:
            return
        self._zero = t0
        while self._pending:
            item = self._pending[0]
            if not wait_until(t0 + item.planned_s, self._stop, self._clock, self._lead):
                return
            self._pending.pop(0)
            self._run_one(item, t0)

    def _run_one(self, item: Resolved, t0: float) -> Event:
        began = self._clock()
        out = self._execute(item)
        rec = record(item, actual_s=round(began - t0, 6), commands=out.commands, rc=out.rc,
                     duration_ms=round((self._clock() - began) * 1000, 3), result=out.result,
                     epoch_s=round(began, 6))
        with self._lock:
            self._records.append(rec)
        return rec

    # ------------------------------------------------------------ controllers
    def submit(self, item: Resolved, t0: float) -> Event:
        """Run ``item`` now on the caller's thread (a controller's decision)."""
        return self._run_one(item, t0)

    # ------------------------------------------------------------ end
    def stop(self, timeout: float = 10.0) -> list[Event]:
        """Stop waiting; events not run yet are recorded as not run. Returns every record."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        with self._lock:
            for item in self._pending:
                self._records.append(record(item, result="not run: the traffic ended first"))
            self._pending = []
            return list(self._records)


def backend_executor(run: Callable[[Sequence[Cmd]], list[subprocess.CompletedProcess[str]]],
                     render: Callable[[Cmd], str]) -> Execute:
    """Execute with a backend's ``run`` (one command at a time, unchecked: a failed
    action is recorded with its exit status and stderr, it does not end the run)."""

    def execute(item: Resolved) -> Outcome:
        cmds, looked = item.cmds, ""
        if item.lookup is not None:
            # run-time values first (a token, a port, an id); the commands are not run without them
            seen = render(item.lookup.cmd)
            try:
                values = item.lookup.values(run([item.lookup.cmd])[0].stdout or "")
            except Exception as e:  # noqa: BLE001 - recorded in events.csv; the run goes on
                return Outcome(1, f"lookup: {e}", " ; ".join([seen, *(render(c) for c in cmds)]))
            cmds = tuple(fill(c, values) for c in cmds)
            looked = " ".join(f"{k}={v}" for k, v in values.items())
        rc, errs, shown = 0, [], [render(c) for c in cmds]
        if item.lookup is not None:
            shown.insert(0, render(item.lookup.cmd))
        code: int
        for c in cmds:
            try:
                p = run([c])[0]
                code, err = p.returncode, (p.stderr or "").strip()
            except Exception as e:  # noqa: BLE001 - recorded in events.csv; the run goes on
                code, err = -1, str(e)
            if code and not rc:
                rc = code
            if code and err:
                errs.append(err.replace("\n", " "))
        result = ""
        if item.call is not None:
            shown.append(item.call_text)
            try:
                result = item.call()
            except Exception as e:  # noqa: BLE001
                rc, result = rc or 1, f"{type(e).__name__}: {e}"
        return Outcome(rc, "; ".join([*errs] if errs else [t for t in (looked, result) if t]), " ; ".join(shown))

    return execute

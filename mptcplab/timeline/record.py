"""events.csv: one row per action a repetition executed (timeline or controller), and
each controller's own trace (controller-<name>-<node>.csv: what it saw at each step).

A row is record.model.Event, one typed record for the writers and the readers (read back
by record/events.read_events). Times are seconds from the timeline's zero (steps.base.TrafficState.t_zero:
the measured flow's client spawn or its connection, time.time(), the clock tcpdump stamps
packets with). ``capture_s`` is added by the analysis: the same instant on the time-series
axis (seconds since the data connection's first SYN), so figures can mark events on
timeseries.csv.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..record.model import EVENT_COLUMNS, Event
from ..record.model import EVENTS_FILE as EVENTS_FILE  # the writers' name for it
from .actions import subject

if TYPE_CHECKING:
    from ..lab.events import ControllerSpec
    from .env import Resolved

COLUMNS = EVENT_COLUMNS


def record(item: Resolved, *, actual_s: float | None = None, commands: str = "", rc: int | None = None,
           duration_ms: float | None = None, result: str = "", epoch_s: float | None = None) -> Event:
    """The events.csv record of ``item`` with what running it gave (defaults: not run)."""
    return Event.model_validate({
        "planned_s": item.planned_s, "actual_s": actual_s, "action": item.action, "target": item.target,
        "commands": commands, "rc": rc, "duration_ms": duration_ms, "result": result, "source": item.source,
        "epoch_s": epoch_s, "detail": item.detail, **subject(item.event)})


def write_events(path: Path, records: list[Event]) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in sorted(records, key=lambda r: (r.actual_s if r.actual_s is not None else float("inf"), r.planned_s)):
            w.writerow(r.row())


def trace_file(spec: ControllerSpec) -> str:
    """A controller's trace: controller-<name>-<node>.csv (two controllers of one name
    on two nodes each have theirs)."""
    return f"controller-{spec.name}-{spec.node}.csv"


def write_trace(path: Path, rows: list[dict[str, Any]]) -> None:
    """A controller's trace rows as CSV (nothing when it kept none); the columns are the
    first row's keys, with ``epoch_s`` among them for add_capture_time."""
    if not rows:
        return
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def add_capture_time(path: Path, t0_epoch: float | None) -> None:
    """Add ``capture_s`` to a CSV with ``epoch_s`` (events.csv, a controller's trace):
    each row's time on the time-series axis (seconds since the data connection's first
    SYN, analysis t0_epoch); empty when the row has no time (an event that did not run)
    or the capture has no connection."""
    if not path.is_file():
        return
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        fields = [c for c in (reader.fieldnames or COLUMNS) if c != "capture_s"]
    for r in rows:
        epoch = r.get("epoch_s") or ""
        r["capture_s"] = f"{float(epoch) - t0_epoch:.6f}" if epoch and t0_epoch is not None else ""
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[*fields, "capture_s"])
        w.writeheader()
        w.writerows(rows)

"""events.csv: one row per action a repetition executed (timeline or controller).

Times are seconds from the timeline's zero (steps.Rep.t_zero: the measured flow's
client spawn, time.time(), the clock tcpdump stamps packets with). ``capture_s`` is
added by the analysis: the same instant on the time-series axis (seconds since the
data connection's first SYN), so figures can mark events on timeseries.csv.
"""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass, fields
from pathlib import Path

EVENTS_FILE = "events.csv"


@dataclass(frozen=True)
class EventRecord:
    planned_s: float
    actual_s: float | None  # None: never ran (the traffic ended first)
    action: str
    target: str
    commands: str  # the rendered commands, " ; "-separated (or the in-process call)
    rc: int | None  # first non-zero exit status, 0 when all succeeded; None: not run
    duration_ms: float | None
    result: str  # stderr of a failed command, or the call's result
    source: str  # timeline | controller:<name>
    epoch_s: float | None = None  # actual time, time.time()
    detail: str = ""  # a controller's reason for the action, with its numbers ("" for the timeline)

    def row(self) -> dict[str, object]:
        return asdict(self)


COLUMNS = [f.name for f in fields(EventRecord)]


def write_events(path: Path, records: list[EventRecord]) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in sorted(records, key=lambda r: (r.actual_s if r.actual_s is not None else float("inf"), r.planned_s)):
            w.writerow(r.row())


def add_capture_time(path: Path, t0_epoch: float | None) -> None:
    """Add ``capture_s`` to events.csv: each event's time on the time-series axis
    (seconds since the data connection's first SYN, analysis t0_epoch); empty when
    the event did not run or the capture has no connection."""
    if not path.is_file():
        return
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        epoch = r.get("epoch_s") or ""
        r["capture_s"] = f"{float(epoch) - t0_epoch:.6f}" if epoch and t0_epoch is not None else ""
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[*COLUMNS, "capture_s"])
        w.writeheader()
        w.writerows(rows)

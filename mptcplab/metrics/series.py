"""Metrics over a repetition's time series (timeseries.csv, 100 ms bins per subflow):
throughput and packets/s of the connection or of one path inside a time window, and how
often a path stops sending (Kato et al. 2020, Fig 4: "repeats sending and stopping").

The paper-style findings these serve compare windows of one transfer (before and after a
path is removed at 5 s, during and after a flood) and a scenario with the TCP reference
over the same window; the whole-transfer goodput (core.goodput_mbps) cannot say either.

Time axis. A window is in seconds from the measured flow's start (the timeline's zero, when
its client was spawned, as events are); timeseries.csv counts from the connection's first
SYN. The offset between the two is read from events.csv, whose rows carry the same instant
on both axes (``actual_s`` and ``capture_s``); a repetition without events has no such
row and is read with offset 0 (the SYN leaves within milliseconds of the spawn, well
inside one 100 ms bin). A bin belongs to the window when its start is in [start, end); a
bin the capture has no row for inside the covered span counts as zero bytes (nothing
arrived). A repetition whose series ends before the window starts, or that has no
timeseries.csv (an older run, a failed analysis), has no value, never a made-up zero.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ..record.events import read_events
from ..record.model import EVENTS_FILE, ResultsFormatError
from .base import Select, register

if TYPE_CHECKING:
    from ..record.model import Repetition

#: timeseries.csv's bin width (docs/results-format.md)
BIN_S = 0.1


@lru_cache(maxsize=256)
def _read(path: str, mtime_ns: int) -> pd.DataFrame | None:
    # mtime in the key: a re-analyzed repetition is read again, not served stale
    try:
        return pd.read_csv(path)
    except (OSError, ValueError, pd.errors.EmptyDataError):
        return None


def _csv(r: Repetition, name: str) -> pd.DataFrame | None:
    d = r.files_dir()
    if d is None:
        return None
    p = Path(d) / name
    try:
        st = p.stat()
    except OSError:
        return None
    return _read(str(p), st.st_mtime_ns)


@lru_cache(maxsize=256)
def _offset(path: str, mtime_ns: int) -> float:
    try:
        both = [e.capture_s - e.actual_s for e in read_events(path)
                if e.capture_s is not None and e.actual_s is not None]
    except (OSError, ResultsFormatError):
        return 0.0
    return float(statistics.median(both)) if both else 0.0


def capture_offset(r: Repetition) -> float:
    """Seconds to add to a time after the measured flow's start to get timeseries.csv's
    axis (the median over the repetition's events that have both times; 0 without)."""
    d = r.files_dir()
    if d is None:
        return 0.0
    p = Path(d) / EVENTS_FILE
    try:
        return _offset(str(p), p.stat().st_mtime_ns)
    except OSError:
        return 0.0


def window_bins(r: Repetition, sel: Select, column: str) -> pd.Series | None:
    """Per 100 ms bin of ``sel``'s window, ``column`` summed over the selected subflows
    (one path, or the whole connection), bins without a row as 0; None when the
    repetition has no such series or it does not reach the window."""
    ts = _csv(r, "timeseries.csv")
    if ts is None or column not in ts.columns or ts.empty:
        return None
    # the connection's last bin: every subflow has every bin up to it (analysis/stats.py)
    last = round(float(pd.to_numeric(ts["t"]).max()) / BIN_S)
    if sel.path is not None:
        ts = ts[ts["path"].astype(str) == sel.path]
    off = capture_offset(r)
    if sel.window is None:
        first_bin, end_bin = 0, last + 1
    else:
        first_bin = math.ceil(round((sel.window[0] + off) / BIN_S, 6))
        end_bin = math.ceil(round((sel.window[1] + off) / BIN_S, 6))
        if first_bin > last:
            return None  # the series ends before the window: not measured, not zero
    per_bin = ts.assign(b=(pd.to_numeric(ts["t"]) / BIN_S).round().astype(int)).groupby("b")[column].sum()
    index = range(max(first_bin, 0), max(end_bin, first_bin + 1))
    return per_bin.reindex(index, fill_value=0).astype(float)


def _mean_rate(column: str, scale: float) -> Callable[[Repetition, Select], float | None]:
    def per_rep(r: Repetition, sel: Select) -> float | None:
        bins = window_bins(r, sel, column)
        return None if bins is None or bins.empty else float(bins.mean() * scale / BIN_S)
    return per_rep


def _pps_cv(r: Repetition, sel: Select) -> float | None:
    bins = window_bins(r, sel, "packets")
    if bins is None or len(bins) < 2 or bins.mean() == 0:
        return None
    return float(bins.std(ddof=0) / bins.mean())


#: a bin with at most this many data packets on the path is a stop: a lone sub-MSS segment
#: (the 880-byte single packets between the slow subflow's bursts in labs/sndbuf's records)
#: moves no visible data; one packet per 100 ms is 0.1 % of a 100 Mbit/s path
IDLE_PACKETS = 1


def _idle_share(r: Repetition, sel: Select) -> float | None:
    # only between the path's first and last sending bin: before its join and after its last
    # data the path is not stopping, it has not started or has finished
    bins = window_bins(r, sel, "packets")
    if bins is None:
        return None
    sending = bins.to_numpy() > IDLE_PACKETS
    if not sending.any():
        return None  # the path never sent: no on/off to measure
    first, last = sending.argmax(), len(sending) - 1 - sending[::-1].argmax()
    return float(1.0 - sending[first:last + 1].mean())


register("throughput_mbps", _mean_rate("bytes", 8 / 1e6))
register("path_throughput_mbps", _mean_rate("bytes", 8 / 1e6))
register("path_pps", _mean_rate("packets", 1.0))
register("path_pps_cv", _pps_cv)
register("path_idle_share", _idle_share)

"""Packet-delivery traces (Mahimahi's format) as data: read once, checked, typed.

A trace is one line per delivery opportunity: the time in integer milliseconds since
the trace's start, non-decreasing; the same millisecond on n lines is n opportunities.
Each opportunity may deliver ``OPPORTUNITY_BYTES`` (Mahimahi's PACKET_SIZE: a
1500-byte packet and the 4 bytes of tun's header its packets carry); the trace loops
with a period equal to its last time. The delay line replays it
(native/delayline/delaysched.h, the trace stage); this module is what the Python side
knows of it: the checks the reader makes (the delay line makes the same ones), the
mean and peak rate, and the capacity series per window that the link checks and the
figures compare deliveries with.

Hand-written because it is small and no package reads this format: Mahimahi itself is
a C++ program (GPL), not a library.

Opportunity semantics shared with the delay line: the trace is at ``offset`` when the
delay line starts; a packet arriving at trace time t can use only opportunities
strictly after t (Mahimahi burns every opportunity due at or before "now" before it
enqueues), so a window (a, b] of trace time holds the opportunities whose time is in
it: ``capacity_series`` counts them that way.
"""

from __future__ import annotations

import hashlib
import os
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

#: bytes one delivery opportunity may carry (Mahimahi's PACKET_SIZE)
OPPORTUNITY_BYTES = 1504
#: what the delay line adds to a packet's IP length before it spends credit: tun's
#: header, which Mahimahi's packets carry, so a 1500-byte IP packet is one opportunity
PACKET_OVERHEAD = 4
#: the window of the capacity series and of the peak rate (the link check's window)
WINDOW_S = 0.1
#: file name endings looked up for a trace name, in this order
TRACE_SUFFIXES = (".trace",)


def traces_dir() -> Path:
    """The repository's shipped traces: <repo>/traces (traces/README.md says what each is).
    The checkout is found as base.repo_root finds it; not imported from there, because
    base imports linkmodel, which imports this module."""
    return Path(__file__).resolve().parents[2] / "traces"


class TraceError(ValueError):
    """A trace that cannot be replayed: one line naming the file, the line and the problem."""

    def __init__(self, path: Path | str, line: int | None, problem: str) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        super().__init__(f"{path}:{line}: {problem}" if line is not None else f"{path}: {problem}")


@dataclass(frozen=True)
class Trace:
    """One delivery trace. Two traces are equal when they are the same file with the same
    content (``sha256``); the opportunities themselves are not compared element-wise."""

    path: Path
    sha256: str
    #: the opportunities' times in ms, non-decreasing, the last > 0
    stamps_ms: tuple[int, ...] = field(compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def period_ms(self) -> int:
        return self.stamps_ms[-1]

    @property
    def opportunities(self) -> int:
        """Opportunities per period."""
        return len(self.stamps_ms)

    @property
    def mean_rate_bps(self) -> float:
        """What the trace can carry on average over its period (bit/s of packets counted as
        the delay line counts them: IP length + ``PACKET_OVERHEAD``)."""
        return self.opportunities * OPPORTUNITY_BYTES * 8 / (self.period_ms / 1000)

    @property
    def peak_rate_bps(self) -> float:
        """The largest rate over a ``WINDOW_S`` window, windows laid from the trace's start
        (one period, the last window continuing into the next loop)."""
        windows = -(-self.period_ms // round(WINDOW_S * 1000))
        return max(self.capacity_series(windows * WINDOW_S)) * 8 / WINDOW_S

    def delivered_by(self, t_us: int) -> int:
        """Opportunities at trace time <= ``t_us`` (microseconds from the trace's start,
        counting loops)."""
        period_us = self.period_ms * 1000
        loops, rest = divmod(t_us, period_us)
        return loops * self.opportunities + bisect_right(self.stamps_ms, rest / 1000)

    def capacity_series(self, duration_s: float, window_s: float = WINDOW_S,
                        offset_s: float = 0.0) -> tuple[int, ...]:
        """Bytes the link may deliver in each window of ``window_s`` over ``duration_s``
        from the delay line's start, the trace starting ``offset_s`` in (looped, as the
        delay line replays it): window i holds the opportunities in trace time
        (offset + i w, offset + (i + 1) w]."""
        if window_s <= 0 or duration_s < 0 or offset_s < 0:
            raise ValueError("window_s must be > 0, duration_s and offset_s >= 0")
        w_us, off_us = round(window_s * 1e6), round(offset_s * 1e6)
        n = round(duration_s / window_s)
        edges = [self.delivered_by(off_us + i * w_us) for i in range(n + 1)]
        return tuple((b - a) * OPPORTUNITY_BYTES for a, b in zip(edges, edges[1:], strict=False))

    def describe(self) -> str:
        """One line for dry runs and reports."""
        return (f"trace {self.name}: {self.opportunities} opportunities in {self.period_ms / 1000:g} s, "
                f"mean {self.mean_rate_bps / 1e6:.3g} Mbit/s, peak {self.peak_rate_bps / 1e6:.3g} Mbit/s "
                f"per {WINDOW_S * 1000:g} ms")


def parse_trace(text: str, path: Path | str) -> tuple[int, ...]:
    """The opportunities of a trace file's text; TraceError on the first problem: an empty
    line, a line that is not a non-negative integer, a time before the previous line's, no
    line at all, or a last time of 0 (the period: a trace must last)."""
    stamps: list[int] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line, it does not start an empty one
    prev = 0
    for no, raw in enumerate(lines, 1):
        line = raw.removesuffix("\r")
        if not line:
            raise TraceError(path, no, "empty line")
        if not (line.isascii() and line.isdigit()):
            raise TraceError(path, no, f"{line[:40]!r} is not a time in ms (a non-negative integer)")
        ms = int(line)
        if ms > 2**32 - 1:
            raise TraceError(path, no, f"{ms} ms is too large")
        if ms < prev:
            raise TraceError(path, no, f"{ms} ms is before the previous line's {prev} ms (times must not decrease)")
        stamps.append(ms)
        prev = ms
    if not stamps:
        raise TraceError(path, None, "no delivery opportunities (empty trace)")
    if stamps[-1] == 0:
        raise TraceError(path, len(stamps), "the last time is 0 ms: a trace must last (its period is its last time)")
    return tuple(stamps)


@lru_cache(maxsize=64)
def _load(path: Path, mtime_ns: int, size: int) -> Trace:
    data = path.read_bytes()
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise TraceError(path, None, "not a text file of times in ms") from None
    return Trace(path, hashlib.sha256(data).hexdigest(), parse_trace(text, path))


def load_trace(path: Path | str) -> Trace:
    """The trace in ``path`` (absolute once loaded); read again only when the file changed."""
    p = Path(path).resolve()
    try:
        st = p.stat()
    except OSError as e:
        raise TraceError(p, None, e.strerror or "cannot be read") from None
    if not p.is_file():
        raise TraceError(p, None, "not a file")
    return _load(p, st.st_mtime_ns, st.st_size)


def resolve_trace(ref: str, lab_dir: Path | str) -> Path:
    """Where a lab's ``trace:`` points: a name without a directory or suffix is a shipped
    trace (traces/NAME.trace); anything else is a path, relative to the lab's directory."""
    if os.sep not in ref and "/" not in ref and not Path(ref).suffix:
        for suffix in TRACE_SUFFIXES:
            cand = traces_dir() / f"{ref}{suffix}"
            if cand.is_file():
                return cand
        known = sorted(p.stem for s in TRACE_SUFFIXES for p in traces_dir().glob(f"*{s}"))
        raise TraceError(ref, None, f"no shipped trace of that name in {traces_dir()} "
                         f"(known: {', '.join(known) or 'none'}; a path to a file works too)")
    p = Path(ref)
    return p if p.is_absolute() else Path(lab_dir) / p


def trace_for(ref: str, lab_dir: Path | str) -> Trace:
    """``resolve_trace`` then ``load_trace``: the lab's trace, parsed."""
    return load_trace(resolve_trace(ref, lab_dir))

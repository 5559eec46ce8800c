"""Progress of a long run: which repetition of how many, the time elapsed and an ETA.

Not on a terminal (CI logs, notebooks, a pipe): one plain line per repetition as it starts,
which reads the same everywhere. On a terminal: the same lines scroll above a live status
line redrawn twice a second, with the counters, a bar over the repetitions, elapsed and
ETA, and during the traffic of a repetition its seconds elapsed of its duration (a
repetition can last minutes: the bar moves inside it). Every other line of the run goes
through ``Progress.log`` so it is printed above the status line, never through it.

ETA: the mean wall time of the repetitions finished so far times those left, minus the
time already spent in the current one (at most one mean). The repetitions of one lab run
the same traffic durations and checks, so after the first the mean is a fair estimate
(analysis overlaps the next measurement, so it adds little).

Why no library (rich, tqdm): one status line with ANSI "erase line" is all this needs, and
it keeps the hashed lock files unchanged; the rendering is a pure function (``status_text``),
tested with a fake console and clock.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

#: how often the status line is redrawn on a terminal
TICK_S = 0.5
BAR_WIDTH = 20
#: carriage return + ANSI "erase to end of line": the status line is rewritten in place
CLEAR = "\r\x1b[K"


def clock_text(seconds: float) -> str:
    """1:05 for 65 s, 1:01:05 past the hour."""
    s = max(0, round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class TrafficProgress(Protocol):
    """What the traffic step tells (steps.RunContext.progress)."""

    def traffic_started(self, duration_s: float) -> None: ...

    def traffic_ended(self) -> None: ...


class Console(Protocol):
    """What the live status line writes to (sys.stdout, or a test's fake)."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


def bar(fraction: float, width: int = BAR_WIDTH) -> str:
    """[#####-----] for a fraction in [0, 1] (clamped)."""
    n = round(max(0.0, min(1.0, fraction)) * width)
    return "[" + "#" * n + "-" * (width - n) + "]"


@dataclass
class Progress:
    """Counts repetitions and estimates what is left. ``console``: a terminal to draw the
    live status line on (None: plain lines only, through ``log``)."""

    total: int
    log_line: Callable[[str], None] = print
    clock: Callable[[], float] = time.monotonic
    console: Console | None = None
    #: seconds between redraws of the status line (0: only when something changes; tests)
    tick_s: float = TICK_S
    #: terminal width for the status line
    columns: int = 100
    done: int = 0
    started: float = field(default=0.0, init=False)
    current: str = field(default="", init=False)
    rep_started: float | None = field(default=None, init=False)
    traffic_at: float | None = field(default=None, init=False)
    traffic_s: float | None = field(default=None, init=False)
    #: the current repetition's traffic has ended (its share of the bar stays full)
    traffic_over: bool = field(default=False, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _ticker: threading.Thread | None = field(default=None, init=False, repr=False)
    _shown: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        self.started = self.clock()
        if self.console is not None and self.tick_s > 0:
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()

    @classmethod
    def for_run(cls, total: int, log: Callable[[str], None] = print) -> Progress:
        """A live status line when the run prints to a terminal (``log`` is print and stdout
        is a tty that understands ANSI), plain lines otherwise."""
        live = log is print and sys.stdout.isatty() and os.environ.get("TERM", "dumb") != "dumb"
        cols = shutil.get_terminal_size((100, 24)).columns
        return cls(total, log_line=log, console=sys.stdout if live else None, columns=cols)

    # ------------------------------------------------------------------ arithmetic
    def eta_s(self) -> float | None:
        """Seconds left, None before the first repetition finished."""
        if self.done == 0:
            return None
        now = self.clock()
        finished_at = now if self.rep_started is None else self.rep_started
        mean = (finished_at - self.started) / self.done
        in_rep = 0.0 if self.rep_started is None else min(now - self.rep_started, mean)
        return max(0.0, mean * (self.total - self.done) - in_rep)

    def status_text(self) -> str:
        """The live status line (no newline), cut to the terminal's width."""
        now = self.clock()
        n = min(self.done + (1 if self.rep_started is not None else 0), self.total)
        frac = self.done / self.total if self.total else 1.0
        parts = [f"[{n}/{self.total}] {self.current}".rstrip()]
        if self.traffic_at is not None and self.traffic_s:
            t = now - self.traffic_at
            parts.append(f"traffic {min(t, self.traffic_s):.0f}/{self.traffic_s:.0f} s"
                         + (" (finishing)" if t > self.traffic_s else ""))
            frac += min(1.0, t / self.traffic_s) / self.total if self.total else 0.0
        elif self.traffic_over and self.total:
            frac += 1.0 / self.total
        eta = self.eta_s()
        parts.append(f"elapsed {clock_text(now - self.started)}")
        parts.append(f"about {clock_text(eta)} left" if eta is not None else "ETA after the first repetition")
        text = f"{bar(frac)} " + " | ".join(parts)
        return text[: max(10, self.columns - 1)]

    # ------------------------------------------------------------------ events
    def begin(self, scenario: str, rep: int, reps: int) -> str:
        """Announce a repetition; returns the line it logged."""
        elapsed = clock_text(self.clock() - self.started)
        eta = self.eta_s()
        left = f"about {clock_text(eta)} left" if eta is not None else "ETA after the first repetition"
        line = (f"[{self.done + 1}/{self.total}] {scenario} rep {rep}/{reps}: "
                f"elapsed {elapsed}, {left}")
        with self._lock:
            self.current = f"{scenario} rep {rep}/{reps}"
            self.rep_started = self.clock()
            self.traffic_over = False
        self.log(line)
        return line

    def finished(self) -> None:
        with self._lock:
            self.done += 1
            self.rep_started = None
            self.traffic_over = False
            self.current = f"{self.current} done" if self.current else ""
            self.traffic_at = self.traffic_s = None
        self.redraw()

    def traffic_started(self, duration_s: float) -> None:
        """The repetition's clients started; they should end after ``duration_s``."""
        with self._lock:
            self.traffic_at, self.traffic_s = self.clock(), duration_s
        self.redraw()

    def traffic_ended(self) -> None:
        with self._lock:
            self.traffic_at = self.traffic_s = None
            self.traffic_over = True
        self.redraw()

    # ------------------------------------------------------------------ output
    def log(self, line: str) -> None:
        """A line of the run: above the status line on a terminal, plain otherwise."""
        if self.console is None:
            self.log_line(line)
            return
        with self._lock:
            self.console.write((CLEAR if self._shown else "") + line + "\n")
            self._shown = False
            self._draw()

    def redraw(self) -> None:
        if self.console is not None:
            with self._lock:
                self._draw()

    def _draw(self) -> None:
        assert self.console is not None
        self.console.write(CLEAR + self.status_text())
        self.console.flush()
        self._shown = True

    def _tick(self) -> None:
        while not self._stop.wait(self.tick_s):
            self.redraw()

    def close(self) -> None:
        """Stop redrawing and leave the terminal on a fresh line."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2)
        if self.console is not None:
            with self._lock:
                if self._shown:
                    self.console.write(CLEAR)
                    self.console.flush()
                    self._shown = False
                # lines logged after the run (its summary) are plain: no status line to keep
                self.console = None

"""Progress of a long run: which repetition of how many, the time elapsed and an ETA.

One plain line per repetition, as it starts: it reads the same on a terminal, in a CI log
and in a notebook cell's captured output. The ETA is the mean wall time of the
repetitions finished so far times those left: the repetitions of one lab run the same
traffic durations and checks, so after the first one the mean is a fair estimate (analysis
overlaps the next measurement, so it adds little)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


def clock_text(seconds: float) -> str:
    """1:05 for 65 s, 1:01:05 past the hour."""
    s = max(0, round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


@dataclass
class Progress:
    total: int
    log: Callable[[str], None] = print
    clock: Callable[[], float] = time.monotonic
    done: int = 0
    started: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def eta_s(self) -> float | None:
        """Seconds left, None before the first repetition finished."""
        if self.done == 0:
            return None
        return (self.clock() - self.started) / self.done * (self.total - self.done)

    def begin(self, scenario: str, rep: int, reps: int) -> str:
        """Announce a repetition; returns the line it logged."""
        elapsed = clock_text(self.clock() - self.started)
        eta = self.eta_s()
        left = f"about {clock_text(eta)} left" if eta is not None else "ETA after the first repetition"
        line = (f"[{self.done + 1}/{self.total}] {scenario} rep {rep}/{reps}: "
                f"elapsed {elapsed}, {left}")
        self.log(line)
        return line

    def finished(self) -> None:
        self.done += 1

"""``mptcplab analyze --follow S``: capture files still being written (``tcpdump -U -w``, or a lab
run's capture points) analyzed again whenever they grew, every S seconds, with the tables and
figures rewritten each time: mptcpanalyzer's live plots, as files an image viewer reloads
rather than a window.

Each round reads the files from the start (the native reader takes about 0.1 s per 30k
packets); a packet cut short at the end of a file being written is left for the next round
(pcapread warns and keeps the complete ones). It stops when no file has grown for
``idle_rounds`` rounds (the capture ended), or on Ctrl-C in the command.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .model import FlowAnalysis


def _sizes(files: Sequence[Path]) -> tuple[int, ...]:
    return tuple(Path(f).stat().st_size if Path(f).is_file() else -1 for f in files)


def follow(files: Sequence[Path], interval: float, analyze: Callable[[], None], idle_rounds: int = 3,
           sleep: Callable[[float], None] = time.sleep) -> int:
    """Call ``analyze`` now, then after each ``interval`` seconds in which a file's size changed;
    return after ``idle_rounds`` intervals in a row without a change. The number of analyses."""
    sizes = _sizes(files)
    analyze()
    done, idle = 1, 0
    while idle < idle_rounds:
        sleep(interval)
        now = _sizes(files)
        if now == sizes:
            idle += 1
            continue
        sizes, idle = now, 0
        analyze()
        done += 1
    return done


def status_line(fa: FlowAnalysis) -> str:
    """One line per round: what the capture holds so far."""
    subs = ", ".join(f"{s.path or '?'} {s.bytes} B" for s in fa.subflows) or "no subflow yet"
    return (f"{time.strftime('%H:%M:%S')} {fa.packets} packets; MPTCP negotiated={fa.mptcp_negotiated}; "
            f"subflows: {subs}; MPTCP-level re-sends {fa.mptcp_retransmissions}")

"""Starting and stopping named flows during a run (the seam ``rep.flow_control`` the timeline drives).

The Traffic step starts flows at their start offsets through this object; a timeline
event (``flow_start`` / ``flow_stop``, another thread) calls the same ``start`` and
``stop``. Stopping is SIGINT to the client: iperf3, wrk and the churn client write
their report on it.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Started:
    proc: subprocess.Popen[bytes]
    path: Path
    #: time.time() at spawn: on the capture clock (same host clock)
    at: float
    stopped: bool = False


class FlowControl:
    """``spawn(name) -> (process, output path)`` starts a flow's client; ``send(p, sig)``
    signals it through the backend. ``on_start(name, t)`` is told of every start."""

    def __init__(self, spawn: Callable[[str], tuple[subprocess.Popen[bytes], Path]],
                 send: Callable[[subprocess.Popen[bytes], int], None],
                 on_start: Callable[[str, float], None] | None = None) -> None:
        self._spawn = spawn
        self._send = send
        self._on_start = on_start
        self._lock = threading.Lock()
        self.started: dict[str, Started] = {}

    def start(self, name: str) -> None:
        """Start a flow's client once; a second start of the same flow is ignored (said by
        returning without effect: a flow runs one client per repetition)."""
        with self._lock:
            if name in self.started:
                return
            proc, path = self._spawn(name)
            s = Started(proc, path, time.time())
            self.started[name] = s
        if self._on_start is not None:
            self._on_start(name, s.at)

    def stop(self, name: str) -> None:
        """SIGINT to a running client (it writes its report and exits); nothing if not running."""
        with self._lock:
            s = self.started.get(name)
            if s is None or s.proc.poll() is not None:
                return
            s.stopped = True
            self._send(s.proc, signal.SIGINT)

    def running(self) -> list[str]:
        with self._lock:
            return [n for n, s in self.started.items() if s.proc.poll() is None]

    def is_started(self, name: str) -> bool:
        with self._lock:
            return name in self.started

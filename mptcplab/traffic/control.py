"""Starting and stopping named flows during a run (the seam ``rep.traffic.flow_control`` the timeline drives).

The Traffic step starts flows at their start offsets through this object; a timeline
event (``flow_start`` / ``flow_stop``, another thread) calls the same ``start`` and
``stop``. Stopping is SIGINT to the client: iperf3, wrk and the churn client write
their report on it.

Also where the timeline's zero falls (``traffic.timeline_zero``, docs/lab-format.md): at
the measured client's spawn, or once its connection is ESTABLISHED on the client
(``established_cmd`` polled by ``wait_established``; a client that starts slowly, Python
under a software-emulated CPU, connects more than a second after its spawn).
"""

from __future__ import annotations

import ipaddress
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..commands import Cmd, cmd
from ..lab.schema import TimelineZero as ZeroAt

#: how long the run waits for the measured flow's connection before it falls back to the spawn
#: as the zero (a coded warning): mptcp_join.sh's own poll timeout (``timeout_poll=30``)
ESTABLISHED_TIMEOUT_S = 30.0
#: between two polls (each is a command in the node: 5-90 ms to spawn under load)
POLL_INTERVAL_S = 0.02


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


def established_cmd(node: str, address: str, port: int) -> Cmd:
    """The client's TCP sockets ESTABLISHED to ``address``:``port`` (an MPTCP connection's
    initial subflow is one; a fallen-back connection too): a line once connected."""
    # as written (an IPv4-mapped literal stays ::ffff:a.b.c.d); ss reads a bare IPv6 address
    # as a port, hence the brackets
    dst = f"[{address}]" if ipaddress.ip_address(address).version == 6 else address
    return cmd("ss", "-tnH", "state", "established", "dst", dst, "dport", "=", f":{port}", node=node,
               check=False, why="is the measured flow's connection established? (the timeline's zero)")


@dataclass(frozen=True)
class Zero:
    """Where a repetition's timeline zero was put (rep.json ``timeline_zero``; events.csv's
    ``timeline_zero`` row when the lab asks for the connection)."""

    asked: ZeroAt
    #: the zero used: ``connection``, or ``spawn`` (asked, or the fallback: ``problem`` says why)
    used: ZeroAt
    flow: str
    #: time.time() at the client's spawn and at the zero (the capture's clock)
    spawned_epoch: float
    epoch: float
    #: ss polls made; the zero is the end of the first that listed the connection
    polls: int = 0
    #: why the connection's zero could not be used (empty: it was, or was not asked)
    problem: str = ""
    #: the poll as the backend runs it (empty when none)
    command: str = ""

    @property
    def after_spawn_s(self) -> float:
        return self.epoch - self.spawned_epoch

    def record(self) -> dict[str, Any]:
        return {**asdict(self), "after_spawn_s": round(self.after_spawn_s, 6)}


def wait_established(connected: Callable[[], bool], alive: Callable[[], bool],
                     timeout_s: float = ESTABLISHED_TIMEOUT_S, clock: Callable[[], float] = time.time,
                     stop: threading.Event | None = None) -> tuple[float | None, int, str]:
    """Poll ``connected`` until it holds: (the clock after that poll, polls, "") -- an upper
    bound on the moment of establishment, so nothing timed from it runs before the
    connection exists. (None, polls, why) when the client exits first, ``timeout_s`` passes
    or ``stop`` is set."""
    deadline = time.monotonic() + timeout_s
    polls = 0
    while True:
        up = alive()  # before the poll: a client that connected and exited in between counts
        polls += 1
        if connected():
            return clock(), polls, ""
        if not up:
            return None, polls, "the client exited before its connection was seen ESTABLISHED"
        if stop is not None and stop.is_set():
            return None, polls, "the traffic ended first"
        if time.monotonic() >= deadline:
            return None, polls, f"not ESTABLISHED within {timeout_s:g} s of the client's spawn"
        time.sleep(POLL_INTERVAL_S)

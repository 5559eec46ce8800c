"""tracefs instances a repetition owns: created under an ownership record, read
through their own trace_pipe, removed on every exit path and by ``mptcplab clean``.

tracefs is host-wide: the top-level buffer (/sys/kernel/tracing/trace) is shared by
every run and every user of the machine. An *instance* (instances/<name>/) is a
separate ring buffer with its own event enables, filters and clock, so each
repetition gets one (``mptcplab-<hex>``) and two concurrent runs never read each
other's buffer. Ownership follows runstate.py: ``/run/mptcplab/tracefs-<name>.json``
is written before ``mkdir`` and removed after ``rmdir``; ``clean`` removes the
instances of dead owners, and ``mptcplab-*`` instances nobody owns.

File writes are done by this process (there is no command for "write a string to a
file" without a shell); the dry run prints them as comments (steps.Planned.in_process).
"""

from __future__ import annotations

import errno
import os
import re
import select
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .. import runstate

TRACEFS = Path(os.environ.get("MPTCPLAB_TRACEFS", "/sys/kernel/tracing"))
INSTANCE_PREFIX = "mptcplab-"
INSTANCE_RE = re.compile(r"^mptcplab-[0-9a-f]{8}$")
STATE_GLOB = "tracefs-*.json"
#: the instance's clock: CLOCK_MONOTONIC (ktime_get_mono_fast_ns), which Python reads
#: too, so a sample's time.time() is its trace time plus an offset measured at start
TRACE_CLOCK = "mono"
#: per CPU; the reader drains it continuously, this only absorbs a stalled reader
BUFFER_KB = 8192


def instance_dir(name: str) -> Path:
    return TRACEFS / "instances" / name


def _state(name: str) -> Path:
    return runstate.STATE_DIR / f"tracefs-{name}.json"


def ensure_mounted() -> None:
    """tracefs is not mounted on this kernel by default (MACHINE.md)."""
    if (TRACEFS / "instances").is_dir():
        return
    p = subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], capture_output=True, text=True)
    if not (TRACEFS / "instances").is_dir():
        raise RuntimeError(f"tracefs is not available at {TRACEFS}: {p.stderr.strip() or 'mount failed'}")


def clock_offset(samples: int = 5) -> float:
    """time.time() - CLOCK_MONOTONIC, from the pair read closest together (the
    smallest bracket bounds the error of this offset, well under 10 µs here)."""
    best: tuple[float, float] | None = None
    for _ in range(samples):
        a = time.clock_gettime(time.CLOCK_MONOTONIC)
        w = time.time()
        b = time.clock_gettime(time.CLOCK_MONOTONIC)
        if best is None or b - a < best[0]:
            best = (b - a, w - (a + b) / 2)
    assert best is not None
    return best[1]


@dataclass(frozen=True)
class EventSetting:
    """One tracepoint enabled in the instance, with its filter (may be empty)."""

    event: str  # "tcp/tcp_probe"
    filter: str = ""


def setup_writes(name: str, events: list[EventSetting]) -> list[tuple[Path, str]]:
    """The file writes that configure an instance, in order (the dry run prints them)."""
    d = instance_dir(name)
    out: list[tuple[Path, str]] = [(d / "trace_clock", TRACE_CLOCK), (d / "buffer_size_kb", str(BUFFER_KB))]
    for ev in events:
        if ev.filter:
            out.append((d / "events" / ev.event / "filter", ev.filter))
    out += [(d / "events" / ev.event / "enable", "1") for ev in events]
    out.append((d / "tracing_on", "1"))
    return out


def _write(path: Path, value: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(value)
    except OSError as e:
        # a rejected filter says why in the instance's error_log, not in errno
        raise RuntimeError(f"tracefs: writing {value!r} to {path} failed: {e}") from e


class Instance:
    """One repetition's tracefs instance and the thread copying its trace_pipe to a file."""

    def __init__(self, name: str, events: list[EventSetting], out: Path) -> None:
        self.name = name
        self.events = events
        self.out = out
        self.dir = instance_dir(name)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fd: int | None = None
        self.offset_start: float | None = None
        self.offset_stop: float | None = None
        self.bytes = 0

    def create(self) -> None:
        ensure_mounted()
        runstate.write_state(_state(self.name), {"tracefs_instance": str(self.dir)})
        self.dir.mkdir()
        for path, value in setup_writes(self.name, self.events):
            _write(path, value)
        self.offset_start = clock_offset()
        self._fd = os.open(self.dir / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._copy, args=(self.out.open("wb"),),
                                        name=f"tracefs-{self.name}", daemon=True)
        self._thread.start()

    def _copy(self, sink: BinaryIO) -> None:
        assert self._fd is not None
        fd = self._fd
        with sink:
            while True:
                stopping = self._stop.is_set()
                readable, _, _ = select.select([fd], [], [], 0.1)
                got = False
                if readable or stopping:
                    while True:
                        try:
                            chunk = os.read(fd, 1 << 16)
                        except BlockingIOError:
                            break
                        except OSError as e:
                            if e.errno == errno.EINTR:
                                continue
                            raise
                        if not chunk:
                            break
                        sink.write(chunk)
                        self.bytes += len(chunk)
                        got = True
                # stop() disabled the events first: once a drain after the stop request
                # finds nothing, the buffer is empty
                if stopping and not got:
                    return

    def stop(self) -> None:
        """Disable the events, drain what the buffer still holds, remove the instance."""
        try:
            if self.dir.is_dir():
                _write(self.dir / "tracing_on", "0")
            self.offset_stop = clock_offset()
            self._stop.set()
            if self._thread is not None:
                self._thread.join(timeout=10)
        finally:
            self.close()

    def close(self) -> None:
        """Every exit path: stop the reader, remove the instance and its record; never raises."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
        remove_instance(self.name)


RMDIR_TRIES = 100  # x 50 ms


def remove_instance(name: str) -> bool:
    """rmdir the instance (the kernel frees its buffer and event files), then its
    record; True when the instance is gone. rmdir fails with EBUSY while a file of
    the instance is open (a live reader): the record then stays for clean."""
    d = instance_dir(name)
    gone = True
    if d.is_dir():
        try:
            with open(d / "tracing_on", "r+") as f:  # r+: never create it (only tracefs has it)
                f.write("0")
        except OSError:
            pass
        # up to 5 s: the reader's last read can hold the trace_pipe a while on a loaded host
        # (CI saw an interrupted run's instance outlive a 1 s wait)
        for attempt in range(RMDIR_TRIES):
            try:
                d.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError as e:
                if e.errno != errno.EBUSY or attempt == RMDIR_TRIES - 1:
                    gone = False
                    break
                time.sleep(0.05)
    if gone:
        _state(name).unlink(missing_ok=True)
    return gone


def clean(all_runs: bool = False) -> list[str]:
    """Remove the tracefs instances of runs whose process is gone (every run's with
    all_runs), and ``mptcplab-*`` instances no live run owns. Returns their names."""
    removed: list[str] = []
    for st in runstate.run_states(STATE_GLOB, all_runs):
        name = st.path.name.removeprefix("tracefs-").removesuffix(".json")
        if st.live:
            continue
        if remove_instance(name):
            removed.append(name)
    inst = TRACEFS / "instances"
    if inst.is_dir():
        for d in sorted(inst.iterdir()):
            if not INSTANCE_RE.match(d.name) or d.name in removed:
                continue
            # decided per instance, at deletion time (runstate.owner_live): a run that
            # started after the records were read keeps its instance
            if not all_runs and runstate.owner_live(f"tracefs-{d.name}"):
                continue
            if remove_instance(d.name):
                removed.append(d.name)
    return removed

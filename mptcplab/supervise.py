"""Supervision of long-running helper processes (today: the delay lines links need).

A link whose delay line is gone drops every packet (the NFQUEUE rule has no
bypass), so a dead daemon never silently yields an undelayed link; but a run
must also *say* why its traffic stopped. Hence: start and wait for the daemon's
ready marker, ``check()`` between measurement steps, and ``stop()`` with
SIGTERM, which makes the daemon write its stats. A daemon found dead raises
``DaemonDied`` naming it, with the tail of its stderr.

How a node's command becomes a host command is the caller's business: the netns
backend passes ``lambda node, argv: ["ip", "netns", "exec", ns_of(node), *argv]``
(``ip netns exec`` execs the daemon, so the pid we hold is the daemon's).
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HostArgv = Callable[[str, Sequence[str]], list[str]]


@dataclass(frozen=True)
class Daemon:
    """A long-running process a run needs (a link's delay line, a router's rewriting
    middlebox): started and waited for before traffic, stopped after. Described by
    emulation/ and middlebox/, run here."""

    node: str
    argv: tuple[str, ...]
    name: str  # e.g. "delayline ra:eth1<-client:eth1"
    ready_marker: str = "ready"
    stats_path: str | None = None
    # its stats go to the record's delay_line_stats (else daemon_stats): readers judge
    # a delay line's timing, not other daemons'
    delay_line: bool = False

class DaemonError(RuntimeError):
    """A daemon a link needs is not doing its job; the run must fail."""

    def __init__(self, name: str, problem: str, stderr_tail: str = "") -> None:
        self.name = name
        self.problem = problem
        self.stderr_tail = stderr_tail
        msg = f"{name}: {problem}"
        if stderr_tail:
            msg += "\n  stderr: " + stderr_tail.replace("\n", "\n  stderr: ")
        super().__init__(msg)


class DaemonDied(DaemonError):
    """The daemon exited on its own (crashed, killed, or failed to start)."""


class DaemonNotReady(DaemonError):
    """The daemon did not print its ready marker in time."""


@dataclass
class RunningDaemon:
    daemon: Daemon
    proc: subprocess.Popen[bytes]
    stderr_path: Path
    started_at: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr_tail(self, lines: int = 15) -> str:
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def cpu_seconds(self) -> float | None:
        """utime + stime from /proc/<pid>/stat, None once the process is gone."""
        return proc_cpu_seconds(self.pid)


def proc_cpu_seconds(pid: int) -> float | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name may contain spaces and parentheses: split after the last ')'
    fields = stat[stat.rindex(")") + 2:].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "daemon"


class Supervisor:
    """Starts, watches and stops the daemons of one run. Use as a context
    manager: leaving it kills whatever is still running, even on errors.

    If this process dies without stopping them (SIGKILL), the delay lines stop
    by themselves: they ask the kernel for SIGTERM when their parent dies
    (PR_SET_PDEATHSIG). That signal follows the parent *thread*: start daemons
    from a thread that outlives them, e.g. the main thread."""

    def __init__(self, host_argv: HostArgv, logdir: Path | None = None, ready_timeout: float = 5.0) -> None:
        self.host_argv = host_argv
        self.logdir = Path(logdir) if logdir else Path(tempfile.mkdtemp(prefix="mptcplab-daemons-"))
        self.ready_timeout = ready_timeout
        self.running: list[RunningDaemon] = []

    # -- start -------------------------------------------------------------
    def start(self, daemon: Daemon, timeout: float | None = None) -> RunningDaemon:
        """Starts ``daemon`` and returns once it printed its ready marker."""
        self.logdir.mkdir(parents=True, exist_ok=True)
        stderr_path = self.logdir / f"{_safe(daemon.name)}.stderr"
        with open(stderr_path, "wb") as err:
            proc = subprocess.Popen(
                self.host_argv(daemon.node, daemon.argv),
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                # own session: a terminal's Ctrl-C reaches us, and we stop the
                # daemons in order (collecting their stats) instead of losing them
                start_new_session=True,
            )
        rd = RunningDaemon(daemon, proc, stderr_path)
        self.running.append(rd)
        self._wait_ready(rd, self.ready_timeout if timeout is None else timeout)
        return rd

    def start_all(self, daemons: Iterable[Daemon], timeout: float | None = None) -> list[RunningDaemon]:
        return [self.start(d, timeout) for d in daemons]

    def _wait_ready(self, rd: RunningDaemon, timeout: float) -> None:
        assert rd.proc.stdout is not None
        fd = rd.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        buf = b""
        marker = rd.daemon.ready_marker.encode()
        while True:
            if any(line.strip() == marker for line in buf.split(b"\n")[:-1]):
                return
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill(rd)
                raise DaemonNotReady(rd.daemon.name, f"not ready after {timeout:.1f} s", rd.stderr_tail())
            readable, _, _ = select.select([fd], [], [], left)
            if not readable:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:  # EOF: it exited (or closed stdout) before saying ready
                rc = rd.proc.wait(timeout=2)
                self.running.remove(rd)
                raise DaemonDied(rd.daemon.name, f"exited with status {rc} before it was ready", rd.stderr_tail())
            buf += chunk

    # -- watch -------------------------------------------------------------
    def dead(self) -> list[RunningDaemon]:
        return [rd for rd in self.running if not rd.alive()]

    def check(self) -> None:
        """Raises DaemonDied for the first daemon that is no longer running."""
        for rd in self.dead():
            raise DaemonDied(rd.daemon.name, f"died during the run (status {rd.proc.returncode})",
                             rd.stderr_tail())

    # -- stop --------------------------------------------------------------
    def stop(self, rd: RunningDaemon, timeout: float = 5.0) -> dict[str, Any] | None:
        """SIGTERM, wait, and return the stats the daemon wrote (None when it
        has no stats file). Raises DaemonDied when it had died before."""
        if rd in self.running:
            self.running.remove(rd)
        if rd.proc.poll() is not None:
            self._close_pipe(rd)
            raise DaemonDied(rd.daemon.name, f"died during the run (status {rd.proc.returncode})",
                             rd.stderr_tail())
        rd.proc.send_signal(signal.SIGTERM)
        try:
            rc = rd.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._kill(rd)
            raise DaemonError(rd.daemon.name, f"did not stop within {timeout:.1f} s of SIGTERM; killed",
                              rd.stderr_tail()) from None
        self._close_pipe(rd)
        if rc != 0:
            raise DaemonDied(rd.daemon.name, f"exited with status {rc} on SIGTERM", rd.stderr_tail())
        return self._read_stats(rd)

    def stop_all(self, timeout: float = 5.0) -> dict[str, dict[str, Any] | None]:
        """Stops every daemon (all of them, even when one fails) and returns the
        stats by daemon name; then raises the first failure, if any."""
        stats: dict[str, dict[str, Any] | None] = {}
        first: DaemonError | None = None
        for rd in list(self.running):
            try:
                stats[rd.daemon.name] = self.stop(rd, timeout)
            except DaemonError as e:
                first = first or e
        if first:
            raise first
        return stats

    def close(self) -> None:
        """Kills everything still running; never raises (for finally/__exit__)."""
        for rd in list(self.running):
            self._kill(rd)
        self.running.clear()

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers -----------------------------------------------------------
    @staticmethod
    def _read_stats(rd: RunningDaemon) -> dict[str, Any] | None:
        path = rd.daemon.stats_path
        if path is None:
            return None
        try:
            stats: dict[str, Any] = json.loads(Path(path).read_text())
            return stats
        except (OSError, ValueError) as e:
            raise DaemonError(rd.daemon.name, f"stopped but its stats {path} are unreadable: {e}",
                              rd.stderr_tail()) from None

    @staticmethod
    def _close_pipe(rd: RunningDaemon) -> None:
        if rd.proc.stdout:
            rd.proc.stdout.close()

    def _kill(self, rd: RunningDaemon) -> None:
        if rd.proc.poll() is None:
            rd.proc.send_signal(signal.SIGTERM)
            try:
                rd.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                rd.proc.kill()
                rd.proc.wait()
        self._close_pipe(rd)
        if rd in self.running:
            self.running.remove(rd)

"""The userspace path manager's listener: ``ip -ts mptcp monitor`` in every node that
selects the userspace path manager, for the whole repetition.

The kernel accepts a join on a userspace-PM connection only while some program listens
to the path manager's netlink events in that namespace (pm.c ``mptcp_pm_allow_new_subflow``
-> ``mptcp_userspace_pm_active``: the events group has a listener; the selftests run
``pm_nl_ctl events`` for it). Without one, a join to an address a ``upm_announce`` made
known is refused (MPJoinRejected, measured here). The engine is that program while a lab
uses the userspace PM; its output, the events with their times, is kept in the
repetition's ``upm-listener-<node>.log``. A node with ``mptcp.listener: false`` gets none (nor
a wait for its subscription): the kernel then neither accepts a join nor echoes an ADD_ADDR
there, what the selftests' cases without a path-manager daemon check.
"""

from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..commands import Cmd, cmd
from ..lab.eventcheck import uses_userspace_pm
from ..lab.schema import ExperimentBody

if TYPE_CHECKING:
    from ..backends.base import Backend

LISTENER_ARGV = ("ip", "-ts", "mptcp", "monitor")


def file_name(node: str) -> str:
    return f"upm-listener-{node}.log"


def upm_nodes(body: ExperimentBody) -> list[str]:
    return [n for n, spec in body.nodes.items()
            if uses_userspace_pm(body, n) and (spec.mptcp is None or spec.mptcp.listener)]


def listener_cmds(body: ExperimentBody) -> list[Cmd]:
    return [cmd(*LISTENER_ARGV, node=n, why=f"the userspace path manager's listener (joins are refused "
                                            f"without one): {file_name(n)}; SIGTERM after the traffic")
            for n in upm_nodes(body)]


@dataclass
class Listeners:
    procs: list[tuple[str, subprocess.Popen[bytes], IO[bytes]]] = field(default_factory=list)

    def start(self, backend: Backend, body: ExperimentBody, out: Path) -> None:
        from ..probes.monitor import wait_subscribed

        for c in listener_cmds(body):
            assert c.node is not None
            sink = (out / file_name(c.node)).open("wb")
            self.procs.append((c.node, backend.spawn(c.node, c.argv, stdout=sink, stderr=subprocess.STDOUT), sink))
        wait_subscribed(backend, [p for _, p, _ in self.procs])
        for n, p, _ in self.procs:
            if p.poll() is not None:
                raise RuntimeError(f"ip mptcp monitor (the userspace PM's listener) on {n} exited "
                                   f"with status {p.returncode}")

    def stop(self, backend: Backend) -> None:
        for _, p, _ in self.procs:
            if p.poll() is None:
                backend.signal(p, signal.SIGTERM)
        for _, p, sink in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                backend.signal(p, signal.SIGKILL)
                p.wait(timeout=5)
            sink.close()
        self.procs = []

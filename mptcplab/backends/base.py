"""The interface every backend implements: netns here, containerlab in the VM.

Lifecycle, in the spirit of netlab's provider hooks: ``begin`` (record ownership,
so a killed run can be cleaned), ``create_cmds`` (nodes and links), node
configuration through ``run``, background processes through ``spawn`` and
``signal``, and ``destroy`` on every exit path. A backend only knows how to reach
a node; what to run there is generated elsewhere as Cmd lists.
"""

from __future__ import annotations

import subprocess
from typing import IO, Callable, Iterator, Protocol, Sequence

from ..commands import Cmd
from ..lab.network import Network


class CommandFailed(Exception):
    def __init__(self, c: Cmd, rendered: str, rc: int, stderr: str) -> None:
        self.cmd = c
        tail = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        super().__init__(f"command failed (exit {rc}): {rendered}: {tail}")


def ip_batches(cmds: Sequence[Cmd], batchable: Callable[[Cmd], bool]) -> Iterator[list[Cmd]]:
    """Cut a command list, in order, into runs: consecutive batchable commands of one
    node form one run (sent through one `ip -batch`), any other command runs alone."""
    i = 0
    while i < len(cmds):
        j = i + 1
        if batchable(cmds[i]):
            while j < len(cmds) and batchable(cmds[j]) and cmds[j].node == cmds[i].node:
                j += 1
        yield list(cmds[i:j])
        i = j


class Backend(Protocol):
    name: str
    #: how router nodes get their static routes: "ip" (ip route) or "frr" (FRR's staticd)
    router_routes: str

    def begin(self, nodes: Sequence[str]) -> None:
        """Record what this run will own before anything exists."""

    def create_cmds(self, net: Network) -> list[Cmd]:
        """Host-side commands that create the nodes and links (shown by --dry-run)."""

    def teardown_cmds(self, net: Network) -> list[Cmd]:
        """Host-side commands that remove them (shown by --dry-run)."""

    def node_argv(self, node: str, argv: Sequence[str]) -> list[str]:
        """The host command line that runs argv on node."""

    def render(self, c: Cmd) -> str:
        """The exact host command for c, for --dry-run and the command log."""

    def render_argv(self, node: str, argv: Sequence[str]) -> str: ...

    def run(self, cmds: Sequence[Cmd]) -> list[subprocess.CompletedProcess[str]]: ...

    def spawn(self, node: str, argv: Sequence[str], stdout: IO[bytes] | int | None = None,
              stderr: IO[bytes] | int | None = None) -> subprocess.Popen[bytes]: ...

    def signal(self, p: subprocess.Popen[bytes], sig: int) -> None:
        """Deliver sig to the process spawn() started (on the node, not to a client of it)."""

    def destroy(self) -> None: ...

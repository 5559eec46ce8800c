"""The base class every backend derives from: netns here, containerlab in the VM.

In the spirit of netlab's provider plugins: a backend declares what it supports
(link emulators, capabilities), says whether this host can use it (``available``),
builds itself for a run or a dry run, and gets no-op lifecycle hooks it may
override. The order a repetition calls them in (run/measure.py, plan.bring_up):

    begin(net)        record ownership (state file) before anything exists
    pre_start(net)    e.g. containerlab writes its topology copy
    <create nodes, sysctls, links, configure, daemons, emulation, MPTCP>
    post_start(net)
    ... link checks, captures, traffic ...
    pre_stop()        before processes are stopped and nodes removed
    collect(out)      processes stopped: the nodes' files into the run directory
    destroy()         every exit path: stop spawned processes, remove nodes, state file
    post_stop()

A backend only knows how to reach a node; what to run there is generated elsewhere
as Cmd lists. Rendering, running (with ``ip -batch`` for runs of ``ip`` commands)
and state files are shared here, so each backend writes only what differs.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar

from .. import runstate
from ..commands import Cmd
from ..lab.network import Network

if TYPE_CHECKING:
    from ..emulation.base import Emulator
    from ..lab.model import Lab, ScenarioRun

Log = Callable[[str], None]



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


class Backend(ABC):
    name: ClassVar[str]
    #: how router nodes get their static routes: "ip" (ip route) or "frr" (FRR's staticd)
    router_routes: ClassVar[str] = "ip"
    #: link emulators this backend can run, in order of preference
    emulators: ClassVar[tuple[str, ...]] = ("netem", "nfqueue")
    capabilities: ClassVar[frozenset[str]] = frozenset()
    #: the run directory is bound into the nodes: paths in node commands must be absolute
    absolute_paths: ClassVar[bool] = False
    #: what clean() removes, for its report ("namespace(s)")
    cleans: ClassVar[str] = "node(s)"
    #: the first two arguments of the host commands (create_cmds) that make nodes, not links:
    #: the plan runs them before the sysctls (plan.build_plan)
    node_creators: ClassVar[tuple[tuple[str, str], ...]] = ()

    def __init__(self, log: Log | None = None) -> None:
        self._log = log

    # ------------------------------------------------------------ registry side
    @classmethod
    @abstractmethod
    def available(cls) -> tuple[bool, str]:
        """Whether this host can run labs on this backend, and why (not)."""

    @classmethod
    @abstractmethod
    def for_run(cls, lab: Lab, run_dir: Path, log: Log | None) -> Backend:
        """A fresh backend for one repetition (its own names), logging to ``log``."""

    @classmethod
    @abstractmethod
    def for_dry_run(cls, lab: Lab, run_dir: Path) -> tuple[Backend, str]:
        """A backend with placeholder names for printing, and a line saying so."""

    @classmethod
    @abstractmethod
    def clean(cls, all_runs: bool = False) -> list[str]:
        """Remove what killed runs left (every run's with all_runs); returns what went."""

    @classmethod
    def choose_emulator(cls, force: str | None, scenarios: Sequence[ScenarioRun], dry_run: bool) -> Emulator:
        """The link emulator for a run. A dry run never probes the kernel (it creates
        nothing): it shows ``force`` or, without it, the preferred emulator that needs
        no probe, and says which one a run would pick (run/dryrun.py)."""
        from ..emulation.hostprobe import netem_available
        from ..emulation.select import emulator_named, select_emulator

        if force is not None and force not in cls.emulators:
            from ..errors import HostNotReady

            raise HostNotReady(f"the {force} link emulation cannot run on the {cls.name} backend "
                               f"(it supports: {', '.join(cls.emulators)})")
        if dry_run:
            return emulator_named(force or cls.dry_run_emulator())
        return select_emulator(force, netem_available() if force != "nfqueue" else False)

    @classmethod
    def dry_run_emulator(cls) -> str:
        """What a dry run without --emulation shows (the run itself probes)."""
        return cls.emulators[-1]

    @classmethod
    def emulator_rule(cls) -> str:
        """How a run picks its emulator without --emulation, in words."""
        return "netem if this kernel has sch_netem, else nfqueue" if len(cls.emulators) > 1 else cls.emulators[0]

    # ------------------------------------------------------------ hooks (no-ops)
    def pre_start(self, net: Network) -> None:  # noqa: B027 - a hook: doing nothing is the default
        """After ownership is recorded, before the first node exists."""

    def post_start(self, net: Network) -> None:  # noqa: B027
        """After the whole network is configured (links shaped, MPTCP set)."""

    def pre_stop(self) -> None:  # noqa: B027
        """Before the run's processes are stopped and its nodes removed."""

    def collect(self, out: Path) -> None:  # noqa: B027
        """Bring what the nodes wrote for the repetition (captures, probe files, client
        reports) into ``out``: after its processes are stopped, before its nodes are removed.
        Both backends here need nothing (netns nodes share the host's file system; containerlab
        binds the run directory at the same path in every node); a backend whose nodes have
        file systems of their own copies their files here."""

    def post_stop(self) -> None:  # noqa: B027
        """After destroy()."""

    def dry_run_notes(self, net: Network) -> list[str]:
        """Comment lines the dry run prints before a scenario's commands."""
        return []

    # ------------------------------------------------------------ lifecycle
    @abstractmethod
    def begin(self, net: Network) -> None:
        """Record ownership of what this repetition will create, before it exists."""

    @abstractmethod
    def create_cmds(self, net: Network) -> list[Cmd]:
        """Host-side commands that create the nodes and links (shown by --dry-run)."""

    @abstractmethod
    def teardown_cmds(self, net: Network) -> list[Cmd]:
        """Host-side commands that remove them (shown by --dry-run, logged by destroy)."""

    @abstractmethod
    def destroy(self) -> None:
        """Stop every spawned process, remove the nodes and the state file. Every exit path."""

    # ------------------------------------------------------------ reaching nodes
    @abstractmethod
    def node_argv(self, node: str, argv: Sequence[str]) -> list[str]:
        """The host command line that runs argv on node."""

    @abstractmethod
    def batch_argv(self, node: str | None) -> list[str]:
        """The host command line of an ``ip -batch -`` on node, or on the host for
        None (the script comes on stdin)."""

    @abstractmethod
    def spawn(self, node: str, argv: Sequence[str], stdout: IO[bytes] | int | None = None,
              stderr: IO[bytes] | int | None = None) -> subprocess.Popen[bytes]:
        """Start argv on node in the background (logged with a trailing ' &')."""

    @abstractmethod
    def signal(self, p: subprocess.Popen[bytes], sig: int) -> None:
        """Deliver sig to the process spawn() started (on the node, not to a client of it)."""

    def command_timeout(self, c: Cmd) -> float | None:
        """An upper bound for one command (None: wait as long as it takes)."""
        return None

    def batchable(self, c: Cmd) -> bool:
        # `ip netns …` runs alone (it manages namespaces, it does not run in one), and so does
        # `ip -6 …`: a batch line takes no option
        return c.node is not None and c.check and len(c.argv) > 1 and c.argv[0] == "ip" and c.argv[1] != "netns" \
            and not c.argv[1].startswith("-")

    # ------------------------------------------------------------ shared
    def render(self, c: Cmd) -> str:
        """The exact host command for c, for --dry-run and the command log."""
        if c.node is None:
            return shlex.join(c.argv)
        return shlex.join(self.node_argv(c.node, c.argv))

    def render_argv(self, node: str, argv: Sequence[str]) -> str:
        return self.render(Cmd(tuple(argv), node=node))

    def log(self, line: str) -> None:
        if self._log:
            self._log(line)

    def run(self, cmds: Sequence[Cmd]) -> list[subprocess.CompletedProcess[str]]:
        """Run commands in order; consecutive checked `ip` commands on one node go
        through one `ip -batch` process (deploying a lab is hundreds of them; one
        `docker exec` each would cost a round trip to the Docker daemon)."""
        return [self._batch(run) if len(run) > 1 else self._one(run[0]) for run in ip_batches(cmds, self.batchable)]

    def _one(self, c: Cmd) -> subprocess.CompletedProcess[str]:
        argv = list(c.argv) if c.node is None else self.node_argv(c.node, c.argv)
        self.log(self.render(c))
        timeout = self.command_timeout(c)
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CommandFailed(c, self.render(c), -1, f"no answer within {timeout:g} s") from None
        if c.check and p.returncode != 0:
            raise CommandFailed(c, self.render(c), p.returncode, p.stderr or p.stdout)
        return p

    @staticmethod
    def batch_script(cmds: Sequence[Cmd]) -> str:
        return "".join(shlex.join(c.argv[1:]) + "\n" for c in cmds)

    def _batch(self, cmds: list[Cmd]) -> subprocess.CompletedProcess[str]:
        for c in cmds:
            self.log(self.render(c))
        try:
            p = subprocess.run(self.batch_argv(cmds[0].node), input=self.batch_script(cmds), capture_output=True,
                               text=True, timeout=self.command_timeout(cmds[0]))
        except subprocess.TimeoutExpired:
            raise CommandFailed(cmds[0], self.render(cmds[0]), -1, "ip -batch did not finish") from None
        if p.returncode != 0:
            m = re.search(r"Command failed -:(\d+)", p.stderr)
            bad = cmds[int(m.group(1)) - 1] if m else cmds[0]
            raise CommandFailed(bad, self.render(bad), p.returncode, p.stderr)
        return p

    @staticmethod
    def write_state(path: Path, data: dict[str, Any]) -> None:
        """Ownership record for `mptcplab clean` (runstate.py)."""
        runstate.write_state(path, data)


def state_path(name: str) -> Path:
    """Where the ownership record called name lives (read at call time: tests move it)."""
    return runstate.STATE_DIR / f"{name}.json"

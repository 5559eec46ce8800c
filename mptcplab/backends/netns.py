"""The embedded network-namespace backend: one namespace per node, one veth pair
per link, created directly inside the namespaces (no root-namespace name clashes).

Names carry a per-run prefix ``mpl<6 hex>-`` so two runs coexist. A state file in
/run/mptcplab records what a run owns and its PID; ``clean`` removes what a dead
(killed) run left, and every run starts by doing so.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import time
from typing import IO, Callable, Sequence

from ..commands import Cmd, cmd
from ..lab.network import Network
from .base import CommandFailed, ip_batches
from .state import STATE_DIR, owner_live, run_states

PREFIX_RE = re.compile(r"^mpl[0-9a-f]{6}-")


def new_prefix() -> str:
    return f"mpl{secrets.token_hex(3)}-"


class NetnsBackend:
    name = "netns"
    router_routes = "ip"

    def __init__(self, prefix: str | None = None, log: Callable[[str], None] | None = None) -> None:
        self.prefix = prefix or new_prefix()
        self._log = log
        self._procs: list[subprocess.Popen[bytes]] = []
        self._nodes: list[str] = []
        self._state = STATE_DIR / f"{self.prefix.rstrip('-')}.json"

    # ---------------------------------------------------------------- naming
    def ns(self, node: str) -> str:
        return self.prefix + node

    def node_argv(self, node: str, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns(node), *argv]

    def render_argv(self, node: str, argv: Sequence[str]) -> str:
        return self.render(Cmd(tuple(argv), node=node))

    def render(self, c: Cmd) -> str:
        if c.node is None:
            return shlex.join(c.argv)
        if c.argv[0] == "ip":
            return shlex.join(["ip", "-n", self.ns(c.node), *c.argv[1:]])
        return shlex.join(self.node_argv(c.node, c.argv))

    # ---------------------------------------------------------------- lifecycle
    def create_cmds(self, net: Network) -> list[Cmd]:
        out = [cmd("ip", "netns", "add", self.ns(n), why=f"node {n}") for n in net.nodes]
        for link in net.links:
            out.append(cmd("ip", "link", "add", "name", link.a.iface, "netns", self.ns(link.a.node),
                           "type", "veth", "peer", "name", link.b.iface, "netns", self.ns(link.b.node),
                           why=f"link {link.name}"))
        return out

    def begin(self, nodes: Sequence[str]) -> None:
        """Record ownership before anything exists, so a kill at any later point
        leaves a state file that ``clean`` can act on."""
        self._nodes = list(nodes)
        self._write_state()

    def create(self, net: Network) -> None:
        self.begin(list(net.nodes))
        self.run(self.create_cmds(net))

    def teardown_cmds(self, net: Network) -> list[Cmd]:
        return [cmd("ip", "netns", "del", self.ns(n)) for n in net.nodes]

    def signal(self, p: subprocess.Popen[bytes], sig: int) -> None:
        # `ip netns exec` execs the command, so the pid is the process itself; its own
        # session (spawn) makes the process group exactly what it started
        if p.poll() is None:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass

    def _write_state(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self._state.with_suffix(".tmp")
        tmp.write_text(json.dumps({"prefix": self.prefix, "pid": os.getpid(), "nodes": self._nodes,
                                   "namespaces": [self.ns(n) for n in self._nodes], "created": time.time()}))
        tmp.replace(self._state)

    def destroy(self) -> None:
        for p in self._procs:
            _stop(p)
        self._procs.clear()
        for n in self._nodes:
            _delete_namespace(self.ns(n))
        self._nodes = []
        self._state.unlink(missing_ok=True)

    # ---------------------------------------------------------------- execution
    def run(self, cmds: Sequence[Cmd]) -> list[subprocess.CompletedProcess[str]]:
        """Run commands in order; consecutive checked `ip` commands on one node go
        through one `ip -batch` process (deploying a lab is hundreds of them)."""
        return [self._batch(run) if len(run) > 1 else self._one(run[0]) for run in ip_batches(cmds, _batchable)]

    def _one(self, c: Cmd) -> subprocess.CompletedProcess[str]:
        argv = list(c.argv) if c.node is None else self.node_argv(c.node, c.argv)
        if self._log:
            self._log(self.render(c))
        p = subprocess.run(argv, capture_output=True, text=True)
        if c.check and p.returncode != 0:
            raise CommandFailed(c, self.render(c), p.returncode, p.stderr)
        return p

    def _batch(self, cmds: list[Cmd]) -> subprocess.CompletedProcess[str]:
        for c in cmds:
            if self._log:
                self._log(self.render(c))
        node = cmds[0].node
        head = ["ip"] + (["-n", self.ns(node)] if node else []) + ["-batch", "-"]
        script = "".join(shlex.join(c.argv[1:]) + "\n" for c in cmds)
        p = subprocess.run(head, input=script, capture_output=True, text=True)
        if p.returncode != 0:
            m = re.search(r"Command failed -:(\d+)", p.stderr)
            bad = cmds[int(m.group(1)) - 1] if m else cmds[0]
            raise CommandFailed(bad, self.render(bad), p.returncode, p.stderr)
        return p

    def spawn(self, node: str, argv: Sequence[str], stdout: IO[bytes] | int | None = None,
              stderr: IO[bytes] | int | None = None) -> subprocess.Popen[bytes]:
        if self._log:
            self._log(self.render(Cmd(tuple(argv), node=node)) + " &")
        p = subprocess.Popen(self.node_argv(node, argv), stdout=stdout, stderr=stderr,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        self._procs.append(p)
        return p


def _batchable(c: Cmd) -> bool:
    # `ip netns …` runs alone (it manages namespaces, it does not run in one)
    return c.argv[0] == "ip" and c.check and len(c.argv) > 1 and c.argv[1] != "netns"


def _stop(p: subprocess.Popen[bytes], grace: float = 2.0) -> None:
    if p.poll() is not None:
        return
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=grace)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(timeout=5)


def _delete_namespace(ns: str) -> None:
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def clean(all_runs: bool = False) -> list[str]:
    """Remove what runs whose process is gone left behind (or every run's, with all_runs).

    Returns the namespaces removed."""
    removed: list[str] = []
    owned_alive: set[str] = set()
    for st in run_states("mpl*.json", all_runs):
        if st.live:
            owned_alive.update(st.data.get("namespaces", []))
            continue
        for ns in st.data.get("namespaces", []):
            _delete_namespace(ns)
            removed.append(ns)
        st.path.unlink(missing_ok=True)
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for line in listing.splitlines():
        ns = line.split()[0] if line.split() else ""
        m = PREFIX_RE.match(ns)
        if not m or ns in owned_alive or ns in removed:
            continue
        # a run that started after the state files above were read: its state file
        # was written before this namespace existed, so it is there now
        if not all_runs and owner_live(m.group(0).rstrip("-")):
            continue
        _delete_namespace(ns)
        removed.append(ns)
    return removed

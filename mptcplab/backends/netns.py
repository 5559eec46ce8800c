"""The embedded network-namespace backend: one namespace per node, one veth pair
per link, created directly inside the namespaces (no root-namespace name clashes).

Names carry a per-run prefix ``mpl<6 hex>-`` so two runs coexist. A state file in
/run/mptcplab records what a run owns and its PID; ``clean`` removes what a dead
(killed) run left, and every run starts by doing so.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..commands import Cmd, cmd
from ..lab.network import Network
from ..runstate import owner_live, run_states
from ..values.capabilities import CAP_MBOX, CAP_NODE_PIDS
from .base import Backend, Log, state_path

if TYPE_CHECKING:
    from ..lab.model import Lab

PREFIX_RE = re.compile(r"^mpl[0-9a-f]{6}-")
DRY_RUN_PREFIX = "mpl000000-"
#: the throwaway probe namespaces (kernel probes, doctor) of versions before the probes were recorded
#: (emulation/hostprobe.py): nobody owns them, so clean removes them once they are
#: older than any probe takes
LEGACY_PROBE_RE = re.compile(r"^(mpltprobe[0-9a-f]{8}|mpltdoc[0-9a-f]{6})$")
LEGACY_PROBE_MAX_AGE_S = 60.0
#: Aborts every TCP socket of a namespace (MPTCP subflows included; their MPTCP sockets
#: then close) before the namespace is deleted. Without it, a socket the run's processes
#: left behind (an orphan in FIN-WAIT-1 with unacknowledged data, say) keeps the dying
#: namespace and its kernel state until its backed-off retransmission timer fires, minutes
#: later: the BPF mptcp_lia connection map kept such a connection's entry for over 60 s.
ABORT_SOCKETS: tuple[str, ...] = ("ss", "-K", "-a", "-t", "-n")


def new_prefix() -> str:
    return f"mpl{secrets.token_hex(3)}-"


class NetnsBackend(Backend):
    name = "netns"
    node_creators = (("ip", "netns"),)
    router_routes = "ip"
    emulators = ("netem", "nfqueue")
    cleans = "namespace(s)"
    capabilities = frozenset({CAP_NODE_PIDS, CAP_MBOX})

    def __init__(self, prefix: str | None = None, log: Log | None = None) -> None:
        super().__init__(log)
        self.prefix = prefix or new_prefix()
        self._procs: list[subprocess.Popen[bytes]] = []
        self._nodes: list[str] = []
        self._state = state_path(self.prefix.rstrip("-"))

    # ---------------------------------------------------------------- registry side
    @classmethod
    def available(cls) -> tuple[bool, str]:
        # root is checked with the rest of the host (doctor.py), not here
        if shutil.which("ip") is None:
            return False, "no ip (iproute2) on PATH"
        return True, "network namespaces and veth pairs"

    @classmethod
    def for_run(cls, lab: Lab, run_dir: Path, log: Log | None) -> NetnsBackend:
        return cls(log=log)

    @classmethod
    def for_dry_run(cls, lab: Lab, run_dir: Path) -> tuple[NetnsBackend, str]:
        return cls(prefix=DRY_RUN_PREFIX), f"namespace prefix is random per repetition (shown as {DRY_RUN_PREFIX})"

    @classmethod
    def clean(cls, all_runs: bool = False) -> list[str]:
        return clean(all_runs)

    # ---------------------------------------------------------------- naming
    def ns(self, node: str) -> str:
        return self.prefix + node

    def node_argv(self, node: str, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns(node), *argv]

    def batch_argv(self, node: str | None) -> list[str]:
        return ["ip", *(["-n", self.ns(node)] if node else []), "-batch", "-"]

    def batchable(self, c: Cmd) -> bool:
        # host-side `ip link add … netns …` (the veth pairs) batch too; `ip -6 …` does not:
        # a batch line takes no option (`ip rule` needs -6 for an IPv6 source)
        return c.check and len(c.argv) > 1 and c.argv[0] == "ip" and c.argv[1] != "netns" \
            and not c.argv[1].startswith("-")

    def render(self, c: Cmd) -> str:
        if c.node is not None and c.argv[0] == "ip":
            return shlex.join(["ip", "-n", self.ns(c.node), *c.argv[1:]])
        return super().render(c)

    # ---------------------------------------------------------------- lifecycle
    def create_cmds(self, net: Network) -> list[Cmd]:
        out = [cmd("ip", "netns", "add", self.ns(n), why=f"node {n}") for n in net.nodes]
        for link in net.links:
            out.append(cmd("ip", "link", "add", "name", link.a.iface, "netns", self.ns(link.a.node),
                           "type", "veth", "peer", "name", link.b.iface, "netns", self.ns(link.b.node),
                           why=f"link {link.name}"))
        return out

    def begin(self, net: Network) -> None:
        """Record ownership before anything exists, so a kill at any later point
        leaves a state file that ``clean`` can act on."""
        self._nodes = list(net.nodes)
        self.write_state(self._state, {"prefix": self.prefix, "nodes": self._nodes,
                                       "namespaces": [self.ns(n) for n in self._nodes]})

    def create(self, net: Network) -> None:
        self.begin(net)
        self.run(self.create_cmds(net))

    def teardown_cmds(self, net: Network) -> list[Cmd]:
        # the processes still in a namespace are killed first (destroy): a namespace
        # with a live process would outlive `ip netns del`; then its sockets are aborted
        # (ABORT_SOCKETS)
        return [c for n in net.nodes for c in (cmd("ip", "netns", "pids", self.ns(n), check=False),
                                               cmd(*ABORT_SOCKETS, node=n, check=False),
                                               cmd("ip", "netns", "del", self.ns(n), check=False))]

    def signal(self, p: subprocess.Popen[bytes], sig: int) -> None:
        # `ip netns exec` execs the command, so the pid is the process itself; its own
        # session (spawn) makes the process group exactly what it started
        if p.poll() is None:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass

    def destroy(self) -> None:
        for p in self._procs:
            _stop(p)
        self._procs.clear()
        for n in self._nodes:
            for c in (cmd("ip", "netns", "pids", self.ns(n)), cmd(*ABORT_SOCKETS, node=n),
                      cmd("ip", "netns", "del", self.ns(n))):
                self.log(self.render(c))
            _delete_namespace(self.ns(n))
        self._nodes = []
        self._state.unlink(missing_ok=True)

    # ---------------------------------------------------------------- execution
    def spawn(self, node: str, argv: Sequence[str], stdout: IO[bytes] | int | None = None,
              stderr: IO[bytes] | int | None = None) -> subprocess.Popen[bytes]:
        self.log(self.render(Cmd(tuple(argv), node=node)) + " &")
        p = subprocess.Popen(self.node_argv(node, argv), stdout=stdout, stderr=stderr,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        self._procs.append(p)
        return p


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
    subprocess.run(["ip", "netns", "exec", ns, *ABORT_SOCKETS], capture_output=True, timeout=30, check=False)
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
        if ns in owned_alive or ns in removed:
            continue
        m = PREFIX_RE.match(ns)
        if m:
            # a run that started after the state files above were read: its state file
            # was written before this namespace existed, so it is there now
            if not all_runs and owner_live(m.group(0).rstrip("-")):
                continue
            _delete_namespace(ns)
            removed.append(ns)
        elif LEGACY_PROBE_RE.match(ns) and _age_s(ns) > LEGACY_PROBE_MAX_AGE_S:
            _delete_namespace(ns)
            removed.append(ns)
    return removed


def _age_s(ns: str) -> float:
    try:
        return time.time() - (Path("/run/netns") / ns).stat().st_mtime
    except OSError:
        return 0.0

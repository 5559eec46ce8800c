"""Userspace path-manager events (lab/events.py ``upm_*``) as commands, and what they
need to know at run time.

A userspace path manager acts on one MPTCP connection, named in the kernel by its local
token, which exists only once the connection does. A lab names the connection by its
traffic flow instead; the event's commands are generated with placeholders (``{token}``,
and ``{lport}`` for a subflow to destroy), and a ``Lookup`` says how to fill them when
the event runs: ``ss -tinM`` on the node, parsed here into a typed ``FlowConnection``
(the flow's busiest connection: iperf3's data connection, not its control one). The dry
run prints the lookup and the commands with their placeholders; events.csv records the
commands as run, with the values filled in.

The commands themselves are timeline/upm_tool.py's (the kernel's ``mptcp_pm`` generic
netlink family; no packaged tool sends them), run with the engine's Python by path (on
containerlab the node's python3, the package bound in: backends/containerlab.py).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address, ip_address
from pathlib import Path

from ..commands import Cmd
from ..lab.events import UpmAnnounce, UpmEvent, UpmRemove, UpmSubflowCreate, UpmSubflowDestroy
from ..lab.network import Network
from ..lab.schema import ExperimentBody
from ..tools.ss import SubflowSample, parse_ss, ss_cmd

TOOL = Path(__file__).with_name("upm_tool.py")
#: placeholders, filled when the event runs
TOKEN, LPORT = "{token}", "{lport}"


class LookupFailed(Exception):
    """What a run-time lookup could not find (recorded in events.csv, the event not run)."""


@dataclass(frozen=True)
class MptcpToken:
    """A connection's local MPTCP token (32 bits): ss prints it in hex, the kernel's
    netlink attribute takes it as a number; the tool gets it in decimal."""

    value: int

    @classmethod
    def from_hex(cls, text: str) -> MptcpToken:
        v = int(text, 16)
        if not 0 <= v < 2 ** 32:
            raise ValueError(f"token {text!r} is not 32 bits")
        return cls(v)

    def __str__(self) -> str:
        return str(self.value)

    @property
    def hex(self) -> str:
        return f"{self.value:08x}"


@dataclass(frozen=True)
class FlowConnection:
    """One MPTCP connection of a flow on one node, as ss showed it."""

    token: MptcpToken
    subflows: tuple[SubflowSample, ...]

    def local_port(self, local: str, remote: str, remote_port: int) -> int:
        """The local port of the subflow ``local`` -> ``remote``:``remote_port``."""
        for s in self.subflows:
            if _same(s.local, local) and _same(s.peer, remote) and s.pport == remote_port:
                return s.lport
        seen = ", ".join(f"{s.local}:{s.lport}->{s.peer}:{s.pport}" for s in self.subflows)
        raise LookupFailed(f"no subflow {local} -> {remote} port {remote_port} in connection {self.token.hex} "
                           f"(its subflows: {seen or 'none'})")


def _addr(text: str) -> IPv4Address | IPv6Address:
    a = ip_address(text)
    # a v6 socket's IPv4 subflow shows as ::ffff:a.b.c.d
    return a.ipv4_mapped if isinstance(a, IPv6Address) and a.ipv4_mapped is not None else a


def _same(a: str, b: str) -> bool:
    try:
        return _addr(a) == _addr(b)
    except ValueError:
        return False


def flow_connection(text: str, port: int, server_side: bool) -> FlowConnection:
    """The connection of the flow on ``port`` in ``ss -tinM`` output: on the client the
    connections whose subflows reach the server's ``port``, on the server those accepted on
    it; of those the one that moved the most bytes (acked + received)."""
    subs = parse_ss(text)
    tokens = {s.token for s in subs if (s.lport if server_side else s.pport) == port}
    if not tokens:
        raise LookupFailed(f"no MPTCP connection {'on' if server_side else 'to'} port {port} "
                           f"(ss -tinM lists {len(subs)} subflow(s))")
    conns = {t: tuple(s for s in subs if s.token == t) for t in tokens}

    def moved(t: str) -> int:
        return sum((s.bytes_acked or 0) + (s.bytes_received or 0) for s in conns[t])

    best = max(sorted(conns), key=moved)
    return FlowConnection(MptcpToken.from_hex(best), conns[best])


def _tool() -> list[str]:
    # -I: isolated, nothing of the node's working directory or environment imported
    return [sys.executable, "-I", str(TOOL)]


@dataclass(frozen=True)
class UpmPlan:
    """A userspace path-manager event ready to run: the lookup command, the command with
    placeholders, and how to fill them from the lookup's output."""

    lookup: Cmd
    cmd: Cmd
    port: int
    server_side: bool
    local: str | None = None
    remote: str | None = None
    remote_port: int | None = None

    def values(self, ss_output: str) -> dict[str, str]:
        conn = flow_connection(ss_output, self.port, self.server_side)
        out = {TOKEN: str(conn.token)}
        if LPORT in self.cmd.argv:
            assert self.local is not None and self.remote is not None and self.remote_port is not None
            out[LPORT] = str(conn.local_port(self.local, self.remote, self.remote_port))
        return out

    @property
    def note(self) -> str:
        filled = "{token} and {lport}" if LPORT in self.cmd.argv else "{token}"
        return (f"{filled} of the next command, read from this output when the event runs: the flow's busiest "
                f"MPTCP connection {'on' if self.server_side else 'to'} port {self.port}")


def upm_plan(body: ExperimentBody, net: Network, ev: UpmEvent) -> UpmPlan:
    flow = body.traffic.flows[ev.flow]
    server_side = ev.node == flow.server
    lookup = ss_cmd(ev.node)
    tok = ["--token", TOKEN]
    if isinstance(ev, UpmAnnounce):
        argv = [*_tool(), "announce", *tok, "--address", str(net.address(ev.address)), "--id", str(ev.id)]
        if ev.port is not None:
            argv += ["--port", str(ev.port)]
        why = f"announce {ev.address} (id {ev.id}) on flow {ev.flow}'s connection"
        return UpmPlan(lookup, Cmd(tuple(argv), node=ev.node, check=False, why=why), flow.port, server_side)
    if isinstance(ev, UpmRemove):
        argv = [*_tool(), "remove", *tok, "--id", str(ev.id)]
        why = f"remove address id {ev.id} from flow {ev.flow}'s connection"
        return UpmPlan(lookup, Cmd(tuple(argv), node=ev.node, check=False, why=why), flow.port, server_side)
    local = str(net.address(ev.local, version=_version(net, ev.remote)))
    remote = str(net.address(ev.remote, version=_version(net, ev.remote)))
    rport = ev.remote_port if ev.remote_port is not None else flow.port
    if isinstance(ev, UpmSubflowCreate):
        argv = [*_tool(), "subflow-create", *tok, "--local", local, "--local-id", str(ev.local_id),
                "--remote", remote, "--remote-port", str(rport), *(["--backup"] if ev.backup else [])]
        why = f"subflow {local} -> {remote}:{rport} on flow {ev.flow}'s connection"
    else:
        assert isinstance(ev, UpmSubflowDestroy)
        argv = [*_tool(), "subflow-destroy", *tok, "--local", local, "--local-port", LPORT,
                "--remote", remote, "--remote-port", str(rport)]
        why = f"close subflow {local} -> {remote}:{rport} of flow {ev.flow}'s connection"
    return UpmPlan(lookup, Cmd(tuple(argv), node=ev.node, check=False, why=why), flow.port, server_side,
                   local=local, remote=remote, remote_port=rport)


def _version(net: Network, ref: str) -> int | None:
    """The family a subflow takes: a literal remote's; a reference's default (IPv4 when the
    link has it), so a ``node:iface`` local pairs with it."""
    try:
        return ip_address(ref).version
    except ValueError:
        return net.address(ref).version

"""From a typed action (lab/events.py) to what runs: the exact commands, generated
here and executed elsewhere (timeline/scheduler.py), so ``--dry-run`` prints what a
run executes.

Actions are resolved in time order against the links' *current* shapes (a link
changed twice is changed from its second state), kept in ``ActionEnv.shapes``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from ..commands import Cmd, cmd
from ..emulation.linkmodel import DirectedLink, Endpoint, LinkShape
from ..errors import LabInputError
from ..lab.events import (
    EndpointAdd,
    EndpointDelete,
    EndpointFlags,
    EndpointFlush,
    FlowStart,
    FlowStop,
    LimitsSet,
    LinkChange,
    LinkDown,
    LinkUp,
    SysctlWrite,
    UpmAnnounce,
    UpmRemove,
    UpmSubflowCreate,
    UpmSubflowDestroy,
)
from ..lab.network import Link, Network, Route, build_network
from ..lab.shapes import changed_shape, changes_direction
from ..net.config import route_argv
from ..net.mptcp import endpoint_dev

if TYPE_CHECKING:
    from ..emulation.base import Emulator
    from ..lab.events import Event
    from ..lab.model import ScenarioRun
    from ..lab.schema import ClabTopology, ExperimentBody

#: nftables table of the timeline's drop filters (how: drop), apart from the lab's own
DROP_TABLE = "mptcplab_ev"


class FlowControl(Protocol):
    """Starts and stops named flows (the traffic step provides it: traffic/control.py)."""

    def start(self, name: str) -> None: ...

    def stop(self, name: str) -> None: ...


@dataclass(frozen=True)
class Lookup:
    """What an action must read on a node when it runs, before its commands: ``cmd``'s
    output, turned by ``values`` into the values of the commands' placeholders (a
    connection's token, a subflow's port, an endpoint's id; LookupError or ValueError when
    not found: the action is then recorded as failed, its commands not run)."""

    cmd: Cmd
    values: Callable[[str], dict[str, str]]
    #: what the dry run says of the placeholders
    note: str


def fill(c: Cmd, values: dict[str, str]) -> Cmd:
    """``c`` with each placeholder argument replaced by its value."""
    return Cmd(tuple(values.get(a, a) for a in c.argv), node=c.node, check=c.check, why=c.why)


@dataclass(frozen=True)
class Resolved:
    """One action ready to run: its commands, or an in-process call (flows)."""

    planned_s: float
    action: str
    target: str
    cmds: tuple[Cmd, ...] = ()
    #: an effect that is no command (start/stop a flow); returns its result text
    call: Callable[[], str] | None = None
    #: what the dry run prints for ``call``
    call_text: str = ""
    source: str = "timeline"
    #: why (a controller's decision and its numbers): events.csv ``detail``
    detail: str = ""
    #: the lab's typed action this was resolved from (None: a decision, a controller's
    #: error): events.csv's typed columns come from it (subject below)
    event: Event | None = None
    #: read on the node first, to fill the placeholders of ``cmds`` (run-time values)
    lookup: Lookup | None = None


@dataclass
class ActionEnv:
    net: Network
    emulator: Emulator
    #: routers get their routes from FRR (containerlab): zebra re-installs them on link up
    frr_routers: bool = False
    #: set by the traffic step once its clients can be started (None: dry run)
    flow_control: Callable[[], FlowControl | None] = lambda: None
    shapes: dict[tuple[str, str], LinkShape] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: the scenario's experiment: the flows a userspace path-manager event names
    body: ExperimentBody | None = None

    def __post_init__(self) -> None:
        for link in self.net.links:
            for dl in link.directions():
                self.shapes.setdefault((str(dl.src), str(dl.dst)), dl.shape)


def _route_replace(r: Route, node: str) -> Cmd:
    return Cmd(tuple(route_argv(r, "replace")), node=node, check=False, why="put back a route the link down removed")


def _ends(link: Link, end: str, direction: str) -> list[Endpoint]:
    """The interfaces whose egress the action touches: both ends, or the named one."""
    return [link.a, link.b] if direction == "both" else [Endpoint.parse(end)]


def _chain(iface: str) -> str:
    return "down_" + re.sub(r"[^A-Za-z0-9_]", "_", iface)


def _ip_link_ends(link: Link, ev: LinkDown | LinkUp) -> list[Endpoint]:
    """The interfaces ``ip link set`` takes down or up: both ends, or ``ends: one``'s."""
    return [link.a, link.b] if ev.ends == "both" else [Endpoint.parse(ev.link)]


def link_down_cmds(env: ActionEnv, ev: LinkDown) -> list[Cmd]:
    link = env.net.link_of(ev.link)
    if ev.how == "ip-link":
        why = ("the kernel drops its routes" if ev.ends == "both"
               else "this end only: its routes go, the peer loses carrier and stays up")
        return [cmd("ip", "link", "set", "dev", ep.iface, "down", node=ep.node, check=False,
                    why=f"link {link.name} down ({why})") for ep in _ip_link_ends(link, ev)]
    out: list[Cmd] = []
    for ep in _ends(link, ev.link, ev.direction):
        chain = _chain(ep.iface)
        out += [
            cmd("nft", "add", "table", "inet", DROP_TABLE, node=ep.node, check=False),
            cmd("nft", "add", "chain", "inet", DROP_TABLE, chain,
                "{ type filter hook postrouting priority 0 ; policy accept ; }", node=ep.node, check=False),
            cmd("nft", "add", "rule", "inet", DROP_TABLE, chain, "oifname", f'"{ep.iface}"', "counter", "drop",
                node=ep.node, check=False, why=f"{ep} egress: every packet dropped (routes kept)"),
        ]
    return out


def link_up_cmds(env: ActionEnv, ev: LinkUp) -> list[Cmd]:
    link = env.net.link_of(ev.link)
    if ev.how == "ip-link":
        ends = _ip_link_ends(link, ev)
        out = [cmd("ip", "link", "set", "dev", ep.iface, "up", node=ep.node, check=False, why=f"link {link.name} up")
               for ep in ends]
        # a peer that only lost carrier kept its routes: only the ends taken down lost theirs
        for ep in ends:
            node = env.net.nodes[ep.node]
            if env.frr_routers and node.role == "router":
                continue
            out += [_route_replace(r, ep.node) for r in node.routes if r.dev == ep.iface]
        return out
    out = []
    for ep in _ends(link, ev.link, ev.direction):
        chain = _chain(ep.iface)
        out += [cmd("nft", "flush", "chain", "inet", DROP_TABLE, chain, node=ep.node, check=False),
                cmd("nft", "delete", "chain", "inet", DROP_TABLE, chain, node=ep.node, check=False,
                    why=f"{ep} egress: drop filter removed")]
    return out


def link_change_cmds(env: ActionEnv, ev: LinkChange) -> list[Cmd]:
    """Raises ValueError when the emulator cannot make the change on a running link."""
    link = env.net.link_of(ev.link)
    dirs = [dl for dl in link.directions() if changes_direction(ev, dl)]
    out: list[Cmd] = []
    with env.lock:
        for dl in dirs:
            key = (str(dl.src), str(dl.dst))
            now = env.shapes[key]
            new = changed_shape(now, ev, env.net)
            # the trace switch apart: the same trace again (a restart) is a change too
            same_trace = replace(new, trace=now.trace, trace_offset_s=now.trace_offset_s)
            out += env.emulator.change_cmds(DirectedLink(dl.src, dl.dst, now, dl.mtu), same_trace)
            if ev.switches_trace:
                out += env.emulator.trace_switch_cmds(DirectedLink(dl.src, dl.dst, same_trace, dl.mtu), new)
            env.shapes[key] = new
    return out


#: what each endpoint flag change does, for the dry run's comment
_CHANGE_WHY = {"backup": "MP_PRIO on its subflows", "nobackup": "MP_PRIO on its subflows",
               "fullmesh": "its subflows closed and made again: one to every address of the peer",
               "nofullmesh": "its subflows closed and made again: one, to the peer's first address"}


#: the placeholder of an endpoint id read when the event runs (endpoint_delete by address)
EP_ID = "{id}"


def endpoint_cmds(env: ActionEnv, ev: EndpointAdd | EndpointDelete | EndpointFlags | EndpointFlush) -> list[Cmd]:
    if isinstance(ev, EndpointFlush):
        return [cmd("ip", "mptcp", "endpoint", "flush", node=ev.node, check=False,
                    why="every endpoint of the node deleted")]
    if isinstance(ev, EndpointDelete):
        addr = str(env.net.address(ev.address)) if ev.address is not None else None
        if ev.id is None:
            return [cmd("ip", "mptcp", "endpoint", "delete", "id", EP_ID, node=ev.node, check=False,
                        why=f"the endpoint of {addr}, its id read when the event runs")]
        by_addr = [addr] if addr is not None and ev.id == 0 else []
        return [cmd("ip", "mptcp", "endpoint", "delete", "id", ev.id, *by_addr, node=ev.node, check=False)]
    if isinstance(ev, EndpointFlags):
        argv = ["ip", "mptcp", "endpoint", "change"]
        if ev.id is not None:
            argv += ["id", str(ev.id)]
        if ev.address is not None:
            argv.append(str(env.net.address(ev.address)))
        if ev.port is not None:
            argv += ["port", str(ev.port)]
        what = ev.address if ev.address is not None else f"id {ev.id}"
        return [Cmd((*argv, ev.flags), node=ev.node, check=False,
                    why=f"endpoint {what}: {ev.flags} ({_CHANGE_WHY[ev.flags]})")]
    addr = str(env.net.address(ev.address))
    argv = ["ip", "mptcp", "endpoint", "add", addr]
    if (dev := endpoint_dev(env.net, ev.node, ev.address)) is not None:
        argv += ["dev", dev]
    if ev.id is not None:
        argv += ["id", str(ev.id)]
    if ev.port is not None:
        argv += ["port", str(ev.port)]
    argv += list(ev.flags)
    return [Cmd(tuple(argv), node=ev.node, check=False)]


def endpoint_lookup(env: ActionEnv, ev: EndpointDelete) -> Lookup | None:
    """An endpoint deleted by address alone: its id from ``ip mptcp endpoint show``."""
    if ev.id is not None or ev.address is None:
        return None
    from ..net.mptcp import endpoint_id_of, endpoint_show_cmd

    addr = str(env.net.address(ev.address))
    return Lookup(endpoint_show_cmd(ev.node), lambda out: {EP_ID: str(endpoint_id_of(out, addr))},
                  f"{EP_ID}: the id of {addr} in the endpoint list above, read when the event runs")


def limits_cmds(ev: LimitsSet) -> list[Cmd]:
    argv: list[str | int] = ["ip", "mptcp", "limits", "set"]
    if ev.subflows is not None:
        argv += ["subflows", ev.subflows]
    if ev.add_addr_accepted is not None:
        argv += ["add_addr_accepted", ev.add_addr_accepted]
    return [cmd(*argv, node=ev.node, check=False, why="in-kernel path manager limits from now on")]


def upm_resolved(env: ActionEnv, ev: UpmAnnounce | UpmRemove | UpmSubflowCreate | UpmSubflowDestroy,
                 at: float, source: str) -> Resolved:
    from .upm import upm_plan

    if env.body is None:
        raise ValueError(f"{ev.action} needs the lab's flows (ActionEnv.body)")
    plan = upm_plan(env.body, env.net, ev)
    return Resolved(at, ev.action, _target(ev), (plan.cmd,), source=source, event=ev,
                    lookup=Lookup(plan.lookup, plan.values, plan.note))


def _target(ev: Event) -> str:
    if isinstance(ev, LinkDown | LinkUp):
        return f"{ev.link} ({ev.direction})" + (" this end only" if ev.ends == "one" else "")
    if isinstance(ev, LinkChange):
        return f"{ev.link} ({ev.direction})"
    if isinstance(ev, FlowStart | FlowStop):
        return ev.flow
    if isinstance(ev, EndpointFlags | EndpointAdd):
        return f"{ev.node} {ev.address}"
    if isinstance(ev, EndpointDelete):
        return f"{ev.node} id {ev.id}" if ev.id is not None else f"{ev.node} {ev.address}"
    if isinstance(ev, EndpointFlush | LimitsSet):
        return ev.node
    if isinstance(ev, UpmAnnounce):
        return f"{ev.node} flow {ev.flow} {ev.address} id {ev.id}"
    if isinstance(ev, UpmRemove):
        return f"{ev.node} flow {ev.flow} id {ev.id}"
    if isinstance(ev, UpmSubflowCreate | UpmSubflowDestroy):
        return f"{ev.node} flow {ev.flow} {ev.local} -> {ev.remote}"
    if isinstance(ev, SysctlWrite):
        return f"{ev.node} {ev.key}"
    raise TypeError(type(ev).__name__)


def subject(ev: Event | None) -> dict[str, Any]:
    """The typed columns of an action (record.model.Event: node, link, address, ...),
    from the lab's typed action (``Resolved.event``); none for a decision or an error."""
    if isinstance(ev, LinkDown | LinkUp | LinkChange):
        return {"node": ev.link.split(":", 1)[0], "link": ev.link, "direction": ev.direction}
    if isinstance(ev, EndpointFlags):
        return {"node": ev.node, "address": ev.address, "endpoint_id": ev.id, "flags": ev.flags}
    if isinstance(ev, EndpointAdd):
        return {"node": ev.node, "address": ev.address, "endpoint_id": ev.id, "flags": " ".join(ev.flags) or None}
    if isinstance(ev, EndpointDelete):
        return {"node": ev.node, "endpoint_id": ev.id, "address": ev.address}
    if isinstance(ev, EndpointFlush | SysctlWrite | LimitsSet):
        return {"node": ev.node}
    if isinstance(ev, UpmAnnounce):
        return {"node": ev.node, "flow": ev.flow, "address": ev.address, "endpoint_id": ev.id}
    if isinstance(ev, UpmRemove):
        return {"node": ev.node, "flow": ev.flow, "endpoint_id": ev.id}
    if isinstance(ev, UpmSubflowCreate):
        return {"node": ev.node, "flow": ev.flow, "address": ev.local, "endpoint_id": ev.local_id,
                "flags": "backup" if ev.backup else None}
    if isinstance(ev, UpmSubflowDestroy):
        return {"node": ev.node, "flow": ev.flow, "address": ev.local}
    if isinstance(ev, FlowStart | FlowStop):
        return {"flow": ev.flow}
    return {}


def _flow_call(env: ActionEnv, ev: FlowStart | FlowStop) -> Callable[[], str]:
    def call() -> str:
        fc = env.flow_control()
        if fc is None:
            raise RuntimeError("no traffic is running")
        (fc.start if isinstance(ev, FlowStart) else fc.stop)(ev.flow)
        return "started" if isinstance(ev, FlowStart) else "stopped (SIGINT)"

    return call


def resolve(env: ActionEnv, ev: Event, source: str = "timeline", planned_s: float | None = None) -> Resolved:
    """``ev`` as commands (or a call). ``planned_s`` defaults to the event's ``at``."""
    at = ev.at_s if planned_s is None else planned_s
    target = _target(ev)
    if isinstance(ev, FlowStart | FlowStop):
        verb = "start" if isinstance(ev, FlowStart) else "stop (SIGINT to the client)"
        return Resolved(at, ev.action, target, call=_flow_call(env, ev), source=source, event=ev,
                        call_text=f"{verb} flow {ev.flow}: its client command is listed under the traffic step")
    if isinstance(ev, UpmAnnounce | UpmRemove | UpmSubflowCreate | UpmSubflowDestroy):
        return upm_resolved(env, ev, at, source)
    cmds: list[Cmd]
    lookup: Lookup | None = None
    if isinstance(ev, LinkDown):
        cmds = link_down_cmds(env, ev)
    elif isinstance(ev, LinkUp):
        cmds = link_up_cmds(env, ev)
    elif isinstance(ev, LinkChange):
        cmds = link_change_cmds(env, ev)
    elif isinstance(ev, SysctlWrite):
        cmds = [cmd("sysctl", "-q", "-w", f"{ev.key}={ev.value}", node=ev.node, check=False)]
    elif isinstance(ev, LimitsSet):
        cmds = limits_cmds(ev)
    else:
        cmds = endpoint_cmds(env, ev)
        if isinstance(ev, EndpointDelete):
            lookup = endpoint_lookup(env, ev)
    return Resolved(at, ev.action, target, tuple(cmds), source=source, event=ev, lookup=lookup)


def resolve_timeline(env: ActionEnv, events: list[Event], file: str = "experiment.yml") -> list[Resolved]:
    """Every event of the timeline, in time order (ties in file order). A change the
    emulator cannot make is the lab's error, named by its field, before anything runs."""
    order = sorted(range(len(events)), key=lambda i: (events[i].at_s, i))
    out = []
    for i in order:
        try:
            out.append(resolve(env, events[i]))
        except ValueError as e:
            raise LabInputError(file, f"traffic.events[{i}]", f"{e} ({env.emulator.name} emulator)") from None
    return out


def check_timelines(topo: ClabTopology, scenarios: Sequence[ScenarioRun], emulator: Emulator,
                    file: str = "experiment.yml") -> None:
    """Resolve every scenario's timeline against the chosen emulator, before anything
    runs: a change it cannot make on a running link is a LabInputError naming the event."""
    for sc in scenarios:
        if sc.body.traffic.events:
            resolve_timeline(ActionEnv(build_network(topo, sc.body, file), emulator, body=sc.body),
                             list(sc.body.traffic.events), file)

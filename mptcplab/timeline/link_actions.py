"""The link actions' commands (link_down, link_up, link_change), against the links'
current shapes in ActionEnv (a link changed twice is changed from its second state)."""

from __future__ import annotations

import re
from dataclasses import replace

from ..commands import Cmd, cmd
from ..emulation.linkmodel import DirectedLink, Endpoint
from ..lab.events import LinkChange, LinkDown, LinkUp
from ..lab.network import Link, Route
from ..lab.shapes import changed_shape, changes_direction
from ..net.config import route_argv
from .env import ActionEnv

#: nftables table of the timeline's drop filters (how: drop), apart from the lab's own
DROP_TABLE = "mptcplab_ev"


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

"""The path manager's actions' commands: endpoint add / delete / flags / flush and the
in-kernel path manager's limits (``ip mptcp``; an endpoint with a flag iproute2 6.1 lacks
through the kernel's mptcp_pm netlink family: net/mptcp.py)."""

from __future__ import annotations

from ..commands import Cmd, cmd
from ..lab.events import EndpointAdd, EndpointDelete, EndpointFlags, EndpointFlush, LimitsSet
from ..net.mptcp import endpoint_add_argv, endpoint_dev, needs_netlink
from .env import ActionEnv, Lookup

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
    dev = endpoint_dev(env.net, ev.node, ev.address)
    why = "mptcp_pm netlink: iproute2 6.1 has no laminar" if needs_netlink(ev.flags) else ""
    return [Cmd(endpoint_add_argv(addr, dev=dev, eid=ev.id, port=ev.port, flags=ev.flags), node=ev.node,
                check=False, why=why)]


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

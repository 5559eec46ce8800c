"""MPTCP configuration of a node: limits, endpoints, scheduler, path manager."""

from __future__ import annotations

from .commands import Cmd, cmd
from .lab.fields import is_endpoint_ref
from .lab.network import Network
from .lab.schema import ExperimentBody


def mptcp_sysctls(body: ExperimentBody, name: str) -> dict[str, str]:
    spec = body.nodes[name].mptcp
    out: dict[str, str] = {}
    if spec and spec.scheduler:
        out["net.mptcp.scheduler"] = spec.scheduler
    if spec and spec.path_manager:
        out["net.mptcp.pm_type"] = "0" if spec.path_manager == "kernel" else "1"
    return out


def mptcp_cmds(body: ExperimentBody, net: Network, name: str) -> list[Cmd]:
    spec = body.nodes[name].mptcp
    if spec is None:
        return []
    out = [
        cmd("ip", "mptcp", "endpoint", "flush", node=name),
        cmd("ip", "mptcp", "limits", "set", "subflow", spec.limits.subflows,
            "add_addr_accepted", spec.limits.add_addr_accepted, node=name,
            why="in-kernel path manager: how many extra subflows / accepted ADD_ADDRs"),
    ]
    for e in spec.endpoints:
        addr = net.address(e.address)
        argv = ["ip", "mptcp", "endpoint", "add", str(addr)]
        if is_endpoint_ref(e.address):
            argv += ["dev", e.address.split(":", 1)[1]]
        if e.port is not None:
            argv += ["port", str(e.port)]
        if e.id is not None:
            argv += ["id", str(e.id)]
        argv += list(e.flags)
        where = f"{addr}" if e.port is None else f"{addr} port {e.port}"
        out.append(Cmd(tuple(argv), node=name, why=f"endpoint {where}: {' '.join(e.flags)}"))
    return out

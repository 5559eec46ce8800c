"""Commands that configure a node from the derived Network: sysctls, interfaces,
addresses, routes, policy rules, offloads and the PMTUD black-hole firewall.

Backend-independent: the commands name nodes, and a backend runs them in a
namespace (netns) or a container (containerlab).
"""

from __future__ import annotations

from .commands import Cmd, cmd
from .lab.network import Network, Node, Route
from .lab.schema import ExperimentBody

FW_TABLE = "mptcplab_fw"


def sysctl_cmds(node: Node) -> list[Cmd]:
    if not node.sysctls:
        return []
    return [cmd("sysctl", "-q", "-w", *(f"{k}={v}" for k, v in node.sysctls.items()), node=node.name,
                why="kernel settings of this node (read back into the manifest)")]


def _route_argv(r: Route) -> list[str]:
    argv = ["ip", "route", "add", str(r.dst) if r.dst else "default"]
    if r.via:
        argv += ["via", str(r.via)]
    argv += ["dev", r.dev]
    if r.table is not None:
        argv += ["table", str(r.table)]
    return argv


def interface_cmds(net: Network, name: str) -> list[Cmd]:
    out = [cmd("ip", "link", "set", "dev", "lo", "up", node=name)]
    for ep, link in net.interfaces(name):
        out.append(cmd("ip", "link", "set", "dev", ep.iface, "mtu", link.mtu, "up", node=name,
                       why=f"link {link.name}, MTU {link.mtu}"))
        out.append(cmd("ip", "addr", "add", str(link.addr(ep)), "dev", ep.iface, node=name))
    return out


def offload_cmds(net: Network, name: str) -> list[Cmd]:
    """TSO/GSO/GRO off: captures then show wire-size segments, not 64 KB aggregates."""
    return [cmd("ethtool", "-K", ep.iface, "tso", "off", "gso", "off", "gro", "off", node=name,
                why="offloads off so captures show real segment sizes")
            for ep, _ in net.interfaces(name)]


def route_cmds(node: Node) -> list[Cmd]:
    out = [Cmd(tuple(_route_argv(r)), node=node.name) for r in node.routes]
    out += [cmd("ip", "rule", "add", "from", str(r.src), "table", r.table, "priority", r.priority, node=node.name,
                why="per-source routing: a subflow from this address leaves by its own interface")
            for r in node.rules]
    return out


def firewall_cmds(body: ExperimentBody, name: str) -> list[Cmd]:
    spec = body.nodes[name]
    if not spec.drop_icmp_frag_needed:
        return []
    why = "PMTUD black hole: drop the ICMP frag-needed this router generates (counted)"
    return [
        cmd("nft", "add", "table", "inet", FW_TABLE, node=name, why=why),
        cmd("nft", "add", "chain", "inet", FW_TABLE, "output",
            "{", "type", "filter", "hook", "output", "priority", "0", ";", "}", node=name),
        cmd("nft", "add", "rule", "inet", FW_TABLE, "output", "icmp", "type", "destination-unreachable",
            "icmp", "code", "frag-needed", "counter", "drop", node=name),
    ]


def firewall_counter_cmd(name: str) -> Cmd:
    return cmd("nft", "-j", "list", "table", "inet", FW_TABLE, node=name, check=False)

"""Commands that configure a node from the derived Network: sysctls, interfaces,
addresses, routes, policy rules, offloads, the PMTUD black-hole firewall and the
middleboxes (mptcplab/middlebox/nft.py builds their nftables rules).

Backend-independent: the commands name nodes, and a backend runs them in a
namespace (netns) or a container (containerlab).
"""

from __future__ import annotations

from .commands import Cmd, cmd
from .lab.network import Network, Node, Route
from .lab.schema import ExperimentBody
from .middlebox.nft import middlebox_cmds

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


def _rule_cmds(node: Node) -> list[Cmd]:
    return [cmd("ip", "rule", "add", "from", str(r.src), "table", r.table, "priority", r.priority, node=node.name,
                why="per-source routing: a subflow from this address leaves by its own interface")
            for r in node.rules]


def route_cmds(node: Node) -> list[Cmd]:
    return [Cmd(tuple(_route_argv(r)), node=node.name) for r in node.routes] + _rule_cmds(node)


# Fixed scripts (no lab input inside them: prefixes and tables arrive as positional
# arguments). vtysh talks to daemons that start with the container, and it returns
# as soon as staticd has the configuration, before zebra has put the route into the
# kernel; traffic must not start before both. The kernel check matches the prefix,
# not the protocol: zebra installs static routes as protocol 196 (RTPROT_ZSTATIC,
# which FRR's rt_protos.d file names "static", while `ip route show proto static`
# filters on 4), and on a fresh router nothing else routes a non-connected prefix.
FRR_READY_SCRIPT = 'until vtysh -c "show daemons" 2>/dev/null | grep -qw staticd; do sleep 0.1; done'
FRR_INSTALLED_SCRIPT = ('while [ "$#" -gt 0 ]; do '
                        'until ip -4 route show table "$2" to exact "$1" | grep -q .; do sleep 0.05; done; '
                        'shift 2; done')
FRR_READY_TIMEOUT_S = 30
FRR_INSTALL_TIMEOUT_S = 10


def _frr_route(r: Route) -> str:
    """One FRR static route: ``ip route PREFIX [NEXTHOP] IFNAME [table N]``. The
    interface is kept with the next hop, as ``ip route ... dev`` does, so a next hop
    reachable on two interfaces still leaves by the one the network chose."""
    words = ["ip", "route", str(r.dst) if r.dst else "0.0.0.0/0"]
    if r.via:
        words.append(str(r.via))
    words.append(r.dev)
    if r.table is not None:
        words += ["table", str(r.table)]
    return " ".join(words)


def frr_route_cmds(node: Node) -> list[Cmd]:
    """A router's static routes as FRR static routes (staticd, installed by zebra),
    for backends whose router nodes run FRR (containerlab). Policy rules, which FRR's
    static routes do not express, stay ``ip rule``.

    The vtysh lines are built from typed values (addresses, prefixes, table numbers)
    and interface names the lab schema restricts to [A-Za-z0-9._-]; vtysh parses them,
    no shell does."""
    if not node.routes:
        return _rule_cmds(node)
    vtysh: list[str] = ["vtysh", "-c", "configure terminal"]
    installed: list[str] = []
    for r in node.routes:
        vtysh += ["-c", _frr_route(r)]
        installed += [str(r.dst) if r.dst else "default", "main" if r.table is None else str(r.table)]
    return [
        cmd("timeout", FRR_READY_TIMEOUT_S, "sh", "-c", FRR_READY_SCRIPT, node=node.name,
            why="FRR starts with the container: wait until staticd answers vtysh"),
        cmd(*vtysh, node=node.name, why=f"{len(node.routes)} static route(s) through FRR (staticd)"),
        cmd("timeout", FRR_INSTALL_TIMEOUT_S, "sh", "-c", FRR_INSTALLED_SCRIPT, "sh", *installed, node=node.name,
            why="vtysh returns before zebra installs the routes: wait until the kernel has them"),
        *_rule_cmds(node),
    ]


def firewall_cmds(body: ExperimentBody, name: str) -> list[Cmd]:
    spec = body.nodes[name]
    out = middlebox_cmds(body, name)
    if not spec.drop_icmp_frag_needed:
        return out
    why = "PMTUD black hole: drop the ICMP frag-needed this router generates (counted)"
    return [
        cmd("nft", "add", "table", "inet", FW_TABLE, node=name, why=why),
        cmd("nft", "add", "chain", "inet", FW_TABLE, "output",
            "{", "type", "filter", "hook", "output", "priority", "0", ";", "}", node=name),
        cmd("nft", "add", "rule", "inet", FW_TABLE, "output", "icmp", "type", "destination-unreachable",
            "icmp", "code", "frag-needed", "counter", "drop", node=name),
    ] + out


def firewall_counter_cmd(name: str) -> Cmd:
    return cmd("nft", "-j", "list", "table", "inet", FW_TABLE, node=name, check=False)

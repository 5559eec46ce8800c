"""Commands that configure a node from the derived Network: sysctls, interfaces,
addresses, routes, policy rules, offloads, the PMTUD black-hole firewall and the
middleboxes (mptcplab/middlebox/nft.py builds their nftables rules).

Backend-independent: the commands name nodes, and a backend runs them in a
namespace (netns) or a container (containerlab).
"""

from __future__ import annotations

from ..commands import Cmd, cmd
from ..lab.network import Network, Node, Route
from ..lab.schema import ExperimentBody
from ..middlebox.nft import middlebox_cmds

FW_TABLE = "mptcplab_fw"


def sysctl_cmds(node: Node) -> list[Cmd]:
    if not node.sysctls:
        return []
    return [cmd("sysctl", "-q", "-w", *(f"{k}={v}" for k, v in node.sysctls.items()), node=node.name,
                why="kernel settings of this node (read back into the manifest)")]


def route_argv(r: Route, verb: str = "add") -> list[str]:
    """``ip route add`` (or ``replace``) of one route."""
    # no `ip -6`: ip takes the family from the prefix and next hop, and a `-6` would not
    # pass `ip -batch` (it reads objects only); a v6 default route is written ::/0 for it
    argv = ["ip", "route", verb, str(r.dst) if r.dst else ("default" if r.version == 4 else "::/0")]
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
        for addr in link.addrs(ep):
            if addr.version == 4:
                out.append(cmd("ip", "addr", "add", str(addr), "dev", ep.iface, node=name))
            else:
                # nodad: usable at once, not tentative for a second (BASE6_SYSCTLS says why too)
                out.append(cmd("ip", "addr", "add", str(addr), "dev", ep.iface, "nodad", node=name))
    return out


def offload_cmds(net: Network, name: str) -> list[Cmd]:
    """TSO/GSO/GRO off: captures then show wire-size segments, not 64 KB aggregates."""
    return [cmd("ethtool", "-K", ep.iface, "tso", "off", "gso", "off", "gro", "off", node=name,
                why="offloads off so captures show real segment sizes")
            for ep, _ in net.interfaces(name)]


def _rule_cmds(node: Node) -> list[Cmd]:
    # `ip rule` reads its address as IPv4 unless told -6 (`ip route` infers the family itself)
    return [cmd("ip", *(("-6",) if ":" in str(r.src) else ()), "rule", "add", "from", str(r.src), "table", r.table,
                "priority", r.priority, node=node.name,
                why="per-source routing: a subflow from this address leaves by its own interface")
            for r in node.rules]


def route_cmds(node: Node) -> list[Cmd]:
    return [Cmd(tuple(route_argv(r)), node=node.name) for r in node.routes] + _rule_cmds(node)


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
FRR_INSTALLED6_SCRIPT = FRR_INSTALLED_SCRIPT.replace("ip -4 route", "ip -6 route")
FRR_READY_TIMEOUT_S = 30
FRR_INSTALL_TIMEOUT_S = 10


def _frr_route(r: Route) -> str:
    """One FRR static route: ``ip route PREFIX [NEXTHOP] IFNAME [table N]`` (``ipv6 route``
    for IPv6). The interface is kept with the next hop, as ``ip route ... dev`` does, so a
    next hop reachable on two interfaces still leaves by the one the network chose."""
    v4 = r.version == 4
    words = ["ip" if v4 else "ipv6", "route", str(r.dst) if r.dst else ("0.0.0.0/0" if v4 else "::/0")]
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
    installed: dict[int, list[str]] = {4: [], 6: []}
    for r in node.routes:
        vtysh += ["-c", _frr_route(r)]
        installed[r.version] += [str(r.dst) if r.dst else "default", "main" if r.table is None else str(r.table)]
    waits = [cmd("timeout", FRR_INSTALL_TIMEOUT_S, "sh", "-c", script, "sh", *installed[v], node=node.name,
                 why="vtysh returns before zebra installs the routes: wait until the kernel has them")
             for v, script in ((4, FRR_INSTALLED_SCRIPT), (6, FRR_INSTALLED6_SCRIPT)) if installed[v]]
    return [
        cmd("timeout", FRR_READY_TIMEOUT_S, "sh", "-c", FRR_READY_SCRIPT, node=node.name,
            why="FRR starts with the container: wait until staticd answers vtysh"),
        cmd(*vtysh, node=node.name, why=f"{len(node.routes)} static route(s) through FRR (staticd)"),
        *waits,
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

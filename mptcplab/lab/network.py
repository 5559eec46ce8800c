"""From lab files to a concrete network: addresses, MTUs, impairments and routes.

Pure computation, no side effects, so tests can check the routing a lab gets.

Routing rules (the classic MPTCP testbed mistakes are avoided here):
- routers forward; hosts never do. A subnet is reachable through a path whose
  intermediate nodes are all routers and whose last node is a router attached to it.
- every node gets one static route per non-connected subnet, along the shortest such
  path (ties broken by node name, so routes are deterministic).
- a multi-homed host also gets one routing table per interface that has a router
  neighbour, selected by source address (``ip rule from <addr>``), with a default
  route through that neighbour: a subflow bound to an address leaves by that
  address's interface, and every address it may join is reachable on that path.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Interface, IPv4Network

from ..emulation.linkmodel import DirectedLink, Endpoint, LinkShape
from ..errors import LabInputError
from .schema import ClabTopology, ExperimentBody

DEFAULT_MTU = 1500
POLICY_TABLE_BASE = 100


@dataclass(frozen=True)
class Link:
    index: int
    a: Endpoint
    b: Endpoint
    mtu: int
    subnet: IPv4Network
    addr_a: IPv4Interface
    addr_b: IPv4Interface
    #: impairments of packets going a -> b and b -> a (equal unless the lab gave a
    #: direction its own shape: links.<ep>.egress / ingress)
    shape_ab: LinkShape
    shape_ba: LinkShape

    def other(self, ep: Endpoint) -> Endpoint:
        return self.b if ep == self.a else self.a

    def addr(self, ep: Endpoint) -> IPv4Interface:
        return self.addr_a if ep == self.a else self.addr_b

    def directions(self) -> tuple[DirectedLink, DirectedLink]:
        return (DirectedLink(self.a, self.b, self.shape_ab, self.mtu),
                DirectedLink(self.b, self.a, self.shape_ba, self.mtu))

    def shape_from(self, ep: Endpoint) -> LinkShape:
        """The shape of the direction whose packets leave ``ep``."""
        return self.shape_ab if ep == self.a else self.shape_ba

    @property
    def impaired(self) -> bool:
        return self.shape_ab.impaired or self.shape_ba.impaired

    @property
    def symmetric(self) -> bool:
        return self.shape_ab == self.shape_ba

    @property
    def name(self) -> str:
        return f"{self.a}--{self.b}"


@dataclass(frozen=True)
class Route:
    dst: IPv4Network | None  # None: default route
    via: IPv4Address | None
    dev: str
    table: int | None = None  # None: main


@dataclass(frozen=True)
class Rule:
    src: IPv4Address
    table: int
    priority: int


@dataclass
class Node:
    name: str
    role: str
    sysctls: dict[str, str] = field(default_factory=dict)
    routes: list[Route] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)


@dataclass
class Network:
    nodes: dict[str, Node]
    links: list[Link]

    def link_of(self, ep: Endpoint | str) -> Link:
        e = Endpoint.parse(ep) if isinstance(ep, str) else ep
        for link in self.links:
            if e in (link.a, link.b):
                return link
        raise KeyError(str(e))

    def address(self, ref: str) -> IPv4Address:
        """'node:iface' or a literal IPv4 address -> address."""
        if ":" in ref:
            e = Endpoint.parse(ref)
            return self.link_of(e).addr(e).ip
        return IPv4Address(ref)

    def interfaces(self, node: str) -> list[tuple[Endpoint, Link]]:
        out = []
        for link in self.links:
            for ep in (link.a, link.b):
                if ep.node == node:
                    out.append((ep, link))
        return sorted(out, key=lambda x: x[0].iface)


# sysctls every node gets: why each is needed is in docs/architecture.md
BASE_SYSCTLS = {
    "net.ipv4.conf.all.rp_filter": "0",
    "net.ipv4.conf.default.rp_filter": "0",
    "net.mptcp.enabled": "1",
    # a fresh namespace per repetition already isolates cached metrics; this makes
    # it explicit that no ssthresh/PMTU learnt by one connection seeds the next
    "net.ipv4.tcp_no_metrics_save": "1",
}
ROUTER_SYSCTLS = {"net.ipv4.ip_forward": "1"}


def _addresses(topo: ClabTopology, body: ExperimentBody,
               file: str) -> list[tuple[IPv4Network, IPv4Interface, IPv4Interface]]:
    pool = body.addressing.pool
    if body.addressing.prefixlen < pool.prefixlen:
        raise LabInputError(file, "addressing.prefixlen",
                            f"/{body.addressing.prefixlen} is larger than the pool {pool}")
    subnets = pool.subnets(new_prefix=body.addressing.prefixlen)
    next(subnets)  # keep the pool's first subnet free: x.x.0.0 looks like a network id to students
    roles = {n: s.role for n, s in body.nodes.items()}
    explicit = body.addressing.addresses
    out = []
    for link in topo.topology.links:
        a, b = link.endpoints
        if a in explicit or b in explicit:
            ia, ib = explicit.get(a), explicit.get(b)
            if ia is None or ib is None:
                raise LabInputError(file, f"addressing.addresses.{b if ia else a}",
                                    "give both ends of a link an address, or neither")
            if ia.network != ib.network:
                raise LabInputError(file, f"addressing.addresses.{b}", f"{ib} is not in the same subnet as {a}'s {ia}")
            out.append((ia.network, ia, ib))
            continue
        try:
            net = next(subnets)
        except StopIteration:
            raise LabInputError(file, "addressing.pool", f"{pool} has too few /{body.addressing.prefixlen} subnets "
                                f"for {len(topo.topology.links)} links") from None
        # the first two host addresses, without listing a /8's sixteen million (net.hosts())
        hosts = [net.network_address + 1, net.network_address + 2]
        # routers take .1, hosts .2, so the gateway address is predictable
        ra, rb = roles[a.split(":")[0]], roles[b.split(":")[0]]
        ha, hb = (hosts[1], hosts[0]) if (ra == "host" and rb == "router") else (hosts[0], hosts[1])
        out.append((net, IPv4Interface(f"{ha}/{net.prefixlen}"), IPv4Interface(f"{hb}/{net.prefixlen}")))
    return out


def build_network(topo: ClabTopology, body: ExperimentBody, file: str = "experiment.yml") -> Network:
    nodes = {name: Node(name, spec.role) for name, spec in body.nodes.items()}
    links: list[Link] = []
    for i, (clab_link, (net, ia, ib)) in enumerate(zip(topo.topology.links, _addresses(topo, body, file), strict=True)):
        a, b = (Endpoint.parse(e) for e in clab_link.endpoints)
        key = a if str(a) in body.links else b
        spec = body.links.get(str(key))
        mtu = (spec.mtu if spec and spec.mtu else None) or clab_link.mtu or DEFAULT_MTU
        # egress/ingress are relative to the endpoint that names the link in `links:`
        out, back = ((LinkShape.parse(**spec.direction("egress")), LinkShape.parse(**spec.direction("ingress")))
                     if spec else (LinkShape(), LinkShape()))
        ab, ba = (out, back) if key == a else (back, out)
        links.append(Link(i, a, b, mtu, net, ia, ib, ab, ba))
    netw = Network(nodes, links)
    for name, node in nodes.items():
        node_spec = body.nodes[name]
        node.sysctls = {**BASE_SYSCTLS, **(ROUTER_SYSCTLS if node.role == "router" else {}),
                        **{k: str(v) for k, v in body.sysctls.items()},
                        **{k: str(v) for k, v in node_spec.sysctls.items()}}
        node.routes = _routes(netw, name)
        if node.role == "host":
            _policy_routing(netw, node)
    return netw


def _neighbours(net: Network, node: str) -> list[tuple[str, Endpoint, Link]]:
    return [(link.other(ep).node, ep, link) for ep, link in net.interfaces(node)]


@dataclass(frozen=True, order=True)
class _Hop:
    dist: int
    path: tuple[str, ...]  # node names after src: ties break by name, deterministically
    link_index: int        # the first hop's link
    iface: str             # src's interface on it


def _first_hops(net: Network, src: str) -> dict[str, _Hop]:
    """Shortest paths (hop count) from src, expanding only through routers."""
    best: dict[str, _Hop] = {}
    heap = [_Hop(1, (nb,), link.index, ep.iface) for nb, ep, link in _neighbours(net, src)]
    heapq.heapify(heap)
    while heap:
        hop = heapq.heappop(heap)
        node = hop.path[-1]
        if node in best or node == src:
            continue
        best[node] = hop
        if net.nodes[node].role == "router":
            for nb, _, _ in _neighbours(net, node):
                if nb not in best:
                    heapq.heappush(heap, _Hop(hop.dist + 1, hop.path + (nb,), hop.link_index, hop.iface))
    return best


def _routes(net: Network, name: str) -> list[Route]:
    hops = _first_hops(net, name)
    local = {link.index for _, link in net.interfaces(name)}
    routes = []
    for link in net.links:
        if link.index in local:
            continue
        # reachable through a router attached to the subnet
        cands = [hops[ep.node] for ep in (link.a, link.b)
                 if ep.node in hops and net.nodes[ep.node].role == "router"]
        if not cands:
            continue
        hop = min(cands)
        first = net.links[hop.link_index]
        local_ep = Endpoint(name, hop.iface)
        routes.append(Route(link.subnet, first.addr(first.other(local_ep)).ip, hop.iface))
    return routes


def _policy_routing(net: Network, node: Node) -> None:
    ifaces = [(ep, link) for ep, link in net.interfaces(node.name)
              if net.nodes[link.other(ep).node].role == "router"]
    if len(net.interfaces(node.name)) < 2:
        return
    for k, (ep, link) in enumerate(ifaces):
        table = POLICY_TABLE_BASE + k
        gw = link.addr(link.other(ep)).ip
        node.routes.append(Route(link.subnet, None, ep.iface, table))
        node.routes.append(Route(None, gw, ep.iface, table))
        node.rules.append(Rule(link.addr(ep).ip, table, POLICY_TABLE_BASE + k))


def path_reaches(net: Network, ep: Endpoint, dst: IPv4Address) -> bool:
    """Whether a packet from ``ep``'s address to ``dst`` gets there on ``ep``'s own path:
    the host's per-source table sends it to the neighbour on that interface, so ``dst``
    must be on that link, be the neighbour, or be in a subnet the neighbouring router
    has a route to (routes exist only along paths of routers, see `_routes`)."""
    link = net.link_of(ep)
    if dst in link.subnet:
        return True
    nb = link.other(ep).node
    if dst in {lk.addr(e).ip for e, lk in net.interfaces(nb)}:
        return True
    if net.nodes[nb].role != "router":
        return False
    if any(dst in lk.subnet for _, lk in net.interfaces(nb)):
        return True
    return any(r.dst is not None and dst in r.dst for r in net.nodes[nb].routes if r.table is None)

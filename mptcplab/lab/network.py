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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from ipaddress import (
    IPv4Address,
    IPv4Interface,
    IPv4Network,
    IPv6Address,
    IPv6Interface,
    IPv6Network,
    ip_address,
    ip_interface,
)
from pathlib import Path

from ..emulation.linkmodel import DirectedLink, Endpoint, LinkShape
from ..emulation.trace import Trace, TraceError, trace_for
from ..errors import LabInputError
from ..values.fields import is_endpoint_ref
from .schema import ClabTopology, Direction, ExperimentBody, LinkSpec

DEFAULT_MTU = 1500
POLICY_TABLE_BASE = 100

IPAddress = IPv4Address | IPv6Address
IPInterface = IPv4Interface | IPv6Interface
IPNetwork = IPv4Network | IPv6Network


class MappedAddress(IPv6Address):
    """An IPv4-mapped IPv6 address written as mptcp_join.sh and Python 3.13 write it,
    ``::ffff:10.0.1.1`` (Python 3.11 prints ``::ffff:a00:101``): commands show it as the lab
    gives it. Equal to the plain IPv6Address of the same value."""

    def __str__(self) -> str:
        return f"::ffff:{self.ipv4_mapped}"


def _as_written(ip: IPAddress) -> IPAddress:
    return MappedAddress(ip) if isinstance(ip, IPv6Address) and ip.ipv4_mapped is not None else ip


def wire_address(ip: IPAddress) -> IPAddress:
    """The address the packets carry: an IPv4-mapped IPv6 address (``::ffff:a.b.c.d``, RFC 4291
    2.5.5.2) is its IPv4 address on the wire (an AF_INET6 socket talking IPv4); any other, itself."""
    mapped = ip.ipv4_mapped if isinstance(ip, IPv6Address) else None
    return mapped if mapped is not None else ip


@dataclass(frozen=True)
class Numbering:
    """One family's subnet of a link and its two ends' addresses."""

    subnet: IPNetwork
    addr_a: IPInterface
    addr_b: IPInterface


@dataclass(frozen=True)
class Link:
    index: int
    a: Endpoint
    b: Endpoint
    mtu: int
    #: the link's IPv4 and IPv6 numbering (at least one of them)
    v4: Numbering | None
    v6: Numbering | None
    #: impairments of packets going a -> b and b -> a (equal unless the lab gave a
    #: direction its own shape: links.<ep>.egress / ingress)
    shape_ab: LinkShape
    shape_ba: LinkShape

    def other(self, ep: Endpoint) -> Endpoint:
        return self.b if ep == self.a else self.a

    @property
    def numberings(self) -> list[Numbering]:
        """IPv4's first: the family a 'node:iface' reference names on a dual-stack link."""
        return [n for n in (self.v4, self.v6) if n is not None]

    def numbering(self, version: int) -> Numbering | None:
        return self.v4 if version == 4 else self.v6

    @property
    def _primary(self) -> Numbering:
        return self.numberings[0]

    @property
    def subnet(self) -> IPNetwork:
        """The subnet of the link's first family (IPv4 when it has one)."""
        return self._primary.subnet

    @property
    def subnets(self) -> list[IPNetwork]:
        return [n.subnet for n in self.numberings]

    @property
    def addr_a(self) -> IPInterface:
        return self._primary.addr_a

    @property
    def addr_b(self) -> IPInterface:
        return self._primary.addr_b

    def addr(self, ep: Endpoint, version: int | None = None) -> IPInterface:
        """``ep``'s address: of the link's first family, or of ``version`` (KeyError when the
        link has none of that family)."""
        num = self._primary if version is None else self.numbering(version)
        if num is None:
            raise KeyError(f"{ep} has no IPv{version} address")
        return num.addr_a if ep == self.a else num.addr_b

    def addrs(self, ep: Endpoint) -> list[IPInterface]:
        """Every address of ``ep``, IPv4 first."""
        return [n.addr_a if ep == self.a else n.addr_b for n in self.numberings]

    def contains(self, ip: IPAddress) -> bool:
        """Whether ``ip`` is in one of the link's subnets."""
        return any(ip in n.subnet for n in self.numberings)

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
    dst: IPNetwork | None  # None: default route (it has a via)
    via: IPAddress | None
    dev: str
    table: int | None = None  # None: main

    @property
    def version(self) -> int:
        if self.dst is not None:
            return self.dst.version
        assert self.via is not None, "a default route has a next hop"
        return self.via.version


@dataclass(frozen=True)
class Rule:
    src: IPAddress
    table: int
    priority: int

    @property
    def version(self) -> int:
        return self.src.version


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
    #: the traces the timeline switches to (link_change ``trace``), by the name the lab gives
    event_traces: dict[str, Trace] = field(default_factory=dict)

    def link_of(self, ep: Endpoint | str) -> Link:
        e = Endpoint.parse(ep) if isinstance(ep, str) else ep
        for link in self.links:
            if e in (link.a, link.b):
                return link
        raise KeyError(str(e))

    def address(self, ref: str, version: int | None = None) -> IPAddress:
        """'node:iface' (its IPv4 address when its link has one, else its IPv6 address; its
        address of ``version`` when given, KeyError if it has none) or a literal IPv4 or IPv6
        address -> address. ``version`` is for a caller that knows the family, e.g. a client's
        source address that must match the server address it connects to."""
        if is_endpoint_ref(ref):
            e = Endpoint.parse(ref)
            return self.link_of(e).addr(e, version).ip
        return _as_written(ip_address(ref))

    def addresses(self, ref: str) -> list[IPAddress]:
        """Every address a reference stands for: both families of a dual-stack 'node:iface',
        IPv4 first; a literal address alone."""
        if is_endpoint_ref(ref):
            e = Endpoint.parse(ref)
            return [a.ip for a in self.link_of(e).addrs(e)]
        return [_as_written(ip_address(ref))]

    def node_addresses(self, node: str) -> set[IPAddress]:
        """Every address of every interface of ``node``."""
        return {a.ip for ep, link in self.interfaces(node) for a in link.addrs(ep)}

    def owns(self, node: str, literal: str) -> bool:
        """Whether an address literal is one of ``node``'s: one of its addresses, or the
        IPv4-mapped IPv6 form of one of its IPv4 addresses (mptcp_join.sh's ``::ffff:10.0.1.1``)."""
        return wire_address(ip_address(literal)) in self.node_addresses(node)

    @property
    def versions(self) -> set[int]:
        """The IP versions the network's links carry."""
        return {n.subnet.version for link in self.links for n in link.numberings}

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
# only for a network that carries IPv6 (an IPv4 lab's sysctls stay as they were)
BASE6_SYSCTLS = {
    # no duplicate address detection: an address is tentative (unusable) for about a second
    # after `ip addr add` otherwise, and the first subflows of a repetition would fail
    "net.ipv6.conf.all.accept_dad": "0",
    "net.ipv6.conf.default.accept_dad": "0",
    # keep addresses (and so the MPTCP endpoints and routes on them) over a link_down/link_up,
    # as IPv4 does; IPv6 removes them on down otherwise
    "net.ipv6.conf.all.keep_addr_on_down": "1",
    "net.ipv6.conf.default.keep_addr_on_down": "1",
}
ROUTER6_SYSCTLS = {"net.ipv6.conf.all.forwarding": "1"}


@dataclass(frozen=True)
class _Family:
    """How one family's addresses are given in `addressing:` (the field names for errors)."""

    version: int
    pool: IPNetwork | None
    prefixlen: int
    explicit: Mapping[str, IPInterface]
    pool_field: str
    prefixlen_field: str
    addresses_field: str


def _families(body: ExperimentBody) -> list[_Family]:
    ad = body.addressing
    return [_Family(4, ad.pool, ad.prefixlen, ad.addresses, "addressing.pool", "addressing.prefixlen",
                    "addressing.addresses"),
            _Family(6, ad.pool6, ad.prefixlen6, ad.addresses6, "addressing.pool6", "addressing.prefixlen6",
                    "addressing.addresses6")]


def _numbering(topo: ClabTopology, body: ExperimentBody, fam: _Family, file: str) -> list[Numbering | None]:
    """One family's numbering of every link: explicit addresses, else the pool's next subnet,
    else none (no pool)."""
    pool = fam.pool
    subnets: Iterator[IPNetwork] | None = None
    if pool is not None:
        if fam.prefixlen < pool.prefixlen:
            raise LabInputError(file, fam.prefixlen_field, f"/{fam.prefixlen} is larger than the pool {pool}")
        subnets = pool.subnets(new_prefix=fam.prefixlen)
        next(subnets)  # keep the pool's first subnet free: x.x.0.0 looks like a network id to students
    roles = {n: s.role for n, s in body.nodes.items()}
    explicit = fam.explicit
    out: list[Numbering | None] = []
    for link in topo.topology.links:
        a, b = link.endpoints
        if a in explicit or b in explicit:
            ia, ib = explicit.get(a), explicit.get(b)
            if ia is None or ib is None:
                raise LabInputError(file, f"{fam.addresses_field}.{b if ia else a}",
                                    "give both ends of a link an address, or neither")
            if ia.network != ib.network:
                raise LabInputError(file, f"{fam.addresses_field}.{b}",
                                    f"{ib} is not in the same subnet as {a}'s {ia}")
            out.append(Numbering(ia.network, ia, ib))
            continue
        if subnets is None:
            out.append(None)
            continue
        try:
            net = next(subnets)
        except StopIteration:
            raise LabInputError(file, fam.pool_field, f"{pool} has too few /{fam.prefixlen} subnets "
                                f"for {len(topo.topology.links)} links") from None
        # the first two host addresses, without listing a /8's sixteen million (net.hosts())
        hosts = [net.network_address + 1, net.network_address + 2]
        # routers take .1 (::1), hosts .2 (::2), so the gateway address is predictable
        ra, rb = roles[a.split(":")[0]], roles[b.split(":")[0]]
        ha, hb = (hosts[1], hosts[0]) if (ra == "host" and rb == "router") else (hosts[0], hosts[1])
        out.append(Numbering(net, ip_interface(f"{ha}/{net.prefixlen}"), ip_interface(f"{hb}/{net.prefixlen}")))
    return out


def _shape(spec: LinkSpec, which: Direction, key: Endpoint, file: str) -> LinkShape:
    """One direction's shape; its trace (a shipped name, or a path relative to the lab's
    directory, the experiment file's) read and checked here, once."""
    fields = spec.direction(which)
    ref = fields.pop("trace", None)
    trace = None
    if ref is not None:
        try:
            trace = trace_for(ref, Path(file).parent)
        except TraceError as e:
            raise LabInputError(file, f"links.{key}.{spec.field_of(which, 'trace')}", str(e)) from None
    return LinkShape.parse(**fields, trace=trace)


def _event_traces(body: ExperimentBody, file: str) -> dict[str, Trace]:
    """The traces the timeline's link changes switch to, read and checked once, here."""
    out: dict[str, Trace] = {}
    for k, ev in enumerate(body.traffic.events):
        ref = getattr(ev, "trace", None)
        if ev.action != "link_change" or ref is None or ref in out:
            continue
        try:
            out[ref] = trace_for(ref, Path(file).parent)
        except TraceError as e:
            raise LabInputError(file, f"traffic.events[{k}].trace", str(e)) from None
    return out


def build_network(topo: ClabTopology, body: ExperimentBody, file: str = "experiment.yml") -> Network:
    nodes = {name: Node(name, spec.role) for name, spec in body.nodes.items()}
    links: list[Link] = []
    v4, v6 = (_numbering(topo, body, fam, file) for fam in _families(body))
    for i, clab_link in enumerate(topo.topology.links):
        a, b = (Endpoint.parse(e) for e in clab_link.endpoints)
        if v4[i] is None and v6[i] is None:
            raise LabInputError(file, "addressing.pool", f"link {a}--{b} gets no address: addressing.pool is null "
                                "and neither pool6 nor addresses/addresses6 number it")
        key = a if str(a) in body.links else b
        spec = body.links.get(str(key))
        mtu = (spec.mtu if spec and spec.mtu else None) or clab_link.mtu or DEFAULT_MTU
        # egress/ingress are relative to the endpoint that names the link in `links:`
        out, back = ((_shape(spec, "egress", key, file), _shape(spec, "ingress", key, file))
                     if spec else (LinkShape(), LinkShape()))
        ab, ba = (out, back) if key == a else (back, out)
        links.append(Link(i, a, b, mtu, v4[i], v6[i], ab, ba))
    netw = Network(nodes, links, _event_traces(body, file))
    has6 = 6 in netw.versions
    for name, node in nodes.items():
        node_spec = body.nodes[name]
        router = node.role == "router"
        node.sysctls = {**BASE_SYSCTLS, **(ROUTER_SYSCTLS if router else {}),
                        **(BASE6_SYSCTLS if has6 else {}), **(ROUTER6_SYSCTLS if has6 and router else {}),
                        **{k: str(v) for k, v in body.sysctls.items()},
                        **{k: str(v) for k, v in node_spec.sysctls.items()}}
        node.routes = [r for version in sorted(netw.versions) for r in _routes(netw, name, version)]
        if node.role == "host":
            _policy_routing(netw, node)
    return netw


def _neighbours(net: Network, node: str, version: int) -> list[tuple[str, Endpoint, Link]]:
    return [(link.other(ep).node, ep, link) for ep, link in net.interfaces(node)
            if link.numbering(version) is not None]


@dataclass(frozen=True, order=True)
class _Hop:
    dist: int
    path: tuple[str, ...]  # node names after src: ties break by name, deterministically
    link_index: int        # the first hop's link
    iface: str             # src's interface on it


def _first_hops(net: Network, src: str, version: int) -> dict[str, _Hop]:
    """Shortest paths (hop count) from src, expanding only through routers, over the links
    that carry ``version``."""
    best: dict[str, _Hop] = {}
    heap = [_Hop(1, (nb,), link.index, ep.iface) for nb, ep, link in _neighbours(net, src, version)]
    heapq.heapify(heap)
    while heap:
        hop = heapq.heappop(heap)
        node = hop.path[-1]
        if node in best or node == src:
            continue
        best[node] = hop
        if net.nodes[node].role == "router":
            for nb, _, _ in _neighbours(net, node, version):
                if nb not in best:
                    heapq.heappush(heap, _Hop(hop.dist + 1, hop.path + (nb,), hop.link_index, hop.iface))
    return best


def _routes(net: Network, name: str, version: int) -> list[Route]:
    hops = _first_hops(net, name, version)
    local = {link.index for _, link in net.interfaces(name)}
    routes = []
    for link in net.links:
        num = link.numbering(version)
        if link.index in local or num is None:
            continue
        # reachable through a router attached to the subnet
        cands = [hops[ep.node] for ep in (link.a, link.b)
                 if ep.node in hops and net.nodes[ep.node].role == "router"]
        if not cands:
            continue
        hop = min(cands)
        first = net.links[hop.link_index]
        local_ep = Endpoint(name, hop.iface)
        routes.append(Route(num.subnet, first.addr(first.other(local_ep), version).ip, hop.iface))
    return routes


def _policy_routing(net: Network, node: Node) -> None:
    ifaces = [(ep, link) for ep, link in net.interfaces(node.name)
              if net.nodes[link.other(ep).node].role == "router"]
    if len(net.interfaces(node.name)) < 2:
        return
    for k, (ep, link) in enumerate(ifaces):
        table = POLICY_TABLE_BASE + k
        for num in link.numberings:
            version = num.subnet.version
            gw = link.addr(link.other(ep), version).ip
            node.routes.append(Route(num.subnet, None, ep.iface, table))
            node.routes.append(Route(None, gw, ep.iface, table))
            node.rules.append(Rule(link.addr(ep, version).ip, table, POLICY_TABLE_BASE + k))


def path_reaches(net: Network, ep: Endpoint, dst: IPAddress) -> bool:
    """Whether a packet from ``ep``'s address to ``dst`` gets there on ``ep``'s own path:
    the host's per-source table sends it to the neighbour on that interface, so ``dst``
    must be on that link, be the neighbour, or be in a subnet the neighbouring router
    has a route to (routes exist only along paths of routers, see `_routes`)."""
    link = net.link_of(ep)
    if link.numbering(dst.version) is None:
        return False  # no address of dst's family to send from on this path
    if link.contains(dst):
        return True
    nb = link.other(ep).node
    if dst in net.node_addresses(nb):
        return True
    if net.nodes[nb].role != "router":
        return False
    if any(lk.contains(dst) for _, lk in net.interfaces(nb)):
        return True
    return any(r.dst is not None and dst in r.dst for r in net.nodes[nb].routes if r.table is None)

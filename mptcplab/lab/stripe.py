"""The balance-rr striping a host's ``balance_rr`` describes, resolved against the built
network: the legs (interface, next hop, mark, routing table) each packet to the peer address
takes in turn. Pure; the loader checks with it that every leg can reach the peer, and
mptcplab/net/bonding.py turns it into ip and nft commands."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address

from ..errors import LabInputError
from .network import Network
from .schema import ExperimentBody

#: routing tables of the legs (per-source tables are 100+, below these)
RR_TABLE_BASE = 200
#: marks of the legs: RR_MARK_BASE + k (a value no other rule of the engine sets)
RR_MARK_BASE = 0x4D520000


@dataclass(frozen=True)
class Leg:
    iface: str
    gateway: IPv4Address | None  # None: the peer is the neighbour on this interface
    mark: int
    table: int


@dataclass(frozen=True)
class Stripe:
    node: str
    dst: IPv4Address
    legs: tuple[Leg, ...]


def stripe_of(net: Network, body: ExperimentBody, name: str, file: str = "experiment.yml") -> Stripe | None:
    """The node's balance_rr as legs, or None. A leg's neighbour must be a router (it routes on)
    or the host that owns the peer address (a direct link)."""
    rr = body.nodes[name].balance_rr
    if rr is None:
        return None
    dst = net.address(rr.to)
    if not isinstance(dst, IPv4Address):
        # its nftables rules (mptcplab/net/bonding.py) match `ip daddr`: IPv4 only
        raise LabInputError(file, f"nodes.{name}.balance_rr.to", f"{dst}: striping is IPv4 only")
    legs = []
    for k, iface in enumerate(rr.via):
        link = next(lk for ep, lk in net.interfaces(name) if ep.iface == iface)
        ep = next(ep for ep, lk in net.interfaces(name) if ep.iface == iface)
        peer = link.other(ep)
        peer_addrs = net.node_addresses(peer.node)
        if net.nodes[peer.node].role == "router":
            ip = link.addr(peer, 4).ip if link.v4 else None
            if not isinstance(ip, IPv4Address):
                raise LabInputError(file, f"nodes.{name}.balance_rr.via", f"{iface}'s link has no IPv4 address")
            gw: IPv4Address | None = ip
        elif dst in peer_addrs:
            gw = None
        else:
            raise LabInputError(file, f"nodes.{name}.balance_rr.via",
                                f"{iface} leads to host {peer.node}, which neither routes nor owns {dst}")
        legs.append(Leg(iface, gw, RR_MARK_BASE + k + 1, RR_TABLE_BASE + k))
    return Stripe(name, dst, tuple(legs))

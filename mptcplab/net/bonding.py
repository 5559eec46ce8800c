"""Bonding's balance-rr, emulated: per-packet round robin over several interfaces.

This kernel has no bonding driver (`ip link add type bond`: "Unknown device type"), no team
and no tc actions beyond mirred, so the NSDI 2012 paper's "TCP over bonding (round-robin)"
baseline is built from what it has (experiment.yml ``nodes.<host>.balance_rr``):

- an nftables chain of type ``route`` in the output hook gives every packet this host sends
  to the peer address the next mark of ``numgen inc mod N`` (a counter, so leg 1, 2, ..., N,
  1, ...); a route chain that changes the mark makes the kernel look the route up again;
- one ``ip rule fwmark`` per mark selects a routing table of its own, whose only route sends
  the peer address out of that leg's interface (through the neighbouring router, or straight
  to the peer on a direct link: the peer answers ARP for any of its addresses on any
  interface, Linux's default arp_ignore=0).

Like balance-rr: one TCP connection, one address pair, its packets striped one by one over
the links, with the reordering that causes at the receiver. Unlike it: no bond device and no
shared MAC (each leg keeps its interface and address; the socket's source address is the one
the main table chooses for the first leg), ARP is per interface, and the striping is per
destination address, set on each end separately (both directions need it: give both hosts a
``balance_rr``). Pure command generation from lab/stripe.py's legs, like config.py; a run proves the striping from
the capture (traffic/connections.py: ``points_with_data``, the capture points where a
connection's initial subflow carried data).
"""

from __future__ import annotations

from ..commands import Cmd, cmd
from ..lab.network import Network
from ..lab.schema import ExperimentBody
from ..lab.stripe import Stripe, stripe_of

RR_TABLE = "mptcplab_rr"
#: priority of the legs' fwmark rules: below the per-source rules' (lab/network.py, POLICY_TABLE_BASE + k),
#: so a marked packet takes its leg's table first
RR_RULE_PRIORITY = 50


def stripe_cmds(s: Stripe) -> list[Cmd]:
    """Routes and rules per leg first, then the marking rule (until it exists nothing is marked)."""
    n = len(s.legs)
    why = f"balance-rr emulation: packets to {s.dst} in turn over {', '.join(leg.iface for leg in s.legs)}"
    out: list[Cmd] = []
    for leg in s.legs:
        route = ["ip", "route", "add", f"{s.dst}/32", *(("via", str(leg.gateway)) if leg.gateway else ()),
                 "dev", leg.iface, "table", str(leg.table)]
        out.append(Cmd(tuple(route), node=s.node, why=f"balance-rr leg {leg.iface}: its own table"))
        out.append(cmd("ip", "rule", "add", "fwmark", hex(leg.mark), "table", leg.table, "priority", RR_RULE_PRIORITY,
                       node=s.node, why=f"balance-rr: mark {hex(leg.mark)} -> {leg.iface}"))
    out += [
        cmd("nft", "add", "table", "ip", RR_TABLE, node=s.node, why=why),
        # type route: a changed mark makes the kernel route the packet again (ip_route_me_harder)
        cmd("nft", "add", "chain", "ip", RR_TABLE, "out",
            "{", "type", "route", "hook", "output", "priority", "-150", ";", "}", node=s.node),
        cmd("nft", "add", "rule", "ip", RR_TABLE, "out", "ip", "daddr", str(s.dst),
            "meta", "mark", "set", "numgen", "inc", "mod", n, "offset", hex(s.legs[0].mark), "counter",
            node=s.node, why=f"per packet the next of {n} marks"),
    ]
    return out


def balance_rr_cmds(net: Network, body: ExperimentBody, name: str) -> list[Cmd]:
    s = stripe_of(net, body, name)
    return stripe_cmds(s) if s is not None else []

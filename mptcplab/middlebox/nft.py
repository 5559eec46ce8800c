"""The nftables middlebox kinds: each is one counted rule in the node's own table
(``inet mptcplab_mb``), forward hook on a router, except NAT (a nat chain on postrouting)
and the strict firewall (one rule + a conntrack sysctl). Rows of Raiciu et al. NSDI 2012 §3
(inventory-003 "Middleboxes"): a, b, c, d, e, f, g, i; and the host filters of the kernel's
mptcp_join.sh (drop-add-addr, block-tcp).

On a host (a host filter) the same rule goes in an output chain (what the host sends), an
input chain (what it receives) or both (``direction``, default both: what a router beside
the host would see, so every kind keeps its meaning: the SYN/ACK a client receives is
stripped on input, the one a server sends on output); ``iface`` is then the interface a
segment leaves by (output, ``oifname``) or arrives on (input, ``iifname``). One counted rule
per chain: the table's counters summed are the box's count, as on a router.

Measured with nftables 1.0.6 on kernel 6.18 in a throwaway namespace (`nft add rule` of
every rule below accepted, listed back as written), and in labs/middlebox's quick run:
`tcp option mptcp subtype N` matches the first MPTCP option's subtype, `reset tcp option
mptcp` overwrites the option with NOPs (the kernel fixes the TCP checksum), `ct original
packets` counts the connection's packets in the client's direction (the SYN is packet 1).
"""

from __future__ import annotations

from ..commands import Cmd, cmd
from ..lab.schema import BlockTcp, ExperimentBody, StripMptcpMid
from ..lab.schema.middleboxes import Middlebox
from .rewrite import KINDS as REWRITING_KINDS

MB_TABLE = "mptcplab_mb"

_STRIP = ("tcp", "option", "mptcp", "exists", "counter", "reset", "tcp", "option", "mptcp")
_SYN_ONLY = ("tcp", "flags", "&", "(syn|ack)", "==", "syn")
#: the client's segments after its SYN: packets 2 and 3 in the original direction are the
#: third ACK and the first data segment (both carry MP_CAPABLE in MPTCP v1)
THIRD_ACK_PACKETS = 3

#: kind -> (the rule's words after an optional iifname, why)
RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "drop-mp-join": ((*_SYN_ONLY, "tcp", "option", "mptcp", "subtype", "1", "counter", "drop"),
                     "middlebox: drop SYNs carrying MP_JOIN (subtype 1)"),
    "strip-mptcp-syn": (("tcp", "flags", "syn", *_STRIP),
                        "middlebox: strip the MPTCP option (kind 30) from SYN and SYN/ACK"),
    "strip-mptcp-data": (("tcp", "flags", "&", "syn", "==", "0", *_STRIP),
                         "middlebox: strip the MPTCP option (kind 30) from every segment without SYN"),
    # row a: the SYN only; the SYN/ACK (none comes back with MP_CAPABLE) passes untouched
    "strip-mptcp-syn-only": ((*_SYN_ONLY, *_STRIP), "middlebox: strip the MPTCP option from the SYN only"),
    # row b: the SYN/ACK only
    "strip-mptcp-synack": (("tcp", "flags", "&", "(syn|ack)", "==", "syn|ack", *_STRIP),
                           "middlebox: strip the MPTCP option from the SYN/ACK only"),
    # row c: the client's third ACK and first data segment (conntrack counts them)
    "strip-mptcp-third-ack": (("tcp", "flags", "&", "syn", "==", "0", "ct", "direction", "original",
                               "ct", "original", "packets", "<=", str(THIRD_ACK_PACKETS), *_STRIP),
                              "middlebox: strip the MPTCP option from the third ACK and the first data segment"),
    # row e: MP_CAPABLE is subtype 0
    "drop-mp-capable-syn": ((*_SYN_ONLY, "tcp", "option", "mptcp", "subtype", "0", "counter", "drop"),
                            "middlebox: drop SYNs carrying MP_CAPABLE (subtype 0)"),
    # row i: conntrack's window tracking (be_liberal=0) marks segments outside the window
    # (data past a hole it did not see, ACKs for unseen data) invalid; they are dropped, counted
    "strict-firewall": (("ct", "state", "invalid", "counter", "drop"),
                        "middlebox: strict stateful firewall, drop what conntrack calls invalid"),
    # the selftests' cBPF (ip[54] & 0xf0 == 0x30): the first MPTCP option's subtype, ADD_ADDR
    # and its echo alike (the kernel sends either alone on a pure ACK)
    "drop-add-addr": (("tcp", "option", "mptcp", "subtype", "3", "counter", "drop"),
                      "host filter: drop segments carrying ADD_ADDR (subtype 3, echoes too)"),
}

#: nft hook -> the interface match of ``iface`` there
_IFACE_MATCH = {"forward": "iifname", "input": "iifname", "output": "oifname"}


def _block_rule(box: BlockTcp) -> tuple[tuple[str, ...], str]:
    words: tuple[str, ...] = ()
    for field, addr in (("saddr", box.source), ("daddr", box.destination)):
        if addr is not None:
            words += ("ip" if addr.version == 4 else "ip6", field, str(addr))
    # iptables' REJECT answers TCP with ICMP port unreachable by default: the same here, either family
    verdict = ("reject", "with", "icmpx", "type", "port-unreachable") if box.action == "reject" else ("drop",)
    what = " ".join(x for x in (f"from {box.source}" if box.source else "",
                                f"to {box.destination}" if box.destination else "") if x)
    return (*words, "meta", "l4proto", "tcp", "counter", *verdict), f"host filter: {box.action} TCP {what}"


def _mid_rule(after: int) -> tuple[str, ...]:
    # row d: a per-connection packet count, not a timeline event: it starts at the same point
    # of every subflow's life whatever the host's load, and a join's handshake (its first
    # packets) passes untouched, so the join forms before its options disappear
    return ("tcp", "flags", "&", "syn", "==", "0", "ct", "direction", "original",
            "ct", "original", "packets", ">", str(after), *_STRIP)


def hooks(role: str, box: Middlebox) -> tuple[str, ...]:
    """The filter hooks a box's rule goes in: forward on a router; on a host output, input or both."""
    if role == "router":
        return ("forward",)
    return {"out": ("output",), "in": ("input",)}.get(box.direction or "both", ("output", "input"))


def middlebox_cmds(body: ExperimentBody, name: str) -> list[Cmd]:
    """The node's middleboxes as nftables rules in their own table."""
    # the rewriting kinds are a daemon and its queue rule (middlebox/rewrite.py, net/plan.py)
    spec = body.nodes[name]
    boxes = [b for b in spec.middlebox if b.kind not in REWRITING_KINDS]
    if not boxes:
        return []
    chains = [h for h in ("forward", "output", "input") if any(h in hooks(spec.role, b) for b in boxes)]
    out = [cmd("nft", "add", "table", "inet", MB_TABLE, node=name,
               why="middlebox rules of this router" if spec.role == "router" else "host filters of this host")]
    out += [cmd("nft", "add", "chain", "inet", MB_TABLE, h,
                "{", "type", "filter", "hook", h, "priority", "0", ";", "}", node=name) for h in chains]
    for box in boxes:
        if box.kind == "nat":
            where = ("iifname", box.iface) if box.iface else ()
            on = f" arriving on {box.iface}" if box.iface else ""
            out += [
                cmd("nft", "add", "chain", "inet", MB_TABLE, "postrouting",
                    "{", "type", "nat", "hook", "postrouting", "priority", "100", ";", "}", node=name),
                cmd("nft", "add", "rule", "inet", MB_TABLE, "postrouting", *where, "meta", "nfproto", "ipv4",
                    "counter", "masquerade", node=name,
                    why="middlebox: NAT, every forwarded connection leaves with this router's address" + on),
            ]
            continue
        if isinstance(box, StripMptcpMid):
            rule, why = _mid_rule(box.after_packets), (f"middlebox: strip the MPTCP option from the client's "
                                                       f"segments after its first {box.after_packets}")
        elif isinstance(box, BlockTcp):
            rule, why = _block_rule(box)
        else:
            rule, why = RULES[box.kind]
        for h in hooks(spec.role, box):
            where = (_IFACE_MATCH[h], box.iface) if box.iface else ()
            on = ""
            if box.iface:
                on = f" leaving by {box.iface}" if h == "output" else f" arriving on {box.iface}"
            side = {"output": ", what this host sends", "input": ", what this host receives"}.get(h, "")
            out.append(cmd("nft", "add", "rule", "inet", MB_TABLE, h, *where, *rule, node=name,
                           why=why + on + side))
        if box.kind == "strict-firewall":
            # conntrack exists in the namespace once a ct rule does; 0 is the default: set, so
            # the run's commands say it
            out.append(cmd("sysctl", "-q", "-w", "net.netfilter.nf_conntrack_tcp_be_liberal=0", node=name,
                           why="conntrack tracks TCP windows strictly (no ACK for unseen data)"))
    return out


def counter_cmd(name: str) -> Cmd:
    return cmd("nft", "-j", "list", "table", "inet", MB_TABLE, node=name, check=False)

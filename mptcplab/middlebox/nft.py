"""The nftables middlebox kinds: each is one counted rule in the router's own table
(``inet mptcplab_mb``), forward hook, except NAT (a nat chain on postrouting) and the
strict firewall (one rule + a conntrack sysctl). Rows of Raiciu et al. NSDI 2012 §3
(inventory-003 "Middleboxes"): a, b, c, d, e, f, g, i.

Measured with nftables 1.0.6 on kernel 6.18 in a throwaway namespace (`nft add rule` of
every rule below accepted, listed back as written), and in labs/middlebox's quick run:
`tcp option mptcp subtype N` matches the first MPTCP option's subtype, `reset tcp option
mptcp` overwrites the option with NOPs (the kernel fixes the TCP checksum), `ct original
packets` counts the connection's packets in the client's direction (the SYN is packet 1).
"""

from __future__ import annotations

from ..commands import Cmd, cmd
from ..lab.schema import ExperimentBody, StripMptcpMid
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
}


def _mid_rule(after: int) -> tuple[str, ...]:
    # row d: a per-connection packet count, not a timeline event: it starts at the same point
    # of every subflow's life whatever the host's load, and a join's handshake (its first
    # packets) passes untouched, so the join forms before its options disappear
    return ("tcp", "flags", "&", "syn", "==", "0", "ct", "direction", "original",
            "ct", "original", "packets", ">", str(after), *_STRIP)


def middlebox_cmds(body: ExperimentBody, name: str) -> list[Cmd]:
    """The node's middleboxes as nftables rules in their own table."""
    # the rewriting kinds are a daemon and its queue rule (middlebox/rewrite.py, net/plan.py)
    boxes = [b for b in body.nodes[name].middlebox if b.kind not in REWRITING_KINDS]
    if not boxes:
        return []
    out = [
        cmd("nft", "add", "table", "inet", MB_TABLE, node=name, why="middlebox rules of this router"),
        cmd("nft", "add", "chain", "inet", MB_TABLE, "forward",
            "{", "type", "filter", "hook", "forward", "priority", "0", ";", "}", node=name),
    ]
    for box in boxes:
        where = ("iifname", box.iface) if box.iface else ()
        on = f" arriving on {box.iface}" if box.iface else ""
        if box.kind == "nat":
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
        else:
            rule, why = RULES[box.kind]
        out.append(cmd("nft", "add", "rule", "inet", MB_TABLE, "forward", *where, *rule, node=name, why=why + on))
        if box.kind == "strict-firewall":
            # conntrack exists in the namespace once a ct rule does; 0 is the default: set, so
            # the run's commands say it
            out.append(cmd("sysctl", "-q", "-w", "net.netfilter.nf_conntrack_tcp_be_liberal=0", node=name,
                           why="conntrack tracks TCP windows strictly (no ACK for unseen data)"))
    return out


def counter_cmd(name: str) -> Cmd:
    return cmd("nft", "-j", "list", "table", "inet", MB_TABLE, node=name, check=False)

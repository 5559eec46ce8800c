"""What a router does to forwarded MPTCP segments, or a host to the segments it sends and
receives (a host filter): one class per ``kind`` (nftables rules, or mptcplab-mbox for the
rewriting kinds, middlebox/)."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address
from typing import Annotated, Literal

from pydantic import Field, model_validator

from ...values.fields import IFACE_RE
from ...values.types import Strict


class _MiddleboxBase(Strict):
    iface: str | None = Field(default=None, pattern=IFACE_RE,
                              description="only packets arriving on this interface of the router; on a host: "
                                          "leaving by it (out) or arriving on it (in)")
    direction: Literal["both", "out", "in"] | None = Field(
        default=None, description="host only: what the host sends (out: output hook), receives (in: input "
                                  "hook) or both (the default: as a router beside the host would)")


class DropMpJoin(_MiddleboxBase):
    """Drops SYNs carrying MP_JOIN: the join never forms."""

    kind: Literal["drop-mp-join"]


class StripMptcpSyn(_MiddleboxBase):
    """Removes the MPTCP option (TCP option kind 30) from SYN and SYN/ACK segments."""

    kind: Literal["strip-mptcp-syn"]


class StripMptcpData(_MiddleboxBase):
    """Removes the MPTCP option from every segment without SYN (third ACK, data, ACKs)."""

    kind: Literal["strip-mptcp-data"]


class StripMptcpSynOnly(_MiddleboxBase):
    """Removes the MPTCP option from SYNs (not SYN/ACKs): NSDI 2012 §3 row a."""

    kind: Literal["strip-mptcp-syn-only"]


class StripMptcpSynAck(_MiddleboxBase):
    """Removes the MPTCP option from SYN/ACKs only: row b."""

    kind: Literal["strip-mptcp-synack"]


class StripMptcpThirdAck(_MiddleboxBase):
    """Removes the MPTCP option from the client's third ACK and first data segment: row c."""

    kind: Literal["strip-mptcp-third-ack"]


class StripMptcpMid(_MiddleboxBase):
    """Removes the MPTCP option from the client's segments after the first ``after_packets``
    of each connection (conntrack's count): options vanish mid-connection, row d."""

    kind: Literal["strip-mptcp-mid"]
    after_packets: int = Field(default=200, ge=3, le=10_000_000)


class DropMpCapableSyn(_MiddleboxBase):
    """Drops SYNs carrying MP_CAPABLE: row e (the client retries without MPTCP)."""

    kind: Literal["drop-mp-capable-syn"]


class Nat(_MiddleboxBase):
    """Masquerades every connection the router forwards (source NAT to its own address): row g."""

    kind: Literal["nat"]


class StrictFirewall(_MiddleboxBase):
    """A strict stateful firewall: conntrack with TCP window tracking (be_liberal 0) drops
    what it calls invalid (holes, ACKs for unseen data), counted: row i."""

    kind: Literal["strict-firewall"]


class RewriteIsn(_MiddleboxBase):
    """Adds ``offset`` to the sequence numbers of each connection's client (the SYN's
    sender) and takes it off the server's ACKs and SACK blocks (mptcplab-mbox, NFQUEUE):
    both directions must cross this router."""

    kind: Literal["rewrite-isn"]
    offset: int = Field(default=0x10000000, ge=1, le=0xFFFFFFFF, description="added to the client's seq")


class ModifyPayload(_MiddleboxBase):
    """Inverts one payload byte of forwarded data segments, or of a host's sent ones (same
    length, TCP checksum fixed; mptcplab-mbox): per subflow after its first ``after`` data
    segments, then every ``every``-th (at most ``count``), so the connection has data to
    fall back on."""

    kind: Literal["modify-payload"]
    after: int = Field(default=200, ge=0, le=10_000_000)
    every: int = Field(default=50, ge=1, le=10_000_000)
    byte_offset: int = Field(default=100, ge=0, le=65535, description="payload byte inverted (the last if shorter)")
    count: int | None = Field(default=None, ge=1, le=0xFFFFFFFF,
                              description="at most this many segments per subflow (none: no limit); 1 with "
                                          "after and every 1: the selftests' one corrupted segment")


class SplitSegments(_MiddleboxBase):
    """Splits forwarded data segments in two, every TCP option copied into both pieces, as
    TSO NICs do (NSDI 2012 row j, MB13; mptcplab-mbox): per connection after its first
    ``after`` data segments, then every ``every``-th."""

    kind: Literal["split-segments"]
    after: int = Field(default=200, ge=0, le=10_000_000)
    every: int = Field(default=1, ge=1, le=10_000_000)


class CoalesceSegments(_MiddleboxBase):
    """Merges a forwarded data segment with the next one of its connection into one segment
    with the first's header and options (row k; mptcplab-mbox): per connection after its
    first ``after`` data segments, then every ``every``-th, when both fit ``max_len``
    bytes (the router's egress MTU: a bigger one would be dropped, DF set)."""

    kind: Literal["coalesce-segments"]
    after: int = Field(default=200, ge=0, le=10_000_000)
    every: int = Field(default=50, ge=1, le=10_000_000)
    max_len: int = Field(default=1500, ge=576, le=65535, description="the longest merged IPv4 packet")


class DropAddAddr(_MiddleboxBase):
    """Drops segments whose MPTCP option is ADD_ADDR (subtype 3, an echo included), counted:
    the selftests' ``-m bpf`` match on the client's OUTPUT (add_addr_timeout_tests)."""

    kind: Literal["drop-add-addr"]


class BlockTcp(_MiddleboxBase):
    """Rejects (ICMP port unreachable, as iptables' REJECT) or drops TCP from ``source``
    and/or to ``destination``, counted: the selftests' ``iptables -s ADDR -p tcp -j
    REJECT|DROP`` (reset_with_tcp_filter)."""

    kind: Literal["block-tcp"]
    source: IPv4Address | IPv6Address | None = None
    destination: IPv4Address | IPv6Address | None = None
    action: Literal["reject", "drop"] = "reject"

    @model_validator(mode="after")
    def _some_address(self) -> BlockTcp:
        if self.source is None and self.destination is None:
            raise ValueError("block-tcp: give source, destination or both")
        if (self.source and self.destination
                and self.source.version != self.destination.version):
            raise ValueError("block-tcp: source and destination of different families never match one packet")
        return self


#: the kinds mptcplab-mbox runs (middlebox/rewrite.py); the others are nftables rules
REWRITING_KINDS = ("rewrite-isn", "modify-payload", "split-segments", "coalesce-segments")
#: what a host cannot have: NAT masquerades what a router forwards; rewrite-isn must see both
#: directions in one queue and split/coalesce re-send or hold segments, measured only in forward
#: (a host's box sees its own egress only: mangle POSTROUTING)
ROUTER_ONLY_KINDS = ("nat", "rewrite-isn", "split-segments", "coalesce-segments")

Middlebox = Annotated[DropMpJoin | StripMptcpSyn | StripMptcpData | StripMptcpSynOnly | StripMptcpSynAck
                      | StripMptcpThirdAck | StripMptcpMid | DropMpCapableSyn | Nat | StrictFirewall
                      | DropAddAddr | BlockTcp
                      | RewriteIsn | ModifyPayload | SplitSegments | CoalesceSegments,
                      Field(discriminator="kind")]

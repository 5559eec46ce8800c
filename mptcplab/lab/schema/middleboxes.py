"""What a router does to forwarded MPTCP segments: one class per ``kind`` (nftables rules,
or mptcplab-mbox for the rewriting kinds, middlebox/)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...values.fields import IFACE_RE
from ...values.types import Strict


class _MiddleboxBase(Strict):
    iface: str | None = Field(default=None, pattern=IFACE_RE,
                              description="only packets arriving on this interface of the router")


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
    """Inverts one payload byte of forwarded data segments (same length, TCP checksum
    fixed; mptcplab-mbox): per subflow after its first ``after`` data segments, then
    every ``every``-th, so the connection has data to fall back on."""

    kind: Literal["modify-payload"]
    after: int = Field(default=200, ge=0, le=10_000_000)
    every: int = Field(default=50, ge=1, le=10_000_000)
    byte_offset: int = Field(default=100, ge=0, le=65535, description="payload byte inverted (the last if shorter)")


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


#: the kinds mptcplab-mbox runs (middlebox/rewrite.py); the others are nftables rules
REWRITING_KINDS = ("rewrite-isn", "modify-payload", "split-segments", "coalesce-segments")

Middlebox = Annotated[DropMpJoin | StripMptcpSyn | StripMptcpData | StripMptcpSynOnly | StripMptcpSynAck
                      | StripMptcpThirdAck | StripMptcpMid | DropMpCapableSyn | Nat | StrictFirewall
                      | RewriteIsn | ModifyPayload | SplitSegments | CoalesceSegments,
                      Field(discriminator="kind")]

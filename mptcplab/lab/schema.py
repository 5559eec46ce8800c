"""Schemas of the three lab files: topology.clab.yml, experiment.yml, published.yml.

The topology is a real containerlab file; we validate the subset the engine uses
and let containerlab's own fields through. experiment.yml says what containerlab
cannot (impairments, addressing, MPTCP, traffic, capture, scenarios) and is strict:
an unknown key is an error, because a typo in a lab file must not pass silently.
"""

from __future__ import annotations

import re
from ipaddress import IPv4Interface, IPv4Network
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from ..kernelreq import PATCHES, parse_range
from ..units import parse_fraction, parse_rate, parse_size, parse_time
from .events import ControllerSpec, Event
from .fields import IFACE_RE, NAME_RE, address_ref, check_unit, endpoint_ref, sysctl_key, sysctl_value

Name = Annotated[str, Field(pattern=NAME_RE)]

#: limits of the tools a lab's values end up in (iperf3 3.12's own checks, the delay line's)
IPERF3_MAX_SECONDS = 86400
IPERF3_MAX_WINDOW = 512 * 1024 * 1024
IPERF3_MAX_LENGTH = 1024 * 1024
MAX_DELAY_SECONDS = 3600.0


SysctlKey = Annotated[str, AfterValidator(sysctl_key)]
SysctlValue = Annotated[str | int, BeforeValidator(sysctl_value)]
Sysctls = dict[SysctlKey, SysctlValue]


EndpointRef = Annotated[str, AfterValidator(endpoint_ref)]
AddressRef = Annotated[str, AfterValidator(address_ref)]
#: kernel names of congestion controls and MPTCP schedulers (TCP_CA_NAME_MAX, MPTCP_SCHED_NAME_MAX: 16)
KernelName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,14}$")]


_check = check_unit


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- topology
class ClabNode(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    kind: Literal["linux"] = Field(description="only 'linux' nodes are supported")
    image: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_./:@-]{0,200}$")


class ClabLink(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    endpoints: list[str] = Field(min_length=2, max_length=2)
    mtu: int | None = Field(default=None, ge=68, le=65535)

    @field_validator("endpoints")
    @classmethod
    def _endpoint_syntax(cls, v: list[str]) -> list[str]:
        for ep in v:
            node, sep, iface = ep.partition(":")
            if not sep or not re.match(NAME_RE, node) or not re.match(IFACE_RE, iface):
                raise ValueError(f"endpoint {ep!r} is not 'node:interface'")
        return v


class ClabTopologyBody(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    nodes: dict[Name, ClabNode] = Field(min_length=2)
    links: list[ClabLink] = Field(min_length=1)


class ClabTopology(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    name: Name
    topology: ClabTopologyBody


# --------------------------------------------------------------------------- experiment
class _ShapeFields(Strict):
    """The impairments of a link direction (see emulation/linkmodel.py LinkShape)."""

    rate: str | int | None = None
    delay: str | float | None = None
    jitter: str | float | None = None
    loss: str | float | None = None
    queue: str | int | None = Field(default=None, description="bytes ('150KB') or time at the link rate ('80ms')")

    _rate = field_validator("rate")(classmethod(lambda cls, v: _check(parse_rate, v)))
    _delay = field_validator("delay", "jitter")(classmethod(lambda cls, v: _check(parse_time, v)))
    _loss = field_validator("loss")(classmethod(lambda cls, v: _check(parse_fraction, v)))

    @field_validator("delay", "jitter")
    @classmethod
    def _delay_range(cls, v: Any) -> Any:
        if v is not None and parse_time(v) > MAX_DELAY_SECONDS:
            raise ValueError(f"{v!r} is longer than the {MAX_DELAY_SECONDS:g} s a delay stage can hold")
        return v

    @field_validator("queue")
    @classmethod
    def _queue(cls, v: Any) -> Any:
        from ..emulation.linkmodel import QueueLimit

        return _check(QueueLimit.parse, v)

    def shape_values(self) -> dict[str, Any]:
        """The impairment fields that are set, by name."""
        return {k: getattr(self, k) for k in SHAPE_FIELDS if getattr(self, k) is not None}


#: the fields a direction can set (and override one by one)
SHAPE_FIELDS = ("rate", "delay", "jitter", "loss", "queue")


class DirectionSpec(_ShapeFields):
    """One direction's impairments; a field it leaves out keeps the link's value."""


#: the two directions of a link, relative to the endpoint that names it in ``links:``
Direction = Literal["egress", "ingress"]


class LinkSpec(_ShapeFields):
    """Impairments of a link. The fields at the top apply to each direction; ``egress``
    (packets leaving the endpoint that names the link) and ``ingress`` (packets arriving
    at it) override them field by field for one direction (see emulation/linkmodel.py)."""

    mtu: int | None = Field(default=None, ge=68, le=65535, description="overrides the topology's mtu")
    egress: DirectionSpec | None = Field(default=None, description="from this endpoint to its peer")
    ingress: DirectionSpec | None = Field(default=None, description="from the peer to this endpoint")

    def direction(self, which: Direction) -> dict[str, Any]:
        """The impairment fields of one direction: the link's, overridden by the direction's."""
        own = self.egress if which == "egress" else self.ingress
        return {**self.shape_values(), **(own.shape_values() if own else {})}

    def field_of(self, which: Direction, name: str) -> str:
        """Where ``name`` of direction ``which`` comes from: 'egress.rate' or 'rate'."""
        own = self.egress if which == "egress" else self.ingress
        return f"{which}.{name}" if own is not None and getattr(own, name) is not None else name


class MptcpLimits(Strict):
    subflows: int = Field(default=2, ge=0, le=8)
    add_addr_accepted: int = Field(default=0, ge=0, le=8)


class MptcpEndpoint(Strict):
    address: AddressRef = Field(description="'node:iface' of this node, or an IPv4 address")
    flags: list[Literal["subflow", "signal", "backup", "fullmesh"]] = Field(min_length=1)
    id: int | None = Field(default=None, ge=1, le=255)
    port: int | None = Field(default=None, ge=1024, le=65535,
                             description="announce address:port (signal only): the kernel listens on that port "
                                         "too, so one address can take several subflows of one connection")

    @model_validator(mode="after")
    def _port_signal(self) -> MptcpEndpoint:
        if self.port is not None and "signal" not in self.flags:
            raise ValueError("port: only a signal endpoint announces a port")
        return self


class MptcpNode(Strict):
    limits: MptcpLimits = MptcpLimits()
    endpoints: list[MptcpEndpoint] = []
    scheduler: KernelName | None = None
    path_manager: Literal["kernel", "userspace"] | None = None


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


class BalanceRr(Strict):
    """Bonding's balance-rr, emulated (this kernel has no bonding driver): every packet this
    host sends to ``to`` leaves by the next interface of ``via`` in turn (nftables numgen ->
    fwmark -> a routing table per interface, mptcplab/striping.py). One address, reachable
    over every interface; no bond device and no shared MAC."""

    to: AddressRef = Field(description="the peer address whose packets are striped ('node:iface' or IPv4)")
    via: list[Annotated[str, Field(pattern=IFACE_RE)]] = Field(
        min_length=2, max_length=8, description="this host's interfaces, one packet each in turn")

    @model_validator(mode="after")
    def _distinct(self) -> BalanceRr:
        if len(set(self.via)) != len(self.via):
            raise ValueError("via: an interface is listed twice")
        return self


class NodeSpec(Strict):
    role: Literal["host", "router"]
    sysctls: Sysctls = {}
    mptcp: MptcpNode | None = None
    drop_icmp_frag_needed: bool = Field(
        default=False, description="this node drops the ICMP frag-needed it would send: a PMTUD black hole")
    middlebox: list[Middlebox] = Field(
        default=[], description="what this router does to forwarded MPTCP segments (nftables)")
    balance_rr: BalanceRr | None = Field(
        default=None, description="stripe this host's packets to one peer address over several interfaces")

    @model_validator(mode="after")
    def _middlebox_on_router(self) -> NodeSpec:
        if self.middlebox and self.role != "router":
            raise ValueError("middlebox: only a router forwards segments (role: router)")
        if sum(b.kind in REWRITING_KINDS for b in self.middlebox) > 1:
            # an NFQUEUE accept verdict leaves the hook: a second queue rule would never see the packet
            raise ValueError(f"middlebox: at most one rewriting box ({', '.join(REWRITING_KINDS)}) per router")
        if self.balance_rr and self.role != "host":
            raise ValueError("balance_rr: a host stripes the packets it sends (role: host)")
        return self


class Addressing(Strict):
    pool: IPv4Network = IPv4Network("10.0.0.0/16")
    prefixlen: int = Field(default=24, ge=8, le=30)
    addresses: dict[EndpointRef, IPv4Interface] = {}


class _FlowBase(Strict):
    """What every traffic kind has: two hosts, the server's address and port, when it
    starts and whether it is measured. One subclass per kind (mptcplab/traffic/<kind>.py
    runs it); ``kind`` selects the class, default ``iperf3`` (docs/lab-format.md)."""

    client: Name
    server: Name
    server_address: AddressRef = Field(description="'node:iface' of the server, or an IPv4 address")
    bind: EndpointRef | None = Field(default=None,
                                     description="client source 'node:iface' (the initial subflow's path)")
    mptcp: bool = True
    direction: Literal["upload", "download"] = "upload"
    duration: str | float = "10s"
    port: int = Field(default=5201, ge=1024, le=65535)
    start: str | float = "0s"
    role: Literal["measured", "competing"] = "measured"

    _dur = field_validator("duration", "start")(classmethod(lambda cls, v: _check(parse_time, v)))

    @field_validator("duration")
    @classmethod
    def _positive(cls, v: Any) -> Any:
        if parse_time(v) <= 0:
            raise ValueError("duration must be positive")
        if parse_time(v) > IPERF3_MAX_SECONDS:
            raise ValueError(f"{v!r} is longer than iperf3's limit of {IPERF3_MAX_SECONDS} s")
        return v

    @field_validator("start")
    @classmethod
    def _start_range(cls, v: Any) -> Any:
        if parse_time(v) > IPERF3_MAX_SECONDS:
            raise ValueError(f"{v!r} is later than {IPERF3_MAX_SECONDS} s")
        return v


def _iperf3_size(v: Any, limit: int) -> Any:
    if v is None:
        return v
    n = parse_size(v)
    if not 1 <= n <= limit:
        raise ValueError(f"{v!r} is outside iperf3's range 1 to {limit} bytes")
    return v


class IperfFlow(_FlowBase):
    """Bulk TCP/MPTCP with iperf3 for ``duration``, or until ``bytes`` are sent."""

    kind: Literal["iperf3"] = "iperf3"
    cc: KernelName | None = None
    window: str | int | None = Field(default=None, description="iperf3 -w: socket buffer size")
    length: str | int | None = Field(default=None, description="iperf3 -l: write size")
    bytes: str | int | None = Field(default=None, description="iperf3 -n: send this many bytes, then stop "
                                    "(duration is then the limit after which the flow is stopped)")

    _size = field_validator("window", "length", "bytes")(classmethod(lambda cls, v: _check(parse_size, v)))

    @field_validator("window", "length")
    @classmethod
    def _iperf3_sizes(cls, v: Any, info: Any) -> Any:
        return _iperf3_size(v, IPERF3_MAX_WINDOW if info.field_name == "window" else IPERF3_MAX_LENGTH)

    @field_validator("bytes")
    @classmethod
    def _bytes(cls, v: Any) -> Any:
        if v is not None and parse_size(v) < 1:
            raise ValueError("bytes must be at least 1")
        return v


class UdpFlow(_FlowBase):
    """An iperf3 UDP stream at ``rate`` (a flood when the rate exceeds the path's)."""

    kind: Literal["udp"]
    mptcp: Literal[False] = False
    rate: str | int = Field(description="iperf3 -u -b: the sending rate ('50Mbit')")
    length: str | int | None = Field(default=None, description="iperf3 -l: datagram payload size")

    _rate = field_validator("rate")(classmethod(lambda cls, v: _check(parse_rate, v)))
    _size = field_validator("length")(classmethod(lambda cls, v: _check(parse_size, v)))

    @field_validator("length")
    @classmethod
    def _datagram(cls, v: Any) -> Any:
        return _iperf3_size(v, 65507)


class HttpFlow(_FlowBase):
    """A static web server (busybox httpd, under mptcpize for MPTCP) serving files of
    ``sizes``, loaded by wrk with ``connections`` connections for ``duration``."""

    kind: Literal["http"]
    direction: Literal["download"] = "download"
    port: int = Field(default=8080, ge=1024, le=65535)
    sizes: list[str | int] = Field(default=["10KB"], min_length=1, max_length=16,
                                   description="sizes of the files served; wrk asks for the first")
    connections: int = Field(default=8, ge=1, le=1000, description="wrk -c: concurrent connections")
    threads: int = Field(default=1, ge=1, le=16, description="wrk -t")

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, v: list[Any]) -> list[Any]:
        for x in v:
            _check(parse_size, x)
            if not 1 <= parse_size(x) <= 2**31:
                raise ValueError(f"{x!r}: a file size is between 1 byte and 2 GB")
        return v

    @model_validator(mode="after")
    def _threads(self) -> HttpFlow:
        if self.bind is not None:
            raise ValueError("bind: wrk cannot choose its source address; routing picks the initial path")
        if self.threads > self.connections:
            raise ValueError("wrk needs at least one connection per thread (threads <= connections)")
        return self


class ChurnFlow(_FlowBase):
    """Many short connections (connect, send ``size`` bytes, read them back, close) at
    ``rate`` per second, or ``count`` of them, by the project's own client."""

    kind: Literal["churn"]
    port: int = Field(default=7000, ge=1024, le=65535)
    rate: float | None = Field(default=None, gt=0, le=10000, description="connections per second")
    count: int | None = Field(default=None, ge=1, le=1000000, description="stop after this many connections")
    size: str | int = Field(default=64, description="bytes each connection sends and reads back "
                            "(0: connect and close, nothing sent)")

    _size = field_validator("size")(classmethod(lambda cls, v: _check(parse_size, v)))

    @field_validator("size")
    @classmethod
    def _size_range(cls, v: Any) -> Any:
        if not 0 <= parse_size(v) <= 1024 * 1024:
            raise ValueError(f"{v!r}: size is between 0 bytes and 1 MB")
        return v


#: connections a hold flow may keep open (the tool raises its open-files limit to fit)
HOLD_MAX_CONNECTIONS = 20000


class HoldFlow(_FlowBase):
    """``connections`` established connections opened before the other flows start and held
    open, idle, until they end (traffic/hold.py): a server with N established MPTCP
    connections. Always competing: it is the background, not the measurement."""

    kind: Literal["hold"]
    port: int = Field(default=7100, ge=1024, le=65535)
    role: Literal["competing"] = "competing"
    #: 0 holds none (ready at once): a scenario without held connections keeps the flow
    connections: int = Field(ge=0, le=HOLD_MAX_CONNECTIONS, description="connections held open")


class TransferFlow(_FlowBase):
    """A verified transfer (traffic/transfer_tool.py): ``bytes`` of the pseudo-random stream
    seeded with ``seed``; the server hashes what it received. ``duration`` is the limit."""

    kind: Literal["transfer"]
    port: int = Field(default=7100, ge=1024, le=65535)
    bytes: str | int = Field(description="how many bytes the client sends ('1MB')")
    seed: int = Field(default=1, ge=0, le=2**32 - 1, description="the stream's seed (random.Random)")

    _size = field_validator("bytes")(classmethod(lambda cls, v: _check(parse_size, v)))

    @field_validator("bytes")
    @classmethod
    def _bytes(cls, v: Any) -> Any:
        if not 1 <= parse_size(v) <= 2**34:
            raise ValueError(f"{v!r}: bytes is between 1 byte and 16 GB")
        return v

    @model_validator(mode="after")
    def _upload(self) -> TransferFlow:
        if self.direction != "upload":
            raise ValueError("direction: a transfer flows from client to server (upload)")
        return self


#: the latency tool's block size range, header included (native/latency: --block 32..64 MiB)
LATENCY_MIN_BLOCK = 32
LATENCY_MAX_BLOCK = 64 * 1024 * 1024
#: the latency tool refuses a buffer above INT_MAX / 2 (the kernel stores twice the value)
LATENCY_MAX_BUFFER = (2**31 - 1) // 2


class LatencyFlow(_FlowBase):
    """The project's latency tool (native/latency, mptcplab/tools/latency): the client
    writes timestamped ``block``-byte blocks for ``duration``, back to back or at ``rate``
    (or ``blocks_per_s``); the server records each block's delay. ``sndbuf`` (the client's)
    and ``rcvbuf`` (the server's) set SO_SNDBUF/SO_RCVBUF, which locks them (no autotuning)."""

    kind: Literal["latency"]
    # the client is always the sender: there is no download mode
    direction: Literal["upload"] = "upload"
    port: int = Field(default=5301, ge=1024, le=65535)
    block: str | int = Field(default="8KB", description="bytes per block, the 32-byte header included")
    rate: str | int | None = Field(default=None, description="application rate ('2Mbit'); none: back to back")
    blocks_per_s: float | None = Field(default=None, gt=0, le=10_000_000, description="blocks per second")
    sndbuf: str | int | None = Field(default=None, description="the client's SO_SNDBUF (locked)")
    rcvbuf: str | int | None = Field(default=None, description="the server's SO_RCVBUF (locked)")
    cc: KernelName | None = Field(default=None, description="the sender's congestion control, set on its socket "
                                  "(TCP_CONGESTION; MPTCP applies it to every subflow)")

    _rate = field_validator("rate")(classmethod(lambda cls, v: _check(parse_rate, v)))
    _size = field_validator("block", "sndbuf", "rcvbuf")(classmethod(lambda cls, v: _check(parse_size, v)))

    @field_validator("block")
    @classmethod
    def _block_range(cls, v: Any) -> Any:
        if not LATENCY_MIN_BLOCK <= parse_size(v) <= LATENCY_MAX_BLOCK:
            raise ValueError(f"{v!r} is outside the latency tool's block range {LATENCY_MIN_BLOCK} to "
                             f"{LATENCY_MAX_BLOCK} bytes")
        return v

    @field_validator("sndbuf", "rcvbuf")
    @classmethod
    def _buffer_range(cls, v: Any) -> Any:
        if v is not None and not 1 <= parse_size(v) <= LATENCY_MAX_BUFFER:
            raise ValueError(f"{v!r} is outside 1 to {LATENCY_MAX_BUFFER} bytes (the kernel stores twice it)")
        return v

    @field_validator("rate")
    @classmethod
    def _rate_positive(cls, v: Any) -> Any:
        if v is not None and parse_rate(v) <= 0:
            raise ValueError("rate must be positive")
        return v

    @model_validator(mode="after")
    def _one_rate(self) -> LatencyFlow:
        if self.rate is not None and self.blocks_per_s is not None:
            raise ValueError("rate and blocks_per_s exclude each other (give one, or neither for back to back)")
        return self


def _kind_of(v: Any) -> str:
    # labs written before kinds existed have no ``kind``: they are iperf3 bulk flows
    kind = v.get("kind", "iperf3") if isinstance(v, dict) else getattr(v, "kind", "iperf3")
    return str(kind)


#: A flow of any kind; ``kind`` picks the class (default iperf3).
Flow = Annotated[Annotated[IperfFlow, Tag("iperf3")] | Annotated[UdpFlow, Tag("udp")]
                 | Annotated[HttpFlow, Tag("http")] | Annotated[ChurnFlow, Tag("churn")]
                 | Annotated[LatencyFlow, Tag("latency")] | Annotated[HoldFlow, Tag("hold")]
                 | Annotated[TransferFlow, Tag("transfer")],
                 Discriminator(_kind_of, custom_error_type="flow_kind",
                               custom_error_message="kind must be one of iperf3, udp, http, churn, latency, "
                                                    "hold, transfer")]
AnyFlow = IperfFlow | UdpFlow | HttpFlow | ChurnFlow | LatencyFlow | HoldFlow | TransferFlow


class Traffic(Strict):
    flows: dict[Name, Flow] = Field(min_length=1)
    #: the timeline (lab/events.py): typed actions at times relative to the measured flow's start
    events: list[Event] = []


class CapturePoint(Strict):
    point: EndpointRef = Field(description="'node:iface'")
    snaplen: int = Field(default=128, ge=64, le=65535)
    #: tcpdump --time-stamp-precision: "nano" for handshakes timed in microseconds (labs/setup)
    timestamps: Literal["micro", "nano"] = "micro"


class Probes(Strict):
    """What watches a repetition besides the capture (mptcplab/probes/, docs/lab-format.md)."""

    #: tcp:tcp_probe (+ tcp_retransmit_skb) per ACK: cwnd, ssthresh, srtt, snd_wnd
    tcp_probe: bool = False
    #: each node's MIB counters (MPTcpExt*, TcpExt*, Tcp*) before and after the traffic
    nstat: bool = False
    #: `ip mptcp monitor` events in the MPTCP flows' end nodes
    mptcp_monitor: bool = False
    ss_interval: str | float | None = None

    _t = field_validator("ss_interval")(classmethod(lambda cls, v: _check(parse_time, v)))

    @field_validator("ss_interval")
    @classmethod
    def _positive(cls, v: Any) -> Any:
        if v is not None and parse_time(v) <= 0:
            raise ValueError("ss_interval must be positive")
        return v


class Sweep(Strict):
    path: list[str] = Field(min_length=1, description="keys into experiment.yml, "
                            "e.g. [nodes, client, sysctls, net.ipv4.tcp_mtu_probing]")
    values: list[Any] = Field(min_length=1)
    labels: list[str] | None = Field(default=None,
                                     description="names of the values in scenario names (default: the values)")

    @model_validator(mode="after")
    def _labels_match(self) -> Sweep:
        if self.labels is not None and len(self.labels) != len(self.values):
            raise ValueError(f"labels has {len(self.labels)} entries for {len(self.values)} values")
        return self


class Scenario(Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,60}$")
    description: str = ""
    override: dict[str, Any] = {}
    sweep: list[Sweep] = []


class Quick(Strict):
    duration: str | float = "3s"
    repetitions: int = Field(default=1, ge=1)

    _d = field_validator("duration")(classmethod(lambda cls, v: _check(parse_time, v)))

    @field_validator("duration")
    @classmethod
    def _range(cls, v: Any) -> Any:
        if not 0 < parse_time(v) <= IPERF3_MAX_SECONDS:
            raise ValueError(f"duration must be positive and at most {IPERF3_MAX_SECONDS} s")
        return v


class Calibration(Strict):
    enabled: bool = True
    rate_check: bool = True
    rate_seconds: str | float = "2s"

    _t = field_validator("rate_seconds")(classmethod(lambda cls, v: _check(parse_time, v)))

    @field_validator("rate_seconds")
    @classmethod
    def _range(cls, v: Any) -> Any:
        if not 0 < parse_time(v) <= 600:
            raise ValueError("rate_seconds must be positive and at most 600 s")
        return v


class ExperimentBody(Strict):
    """Everything a scenario can override (scenarios themselves excluded)."""

    description: str = ""
    paths: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,15}$")], EndpointRef] = Field(
        default={}, description="path label -> client-side 'node:iface'")
    addressing: Addressing = Addressing()
    sysctls: Sysctls = {}
    nodes: dict[Name, NodeSpec]
    links: dict[EndpointRef, LinkSpec] = {}
    traffic: Traffic
    #: controllers run during the traffic (mptcplab/controllers/)
    controllers: list[ControllerSpec] = []
    capture: list[CapturePoint] = []
    probes: Probes = Probes()
    calibration: Calibration = Calibration()
    repetitions: int = Field(default=3, ge=1, le=100)
    quick: Quick = Quick()
    #: the scenario measures what the CPUs carry (unshaped: labs/rcvbuf's DSS-checksum cost), so
    #: iperf3 at full CPU is its result, not a reason to void its timing (results/validity.py)
    cpu_bound: bool = False


class Subset(Strict):
    """A named subset of a lab's scenarios (``run --subset NAME``): the expanded scenario
    names or shell-style patterns it runs, and optionally how many repetitions each. It
    selects, never changes what a scenario measures: its results read like the full lab's."""

    description: str = ""
    scenarios: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(min_length=1)
    repetitions: int | None = Field(default=None, ge=1, le=100)


class Experiment(ExperimentBody):
    scenarios: list[Scenario] = Field(min_length=1)
    #: named subsets (the loader checks that each pattern selects a scenario: lab/selection.py)
    subsets: dict[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,30}$")], Subset] = {}
    #: every rate (and queue given in bytes) times this factor, delays unchanged: a lab this
    #: machine cannot carry at full rate keeps its rate and delay ratios (lab/scale.py). Not
    #: per scenario: one run has one scale, stated next to every number it affects.
    scale: float | None = Field(default=None, gt=0, le=1,
                                description="rate scale factor in (0, 1]; `mptcplab run --scale` overrides it")

    @field_validator("scenarios")
    @classmethod
    def _unique(cls, v: list[Scenario]) -> list[Scenario]:
        seen: set[str] = set()
        for s in v:
            if s.name in seen:
                raise ValueError(f"duplicate scenario name {s.name!r}")
            seen.add(s.name)
        return v


# --------------------------------------------------------------------------- published
def _window(v: tuple[float, float] | None) -> tuple[float, float] | None:
    if v is not None and not 0 <= v[0] < v[1]:
        raise ValueError(f"window [{v[0]:g}, {v[1]:g}] is not [start, end) with 0 <= start < end (seconds)")
    return v


#: a metric's name; the loader checks it against the registry (lab/metriccheck.py), which
#: the lab model does not import: the registry reads the result model
MetricName = str
#: [start, end) in seconds from the measured flow's start
Window = Annotated[tuple[float, float] | None, AfterValidator(_window)]


class Selected(Strict):
    """What a metric is taken of besides the scenario (mptcplab/metricdecl.Select);
    which of these a metric takes is its declaration's to say (lab/metriccheck.py)."""

    path: str | None = None
    #: a flow of experiment.yml (default: the measured flow)
    flow: str | None = None
    window: Window = None


class PublishedSource(Strict):
    id: str
    title: str
    authors: list[str]
    year: int
    document: str
    kernel: str
    testbed: str


class PublishedValue(Selected):
    id: str
    scenario: str | None
    metric: MetricName
    value: float
    unit: str
    where: str
    kernel: str | None = None
    note: str = ""


class Operand(Selected):
    """The right-hand side of a comparison between scenarios: another scenario's aggregate.
    metric, path, flow and window default to the expectation's own."""

    scenario: str
    metric: MetricName | None = None


class Expectation(Selected):
    """A predicate on this run's aggregates (mptcplab/results/findings.py evaluates it).

    Left side: ``metric`` (of ``path``, ``flow`` and ``window`` where the metric takes them)
    in ``scenario``, by default the finding's scenario.
    Without ``than`` it is compared with ``value``; with ``than`` (another scenario's
    aggregate) it is compared with it directly, or ``by`` difference (left - right) or ratio
    (left / right) compared with ``value``. ``tolerance`` widens ``==`` to |x - value| <=
    tolerance (and narrows ``!=`` accordingly); the other operators take no tolerance.
    """

    metric: MetricName
    scenario: str | None = None
    op: Literal["==", "!=", "<", "<=", ">", ">="]
    value: float | None = None
    than: Operand | None = None
    by: Literal["difference", "ratio"] | None = None
    tolerance: float = Field(default=0.0, ge=0)

    @model_validator(mode="after")
    def _complete(self) -> Expectation:
        if self.than is None and self.value is None:
            raise ValueError("needs value (a constant) or than (another scenario)")
        if self.by is not None and (self.than is None or self.value is None):
            raise ValueError("by: difference|ratio needs both than and value")
        if self.than is not None and self.by is None and self.value is not None:
            raise ValueError("than without by compares two scenarios directly: value is not used (add by)")
        if self.tolerance and self.op not in ("==", "!="):
            raise ValueError("tolerance applies to == and != only")
        return self

    def operand(self) -> Operand | None:
        """``than`` with what it leaves out (metric, path, flow, window) taken from this
        expectation: the right-hand side as findings measure it and the loader checks it."""
        o = self.than
        if o is None:
            return None
        return o.model_copy(update={
            "metric": o.metric or self.metric,
            "path": o.path if o.path is not None else self.path,
            "flow": o.flow if o.flow is not None else self.flow,
            "window": o.window if o.window is not None else self.window})


class CaptureFact(Strict):
    """A fact of the capture, per repetition: a subflow on ``path`` whose ``field`` equals
    ``equals`` (or, for a list field, contains ``contains``). Holds when it is true in every
    repetition of ``scenario`` (default: the finding's)."""

    fact: Literal["established", "syn_answered", "initial", "rst", "kind", "icmp_mtus", "max_frame", "max_seg"]
    path: str | None = None
    scenario: str | None = None
    equals: bool | int | str | None = None
    contains: int | None = None

    @model_validator(mode="after")
    def _one_test(self) -> CaptureFact:
        if (self.equals is None) == (self.contains is None):
            raise ValueError("give exactly one of equals and contains")
        if (self.contains is not None) != (self.fact == "icmp_mtus"):
            raise ValueError("contains is for the list field icmp_mtus, equals for the others")
        return self


Check = Expectation | CaptureFact


class Requires(Strict):
    """What a finding's checks need of the kernel they run on (mptcplab/kernelreq.py): on
    another kernel the finding is not measurable here, rather than false."""

    #: one of the project's kernel patches (images/kernel/patches/, kernelreq.PATCHES)
    kernel_patch: str | None = None
    #: a release range: comma-separated comparisons, ">=6.1", ">=6.1,<6.7", "==6.1" (any 6.1.x)
    kernel: str | None = None

    @field_validator("kernel_patch")
    @classmethod
    def _known_patch(cls, v: str | None) -> str | None:
        if v is not None and v not in PATCHES:
            raise ValueError(f"no kernel patch {v!r} (known: {', '.join(PATCHES)})")
        return v

    @field_validator("kernel")
    @classmethod
    def _range(cls, v: str | None) -> str | None:
        if v is not None:
            parse_range(v)
        return v

    @model_validator(mode="after")
    def _something(self) -> Requires:
        if self.kernel_patch is None and self.kernel is None:
            raise ValueError("requires needs kernel_patch or kernel")
        return self


class Finding(Strict):
    id: str
    scenario: str | None
    statement: str
    where: str
    #: every check must hold (one, or a list read as "and")
    expect: Check | list[Check] | None = None
    #: why this finding cannot be measured by this lab (e.g. it needs the paper's patched kernel)
    not_measurable: str | None = None
    #: the kernel the checks need; elsewhere the finding is "not measurable here"
    requires: Requires | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Finding:
        if self.expect is not None and self.not_measurable is not None:
            raise ValueError("a finding has expect or not_measurable, not both")
        if self.requires is not None and self.expect is None:
            raise ValueError("requires goes with expect (the checks it is the condition of)")
        return self

    @property
    def expectations(self) -> list[Check]:
        return [] if self.expect is None else self.expect if isinstance(self.expect, list) else [self.expect]

    def located(self) -> list[tuple[str, Check]]:
        """Each check with its place in the finding, for error messages: ``expect``, or
        ``expect[j]`` in a list."""
        if isinstance(self.expect, list):
            return [(f"expect[{j}]", e) for j, e in enumerate(self.expect)]
        return [("expect", e) for e in self.expectations]

    def scenarios_referenced(self) -> list[str]:
        """Every scenario the finding's checks read (for the loader's reference check)."""
        out = [self.scenario] if self.scenario else []
        for e in self.expectations:
            than = e.than.scenario if isinstance(e, Expectation) and e.than else None
            out += [x for x in (e.scenario, than) if x]
        return list(dict.fromkeys(out))


class Published(Strict):
    source: PublishedSource
    values: list[PublishedValue] = []
    findings: list[Finding] = []

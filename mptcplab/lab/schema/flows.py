"""Traffic: one class per flow kind (mptcplab/traffic/<kind>.py runs it), chosen by ``kind``,
and the timeline of events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeAlias, Union, get_args

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from ...units import parse_rate, parse_size, parse_time
from ..events import Event
from ..fields import check_unit
from .base import (
    IPERF3_MAX_LENGTH,
    IPERF3_MAX_SECONDS,
    IPERF3_MAX_WINDOW,
    AddressRef,
    EndpointRef,
    KernelName,
    Name,
    Strict,
)


class FlowBase(Strict):
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
    #: the kind's fields that are bit rates: a scaled run multiplies them by its factor
    #: (lab/scale.py, which asks this instead of naming kinds); a rate of connections or
    #: blocks per second is not one
    scaled_rates: ClassVar[tuple[str, ...]] = ()

    _dur = field_validator("duration", "start")(classmethod(lambda cls, v: check_unit(parse_time, v)))

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


class IperfFlow(FlowBase):
    """Bulk TCP/MPTCP with iperf3 for ``duration``, or until ``bytes`` are sent."""

    kind: Literal["iperf3"] = "iperf3"
    cc: KernelName | None = None
    window: str | int | None = Field(default=None, description="iperf3 -w: socket buffer size")
    length: str | int | None = Field(default=None, description="iperf3 -l: write size")
    bytes: str | int | None = Field(default=None, description="iperf3 -n: send this many bytes, then stop "
                                    "(duration is then the limit after which the flow is stopped)")

    _size = field_validator("window", "length", "bytes")(classmethod(lambda cls, v: check_unit(parse_size, v)))

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


class UdpFlow(FlowBase):
    """An iperf3 UDP stream at ``rate`` (a flood when the rate exceeds the path's)."""

    kind: Literal["udp"]
    mptcp: Literal[False] = False
    scaled_rates = ("rate",)
    rate: str | int = Field(description="iperf3 -u -b: the sending rate ('50Mbit')")
    length: str | int | None = Field(default=None, description="iperf3 -l: datagram payload size")

    _rate = field_validator("rate")(classmethod(lambda cls, v: check_unit(parse_rate, v)))
    _size = field_validator("length")(classmethod(lambda cls, v: check_unit(parse_size, v)))

    @field_validator("length")
    @classmethod
    def _datagram(cls, v: Any) -> Any:
        return _iperf3_size(v, 65507)


class HttpFlow(FlowBase):
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
            check_unit(parse_size, x)
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


class ChurnFlow(FlowBase):
    """Many short connections (connect, send ``size`` bytes, read them back, close) at
    ``rate`` per second, or ``count`` of them, by the project's own client."""

    kind: Literal["churn"]
    port: int = Field(default=7000, ge=1024, le=65535)
    rate: float | None = Field(default=None, gt=0, le=10000, description="connections per second")
    count: int | None = Field(default=None, ge=1, le=1000000, description="stop after this many connections")
    size: str | int = Field(default=64, description="bytes each connection sends and reads back "
                            "(0: connect and close, nothing sent)")

    _size = field_validator("size")(classmethod(lambda cls, v: check_unit(parse_size, v)))

    @field_validator("size")
    @classmethod
    def _size_range(cls, v: Any) -> Any:
        if not 0 <= parse_size(v) <= 1024 * 1024:
            raise ValueError(f"{v!r}: size is between 0 bytes and 1 MB")
        return v


#: connections a hold flow may keep open (the tool raises its open-files limit to fit)
HOLD_MAX_CONNECTIONS = 20000


class HoldFlow(FlowBase):
    """``connections`` established connections opened before the other flows start and held
    open, idle, until they end (traffic/hold.py): a server with N established MPTCP
    connections. Always competing: it is the background, not the measurement."""

    kind: Literal["hold"]
    port: int = Field(default=7100, ge=1024, le=65535)
    role: Literal["competing"] = "competing"
    #: 0 holds none (ready at once): a scenario without held connections keeps the flow
    connections: int = Field(ge=0, le=HOLD_MAX_CONNECTIONS, description="connections held open")


class TransferFlow(FlowBase):
    """A verified transfer (traffic/transfer_tool.py): ``bytes`` of the pseudo-random stream
    seeded with ``seed``; the server hashes what it received. ``duration`` is the limit."""

    kind: Literal["transfer"]
    port: int = Field(default=7100, ge=1024, le=65535)
    bytes: str | int = Field(description="how many bytes the client sends ('1MB')")
    seed: int = Field(default=1, ge=0, le=2**32 - 1, description="the stream's seed (random.Random)")

    _size = field_validator("bytes")(classmethod(lambda cls, v: check_unit(parse_size, v)))

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


class LatencyFlow(FlowBase):
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

    _rate = field_validator("rate")(classmethod(lambda cls, v: check_unit(parse_rate, v)))
    _size = field_validator("block", "sndbuf", "rcvbuf")(classmethod(lambda cls, v: check_unit(parse_size, v)))

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


#: A flow of any kind: the one list of the kinds' schema classes (the type checker needs it
#: spelled out); the discriminated union ``Flow`` and its error message are built from it.
AnyFlow = IperfFlow | UdpFlow | HttpFlow | ChurnFlow | LatencyFlow | HoldFlow | TransferFlow
#: each class's ``kind`` value, in AnyFlow's order
FLOW_CLASSES: tuple[type[FlowBase], ...] = get_args(AnyFlow)


def kind_name(cls: type[FlowBase]) -> str:
    """The ``kind:`` value that selects a flow schema class (its ``kind`` Literal)."""
    return str(get_args(cls.model_fields["kind"].annotation)[0])


FLOW_KINDS: tuple[str, ...] = tuple(kind_name(c) for c in FLOW_CLASSES)

if TYPE_CHECKING:
    Flow: TypeAlias = AnyFlow
else:
    #: A flow of any kind; ``kind`` picks the class (default iperf3).
    Flow = Annotated[Union[tuple(Annotated[c, Tag(kind_name(c))] for c in FLOW_CLASSES)],  # noqa: UP007
                     Discriminator(_kind_of, custom_error_type="flow_kind",
                                   custom_error_message=f"kind must be one of {', '.join(FLOW_KINDS)}")]


class Traffic(Strict):
    flows: dict[Name, Flow] = Field(min_length=1)
    #: the timeline (lab/events.py): typed actions at times relative to the measured flow's start
    events: list[Event] = []

"""The link model: what an emulated link is, independent of how it is emulated.

Convention (documented in docs/architecture.md): every parameter applies to *each
direction* of a link. A link with ``delay: 10ms`` adds 10 ms one way, so a path
crossing it once adds 20 ms of RTT. This is Mininet TCLink's convention too
(delay on both interfaces), stated here so labs say the RTT they intend and
calibration checks it.

A direction's capacity is either a fixed ``rate`` or a delivery ``trace`` replayed by
the delay line (trace.py; the lab format makes them exclusive): where a rate is needed
to size something (a queue given as time, the delay line's queues, the reachability
estimate), a trace link counts at its peak rate per 100 ms (``nominal_rate_bps``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..units import is_time, parse_fraction, parse_rate, parse_size, parse_time
from .trace import Trace

ETH_HEADER = 14


@dataclass(frozen=True)
class QueueLimit:
    """A queue limit given in bytes or as time at the link rate ("80ms")."""

    bytes: int | None = None
    seconds: float | None = None

    @classmethod
    def parse(cls, value: str | int | float) -> QueueLimit:
        if is_time(value):
            return cls(seconds=parse_time(value))
        return cls(bytes=parse_size(value))

    def to_bytes(self, rate_bps: int | None) -> int | None:
        if self.bytes is not None:
            return self.bytes
        if self.seconds is not None and rate_bps:
            return int(rate_bps * self.seconds / 8)
        return None


@dataclass(frozen=True)
class LinkShape:
    """Impairments of one direction of a link. None/0 means "not impaired"."""

    rate_bps: int | None = None
    delay_s: float = 0.0
    jitter_s: float = 0.0
    loss: float = 0.0
    queue: QueueLimit | None = None
    #: the capacity replayed from a delivery trace instead of ``rate_bps`` (which is then None)
    trace: Trace | None = None
    #: where in the trace the delay line starts
    trace_offset_s: float = 0.0

    @classmethod
    def parse(
        cls,
        rate: str | int | None = None,
        delay: str | float | None = None,
        jitter: str | float | None = None,
        loss: str | float | None = None,
        queue: str | int | None = None,
        trace: Trace | None = None,
        trace_offset: str | float | None = None,
    ) -> LinkShape:
        if trace is not None and rate is not None:
            raise ValueError("a trace link has no rate: the trace is its capacity")
        return cls(
            rate_bps=parse_rate(rate) if rate is not None else None,
            delay_s=parse_time(delay) if delay is not None else 0.0,
            jitter_s=parse_time(jitter) if jitter is not None else 0.0,
            loss=parse_fraction(loss) if loss is not None else 0.0,
            queue=QueueLimit.parse(queue) if queue is not None else None,
            trace=trace,
            trace_offset_s=parse_time(trace_offset) if trace_offset is not None else 0.0,
        )

    @property
    def impaired(self) -> bool:
        return bool(self.rate_bps or self.delay_s or self.jitter_s or self.loss or self.trace)

    @property
    def nominal_rate_bps(self) -> int | None:
        """The rate that sizes queues and estimates: ``rate_bps``, or a trace's peak rate."""
        if self.rate_bps:
            return self.rate_bps
        return int(self.trace.peak_rate_bps) if self.trace is not None else None

    @property
    def needs_delay(self) -> bool:
        return self.delay_s > 0 or self.jitter_s > 0

    def queue_bytes(self, mtu: int) -> int:
        """Bytes the rate limiter may queue: the configured limit, else 50 ms at the
        link rate, never less than two full frames (tbf drops anything larger)."""
        frame = mtu + ETH_HEADER
        rate = self.nominal_rate_bps
        configured = self.queue.to_bytes(rate) if self.queue else None
        if configured is None:
            configured = int((rate or 0) * 0.05 / 8)
        return max(configured, 2 * frame)

    def burst_bytes(self, mtu: int) -> int:
        """tbf bucket: one millisecond at the rate, at least two full frames."""
        frame = mtu + ETH_HEADER
        return max(int((self.rate_bps or 0) * 1e-3 / 8), 2 * frame)

    def delay_queue_packets(self, mtu: int, min_frame: int = 64) -> int:
        """Packets a delay stage must hold: rate x (delay + jitter) in the worst
        case of minimum-size frames is excessive; we size for 1/4 MTU frames,
        plus head room, which covers ACK-heavy reverse directions too."""
        if not self.needs_delay and self.trace is None:
            return 0
        rate = self.nominal_rate_bps or 10_000_000_000
        avg_frame = max(min_frame, (mtu + ETH_HEADER) // 4)
        pkts = rate * (self.delay_s + self.jitter_s) / 8 / avg_frame
        return int(min(max(pkts * 2, 1024), 1_000_000))


@dataclass(frozen=True)
class Endpoint:
    node: str
    iface: str

    def __str__(self) -> str:
        return f"{self.node}:{self.iface}"

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        node, sep, iface = text.partition(":")
        if not sep or not node or not iface:
            raise ValueError(f"expected 'node:interface', got {text!r}")
        return cls(node, iface)


@dataclass(frozen=True)
class DirectedLink:
    """One direction of a link: packets leave ``src`` and arrive at ``dst``."""

    src: Endpoint
    dst: Endpoint
    shape: LinkShape
    mtu: int

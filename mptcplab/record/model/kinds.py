"""What each traffic kind measures beyond a bulk flow (UDP, HTTP, churn, hold, latency,
transfer): one model per kind, a FlowResult field each."""

from __future__ import annotations

from pydantic import Field

from .base import _Model


class UdpMetrics(_Model):
    """iperf3's UDP report, as the receiver counted it."""

    packets: int | None = None
    sent_packets: int | None = None
    lost_packets: int | None = None
    lost_percent: float | None = None
    jitter_ms: float | None = None


class HttpMetrics(_Model):
    """wrk's report: requests, their rate and latency distribution."""

    requests: int | None = None
    requests_per_s: float | None = None
    latency_mean_ms: float | None = None
    latency_max_ms: float | None = None
    latency_p50_ms: float | None = None
    latency_p75_ms: float | None = None
    latency_p90_ms: float | None = None
    latency_p99_ms: float | None = None
    socket_errors: int | None = None
    non_2xx: int | None = None


class ChurnMetrics(_Model):
    """The churn client's report (the application's view)."""

    attempted: int | None = None
    completed: int | None = None
    failed: int | None = None
    rate_per_s: float | None = None
    connect_ms_p50: float | None = None
    connect_ms_p99: float | None = None
    errors: dict[str, int] = Field(default_factory=dict)


class HoldMetrics(_Model):
    """The hold client's report (traffic/hold.py): connections asked for, established and
    held until the run stopped it, and how long opening them took."""

    requested: int | None = None
    held: int | None = None
    failed: int | None = None
    open_s: float | None = None
    errors: dict[str, int] = Field(default_factory=dict)


class LatencyMetrics(_Model):
    """The latency tool's flow (traffic/latency.py): per-block delay (receive time minus the
    sender's write time, one clock) over the received blocks, in ms; the buffers as
    getsockopt read them back at the end (a locked buffer holds twice the request: the kind
    forces it past net.core.wmem_max/rmem_max); the time the sender waited for send-buffer space."""

    blocks: int = 0
    blocks_sent: int | None = None
    block_bytes: int | None = None
    min_ms: float | None = None
    mean_ms: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    sndbuf_requested: int | None = None
    sndbuf_effective: int | None = None
    rcvbuf_requested: int | None = None
    rcvbuf_effective: int | None = None
    blocked_s: float | None = None
    #: blocked_s / the sender's writing time
    blocked_share: float | None = None
    blocked_blocks: int | None = None
    sent_mbps: float | None = None
    goodput_mbps: float | None = None
    mptcp_active: bool | None = None
    #: subflows alive at the end (MPTCP_INFO), the initial one included
    subflows: int | None = None
    #: the sender socket's congestion control at the end (TCP_CONGESTION read back)
    cc: str | None = None


class ConnectionsCheck(_Model):
    """Every connection to the flow's server port in the capture (http, churn): how many
    completed their handshake (``seen``; ``unfinished`` never did and carry nothing), how
    many of those were MPTCP (MP_CAPABLE in SYN, SYN/ACK and third ACK), SYN -> SYN/ACK times."""

    connections_seen: int = 0
    connections_mptcp: int = 0
    connections_unfinished: int = 0
    #: of the completed ones: with an MP_JOIN subflow / whose initial subflow carried data on
    #: two or more capture points (striped over links); None: a run before these counts
    connections_joined: int | None = None
    connections_striped: int | None = None
    syn_synack_point: str | None = None
    syn_synack_n: int = 0
    syn_synack_ms_p50: float | None = None
    syn_synack_ms_p90: float | None = None
    #: the NSDI 2012 paper's Fig 10 reads its TCP curve at the 91st percentile (6 us)
    syn_synack_ms_p91: float | None = None
    syn_synack_ms_p99: float | None = None
    #: fraction of the timed connections answered within 6 us (the same reading)
    syn_synack_within_6us: float | None = None
    syn_synack_ms_max: float | None = None


class TransferDifference(_Model):
    """A range of a transfer where what arrived differs from what was sent."""

    offset: int
    length: int
    #: bytes in it that differ (the rest equal the stream by chance)
    differing: int
    #: the stream offset these bytes were sent at (misplaced; of the first piece when the range
    #: is several); None: found nowhere in it
    source: int | None = None
    #: of ``differing``, the bytes found elsewhere in the stream, piece by piece (0 in records
    #: written before it)
    misplaced: int = 0


class TransferMetrics(_Model):
    """The verified transfer's report (traffic/transfer.py): what was sent and received."""

    bytes: int | None = None
    received_bytes: int | None = None
    #: the bytes the flow was to send (``bytes`` of the lab file)
    size: int | None = None
    #: the run stopped the transfer at its duration limit before it ended (a stall)
    stopped: bool | None = None
    sent_sha256: str | None = None
    received_sha256: str | None = None
    #: equal, differs (same length, other content) or incomplete
    verdict: str | None = None
    connect_s: float | None = None
    seed: int | None = None
    #: the client's socket still ran MPTCP after sending (MPTCP_INFO answered)
    mptcp_socket: bool | None = None
    #: bytes where what arrived differs from the sent stream (the server's comparison;
    #: None: not compared), the ranges they make, and how many of them are not the
    #: stream's own bytes from another offset (traffic/transfer_diff.py)
    differing_bytes: int | None = None
    differences: list[TransferDifference] = []
    foreign_bytes: int | None = None

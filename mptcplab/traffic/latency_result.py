"""The latency kind's numbers in the record (FlowResult.latency; traffic/latency.py reads
them) and the metrics a finding may name on them (computed in latency_metrics.py;
eq1_buffer_ratio in metrics/cc_depth.py, from the flow's sndbuf_effective_bytes)."""

from __future__ import annotations

from ..metricdecl import FLOW, declare
from ..values.types import Lenient


class LatencyMetrics(Lenient):
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


# the send-buffer lab's, read from a latency flow's buffers and waits
declare("eq1_buffer_ratio", "mean",
        "the MPTCP socket's send buffer as getsockopt read it back at the end (latency flows) / Eq (1)'s requirement:"
        " >= 1 meets it", accepts=FLOW)
declare("send_waits", "mean",
        "writes of the sender that had to wait for send-buffer space (latency flows; the paper's starvations counted "
        "sk_stream_wait_memory calls)", accepts=FLOW)
declare("blocked_share", "mean",
        "fraction of the sender's writing time spent waiting for send-buffer space (latency flows)", accepts=FLOW)
# the latency tool's own numbers
declare("latency_p50_ms", "median",
        "the flow's median per-block delay (receive time minus the sender's write time)", unit="ms", accepts=FLOW)
declare("latency_p95_ms", "median", "the 95th percentile of the flow's per-block delay", unit="ms", accepts=FLOW)
declare("latency_p99_ms", "median", "the 99th percentile of the flow's per-block delay", unit="ms", accepts=FLOW)
declare("latency_mean_ms", "mean", "the mean of the flow's per-block delay", unit="ms", accepts=FLOW)
declare("sndbuf_effective_bytes", "median",
        "the client's SO_SNDBUF as getsockopt read it back at the end", unit="bytes", accepts=FLOW)
declare("rcvbuf_effective_bytes", "median",
        "the server's SO_RCVBUF as getsockopt read it back at the end", unit="bytes", accepts=FLOW)
declare("blocked_s", "mean", "the time the flow's sender waited for send-buffer space", unit="s", accepts=FLOW)

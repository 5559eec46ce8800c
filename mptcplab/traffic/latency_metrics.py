"""How the latency kind's metrics (declared in latency_result.py) are computed: each is a
number of the flow's LatencyMetrics (traffic/kind_metrics.py: registered by metrics/)."""

from __future__ import annotations

from .kind_metrics import FlowMetric, reading
from .latency_result import LatencyMetrics

FLOW_METRICS: dict[str, FlowMetric] = {
    "latency_p50_ms": reading(LatencyMetrics, lambda m: m.p50_ms),
    "latency_p95_ms": reading(LatencyMetrics, lambda m: m.p95_ms),
    "latency_p99_ms": reading(LatencyMetrics, lambda m: m.p99_ms),
    "latency_mean_ms": reading(LatencyMetrics, lambda m: m.mean_ms),
    "sndbuf_effective_bytes": reading(LatencyMetrics, lambda m: m.sndbuf_effective),
    "rcvbuf_effective_bytes": reading(LatencyMetrics, lambda m: m.rcvbuf_effective),
    "blocked_s": reading(LatencyMetrics, lambda m: m.blocked_s),
    # the send-buffer lab's (Kato et al.): the sender's waits for send-buffer space
    "send_waits": reading(LatencyMetrics, lambda m: m.blocked_blocks),
    "blocked_share": reading(LatencyMetrics, lambda m: m.blocked_share),
}

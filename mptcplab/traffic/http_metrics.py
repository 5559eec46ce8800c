"""How the http kind's metrics (declared in http_result.py) are computed: each is a number
of the flow's HttpMetrics, wrk's report (traffic/kind_metrics.py: registered by metrics/).

Requests/s does not scale with the links (``scales`` False): with small files the server's
forks and the shared CPU bound it, with large ones the links; the lab's findings are ratios
between scenarios run at the same scale."""

from __future__ import annotations

from .http_result import HttpMetrics
from .kind_metrics import FlowMetric, reading

FLOW_METRICS: dict[str, FlowMetric] = {
    "requests_per_s": reading(HttpMetrics, lambda m: m.requests_per_s),
    "http_latency_p50_ms": reading(HttpMetrics, lambda m: m.latency_p50_ms),
    "http_latency_p99_ms": reading(HttpMetrics, lambda m: m.latency_p99_ms),
}

"""The http kind's numbers in the record (FlowResult.http; traffic/http.py reads them) and
the metrics a finding may name on them (computed in http_metrics.py)."""

from __future__ import annotations

from typing import ClassVar

from ..metricdecl import FLOW, declare
from ..values.types import Lenient


class HttpMetrics(Lenient):
    """wrk's report: requests, their rate and latency distribution."""

    #: a web flow's one number where a bulk flow has its goodput (traffic/results.headline):
    #: this model's field and its unit
    HEADLINE: ClassVar[tuple[str, str]] = ("requests_per_s", "requests/s")

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


declare("requests_per_s", "median", "wrk's requests per second", unit="req/s", accepts=FLOW)
declare("http_latency_p50_ms", "median", "wrk's median request latency", unit="ms", accepts=FLOW)
declare("http_latency_p99_ms", "median", "wrk's 99th percentile request latency", unit="ms", accepts=FLOW)

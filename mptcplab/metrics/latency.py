"""Metrics of the ``latency`` flow kind (traffic/latency.py, FlowResult.latency).

``flow`` selects a flow of experiment.yml by name (flows.selected_flow; default the primary
measured flow). A flow that is not a latency flow, or a repetition from before the kind existed, has no
value (None), which the aggregates leave out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import Metric, Select, register
from .flows import FLOW, kind_field

if TYPE_CHECKING:
    from ..results.model import Repetition


def _latency(field: str) -> Callable[[Repetition, Select], float | None]:
    return kind_field("latency", field)


for _m in [
    Metric("latency_p50_ms", _latency("p50_ms"), "median", "the flow's median per-block delay (receive time "
           "minus the sender's write time)", unit="ms", accepts=FLOW),
    Metric("latency_p95_ms", _latency("p95_ms"), "median", "the 95th percentile of the flow's per-block delay",
           unit="ms", accepts=FLOW),
    Metric("latency_p99_ms", _latency("p99_ms"), "median", "the 99th percentile of the flow's per-block delay",
           unit="ms", accepts=FLOW),
    Metric("latency_mean_ms", _latency("mean_ms"), "mean", "the mean of the flow's per-block delay",
           unit="ms", accepts=FLOW),
    Metric("sndbuf_effective_bytes", _latency("sndbuf_effective"), "median",
           "the client's SO_SNDBUF as getsockopt read it back at the end", unit="bytes", accepts=FLOW),
    Metric("rcvbuf_effective_bytes", _latency("rcvbuf_effective"), "median",
           "the server's SO_RCVBUF as getsockopt read it back at the end", unit="bytes", accepts=FLOW),
    Metric("blocked_s", _latency("blocked_s"), "mean", "the time the flow's sender waited for send-buffer "
           "space", unit="s", accepts=FLOW),
]:
    register(_m)

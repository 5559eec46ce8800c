"""Metrics of the ``latency`` flow kind (traffic/latency.py, FlowResult.latency), and the
goodput of one named flow of any kind.

``flow`` selects a flow of experiment.yml by name; without it, the repetition's primary
measured flow (the first measured one, whose numbers are also the record's top level).
A flow that is not a latency flow, or a repetition from before the kind existed, has no
value (None), which the aggregates leave out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import Metric, Select, register

if TYPE_CHECKING:
    from ..results.model import FlowResult, Repetition

FLOW = frozenset({"flow"})


def selected_flow(r: Repetition, sel: Select) -> FlowResult | None:
    """The flow ``sel`` names, else the primary measured flow; None when absent."""
    if sel.flow is not None:
        return next((f for f in r.flows if f.name == sel.flow), None)
    return next((f for f in r.flows if f.role == "measured"), None)


def _latency(field: str) -> Callable[[Repetition, Select], float | None]:
    def per_rep(r: Repetition, sel: Select) -> float | None:
        f = selected_flow(r, sel)
        v = getattr(f.latency, field) if f is not None and f.latency is not None else None
        return None if v is None else float(v)
    return per_rep


def _flow_goodput(r: Repetition, sel: Select) -> float | None:
    f = selected_flow(r, sel)
    return f.goodput_mbps if f is not None else None


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
    Metric("flow_goodput_mbps", _flow_goodput, "mean", "the named flow's receiver-side goodput (any kind that "
           "reports one)", unit="Mbit/s", scales=True, accepts=FLOW),
]:
    register(_m)

"""Metrics of the ``latency`` flow kind (traffic/latency.py, FlowResult.latency).

``flow`` selects a flow of experiment.yml by name (flows.selected_flow; default the primary
measured flow). A flow that is not a latency flow, or a repetition from before the kind existed, has no
value (None), which the aggregates leave out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import Select, register
from .flows import kind_field

if TYPE_CHECKING:
    from ..record.model import Repetition


def _latency(field: str) -> Callable[[Repetition, Select], float | None]:
    return kind_field("latency", field)


register("latency_p50_ms", _latency("p50_ms"))
register("latency_p95_ms", _latency("p95_ms"))
register("latency_p99_ms", _latency("p99_ms"))
register("latency_mean_ms", _latency("mean_ms"))
register("sndbuf_effective_bytes", _latency("sndbuf_effective"))
register("rcvbuf_effective_bytes", _latency("rcvbuf_effective"))
register("blocked_s", _latency("blocked_s"))

"""Connection setup at the server: SYN in -> SYN/ACK out, per connection, from the capture
at the server's node (traffic/connections.py, FlowResult.connections), for the kinds that open
many connections (churn, http, hold). The NSDI 2012 paper's Fig 10 (labs/setup) in microseconds:
its medians, the 91st percentile and the share within 6 us it reads the TCP curve at.

``flow`` selects a flow of experiment.yml by name (flows.selected_flow; default the primary
measured flow). A flow without a connections check has no value (None).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import Select, register
from .flows import selected_flow

if TYPE_CHECKING:
    from ..record.model import Repetition


def _check(field: str, scale: float) -> Callable[[Repetition, Select], float | None]:
    def per_rep(r: Repetition, sel: Select) -> float | None:
        f = selected_flow(r, sel)
        v = getattr(f.connections, field) if f is not None and f.connections is not None else None
        return None if v is None else float(v) * scale
    return per_rep


register("syn_synack_us_p50", _check("syn_synack_ms_p50", 1e3))
register("syn_synack_us_p91", _check("syn_synack_ms_p91", 1e3))
register("syn_synack_us_p99", _check("syn_synack_ms_p99", 1e3))
register("syn_synack_within_6us", _check("syn_synack_within_6us", 1.0))

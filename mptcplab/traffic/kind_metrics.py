"""How the traffic kinds' own metrics are computed: the metrics registry's side of the kinds
(mptcplab/metrics/kinds.py finds this module by name, mptcplab/plugins.py, and registers
them). A kind declares its metrics in its result module (traffic/<kind>_result.py, loaded
with the record model) and computes them in traffic/<kind>_metrics.py, which exports
``FLOW_METRICS``: metric name -> a ``FlowMetric`` of one flow's record. Which flow (a
finding's ``flow:``, else the primary measured one) is metrics/'s choice, the same for every
family, so neither side imports the other: metrics/ asks here by name, a kind's module
imports only its result model and this module.

The kinds' modules are imported when ``flow_metrics`` is called, not with this module, so
they may import ``reading`` from here."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

if TYPE_CHECKING:
    from ..record.model import FlowResult

M = TypeVar("M", bound=BaseModel)
#: one flow's value of a metric; None: not measured (another kind, an older record)
FlowMetric = Callable[["FlowResult"], float | None]

#: the kinds with metrics of their own, by their module (traffic/<kind>_metrics.py): one
#: line per kind
MODULES = ("iperf3_metrics", "http_metrics", "latency_metrics", "transfer_metrics")


def reading(model: type[M], read: Callable[[M], float | None]) -> FlowMetric:
    """A metric that is one number of a kind's result model: ``read`` of the flow's ``model``
    as a float; None for a flow without that model (another kind) or without the number."""
    def per_flow(f: FlowResult) -> float | None:
        m = f.metrics_of(model)
        v = None if m is None else read(m)
        return None if v is None else float(v)
    return per_flow


def flow_metrics() -> dict[str, FlowMetric]:
    """Every kind's metrics, metric name -> its computation (a name twice is an error)."""
    out: dict[str, FlowMetric] = {}
    for name in MODULES:
        table: dict[str, FlowMetric] = import_module(f"{__package__}.{name}").FLOW_METRICS
        if twice := set(out) & set(table):
            raise ValueError(f"mptcplab/traffic/{name}.py computes {', '.join(sorted(twice))} again")
        out.update(table)
    return out

"""The record's side of the traffic kinds: ``KindResults`` has one field per kind that reports
numbers of its own, named by its ``TrafficKind.result_field`` and typed by its result model
(traffic/<kind>_result.py). FlowResult (record/model/repetition.py) is built on it and on the
outcome every flow has, so a kind's numbers are a typed part of rep.json; code that knows a
kind reads them with ``FlowOutcome.metrics_of(ItsModel)``.

The record model finds this module by name (mptcplab/plugins.py); this module and the kinds'
result modules import only the value types and metricdecl (their metrics are declared
there), so any of them can be imported first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..values.types import Lenient
from .churn_result import ChurnMetrics
from .hold_result import HoldMetrics
from .http_result import HttpMetrics
from .latency_result import LatencyMetrics
from .transfer_result import TransferMetrics
from .udp_result import UdpMetrics

if TYPE_CHECKING:
    from ..record.model import FlowResult


class KindResults(Lenient):
    """For a kind with numbers of its own, those (None for the other kinds)."""

    udp: UdpMetrics | None = None
    http: HttpMetrics | None = None
    churn: ChurnMetrics | None = None
    latency: LatencyMetrics | None = None
    hold: HoldMetrics | None = None
    transfer: TransferMetrics | None = None


def headline(flow: FlowResult) -> tuple[float, str] | None:
    """A flow's one number and its unit when it has no goodput of its own: the field its
    kind's result model names as ``HEADLINE`` (the http kind: requests/s); None when the
    kind names none or the flow lacks the number."""
    for name in KindResults.model_fields:
        report = getattr(flow, name, None)
        spec: tuple[str, str] | None = getattr(report, "HEADLINE", None)
        if spec is not None and (value := getattr(report, spec[0])) is not None:
            return value, spec[1]
    return None

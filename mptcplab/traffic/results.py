"""The record's side of the traffic kinds: ``KindResults`` has one field per kind that reports
numbers of its own, named by its ``TrafficKind.result_field`` and typed by its result model
(traffic/<kind>_result.py). FlowResult (record/model/repetition.py) is built on it, so a
kind's numbers are a typed part of rep.json.

The record model imports this module and the kinds' result modules import only the record
model's base and metricdecl (their metrics are declared there): nothing here loads the lab
schema or a runner. Importing these modules first is not supported; import the record model."""

from __future__ import annotations

from ..record.model.flow import FlowOutcome
from .churn_result import ChurnMetrics
from .hold_result import HoldMetrics
from .http_result import HttpMetrics
from .latency_result import LatencyMetrics
from .transfer_result import TransferMetrics
from .udp_result import UdpMetrics


class KindResults(FlowOutcome):
    """A flow's outcome and, for a kind with numbers of its own, those (None for other kinds)."""

    udp: UdpMetrics | None = None
    http: HttpMetrics | None = None
    churn: ChurnMetrics | None = None
    latency: LatencyMetrics | None = None
    hold: HoldMetrics | None = None
    transfer: TransferMetrics | None = None

"""Traffic kinds: one module per ``kind:`` of experiment.yml, behind traffic/base.py's
TrafficKind interface, looked up here by name.

Kinds: iperf3 (bulk TCP/MPTCP, duration or byte count), udp (iperf3 -u at a rate),
http (busybox httpd + wrk), churn (many short connections, traffic/churn_tool.py),
latency (the project's block-latency tool, native/latency), hold (N connections held open
while the other flows run: a background flow, traffic/hold.py), transfer (a verified transfer:
SHA-256 of what arrived against what was sent, traffic/transfer_tool.py).
Adding one: docs/architecture.md, "How to add a traffic kind" (a module with a TrafficKind
subclass, an entry in KINDS below, a schema class in lab/schema/flows.py's AnyFlow, a result
model). tests/unit/test_plugin_registry.py checks that the two lists agree.
"""

from __future__ import annotations

from typing import Any

from ..lab.schema import Flow
from .base import KindContext, Outcome, TrafficKind
from .churn import ChurnKind
from .hold import HoldKind
from .http import HttpKind
from .iperf3 import (
    IPERF3_HELP,
    FlowCommands,
    Iperf3Kind,
    IperfResult,
    flow_commands,
    help_has_multipath,
    iperf3_has_multipath,
    read_iperf3,
)
from .latency import LatencyKind
from .transfer import TransferKind
from .udp import UdpKind

#: kind name -> the object that runs flows of that kind
KINDS: dict[str, TrafficKind[Any]] = {k.name: k for k in (Iperf3Kind(), UdpKind(), HttpKind(), ChurnKind(),
                                                             LatencyKind(), HoldKind(), TransferKind())}


def kind_of(flow: Flow) -> TrafficKind[Any]:
    """The kind that runs this flow (its schema class's ``kind`` field)."""
    return KINDS[flow.kind]


__all__ = ["IPERF3_HELP", "KINDS", "FlowCommands", "IperfResult", "KindContext", "Outcome", "TrafficKind",
           "flow_commands", "help_has_multipath", "iperf3_has_multipath", "kind_of", "read_iperf3"]

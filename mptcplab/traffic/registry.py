"""The traffic kinds: the one list of them (``AnyFlow``). Each kind is its own modules:
<kind>_schema.py (the lab file's schema class, a ``FlowBase`` subclass whose ``kind``
Literal is the kind's name), <kind>.py (its ``TrafficKind``, exported as ``KIND``; kinds.py
finds it by the name) and, when it reports numbers of its own, <kind>_result.py (its result
model, a field of results.py's ``KindResults``). docs/architecture.md, "How to add a traffic
kind".

The lab schema (lab/schema/flows.py) builds the ``Flow`` union from this list, so this module
and the schema modules it imports build on the leaves of lab/schema only (base.py,
flowbase.py), never on its face or on a runner. Import the ``lab.schema`` face before this
module or a kind's schema module: entered first, they meet themselves half-loaded."""

from __future__ import annotations

from typing import get_args

from ..values.flowbase import FlowBase
from .churn_schema import ChurnFlow
from .hold_schema import HoldFlow
from .http_schema import HttpFlow
from .iperf3_schema import IperfFlow
from .latency_schema import LatencyFlow
from .transfer_schema import TransferFlow
from .udp_schema import UdpFlow

#: A flow of any kind: the one list of the kinds' schema classes (the type checker needs it
#: spelled out); the first is the kind of a flow that names none (labs written before kinds).
AnyFlow = IperfFlow | UdpFlow | HttpFlow | ChurnFlow | LatencyFlow | HoldFlow | TransferFlow
FLOW_CLASSES: tuple[type[FlowBase], ...] = get_args(AnyFlow)


def kind_name(cls: type[FlowBase]) -> str:
    """The ``kind:`` value that selects a flow schema class (its ``kind`` Literal)."""
    return str(get_args(cls.model_fields["kind"].annotation)[0])


#: each class's ``kind`` value, in AnyFlow's order
FLOW_KINDS: tuple[str, ...] = tuple(kind_name(c) for c in FLOW_CLASSES)
#: the kind of a flow that names none
DEFAULT_KIND = FLOW_KINDS[0]

"""The traffic kinds' own metrics: each kind computes its numbers of one flow
(traffic/<kind>_metrics.py, declared in its result module); here they get the flow selection
every family uses (flows.selected_flow: a finding's ``flow``, else the primary measured flow)
and join the registry. The kinds' table is found by name (mptcplab/plugins.py, "traffic
metrics"), so this package imports no plug-in and a kind's module nothing of this package.
A flow of another kind, or no such flow, has no value (None), which the aggregates leave out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import plugins
from .base import PerRep, Select, register
from .flows import selected_flow

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..record.model import FlowResult, Repetition


def _selected(per_flow: Callable[[FlowResult], float | None]) -> PerRep:
    def per_rep(r: Repetition, sel: Select) -> float | None:
        f = selected_flow(r, sel)
        return None if f is None else per_flow(f)
    return per_rep


for _name, _per_flow in plugins.registry("traffic metrics").flow_metrics().items():
    register(_name, _selected(_per_flow))

"""Per-flow metrics: one named flow's goodput, its share of the measured flows' total, that
total itself (what flows sharing a bottleneck carry together) and a flow's aggregation
benefit over its paths' rates (analysis/aggregation.py).

Labs with several measured flows at once (labs/cc: an MPTCP flow against a single-path TCP
flow on one bottleneck) compare flows, not paths. ``flow`` selects a flow of experiment.yml by
name; without it, the repetition's primary measured flow (the first measured one, whose
numbers are also the record's top level). A repetition without that flow has no value.
``selected_flow`` is that choice, for every family whose metrics take ``flow``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import Select, register

if TYPE_CHECKING:
    from ..record.model import FlowResult, Repetition


def selected_flow(r: Repetition, sel: Select) -> FlowResult | None:
    """The flow ``sel`` names, else the primary measured flow; None when absent."""
    if sel.flow is not None:
        return next((f for f in r.flows if f.name == sel.flow), None)
    return next((f for f in r.flows if f.role == "measured"), None)


def kind_field(part: str, field: str) -> Callable[[Repetition, Select], float | None]:
    """A per-repetition value: ``field`` of the selected flow's kind report (``part``: the
    FlowResult attribute, e.g. ``latency``, ``http``); None for a flow of another kind."""
    def per_rep(r: Repetition, sel: Select) -> float | None:
        f = selected_flow(r, sel)
        report = getattr(f, part) if f is not None else None
        v = getattr(report, field) if report is not None else None
        return None if v is None else float(v)
    return per_rep


def _flow_goodput(r: Repetition, sel: Select) -> float | None:
    f = selected_flow(r, sel)
    return f.goodput_mbps if f is not None else None


def _flow_share(r: Repetition, sel: Select) -> float | None:
    # a share says something only beside another measured flow (one alone has 1.0 by
    # definition); a competing flow has no share (traffic/fairness.py counts measured ones)
    if r.fairness is None or r.fairness.flows < 2:
        return None
    f = selected_flow(r, sel)
    return f.share if f is not None else None


def _goodput_sum(r: Repetition, sel: Select) -> float | None:
    # flows sharing a bottleneck: one flow alone is goodput_mbps; a measured flow without a
    # goodput leaves the sum unknown, not smaller
    measured = [f.goodput_mbps for f in r.flows if f.role == "measured"]
    if len(measured) < 2 or any(g is None for g in measured):
        return None
    return float(sum(g for g in measured if g is not None))


def _aggregation_benefit(r: Repetition, sel: Select) -> float | None:
    f = selected_flow(r, sel)
    return f.aggregation_benefit if f is not None else None


register("flow_goodput_mbps", _flow_goodput)
register("flow_share", _flow_share)
register("flows_goodput_sum_mbps", _goodput_sum)
register("aggregation_benefit", _aggregation_benefit)

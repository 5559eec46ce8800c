"""Metrics of one-way delay, receiver reordering and head-of-line delay from the capture
(analysis/delivery.py; SubflowResult owd_*/hol_*/ooo_share and MptcpVerdict's HoL numbers).

Without a path the HoL metrics are the connection's (all subflows' segments at the receiver
points); with a path, its subflows'. A repetition from before these fields has no value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import Metric, Select, register
from .core import PATH

if TYPE_CHECKING:
    from ..results.model import Repetition


def _ooo_share(r: Repetition, sel: Select) -> float | None:
    if sel.path is None:
        return r.mptcp.ooo_share
    # the path's subflows weighted by the bytes each carried
    pairs = [(s.ooo_share, s.bytes or 0) for s in r.subflows_on(sel.path) if s.ooo_share is not None]
    total = sum(b for _, b in pairs)
    return sum(v * b for v, b in pairs) / total if total else None


def _largest(field: str, connection: bool) -> Callable[[Repetition, Select], float | None]:
    """The connection's value without a path (when ``connection``), else the largest over the
    selected subflows."""
    def per_rep(r: Repetition, sel: Select) -> float | None:
        if sel.path is None and connection:
            v = getattr(r.mptcp, field)
            return None if v is None else float(v)
        vals = [getattr(s, field) for s in r.subflows_on(sel.path) if getattr(s, field) is not None]
        return float(max(vals)) if vals else None
    return per_rep


for _m in [
    Metric("ooo_share", _ooo_share, "mean", "the share of data bytes that reached the receiver with a hole before "
           "them in data sequence space (capture at the receiver, analysis/delivery.py)", accepts=PATH),
    Metric("hol_p50_ms", _largest("hol_p50_ms", True), "median", "the median head-of-line delay of the data "
           "segments at the receiver: arrival until all data before it had arrived (0 when in order)", unit="ms",
           accepts=PATH),
    Metric("hol_p95_ms", _largest("hol_p95_ms", True), "median", "the 95th percentile of the head-of-line delay "
           "at the receiver", unit="ms", accepts=PATH),
    Metric("hol_p99_ms", _largest("hol_p99_ms", True), "median", "the 99th percentile of the head-of-line delay "
           "at the receiver", unit="ms", accepts=PATH),
    Metric("hol_max_ms", _largest("hol_max_ms", True), "max", "the largest head-of-line delay at the receiver",
           unit="ms", accepts=PATH),
    Metric("owd_median_ms", _largest("owd_median_ms", False), "median", "the median one-way delay of the "
           "path's data segments between the sender's and the receiver's capture points (one clock); "
           "the largest over the subflows", unit="ms", accepts=PATH),
    Metric("owd_p95_ms", _largest("owd_p95_ms", False), "median", "the 95th percentile of the path's one-way "
           "delay between the capture points", unit="ms", accepts=PATH),
]:
    register(_m)

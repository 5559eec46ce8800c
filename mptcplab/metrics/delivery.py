"""Metrics of one-way delay, receiver reordering and head-of-line delay from the capture
(analysis/delivery.py; SubflowResult owd_*/hol_*/ooo_share and MptcpVerdict's HoL numbers).

Without a path the HoL metrics are the connection's (all subflows' segments at the receiver
points); with a path, its subflows'. A repetition from before these fields has no value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import Select, register

if TYPE_CHECKING:
    from ..record.model import Repetition


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


register("ooo_share", _ooo_share)
register("hol_p50_ms", _largest("hol_p50_ms", True))
register("hol_p95_ms", _largest("hol_p95_ms", True))
register("hol_p99_ms", _largest("hol_p99_ms", True))
register("hol_max_ms", _largest("hol_max_ms", True))
register("owd_median_ms", _largest("owd_median_ms", False))
register("owd_p95_ms", _largest("owd_p95_ms", False))

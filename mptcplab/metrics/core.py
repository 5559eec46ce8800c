"""The metrics every lab has: goodput, path shares, segment sizes, ICMP, fairness."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import Select, register

if TYPE_CHECKING:
    from ..record.model import Repetition


def _goodput(r: Repetition, _sel: Select) -> float | None:
    return r.goodput_mbps


def _share(r: Repetition, sel: Select) -> float | None:
    # a path with no subflow in this repetition carried nothing: 0 is the measurement
    return sum(s.share or 0.0 for s in r.subflows_on(sel.path))


def _icmp(r: Repetition, sel: Select) -> float | None:
    return float(sum(s.icmp_frag_needed for s in r.subflows_on(sel.path)))


def _jain(r: Repetition, _sel: Select) -> float | None:
    # one measured flow is trivially fair: the index says something only across several
    return r.fairness.jain_index if r.fairness is not None and r.fairness.flows > 1 else None


def subflow_sum(field: str) -> Callable[[Repetition, Select], float | None]:
    """Per repetition: the sum of a count field over the path's subflows. A path without a
    subflow sent nothing (0 is the measurement); subflows that all lack the field (an older
    run) give no value."""
    def per_rep(r: Repetition, sel: Select) -> float | None:
        subs = r.subflows_on(sel.path)
        vals = [getattr(s, field) for s in subs]
        if subs and all(v is None for v in vals):
            return None
        return float(sum(v or 0 for v in vals))
    return per_rep


def _largest(field: str) -> Callable[[Repetition, Select], float | None]:
    def per_rep(r: Repetition, sel: Select) -> float | None:
        vals = [getattr(s, field) for s in r.subflows_on(sel.path) if getattr(s, field) is not None]
        return float(max(vals)) if vals else None
    return per_rep


register("goodput_mbps", _goodput)
register("subflow_share", _share)
register("icmp_frag_needed", _icmp)
register("median_seg", _largest("median_seg"))
register("max_seg", _largest("max_seg"))
register("jain_index", _jain)

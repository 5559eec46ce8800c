"""The metrics every lab has: goodput, path shares, segment sizes, ICMP, fairness."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import Metric, Select, register

if TYPE_CHECKING:
    from ..results.model import Repetition

PATH = frozenset({"path"})


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


def _largest(field: str) -> Callable[[Repetition, Select], float | None]:
    def per_rep(r: Repetition, sel: Select) -> float | None:
        vals = [getattr(s, field) for s in r.subflows_on(sel.path) if getattr(s, field) is not None]
        return float(max(vals)) if vals else None
    return per_rep


for _m in [
    Metric("goodput_mbps", _goodput, "mean", "iperf3's receiver-side goodput", unit="Mbit/s", scales=True),
    Metric("subflow_share", _share, "mean", "sum of the path's subflow byte shares", accepts=PATH),
    Metric("icmp_frag_needed", _icmp, "mean", "ICMP frag-needed messages quoting the path's subflows",
           accepts=PATH),
    Metric("median_seg", _largest("median_seg"), "median",
           "the largest median data-segment payload among the path's subflows", unit="bytes", accepts=PATH),
    Metric("max_seg", _largest("max_seg"), "max", "the largest data-segment payload on the path",
           unit="bytes", accepts=PATH),
    Metric("jain_index", _jain, "mean", "Jain's fairness index across the repetition's measured flows"),
]:
    register(_m)

"""The aggregation benefit of a multipath transfer: its goodput against the capacities of the
paths it could use.

Kaspar et al.'s Ben(s) ("Using HTTP pipelining to improve progressive download over multiple
heterogeneous interfaces", ICC 2010), the definition mptcpanalyzer's ``aggr_benefit`` plot
states (pymptcpanalyzer plots/aggr_benefit.py; its computation there is a stub): for the
goodput g and path capacities C_1..C_n with C_max the largest,

    Ben = (g - C_max) / (sum_i C_i - C_max)   if g >= C_max
    Ben = (g - C_max) / C_max                 if g <  C_max

1: the sum of the paths; 0: as fast as the best path alone; -1: nothing. A value above 1
says the capacities understate what the paths carried (it is not clamped).

Here the capacities are the lab's configured rates (labspec.path_rates: the lowest rate on
each path in the data's direction) of the flow's expected paths, backup paths left out (they
are not meant to carry data while the others work); g is the flow's receiver-side goodput
(iperf3's report). Both are at the run's scale (lab/scale.py), and so Ben is scale-free.
"""

from __future__ import annotations

from collections.abc import Mapping

from .model import FlowSpec


def benefit(goodput: float | None, capacities: Mapping[str, float | None]) -> float | None:
    """Ben (see the module docstring) of ``goodput`` over the paths' ``capacities`` (the same
    unit). A path of capacity 0 adds nothing. None when it is not defined: no goodput, a
    capacity unknown (None), or fewer than two paths with a capacity above 0 (one path has
    nothing to aggregate, and the first case's denominator would be 0)."""
    if goodput is None or not capacities or any(c is None for c in capacities.values()):
        return None
    caps = [float(c) for c in capacities.values() if c is not None and c > 0]
    if len(caps) < 2:
        return None
    cmax = max(caps)
    if goodput >= cmax:
        return (goodput - cmax) / (sum(caps) - cmax)
    return (goodput - cmax) / cmax


def capacities_mbps(spec: FlowSpec) -> dict[str, float | None]:
    """The capacities Ben compares with: each expected, non-backup path's configured rate in
    Mbit/s (None: the lab configures no rate on it)."""
    out: dict[str, float | None] = {}
    for p in spec.expected_paths:
        if p in spec.backup_paths:
            continue
        rate = spec.path_rates_bps.get(p)
        out[p] = rate / 1e6 if rate else None
    return out

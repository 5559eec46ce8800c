"""Every metric's one aggregate over a scenario's repetitions, and the per-scenario table.

Every reader (summary aggregates, the published-vs-this-run table, findings, report, figures,
notebooks) takes its numbers from here, so a metric means the same everywhere. The metrics
themselves are defined in mptcplab/metrics/ (one registry), in two steps
(docs/results-format.md, "Aggregates"):

1. per repetition and path: one value from that path's subflows (a path can have several
   subflows in one repetition, e.g. fullmesh);
2. over the repetitions of a scenario: one statistic of those per-repetition values.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..metrics import METRICS, Select, Statistic
from ..record.model import PathAggregate, Repetition, ScenarioAggregate


@dataclass(frozen=True)
class Value:
    """A metric of one scenario over its repetitions."""

    value: float | None
    statistic: str          # e.g. "median over reps"
    std: float | None       # only for a mean over more than one repetition
    n: int                  # repetitions that had a value
    per_rep: list[float | None]
    over_reps: Statistic    # how ``value`` combines ``per_rep`` (metrics/base.py)

    @property
    def central(self) -> bool:
        """Whether ``value`` is a central statistic (mean, median) that each repetition's
        value can be read against; an extreme (max, min) is reached by one repetition."""
        return self.over_reps in ("mean", "median")


def _select(path: str | None, flow: str | None, window: tuple[float, float] | None) -> Select:
    return Select(path=path, flow=flow, window=window)


def per_rep_values(reps: Iterable[Repetition], metric: str, path: str | None = None, *,
                   flow: str | None = None, window: tuple[float, float] | None = None) -> list[float | None]:
    m = METRICS[metric]
    sel = _select(path, flow, window)
    return [m.per_rep(r, sel) for r in reps]


def _combine(xs: Sequence[float], how: Statistic) -> float | None:
    if how == "mean":
        return statistics.fmean(xs)
    if how == "median":
        return float(statistics.median(xs))
    if how == "min":
        return min(xs)
    if how == "std":  # one repetition has no spread
        return statistics.stdev(xs) if len(xs) > 1 else None
    return max(xs)


def scenario_value(reps: Sequence[Repetition], metric: str, path: str | None = None, *,
                   flow: str | None = None, window: tuple[float, float] | None = None) -> Value:
    """The one aggregate of ``metric`` over ``reps`` for a path, a named flow and a time
    window (metricdecl.Select); repetitions without a value are left out."""
    if metric not in METRICS:
        raise KeyError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    m = METRICS[metric]
    per = per_rep_values(reps, metric, path, flow=flow, window=window)
    xs = [x for x in per if x is not None]
    if not xs:
        return Value(None, m.statistic_text, None, 0, per, m.over_reps)
    std = statistics.stdev(xs) if m.over_reps == "mean" and len(xs) > 1 else None
    return Value(_combine(xs, m.over_reps), m.statistic_text, std, len(xs), per, m.over_reps)


def _path_aggregate(reps: Sequence[Repetition], path: str) -> PathAggregate:
    share = scenario_value(reps, "subflow_share", path)
    icmp = scenario_value(reps, "icmp_frag_needed", path)
    per_icmp = [None if x is None else int(x) for x in icmp.per_rep]
    return PathAggregate(
        reps=len(reps),
        share_mean_over_reps=share.value, share_std_over_reps=share.std,
        median_seg_median_over_reps=scenario_value(reps, "median_seg", path).value,
        max_seg_max_over_reps=scenario_value(reps, "max_seg", path).value,
        icmp_frag_needed_mean_over_reps=icmp.value,
        icmp_frag_needed_total=sum(x for x in per_icmp if x is not None),
        icmp_frag_needed_per_rep=per_icmp,
    )


def aggregates(records: Sequence[Repetition]) -> list[ScenarioAggregate]:
    """Per scenario, in the order the repetitions list them."""
    out = []
    for name in dict.fromkeys(r.name for r in records):
        reps = [r for r in records if r.name == name]
        g = [r.goodput_mbps for r in reps if r.goodput_mbps is not None]
        gv = scenario_value(reps, "goodput_mbps")
        paths = sorted({s.path for r in reps for s in r.subflows if s.path})
        jain = scenario_value(reps, "jain_index")
        out.append(ScenarioAggregate(
            scenario=name, n=len(reps), goodput_mean=gv.value, goodput_std=gv.std,
            goodput_min=min(g) if g else None, goodput_max=max(g) if g else None,
            mptcp_requested=any(r.mptcp.requested for r in reps),
            verified_reps=sum(1 for r in reps if r.mptcp.verified),
            fallback_reps=sum(1 for r in reps if r.mptcp.requested and r.mptcp.fallback),
            warning_reps=sum(1 for r in reps if r.warnings),
            jain_mean=jain.value, jain_std=jain.std, flow_share_mean=_flow_shares(reps),
            paths={p: _path_aggregate(reps, p) for p in paths},
        ))
    return out


def _flow_shares(reps: Sequence[Repetition]) -> dict[str, float | None]:
    """Each measured flow's share, mean over the repetitions that had it (several measured flows only)."""
    per: dict[str, list[float]] = {}
    for r in reps:
        if r.fairness is None or r.fairness.flows < 2:
            continue
        for name, share in r.fairness.shares.items():
            if share is not None:
                per.setdefault(name, []).append(share)
    return {name: statistics.fmean(xs) for name, xs in per.items()}

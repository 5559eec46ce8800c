"""The one definition of every metric a run reports, per repetition and over repetitions.

Every reader (summary aggregates, the published-vs-this-run table, findings, report, figures,
notebooks) takes its numbers from here, so a metric means the same everywhere. Each metric
is defined in two steps (docs/results-format.md, "Aggregates"):

1. per repetition and path: one value from that path's subflows (a path can have several
   subflows in one repetition, e.g. fullmesh);
2. over the repetitions of a scenario: one statistic of those per-repetition values.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from .model import PathAggregate, Repetition, ScenarioAggregate

Statistic = Literal["mean", "median", "max"]


@dataclass(frozen=True)
class Metric:
    name: str
    #: value of one repetition (on one path, or the whole connection with path None); None: absent
    per_rep: Callable[[Repetition, str | None], float | None]
    #: how the per-repetition values combine over repetitions
    over_reps: Statistic
    #: what per_rep takes, in words (docs and evidence text)
    per_rep_text: str

    @property
    def statistic_text(self) -> str:
        return f"{self.over_reps} over reps"


def _goodput(r: Repetition, _path: str | None) -> float | None:
    return r.goodput_mbps


def _share(r: Repetition, path: str | None) -> float | None:
    # a path with no subflow in this repetition carried nothing: 0 is the measurement
    return sum(s.share or 0.0 for s in r.subflows_on(path))


def _icmp(r: Repetition, path: str | None) -> float | None:
    return float(sum(s.icmp_frag_needed for s in r.subflows_on(path)))


def _jain(r: Repetition, _path: str | None) -> float | None:
    # one measured flow is trivially fair: the index says something only across several
    return r.fairness.jain_index if r.fairness is not None and r.fairness.flows > 1 else None


def _largest(field: str) -> Callable[[Repetition, str | None], float | None]:
    def per_rep(r: Repetition, path: str | None) -> float | None:
        vals = [getattr(s, field) for s in r.subflows_on(path) if getattr(s, field) is not None]
        return float(max(vals)) if vals else None
    return per_rep


METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("goodput_mbps", _goodput, "mean", "iperf3's receiver-side goodput"),
    Metric("subflow_share", _share, "mean", "sum of the path's subflow byte shares"),
    Metric("icmp_frag_needed", _icmp, "mean", "ICMP frag-needed messages quoting the path's subflows"),
    Metric("median_seg", _largest("median_seg"), "median",
           "the largest median data-segment payload among the path's subflows"),
    Metric("max_seg", _largest("max_seg"), "max", "the largest data-segment payload on the path"),
    Metric("jain_index", _jain, "mean", "Jain's fairness index across the repetition's measured flows"),
]}


@dataclass(frozen=True)
class Value:
    """A metric of one scenario over its repetitions."""

    value: float | None
    statistic: str          # e.g. "median over reps"
    std: float | None       # only for a mean over more than one repetition
    n: int                  # repetitions that had a value
    per_rep: list[float | None]


def per_rep_values(reps: Iterable[Repetition], metric: str, path: str | None) -> list[float | None]:
    m = METRICS[metric]
    return [m.per_rep(r, path) for r in reps]


def _combine(xs: Sequence[float], how: Statistic) -> float:
    if how == "mean":
        return statistics.fmean(xs)
    if how == "median":
        return float(statistics.median(xs))
    return max(xs)


def scenario_value(reps: Sequence[Repetition], metric: str, path: str | None = None) -> Value:
    """The one aggregate of ``metric`` over ``reps`` (repetitions without a value are left out)."""
    if metric not in METRICS:
        raise KeyError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    m = METRICS[metric]
    per = per_rep_values(reps, metric, path)
    xs = [x for x in per if x is not None]
    if not xs:
        return Value(None, m.statistic_text, None, 0, per)
    std = statistics.stdev(xs) if m.over_reps == "mean" and len(xs) > 1 else None
    return Value(_combine(xs, m.over_reps), m.statistic_text, std, len(xs), per)


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

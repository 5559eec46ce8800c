"""What a metric is, how a finding selects what it measures, and the one registry.

A metric is defined in two steps (docs/results-format.md, "Aggregates"): ``per_rep`` gives
one value per repetition for a selection (a path, a named flow, a time window), and
``over_reps`` combines those values over a scenario's repetitions. Families of metrics live
in their own modules of this package and ``register`` themselves on import; the loader's
check of published.yml (lab/metriccheck.py), the aggregates, the findings and the scaling
all read this one registry, so a metric is named in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ..results.model import Repetition

#: "min" and "std" (the sample standard deviation, needs two repetitions) exist for papers
#: that print a range and a standard deviation next to their mean (Kato et al. 2020)
Statistic = Literal["mean", "median", "max", "min", "std"]
#: what a finding can select besides the scenario
SELECTORS = frozenset({"path", "flow", "window"})


@dataclass(frozen=True)
class Select:
    """What of a repetition a metric measures: a path (None: the whole connection), a named
    flow of experiment.yml (None: the measured flow), a window [start, end) in seconds from
    the measured flow's start (None: the whole transfer)."""

    path: str | None = None
    flow: str | None = None
    window: tuple[float, float] | None = None

    def describe(self) -> str:
        parts = []
        if self.flow:
            parts.append(f"flow {self.flow}")
        if self.path:
            parts.append(f"path {self.path}")
        if self.window:
            parts.append(f"{self.window[0]:g}-{self.window[1]:g} s")
        return ", ".join(parts)


@dataclass(frozen=True)
class Metric:
    name: str
    #: value of one repetition for a selection; None: absent (not measured, an older run)
    per_rep: Callable[[Repetition, Select], float | None]
    #: how the per-repetition values combine over repetitions
    over_reps: Statistic
    #: what per_rep takes, in words (docs and evidence text)
    per_rep_text: str
    unit: str = ""
    #: a rate: measured at F x the lab's rates it is F x the paper's (lab/scale.py)
    scales: bool = False
    #: which selectors (SELECTORS) a finding may give with this metric
    accepts: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.accepts <= SELECTORS:
            raise ValueError(f"metric {self.name}: unknown selectors {sorted(self.accepts - SELECTORS)}")

    @property
    def statistic_text(self) -> str:
        return f"{self.over_reps} over reps"


METRICS: dict[str, Metric] = {}


def register(metric: Metric) -> Metric:
    """Add a metric to the registry (a family module calls it at import)."""
    if metric.name in METRICS and METRICS[metric.name] is not metric:
        raise ValueError(f"metric {metric.name} is registered twice")
    METRICS[metric.name] = metric
    return metric


def refusal(name: str, select: Select) -> str | None:
    """Why ``select`` cannot be used with metric ``name`` (None: it can): the loader's check."""
    m = METRICS.get(name)
    if m is None:
        return f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))}"
    given = {k for k in SELECTORS if getattr(select, k) is not None}
    extra = given - m.accepts
    if extra:
        takes = ", ".join(sorted(m.accepts)) or "no selector"
        return f"metric {name} does not take {', '.join(sorted(extra))} (it takes {takes})"
    return None


def metric_scales(name: str) -> bool:
    """Whether a metric is a rate: measured at F x the lab's rates (lab/scale.py), it is
    F x the paper's."""
    m = METRICS.get(name)
    return m is not None and m.scales


def paper_target(value: float, name: str, factor: float) -> float:
    """What this run's metric ``name``, measured at ``factor`` x the lab's rates, is
    compared with for a paper number ``value``."""
    return value * factor if metric_scales(name) and factor != 1 else value

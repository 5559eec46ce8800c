"""What every finding check is: the plug-in interface (CheckKind) and the schema parts the
kinds share (where a claim comes from, what a metric is taken of)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from ..metricdecl import Select
from ..record.model import CheckStat, Repetition
from ..values.types import Strict

if TYPE_CHECKING:
    from . import stats


def _window(v: tuple[float, float] | None) -> tuple[float, float] | None:
    if v is not None and not 0 <= v[0] < v[1]:
        raise ValueError(f"window [{v[0]:g}, {v[1]:g}] is not [start, end) with 0 <= start < end (seconds)")
    return v


#: a metric's name; the loader checks it against the registry (lab/metriccheck.py), which
#: the lab model does not import: the registry reads the result model
MetricName = str
#: [start, end) in seconds from the measured flow's start
Window = Annotated[tuple[float, float] | None, AfterValidator(_window)]


SOURCE_KINDS = ("paper", "derived", "convention")


class Source(Strict):
    """Where a check's value and tolerance come from: the ``paper`` (quoted, with its place),
    a ``derived`` bound (the derivation in one sentence) or the project's ``convention``
    (with its justification). Written in a lab file as one string, ``"paper: Fig 9, p. 11:
    'a 25% improvement'"``; parsed here once."""

    kind: Literal["paper", "derived", "convention"]
    text: str = Field(min_length=1)

    def __str__(self) -> str:
        return f"{self.kind}: {self.text}"


def _source(v: object) -> object:
    if isinstance(v, str):
        kind, sep, text = v.partition(":")
        if not sep or kind.strip() not in SOURCE_KINDS or not text.strip():
            raise ValueError(f"a source is \"KIND: text\" with KIND one of {', '.join(SOURCE_KINDS)}; got {v!r}")
        return {"kind": kind.strip(), "text": text.strip()}
    return v


SourceField = Annotated[Source, BeforeValidator(_source)]

#: the statistic a check compares over the scenario's repetitions (checks/stats.py):
#: ``median`` with a distribution-free interval; ``min``/``max`` are statements about
#: every/some repetition (no interval). None: median, or the metric's own extreme.
CheckStatistic = Literal["median", "min", "max"]


class Selected(Strict):
    """What a metric is taken of besides the scenario (mptcplab/metricdecl.Select);
    which of these a metric takes is its declaration's to say (lab/metriccheck.py)."""

    path: str | None = None
    #: a flow of experiment.yml (default: the measured flow)
    flow: str | None = None
    window: Window = None


@dataclass(frozen=True)
class MetricUse:
    """A metric a check reads, for the loader's check against the declarations: ``field`` is
    where a refusal points, after the check's own place ("" for the check itself); without
    ``selected`` only the name is asked."""

    field: str
    metric: str
    selected: Selected | None = None


@dataclass(frozen=True)
class FlowUse:
    """A flow a check names (``field`` after the check's place), checked against experiment.yml."""

    field: str
    flow: str | None


@dataclass(frozen=True)
class CounterUse:
    """A kernel MIB counter a check reads on a node (``field`` after the check's place): the
    preflight checks the name against this kernel's counters and the node against the lab."""

    field: str
    counter: str
    node: str


#: a metric's value per repetition (results/aggregate.per_rep_values): injected by the
#: findings so a check module imports nothing of metrics/ (the lab schema imports the checks)
PerRep = Callable[[Sequence[Repetition], str, Select], list[float | None]]


@dataclass(frozen=True)
class Judging:
    """What a check is judged on: the repetitions by scenario, the run's scale factor and how
    a metric's per-repetition values are read."""

    reps: dict[str, list[Repetition]]
    per_rep: PerRep
    factor: float = 1.0


class CheckKind(Strict):
    """One kind of check in a finding's ``expect``. A kind declares its own fields (their
    order is the validation's: no field here, so a subclass's come first) and answers what the
    lab needs of it and how it is judged."""

    if TYPE_CHECKING:  # every kind has these fields; declared in each, in the file's order
        scenario: str | None
        source: Source | None

    def scenarios(self, default: str | None) -> list[str]:
        """The scenarios it reads, ``default`` (the finding's) for its own when it names none."""
        own = self.scenario or default
        return [own] if own else []

    def metric_uses(self) -> list[MetricUse]:
        """The metrics to validate at load time, in the order their refusals are reported."""
        return []

    def flow_uses(self) -> list[FlowUse]:
        """The flows it names, in the order their absence is reported."""
        return []

    def counter_uses(self) -> list[CounterUse]:
        """The kernel counters it reads (checked by the preflight against this kernel)."""
        return []

    @abstractmethod
    def evaluate(self, default_scenario: str | None, on: Judging) -> tuple[CheckStat, str]:
        """Its verdict with the statistic (CheckStat) and the evidence in words."""

    @abstractmethod
    def claim(self, default_scenario: str | None) -> str:
        """The claim in words (docs/findings-audit.md)."""

    @abstractmethod
    def audit_statistic(self, default_scenario: str | None, extremes: dict[str, str]) -> str:
        """The statistic it is decided on, in words; ``extremes``: the metrics whose own
        aggregate is max, min or std (docs/findings-audit.md)."""

    def problems(self, default_scenario: str | None) -> list[str]:
        """What makes it unfit to count as a claim (besides a missing source)."""
        return []

    def source_text(self) -> str | None:
        return str(self.source) if self.source is not None else None

    def not_measurable(self, evidence: str, target: str | None = None) -> tuple[CheckStat, str]:
        return CheckStat(verdict="not measurable", target=target, source=self.source_text()), evidence


def interval_text(iv: stats.Interval, n: list[int]) -> str:
    ns = " x ".join(str(k) for k in n)
    return f"{iv.estimate:.4g}, interval [{iv.low:.4g}, {iv.high:.4g}] at {iv.confidence:.0%} (n = {ns}; {iv.method})"

"""published.yml: the paper's values, the expectations a run checks and the findings they
make up."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from ...kernelreq import PATCHES, parse_range
from .base import Strict


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

#: the statistic a check compares over the scenario's repetitions (results/stats.py):
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


class PublishedSource(Strict):
    id: str
    title: str
    authors: list[str]
    year: int
    document: str
    kernel: str
    testbed: str


class PublishedValue(Selected):
    id: str
    scenario: str | None
    metric: MetricName
    value: float
    unit: str
    where: str
    kernel: str | None = None
    note: str = ""


class Operand(Selected):
    """The right-hand side of a comparison between scenarios: another scenario's aggregate.
    metric, path, flow and window default to the expectation's own."""

    scenario: str
    metric: MetricName | None = None


class Expectation(Selected):
    """A predicate on this run's aggregates (mptcplab/results/findings.py evaluates it).

    Left side: ``metric`` (of ``path``, ``flow`` and ``window`` where the metric takes them)
    in ``scenario``, by default the finding's scenario.
    Without ``than`` it is compared with ``value``; with ``than`` (another scenario's
    aggregate) it is compared with it directly, or ``by`` difference (left - right) or ratio
    (left / right) compared with ``value``. ``tolerance`` widens ``==`` to |x - value| <=
    tolerance (and narrows ``!=`` accordingly); the other operators take no tolerance.
    """

    metric: MetricName
    scenario: str | None = None
    op: Literal["==", "!=", "<", "<=", ">", ">="]
    value: float | None = None
    than: Operand | None = None
    by: Literal["difference", "ratio"] | None = None
    tolerance: float = Field(default=0.0, ge=0)
    #: where ``value`` and ``tolerance`` (or, without a value, the direction) come from
    source: SourceField | None = None
    statistic: CheckStatistic | None = None

    @model_validator(mode="after")
    def _complete(self) -> Expectation:
        if self.than is None and self.value is None:
            raise ValueError("needs value (a constant) or than (another scenario)")
        if self.by is not None and (self.than is None or self.value is None):
            raise ValueError("by: difference|ratio needs both than and value")
        if self.than is not None and self.by is None and self.value is not None:
            raise ValueError("than without by compares two scenarios directly: value is not used (add by)")
        if self.tolerance and self.op not in ("==", "!="):
            raise ValueError("tolerance applies to == and != only")
        return self

    def operand(self) -> Operand | None:
        """``than`` with what it leaves out (metric, path, flow, window) taken from this
        expectation: the right-hand side as findings measure it and the loader checks it."""
        o = self.than
        if o is None:
            return None
        return o.model_copy(update={
            "metric": o.metric or self.metric,
            "path": o.path if o.path is not None else self.path,
            "flow": o.flow if o.flow is not None else self.flow,
            "window": o.window if o.window is not None else self.window})


class CaptureFact(Strict):
    """A fact of the capture, per repetition: a subflow on ``path`` whose ``field`` equals
    ``equals`` (or, for a list field, contains ``contains``). Holds when it is true in every
    repetition of ``scenario`` (default: the finding's)."""

    fact: Literal["established", "syn_answered", "initial", "rst", "kind", "icmp_mtus", "max_frame", "max_seg"]
    path: str | None = None
    scenario: str | None = None
    equals: bool | int | str | None = None
    contains: int | None = None
    source: SourceField | None = None

    @model_validator(mode="after")
    def _one_test(self) -> CaptureFact:
        if (self.equals is None) == (self.contains is None):
            raise ValueError("give exactly one of equals and contains")
        if (self.contains is not None) != (self.fact == "icmp_mtus"):
            raise ValueError("contains is for the list field icmp_mtus, equals for the others")
        return self


Check = Expectation | CaptureFact


class Requires(Strict):
    """What a finding's checks need of the kernel they run on (mptcplab/kernelreq.py): on
    another kernel the finding is not measurable here, rather than false."""

    #: one of the project's kernel patches (images/kernel/patches/, kernelreq.PATCHES)
    kernel_patch: str | None = None
    #: a release range: comma-separated comparisons, ">=6.1", ">=6.1,<6.7", "==6.1" (any 6.1.x)
    kernel: str | None = None

    @field_validator("kernel_patch")
    @classmethod
    def _known_patch(cls, v: str | None) -> str | None:
        if v is not None and v not in PATCHES:
            raise ValueError(f"no kernel patch {v!r} (known: {', '.join(PATCHES)})")
        return v

    @field_validator("kernel")
    @classmethod
    def _range(cls, v: str | None) -> str | None:
        if v is not None:
            parse_range(v)
        return v

    @model_validator(mode="after")
    def _something(self) -> Requires:
        if self.kernel_patch is None and self.kernel is None:
            raise ValueError("requires needs kernel_patch or kernel")
        return self


class Finding(Strict):
    id: str
    scenario: str | None
    statement: str
    where: str
    #: every check must hold (one, or a list read as "and")
    expect: Check | list[Check] | None = None
    #: why this finding cannot be measured by this lab (e.g. it needs the paper's patched kernel)
    not_measurable: str | None = None
    #: the kernel the checks need; elsewhere the finding is "not measurable here"
    requires: Requires | None = None
    #: what a kernel (or a run) would have to do for the checks to fail: the proof that the
    #: finding is not true by construction (docs/findings-audit.md lists it)
    fails_if: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Finding:
        if self.expect is not None and self.not_measurable is not None:
            raise ValueError("a finding has expect or not_measurable, not both")
        if self.requires is not None and self.expect is None:
            raise ValueError("requires goes with expect (the checks it is the condition of)")
        return self

    @property
    def expectations(self) -> list[Check]:
        return [] if self.expect is None else self.expect if isinstance(self.expect, list) else [self.expect]

    def located(self) -> list[tuple[str, Check]]:
        """Each check with its place in the finding, for error messages: ``expect``, or
        ``expect[j]`` in a list."""
        if isinstance(self.expect, list):
            return [(f"expect[{j}]", e) for j, e in enumerate(self.expect)]
        return [("expect", e) for e in self.expectations]

    def scenarios_referenced(self) -> list[str]:
        """Every scenario the finding's checks read (for the loader's reference check)."""
        out = [self.scenario] if self.scenario else []
        for e in self.expectations:
            than = e.than.scenario if isinstance(e, Expectation) and e.than else None
            out += [x for x in (e.scenario, than) if x]
        return list(dict.fromkeys(out))


class Published(Strict):
    source: PublishedSource
    values: list[PublishedValue] = []
    findings: list[Finding] = []
    #: checks that the run did what the lab configured (a buffer read back, a subflow formed):
    #: judged like findings but reported apart, never counted as the paper's claims
    setup_checks: list[Finding] = []

    def all_findings(self) -> list[Finding]:
        """The paper's findings, then the setup checks (for the checks both share)."""
        return [*self.findings, *self.setup_checks]

    def located_findings(self) -> list[tuple[str, Finding]]:
        """Each finding and setup check with its place in the file, for error messages."""
        return ([(f"findings[{i}]", f) for i, f in enumerate(self.findings)]
                + [(f"setup_checks[{i}]", f) for i, f in enumerate(self.setup_checks)])

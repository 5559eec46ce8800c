"""summary.json: the repetitions, each scenario's aggregates, the published-vs-this-run rows
and the findings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ...values.types import Lenient
from .base import FORMAT_VERSION, Warning
from .repetition import Repetition


class PathAggregate(Lenient):
    """Per scenario and path, over the repetitions; definitions in mptcplab/results/aggregate.py."""

    reps: int
    share_mean_over_reps: float | None = None
    share_std_over_reps: float | None = None
    median_seg_median_over_reps: float | None = None
    max_seg_max_over_reps: float | None = None
    icmp_frag_needed_mean_over_reps: float | None = None
    icmp_frag_needed_total: int | None = None
    icmp_frag_needed_per_rep: list[int | None] = Field(default_factory=list)


class ScenarioAggregate(Lenient):
    scenario: str
    n: int
    goodput_mean: float | None = None
    goodput_std: float | None = None  # None with one repetition: there is no spread
    goodput_min: float | None = None
    goodput_max: float | None = None
    mptcp_requested: bool = False
    verified_reps: int = 0
    fallback_reps: int = 0
    warning_reps: int = 0
    #: Jain's index across measured flows, mean over reps (None: one measured flow)
    jain_mean: float | None = None
    jain_std: float | None = None
    #: each measured flow's share, mean over reps
    flow_share_mean: dict[str, float | None] = Field(default_factory=dict)
    paths: dict[str, PathAggregate] = Field(default_factory=dict)


class PublishedSource(Lenient):
    id: str | None = None
    title: str | None = None
    kernel: str | None = None


class PublishedRow(Lenient):
    """One number of the paper next to the same aggregate on this run."""

    id: str
    scenario: str | None = None
    metric: str
    path: str | None = None
    flow: str | None = None
    #: [start, end) seconds from the measured flow's start (mptcplab/metricdecl.Select)
    window: list[float] | None = None
    paper_value: float | None = None
    unit: str | None = None
    paper_kernel: str | None = None
    where: str | None = None
    note: str | None = None
    #: this run's value of the metric's one aggregate (aggregate.METRICS), None when not run
    this_value: float | None = None
    #: which aggregate, e.g. "mean over reps", "median over reps"
    this_statistic: str | None = None
    #: standard deviation over reps, only for a mean with more than one repetition
    this_std: float | None = None
    this_n: int = 0
    this_kernel: str | None = None
    #: what this run's value compares with when the run is scaled and the metric is a rate:
    #: paper_value x the scale factor (lab/scale.py); None when the run is not scaled
    paper_value_scaled: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _version0(cls, data: Any) -> Any:
        # format 0 named the value this_mean and always meant the mean over reps
        if isinstance(data, dict) and "this_mean" in data and "this_value" not in data:
            data = {**data, "this_value": data["this_mean"],
                    "this_statistic": "mean over reps" if data.get("this_mean") is not None else None}
        return data


#: a finding's verdict (checks/stats.py): decided from an interval over the repetitions
Verdict = Literal["holds", "does not hold", "inconclusive", "not measurable"]
VERDICTS: tuple[Verdict, ...] = ("holds", "does not hold", "inconclusive", "not measurable")


class CheckStat(Lenient):
    """One check of a finding as its verdict was reached: the statistic, its interval over
    the repetitions, the claim it was compared with and where that claim's value comes from."""

    verdict: Verdict
    #: what was measured, e.g. "median of goodput_mbps in tcp-a", "ratio mptcp / tcp"
    statistic: str | None = None
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    #: the exact coverage of [low, high]; below the required level the verdict is inconclusive
    confidence: float | None = None
    method: str | None = None
    #: repetitions of each scenario compared (one number, or two for a comparison)
    n: list[int] = Field(default_factory=list)
    #: the claim, e.g. "< 1", "== 9 ± 0.5"
    target: str | None = None
    #: where the claim's value and tolerance come from ("paper: ...", "derived: ...", ...)
    source: str | None = None
    #: whether the point estimate alone is on the claim's side (what inconclusive leans to)
    leans: bool | None = None
    #: why the check is left out of its finding's verdict: what it reads does not exist on this
    #: kernel (a counter an older kernel lacks; the kernel's own selftests print "[skip]")
    skipped: str | None = None
    #: the check in a few words with what it read, for tables ("MPJoinSynRx@server 1→0")
    brief: str | None = None


class FindingRow(Lenient):
    id: str
    scenario: str | None = None
    statement: str | None = None
    where: str | None = None
    verdict: Verdict = "not measurable"
    evidence: str = ""
    checks: list[CheckStat] = Field(default_factory=list)
    #: why this kernel cannot judge it (its ``requires``; empty: it can): such a finding's
    #: scenario is not run on this kernel when it is its only one (run/kernelgate.py)
    kernel_lacks: str = ""

    @model_validator(mode="before")
    @classmethod
    def _before_intervals(cls, data: Any) -> Any:
        # summaries of format 1 and before carried holds_here (True/False/None) and within_spread
        if isinstance(data, dict) and "holds_here" in data and "verdict" not in data:
            h = data["holds_here"]
            data = {k: v for k, v in data.items() if k not in ("holds_here", "within_spread")}
            data["verdict"] = "holds" if h is True else "does not hold" if h is False else "not measurable"
        return data

    @field_validator("evidence", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v

    @property
    def holds(self) -> bool | None:
        """True holds, False does not hold, None undecided (inconclusive or not measurable)."""
        return True if self.verdict == "holds" else False if self.verdict == "does not hold" else None

    @property
    def skipped(self) -> list[CheckStat]:
        """Its checks left out of the verdict: not on this kernel (CheckStat.skipped)."""
        return [c for c in self.checks if c.skipped]

    @property
    def shown(self) -> str:
        """The verdict as tables show it; an inconclusive one says which way it leans; skipped
        checks are counted ("holds (3 skipped: not on this kernel)"), and a finding whose every
        check was skipped is "n/a: not on this kernel"."""
        skipped = len(self.skipped)
        if skipped and skipped == len(self.checks):
            return "n/a: not on this kernel"
        own = self._shown()
        return own + (f" ({skipped} skipped: not on this kernel)" if skipped else "")

    def _shown(self) -> str:
        if self.verdict != "inconclusive":
            return self.verdict
        leans = {c.leans for c in self.checks if c.verdict == "inconclusive"}
        if leans == {True}:
            return "inconclusive (leans holds)"
        if leans == {False}:
            return "inconclusive (leans does not hold)"
        return "inconclusive"


class KernelPatch(Lenient):
    """One of the project's kernel patches (mptcplab/kernelreq.py PATCHES) and whether the
    run's kernel carries it, with what says so (manifest.json ``kernel_patches``)."""

    name: str
    present: bool
    evidence: str = ""


class DroppedRepetition(Lenient):
    """A repetition a campaign's merged run leaves out (campaign/repvalid.py): invalid on its
    own (``reasons``: what its round's summary held against it), or valid but beyond the
    planned n (``surplus``: a re-measured round gave the scenario more than it needed)."""

    scenario: str
    #: its number in the merged run: its round
    rep: int
    reasons: list[str] = Field(default_factory=list)
    surplus: bool = False


class Summary(Lenient):
    """summary.json: the run's repetitions, their aggregates and the paper comparison."""

    format_version: int = FORMAT_VERSION
    #: the format_version the file carried (0: it had none), set by read.parse_summary;
    #: None for a summary made in memory. Never written: ``format_version`` says it
    file_format_version: int | None = Field(default=None, exclude=True)
    lab: str
    run_id: str
    kernel: str | None = None
    #: the project's kernel patches this kernel carries (manifest.json kernel_patches);
    #: None: not recorded (a run before the field), so findings that require one are unknown
    kernel_patches: list[str] | None = None
    complete: bool = False
    quick: bool = False
    run_kind: str | None = None
    run_kind_reason: str | None = None
    valid: bool | None = None
    invalid_reasons: list[str] = Field(default_factory=list)
    timing_notes: list[str] = Field(default_factory=list)
    repetitions: int | None = None
    published_source: PublishedSource | None = None
    scenarios: list[Repetition] = Field(default_factory=list)
    aggregates: list[ScenarioAggregate] = Field(default_factory=list)
    published: list[PublishedRow] = Field(default_factory=list)
    findings: list[FindingRow] = Field(default_factory=list)
    #: published.yml's setup checks: what the run did of the lab's configuration, judged
    #: like findings and never counted with them
    setup_checks: list[FindingRow] = Field(default_factory=list)
    #: the factor every link rate was scaled by (lab/scale.py): goodput is measured at it
    scale: float = 1.0
    #: run-level coded warnings known before measuring (e.g. emulation-beyond-host)
    warnings: list[Warning] = Field(default_factory=list)
    #: a campaign's merged run: the repetitions left out of ``scenarios`` (and so of the
    #: aggregates, published table and findings), each with why; empty for a single run and
    #: in summaries written before the field
    dropped: list[DroppedRepetition] = Field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        # python mode: a runner extra of an unexpected type is left to store.write_json (default=str)
        return self.model_dump()

    def scenario_order(self) -> list[str]:
        """Scenario names in the order the run lists them (the lab's order)."""
        seen = dict.fromkeys(r.name for r in self.scenarios)
        seen.update(dict.fromkeys(a.scenario for a in self.aggregates if a.scenario not in seen))
        return list(seen)

    def reps_of(self, scenario: str) -> list[Repetition]:
        return [r for r in self.scenarios if r.name == scenario]

    def aggregate(self, scenario: str) -> ScenarioAggregate | None:
        return next((a for a in self.aggregates if a.scenario == scenario), None)

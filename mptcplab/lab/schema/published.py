"""published.yml: the paper's values, the expectations a run checks and the findings they
make up."""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator, model_validator

from ...checks.base import SOURCE_KINDS, CheckStatistic, MetricName, Selected, Source, SourceField, Window
from ...checks.fact import CaptureFact
from ...checks.metric import Expectation, Operand
from ...checks.registry import AnyCheck
from ...kernelreq import PATCHES, parse_range, parse_symbol
from ...values.types import Strict

#: the kinds' classes (CaptureFact, Expectation, Operand) are only re-exported, for the schema
#: package's face (lab/schema/__init__.py); this module uses the registry's AnyCheck
__all__ = ["SOURCE_KINDS", "CaptureFact", "Check", "CheckStatistic", "Expectation", "Finding", "MetricName",
           "Operand", "Published", "PublishedSource", "PublishedValue", "Requires", "Selected", "Source",
           "SourceField", "Window"]


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


#: one check of a finding's ``expect``: any kind the registry lists (mptcplab/checks/)
Check = AnyCheck


class Requires(Strict):
    """What a finding's checks need of the kernel they run on (mptcplab/kernelreq.py): on
    another kernel the finding is not measurable here, rather than false; and a scenario
    whose every finding this kernel cannot judge, and says so, is not run (run/kernelgate.py), as
    mptcp_join.sh skips a case its ``continue_if`` guard refuses (``otherwise: skip``)."""

    #: one of the project's kernel patches (images/kernel/patches/, kernelreq.PATCHES)
    kernel_patch: str | None = None
    #: a release range: comma-separated comparisons, ">=6.1", ">=6.1,<6.7", "==6.1" (any 6.1.x)
    kernel: str | None = None
    #: kernel symbols it must have ("name", or "T name" for a type letter): the script's
    #: ``continue_if mptcp_lib_kallsyms_has "name$"``
    kallsyms: list[str] = []
    #: kernel symbols it must not have: ``continue_if mptcp_lib_kallsyms_doesnt_have "T name$"``
    kallsyms_absent: list[str] = []
    #: what a kernel without it does with the finding's scenario: ``measure`` it (the finding
    #: is not measurable there, the numbers are kept: a stock kernel beside the patched one), or
    #: ``skip`` it when every finding reading it says so (mptcp_join.sh's continue_if)
    otherwise: Literal["measure", "skip"] = "measure"

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

    @field_validator("kallsyms", "kallsyms_absent")
    @classmethod
    def _symbols(cls, v: list[str]) -> list[str]:
        for spec in v:
            parse_symbol(spec)
        return v

    @model_validator(mode="after")
    def _something(self) -> Requires:
        if self.kernel_patch is None and self.kernel is None and not self.kallsyms and not self.kallsyms_absent:
            raise ValueError("requires needs kernel_patch, kernel, kallsyms or kallsyms_absent")
        return self

    def text(self) -> str:
        """"mptcp-pmtu-probing", ">=6.3, kernel symbol X", "no kernel symbol T Y": for people."""
        return ", ".join([*filter(None, (self.kernel_patch, self.kernel)),
                          *(f"kernel symbol {s}" for s in self.kallsyms),
                          *(f"no kernel symbol {s}" for s in self.kallsyms_absent)])

    def symbols(self) -> set[str]:
        """The symbol names it reads (what a run records of its kernel)."""
        return {parse_symbol(s)[1] for s in (*self.kallsyms, *self.kallsyms_absent)}


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
            out += e.scenarios(None)
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

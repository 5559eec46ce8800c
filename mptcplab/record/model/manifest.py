"""manifest.json: what ran (kernel, sysctls read back, tools, git, lab hashes) and the link
calibration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from ...values.types import Lenient
from .base import ResultsFormatError, validation_where
from .summary import KernelPatch


class Git(Lenient):
    commit: str | None = None
    dirty: bool | None = None


class CalibrationCheck(Lenient):
    """One measured quantity of a link against its configured value (linkcheck.Check)."""

    quantity: str
    # int | float: a count (a trace replay's windows, bytes) stays an int, as the check wrote it
    configured: int | float | None = None
    measured: int | float | None = None
    tolerance: str | None = None
    ok: bool
    #: the measured direction ("a:if->b:if"); "both" for a round trip
    direction: str | None = None


class TraceReplay(Lenient):
    """One trace direction's replay check (steps/links.py, tracecheck.ReplayCheck): which
    check, and whether this repetition ran it (once per run per distinct configuration)."""

    direction: str
    check: str
    measured_in_this_rep: bool


class LinkCalibration(Lenient):
    """One emulated link's checks in one repetition (manifest.json ``calibration``)."""

    link: str
    configured: dict[str, Any] = Field(default_factory=dict)
    configured_reverse: dict[str, Any] | None = None
    checks: list[CalibrationCheck] = Field(default_factory=list)
    ok: bool
    rate_measured_in_this_rep: bool | None = None
    #: a link with a trace: its directions' replay checks (absent from the file otherwise)
    trace_replays: list[TraceReplay] | None = Field(default=None, exclude_if=lambda v: v is None)


_LINK_CALIBRATIONS = TypeAdapter(list[LinkCalibration])


class Manifest(Lenient):
    """manifest.json: what makes the run self-describing. Written by labrun at the start and
    the end of a run; host facts (record/manifest.py host_facts) are at the top level."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    lab: str | None = None
    run_id: str | None = None
    complete: bool = False
    incomplete_reason: str | None = None
    quick: bool | None = None
    repetitions: int | None = None
    #: ``--late-retries``: re-measures allowed for a repetition whose delay line was late
    late_retries: int | None = None
    command_line: list[str] | None = None
    started: str | None = None
    finished: str | None = None
    wall_seconds: float | None = None
    traffic_seconds: float | None = None
    kernel: str | None = None
    kernel_version: str | None = None
    #: each known project patch: carried or not, and the evidence (None: a run before the field)
    kernel_patches: list[KernelPatch] | None = None
    #: the kernel symbols the lab's findings require (published.yml ``requires.kallsyms``):
    #: name -> type letters, None when absent (kernelreq.kallsyms; None: a run before the field)
    kernel_symbols: dict[str, str | None] | None = None
    #: the selected scenarios the run left because this kernel cannot judge them, with why
    #: (run/kernelgate.py)
    not_on_this_kernel: dict[str, str] = {}
    machine: str | None = None
    hostname: str | None = None
    cpu_count: int | None = None
    #: /proc/cpuinfo's model name (None: a run before the field, or not said)
    cpu_model: str | None = None
    os_release: str | None = None
    platform: dict[str, Any] | None = None
    backend: str | None = None
    link_emulation: str | None = None
    tools: dict[str, str | None] = Field(default_factory=dict)
    git: Git = Field(default_factory=Git)
    lab_files_sha256: dict[str, str] = Field(default_factory=dict)
    scenarios: list[str] = Field(default_factory=list)
    #: {scenario: {node: {sysctl: value}}} as read back from each node
    sysctls: dict[str, Any] = Field(default_factory=dict)
    #: {scenario: {"rep<N>": [{"link", "configured", "checks": [...], "ok"}]}}
    calibration: dict[str, Any] = Field(default_factory=dict)
    #: {"factor", "source", "scaled", "unscaled_fields"} (lab/scale.py manifest_record)
    scale: dict[str, Any] | None = None
    #: the reachability estimate made before measuring (preflight.reachability)
    reachability: dict[str, Any] | None = None
    #: the lab's named subset the run applied: {"name", "scenarios", "repetitions"}; None: not one
    subset: dict[str, Any] | None = None
    #: the wall-time estimate made before measuring (walltime.Estimate.record)
    estimate: dict[str, Any] | None = None
    #: False when the run had no manifest.json (the report says so)
    present: bool = Field(default=True, exclude=True)

    def calibration_of(self, scenario: str, rep: int) -> list[LinkCalibration] | None:
        """The link checks of one repetition; None when the manifest has none for it (not
        calibrated, or a run before it). A bad entry: ResultsFormatError naming its field."""
        entries = (self.calibration.get(scenario) or {}).get(f"rep{rep}")
        try:
            return None if entries is None else _LINK_CALIBRATIONS.validate_python(entries)
        except ValidationError as e:
            err = e.errors()[0]
            where = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in err["loc"])
            raise ResultsFormatError("manifest.json", f"calibration.{scenario}.rep{rep}{where}",
                                     f"not a link check: {err['msg']}") from None

    def sysctls_of(self, scenario: str) -> dict[str, dict[str, str]]:
        """{node: {sysctl: value}} as read back in the scenario's first repetition ({}: none)."""
        return {str(n): {str(k): str(v) for k, v in (vals or {}).items()}
                for n, vals in (self.sysctls.get(scenario) or {}).items()}


def load_manifest(run_dir: str | Path) -> Manifest:
    """manifest.json; an empty Manifest with ``present`` False when the run has none."""
    path = Path(run_dir) / "manifest.json"
    if not path.is_file():
        return Manifest(present=False)
    try:
        return Manifest.model_validate(json.loads(path.read_text()))
    except json.JSONDecodeError as e:
        raise ResultsFormatError(str(path), "", f"not JSON: {e}") from None
    except ValidationError as e:
        raise ResultsFormatError(str(path), validation_where(e),
                                 f"not a readable manifest: {e.errors()[0]['msg']}") from None

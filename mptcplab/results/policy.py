"""Warning policy: every problem a run shows, as coded Warnings, most serious first.

The runner's own warnings come first, verbatim (they carry the reason). The checks here only
add what the summary shows but no warning of the run explains, so a silent failure cannot
pass unnoticed. "Explains" is decided on codes (a repetition warning with code
``mptcp-fallback`` explains a fallback); a warning without a code (``unclassified``, plain
text from a runner that predates codes) is matched on its wording, as before codes existed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..platform import FUNCTIONAL_CHECK
from ..record.model import UNCLASSIFIED, Manifest, Repetition, Summary, Warning
from ..warncodes import LINK_OUT_OF_TOLERANCE
from .read import as_summary

FUNCTIONAL = "FUNCTIONAL CHECK, NOT A MEASUREMENT"

# Codes this module gives (docs/results-format.md lists them with the runner's own).
FUNCTIONAL_CODE = "functional-check"
RUN_INCOMPLETE = "run-incomplete"
RUN_INVALID = "run-invalid"
TIMING_NOTE = "timing-note"
MPTCP_FALLBACK = "mptcp-fallback"
MPTCP_NOT_VERIFIED = "mptcp-not-verified"
TRANSFER_FAILED = "transfer-failed"
SUBFLOW_NEVER_FORMED = "subflow-never-formed"
SUBFLOW_IDLE = "subflow-idle"
NO_SUBFLOW = "no-subflow"
CALIBRATION_FAILED = "calibration-failed"
MISSING_FILE = "missing-file"
FIGURE_NOT_DRAWN = "figure-not-drawn"
#: codes that say what happened on one path (with Warning.path): they explain that path
PATH_CODES = {SUBFLOW_NEVER_FORMED, SUBFLOW_IDLE, NO_SUBFLOW, "weak-subflow"}


def functional_check_reason(summary: Summary) -> str | None:
    """Why the run is a functional check (software-emulated CPU); None for a measurement."""
    if summary.run_kind != FUNCTIONAL_CHECK:
        return None
    return summary.run_kind_reason or "software-emulated CPU"


class _Explained:
    """What a repetition's own warnings already explain."""

    def __init__(self, rep: Repetition) -> None:
        self.codes = rep.warning_codes()
        self.paths = {w.path for w in rep.warnings if w.code in PATH_CODES}
        self.prose = " ".join(w.message for w in rep.warnings if w.code == UNCLASSIFIED).lower()

    def fallback(self) -> bool:
        return MPTCP_FALLBACK in self.codes or "fallback" in self.prose or "fell back" in self.prose

    def path(self, path: str, src: str | None = None) -> bool:
        return (path in self.paths or f"path {path.lower()}" in self.prose
                or bool(src and src in self.prose))

    def transfer_failed(self) -> bool:
        """A failed transfer already says why nothing is verified."""
        return TRANSFER_FAILED in self.codes or "transfer failed" in self.prose

    def calibration(self) -> bool:
        return bool({CALIBRATION_FAILED, LINK_OUT_OF_TOLERANCE} & self.codes) or "tolerance" in self.prose


def _rep_warnings(r: Repetition) -> list[Warning]:
    where = f"`{r.name}` rep {r.rep}"
    out = [Warning(code=w.code, path=w.path, message=f"{where}: {w.message}") for w in r.warnings]
    ex = _Explained(r)
    mp = r.mptcp
    if mp.requested:
        if mp.fallback or mp.negotiated is False:
            if not ex.fallback():
                out.append(Warning(code=MPTCP_FALLBACK, message=f"{where}: MPTCP FALLBACK: the connection is "
                                   "plain TCP (the run gives no reason)."))
        elif not mp.verified and not ex.transfer_failed():
            expected = ", ".join(mp.expected_paths) or "?"
            out.append(Warning(code=MPTCP_NOT_VERIFIED, message=(
                f"{where}: MPTCP NOT VERIFIED: MPTCP was negotiated, but not every expected path ({expected}) "
                "had an established subflow that contributed to the transfer (docs/architecture.md, "
                "Verification of MPTCP); this is not a multipath result.")))
        for sf in r.subflows:
            path = sf.path or "?"
            if ex.path(path, sf.src):
                continue  # the runner already said what happened on this path, with why
            if sf.established is False:
                out.append(Warning(code=SUBFLOW_NEVER_FORMED, path=path, message=(
                    f"{where}: SUBFLOW NEVER FORMED on path {path} ({sf.ends}) (the run gives no reason).")))
            elif not sf.bytes:
                out.append(Warning(code=SUBFLOW_IDLE, path=path, message=(
                    f"{where}: SUBFLOW IDLE on path {path} ({sf.ends}): established but carried no data "
                    "(the run gives no reason).")))
        seen = {str(sf.path) for sf in r.subflows}
        for path in mp.expected_paths:
            if path not in seen and not ex.path(path):
                out.append(Warning(code=NO_SUBFLOW, path=path, message=(
                    f"{where}: NO SUBFLOW AT ALL on path {path}: not even a SYN was captured there "
                    "(the run gives no reason).")))
    if r.calibration_ok is False and not ex.calibration():
        out.append(Warning(code=CALIBRATION_FAILED, message=(
            f"{where}: LINK CALIBRATION FAILED: the emulated links did not meet their targets; "
            "see the calibration table.")))
    return out


def collect_warnings(
    summary: Summary | dict[str, Any],
    missing_files: Sequence[str] = (),
    figure_errors: Sequence[str] = (),
    manifest: Manifest | dict[str, Any] | None = None,
) -> list[Warning]:
    """Every problem the run shows, one Warning each, most serious first."""
    s = as_summary(summary)
    m = manifest if isinstance(manifest, Manifest) else Manifest.model_validate(manifest or {})
    out: list[Warning] = []
    functional = functional_check_reason(s)
    if functional:
        out.append(Warning(code=FUNCTIONAL_CODE, message=f"{FUNCTIONAL}: {functional}."))
    if not s.complete:
        why = m.incomplete_reason
        out.append(Warning(code=RUN_INCOMPLETE, message=(
            "RUN INCOMPLETE: this run did not finish every scenario" + (f" ({why})" if why else "")
            + "; it is not `latest` and its numbers are partial.")))
    if s.valid is False:
        for reason in s.invalid_reasons or ["no reason recorded"]:
            out.append(Warning(code=RUN_INVALID, message=f"RUN INVALID: {reason}"))
    # known before measuring (preflight): e.g. links beyond what this machine carries
    out += [Warning(code=w.code, path=w.path, message=w.message) for w in s.warnings]
    for note in s.timing_notes:
        out.append(Warning(code=TIMING_NOTE, message=f"timing (not held against a functional check): {note}"))
    for r in s.scenarios:
        out += _rep_warnings(r)
    out += [Warning(code=MISSING_FILE, message=f"MISSING FILE: {f}") for f in missing_files]
    out += [Warning(code=FIGURE_NOT_DRAWN, message=f"FIGURE NOT DRAWN: {e}") for e in figure_errors]
    return out

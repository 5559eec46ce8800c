"""After a repetition (in the analysis worker): each enabled probe's files -> its
table (``probes/<probe>.csv``) and what the probe's ``summarise`` adds to the repetition
record (``probes`` in rep.json) and its warnings. Dispatch is by the registry: this module
names no probe."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import Joined, OtherFlow, probes_dir
from .registry import enabled

if TYPE_CHECKING:
    from ..analysis.model import FlowAnalysis
    from ..lab.schema import ExperimentBody


def table_file(name: str) -> str:
    return f"{name}.csv"


def analyze_probes(rep_dir: Path, body: ExperimentBody, fa: FlowAnalysis, upload: bool,
                   backup_paths: tuple[str, ...] = (), flow: str = "",
                   others: Sequence[OtherFlow] = ()) -> tuple[dict[str, Any], list[str]]:
    """Writes the probes' tables; returns (summary for the record, warnings). ``flow`` names
    the measured flow ``fa`` is of; ``others``' senders join the cwnd series too."""
    classes = enabled(body)
    d = probes_dir(rep_dir)
    summary: dict[str, Any] = {}
    warnings: list[str] = []
    if not classes or not d.is_dir():
        return summary, warnings
    joined = Joined(rep_dir, body, fa, upload, backup_paths, flow, others)
    for cls in classes:
        df = cls.analyze(rep_dir)
        df.to_csv(d / (cls.table or table_file(cls.name)), index=False)
        part, warned = cls.summarise(df, joined)
        if part is not None:
            summary[cls.name] = part
        warnings += warned
    return summary, warnings

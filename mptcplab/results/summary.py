"""summary.json (the contract notebooks and tools read) and summary.csv.

Built from the per-repetition records through the result model (record/model/): the aggregates,
the published-vs-this-run table and the findings check all take each metric's one
definition from aggregate.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..lab.schema import Published
from ..metricdecl import metric_scales, paper_target
from ..platform import MEASUREMENT, run_kind
from ..record.model import FindingRow, PublishedRow, PublishedSource, Repetition, Summary, Warning
from . import findings
from .aggregate import METRICS, aggregates, scenario_value

RecordLike = Repetition | dict[str, Any]


def repetitions(records: Iterable[RecordLike], run_dir: Path | None = None) -> list[Repetition]:
    """The runner's record dicts (runner.analyze) as Repetition models; ``run_dir``: where
    their files are (Repetition.files_dir), for metrics that read them."""
    reps = [r if isinstance(r, Repetition) else Repetition.model_validate(r) for r in records]
    return [r.at_run_dir(run_dir) for r in reps] if run_dir is not None else reps


def published_table(pub: Published | None, records: Sequence[RecordLike], kernel: str | None,
                    scale: float = 1.0) -> list[PublishedRow]:
    if pub is None:
        return []
    reps = repetitions(records)
    rows = []
    for v in pub.values:
        mine = [r for r in reps if r.name == v.scenario]
        val = scenario_value(mine, v.metric, v.path, flow=v.flow, window=v.window) if mine else None
        rows.append(PublishedRow(
            id=v.id, scenario=v.scenario, metric=v.metric, path=v.path, flow=v.flow,
            window=list(v.window) if v.window else None, paper_value=v.value, unit=v.unit,
            paper_kernel=v.kernel or pub.source.kernel, where=v.where, note=v.note,
            this_value=val.value if val else None, this_statistic=val.statistic if val else None,
            this_std=val.std if val else None, this_n=len(mine), this_kernel=kernel if mine else None,
            paper_value_scaled=paper_target(v.value, v.metric, scale) if scale != 1 and metric_scales(v.metric)
            else None))
    return rows


def findings_table(pub: Published | None, records: Sequence[RecordLike], scale: float = 1.0,
                   kernel: findings.KernelFacts | None = None) -> list[FindingRow]:
    """The paper's findings checked on this run (findings.py), absolute rates against the
    paper's x ``scale``; a finding that requires another kernel is not measurable here."""
    return findings.findings_table(pub, repetitions(records), scale, kernel)


def build_summary_model(lab: str, run_id: str, kernel: str, complete: bool, quick: bool,
                        records: Sequence[RecordLike], pub: Published | None, invalid_reasons: list[str],
                        cpu: dict[str, Any], timing_reasons: Iterable[str] = (),
                        repetitions_per_scenario: int | None = None, scale: float = 1.0,
                        run_warnings: Sequence[dict[str, Any] | Warning] = (),
                        run_dir: Path | None = None, kernel_patches: Sequence[str] | None = None,
                        kernel_symbols: Mapping[str, str | None] | None = None) -> Summary:
    """cpu: what platform.cpu_emulation() found; on a software-emulated CPU the run is a functional check.
    kernel_patches: the project's patches the kernel carries (None: not known); kernel_symbols:
    the symbols the findings require, as the run read them (None: not recorded).

    invalid_reasons make any run invalid (the evidence is wrong); timing_reasons (links out of
    tolerance, CPU-bound, delay line) make a measurement invalid, while a functional check,
    which claims no timing, lists them as timing_notes.
    """
    kind, why = run_kind(cpu)
    timing = list(timing_reasons)
    if kind == MEASUREMENT:
        invalid_reasons, timing = [*timing, *invalid_reasons], []
    reps = repetitions(records, run_dir)
    patches = None if kernel_patches is None else list(kernel_patches)
    facts = findings.KernelFacts(kernel, patches, kernel_symbols)
    return Summary(
        lab=lab, run_id=run_id, kernel=kernel, kernel_patches=patches, complete=complete, quick=quick,
        run_kind=kind, run_kind_reason=why,
        valid=complete and not invalid_reasons, invalid_reasons=invalid_reasons, timing_notes=timing,
        repetitions=repetitions_per_scenario,
        published_source=(PublishedSource(id=pub.source.id, title=pub.source.title, kernel=pub.source.kernel)
                          if pub else None),
        scenarios=reps, aggregates=aggregates(reps), published=published_table(pub, reps, kernel, scale),
        findings=findings_table(pub, reps, scale, facts),
        setup_checks=findings.findings_table(pub, reps, scale, facts, setup=True),
        scale=scale,
        warnings=[w if isinstance(w, Warning) else Warning.model_validate(w) for w in run_warnings])


def build_summary(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """summary.json's content (build_summary_model, dumped): what labrun writes."""
    return build_summary_model(*args, **kwargs).to_json()


SUBFLOW_COLUMNS = ("path", "src", "sport", "dst", "dport", "initial", "established", "bytes", "share",
                   "median_seg", "max_seg", "icmp_frag_needed", "retransmissions")


def summary_rows(records: Sequence[RecordLike]) -> pd.DataFrame:
    """summary.csv: one row per scenario x repetition x subflow (a row with no subflow when none was seen)."""
    rows = []
    for r in repetitions(records):
        base = {"scenario": r.name, "rep": r.rep, "goodput_mbps": r.goodput_mbps,
                "mptcp_requested": r.mptcp.requested, "mptcp_verified": r.mptcp.verified,
                "calibration_ok": r.calibration_ok, "warnings": " | ".join(w.message for w in r.warnings),
                "warning_codes": " | ".join(w.code for w in r.warnings)}
        subs: list[dict[str, Any]] = [s.model_dump() for s in r.subflows] or [{}]
        for s in subs:
            rows.append({**base, **{k: s.get(k) for k in SUBFLOW_COLUMNS}})
    df = pd.DataFrame(rows)
    return df.replace({math.nan: None}) if not df.empty else df


__all__ = ["METRICS", "build_summary", "build_summary_model", "findings_table", "published_table",
           "repetitions", "summary_rows"]

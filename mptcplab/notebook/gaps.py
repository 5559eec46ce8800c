"""What a run lacks that a notebook wants to show: a run from an older engine (format 0, no
findings, no run kind), from another kernel or backend (no segment sizes, no ICMP capture),
or one whose per-repetition files are gone. Each gap is one sentence saying what is missing
and what the notebook does instead, so that the notebook says it in a cell rather than
raising half way through."""

from __future__ import annotations

import pandas as pd

from ..record.model import Manifest, Summary


def run_gaps(summary: Summary, manifest: Manifest | None = None, timeseries: pd.DataFrame | None = None,
             icmp: pd.DataFrame | None = None) -> list[str]:
    """Missing result fields and files of a run, one sentence each; empty when nothing is missing."""
    gaps: list[str] = []
    if summary.kernel is None:
        gaps.append("`kernel` is not recorded: tables name the kernel as a dash.")
    if summary.run_kind is None:
        gaps.append("`run_kind` is not recorded (a run older than the functional-check marking): "
                    "whether its CPU was emulated in software cannot be told from the summary.")
    if manifest is not None and not manifest.present:
        gaps.append("`manifest.json` is absent: link emulation, tool versions and calibration are not shown.")
    if not summary.scenarios:
        gaps.append("`scenarios` is empty: the run recorded no repetition; tables and figures are empty.")
    if not summary.aggregates:
        gaps.append("`aggregates` is empty: per-scenario goodput and per-path statistics are not shown.")
    if summary.published_source is None and not summary.published:
        gaps.append("`published` is empty: the paper's numbers are not in this run's summary.")
    if not summary.findings:
        gaps.append("`findings` is empty (a run older than the findings check, or a lab without findings): "
                    "the verdict table is not shown.")
    seg_reps = [r for r in summary.scenarios if r.subflows]
    if seg_reps and all(sf.median_seg is None for r in seg_reps for sf in r.subflows):
        gaps.append("no subflow has `median_seg` (no capture analyzed on this kernel or backend): "
                    "segment sizes are not shown.")
    if summary.scenarios and not any(r.subflows for r in summary.scenarios):
        gaps.append("no repetition has `subflows`: per-path shares and segment sizes are not shown.")
    for what, frame in (("timeseries.csv", timeseries), ("icmp.csv", icmp)):
        if frame is None:
            continue
        absent = list(frame.attrs.get("missing", []))
        if absent and len(absent) == len(summary.scenarios):
            gaps.append(f"no repetition has `{what}`: the figures drawn from it are empty.")
        elif absent:
            gaps.append(f"`{what}` is absent in {len(absent)} repetition(s) ({', '.join(absent[:3])}"
                        f"{', ...' if len(absent) > 3 else ''}): those are missing from the figures.")
    return gaps

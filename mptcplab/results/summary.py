"""summary.json (the contract notebooks and tools read) and summary.csv.

Aggregates over repetitions, the published-vs-this-run table and the findings
check are computed here from the per-repetition records, nothing else.
"""

from __future__ import annotations

import math
import operator
import statistics
from typing import Any, Iterable

import pandas as pd

from ..lab.schema import Published
from ..platform import MEASUREMENT, run_kind

OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _stats(xs: list[float]) -> dict[str, float | None]:
    if not xs:
        return {"mean": None, "std": None, "min": None, "max": None}
    return {"mean": statistics.fmean(xs), "std": statistics.stdev(xs) if len(xs) > 1 else 0.0,
            "min": min(xs), "max": max(xs)}


def metric_values(records: Iterable[dict[str, Any]], metric: str, path: str | None) -> list[float]:
    """One value per repetition of a published metric; None-valued reps are skipped."""
    out: list[float] = []
    for r in records:
        if metric == "goodput_mbps":
            out.append(float(r["goodput_mbps"]))
            continue
        subs = [s for s in r["subflows"] if path is None or s.get("path") == path]
        if metric == "subflow_share":
            out.append(sum(s["share"] or 0.0 for s in subs))
        elif metric == "icmp_frag_needed":
            out.append(float(sum(s["icmp_frag_needed"] for s in subs)))
        elif metric in ("median_seg", "max_seg"):
            vals = [s[metric] for s in subs if s.get(metric) is not None]
            if vals:
                out.append(float(max(vals)))
    return out


def aggregates(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for name in dict.fromkeys(r["name"] for r in records):
        reps = [r for r in records if r["name"] == name]
        g = _stats([r["goodput_mbps"] for r in reps])
        paths = sorted({s["path"] for r in reps for s in r["subflows"] if s.get("path")})
        share = {p: statistics.fmean(metric_values(reps, "subflow_share", p)) for p in paths}
        seg = {p: {"median_seg": _max_or_none(metric_values(reps, "median_seg", p)),
                   "max_seg": _max_or_none(metric_values(reps, "max_seg", p)),
                   "icmp_frag_needed": statistics.fmean(metric_values(reps, "icmp_frag_needed", p))} for p in paths}
        out.append({"scenario": name, "n": len(reps), "goodput_mean": g["mean"], "goodput_std": g["std"],
                    "goodput_min": g["min"], "goodput_max": g["max"], "share": share, "segments": seg,
                    "mptcp_requested": reps[0]["mptcp"]["requested"],
                    "verified_reps": sum(1 for r in reps if r["mptcp"]["verified"]),
                    "warning_reps": sum(1 for r in reps if r["warnings"])})
    return out


def _max_or_none(xs: list[float]) -> float | None:
    return max(xs) if xs else None


def published_table(pub: Published | None, records: list[dict[str, Any]], kernel: str) -> list[dict[str, Any]]:
    if pub is None:
        return []
    rows = []
    for v in pub.values:
        reps = [r for r in records if r["name"] == v.scenario]
        st = _stats(metric_values(reps, v.metric, v.path)) if reps else _stats([])
        rows.append({"id": v.id, "scenario": v.scenario, "metric": v.metric, "path": v.path,
                     "paper_value": v.value, "unit": v.unit, "paper_kernel": v.kernel or pub.source.kernel,
                     "where": v.where, "note": v.note, "this_mean": st["mean"], "this_std": st["std"],
                     "this_n": len(reps), "this_kernel": kernel if reps else None})
    return rows


def findings_table(pub: Published | None, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if pub is None:
        return []
    rows = []
    for f in pub.findings:
        reps = [r for r in records if r["name"] == f.scenario]
        holds: bool | None = None
        evidence = "not checkable automatically" if f.expect is None else "scenario not run"
        if f.expect is not None and reps:
            vals = metric_values(reps, f.expect.metric, f.expect.path)
            if vals:
                mean = statistics.fmean(vals)
                holds = bool(OPS[f.expect.op](round(mean, 6), f.expect.value))
                what = f.expect.metric + (f" of path {f.expect.path}" if f.expect.path else "")
                evidence = f"{what} = {mean:.4g} (mean of {len(vals)} reps); paper: {f.expect.op} {f.expect.value:g}"
            else:
                evidence = f"no {f.expect.metric} observed"
        rows.append({"id": f.id, "scenario": f.scenario, "statement": f.statement, "where": f.where,
                     "holds_here": holds, "evidence": evidence})
    return rows


def build_summary(lab: str, run_id: str, kernel: str, complete: bool, quick: bool, records: list[dict[str, Any]],
                  pub: Published | None, invalid_reasons: list[str], cpu: dict[str, Any],
                  timing_reasons: Iterable[str] = ()) -> dict[str, Any]:
    """cpu: what platform.cpu_emulation() found; on a software-emulated CPU the run is a functional check.

    invalid_reasons make any run invalid (the evidence is wrong); timing_reasons (links out of
    tolerance, CPU-bound, delay line) make a measurement invalid, while a functional check,
    which claims no timing, lists them as timing_notes.
    """
    kind, why = run_kind(cpu)
    timing = list(timing_reasons)
    if kind == MEASUREMENT:
        invalid_reasons, timing = [*timing, *invalid_reasons], []
    return {
        "lab": lab, "run_id": run_id, "kernel": kernel, "complete": complete, "quick": quick,
        "run_kind": kind, "run_kind_reason": why,
        "valid": complete and not invalid_reasons, "invalid_reasons": invalid_reasons, "timing_notes": timing,
        "published_source": ({"id": pub.source.id, "title": pub.source.title, "kernel": pub.source.kernel}
                             if pub else None),
        "scenarios": records,
        "aggregates": aggregates(records),
        "published": published_table(pub, records, kernel),
        "findings": findings_table(pub, records),
    }


def summary_rows(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per scenario x repetition x subflow (a row with no subflow when none was seen)."""
    rows = []
    for r in records:
        base = {"scenario": r["name"], "rep": r["rep"], "goodput_mbps": r["goodput_mbps"],
                "mptcp_requested": r["mptcp"]["requested"], "mptcp_verified": r["mptcp"]["verified"],
                "calibration_ok": r["calibration_ok"], "warnings": " | ".join(r["warnings"])}
        subs = r["subflows"] or [{}]
        for s in subs:
            rows.append({**base, **{k: s.get(k) for k in ("path", "src", "sport", "dst", "dport", "initial", "established",
                                                          "bytes", "share", "median_seg", "max_seg",
                                                          "icmp_frag_needed", "retransmissions")}})
    df = pd.DataFrame(rows)
    return df.replace({math.nan: None}) if not df.empty else df

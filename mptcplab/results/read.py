"""Reading a run's files into the result model (record/model/): summary.json in any
readable version, manifest.json, and the per-repetition tables (timeseries.csv, icmp.csv,
dsn.csv, events.csv, ...) of a whole run in one frame each.

A summary.json of format 0 is upgraded here, not in the model: its aggregates are recomputed
with today's metric definitions (results/aggregate.py), which stand above the model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from ..record.events import read_events
from ..record.model import (
    EVENT_COLUMNS,
    EVENTS_FILE,
    FORMAT_VERSION,
    ICMP_COLUMNS,
    TIMESERIES_COLUMNS,
    Repetition,
    ResultsFormatError,
    Summary,
    validation_where,
)
from .aggregate import aggregates


def as_summary(data: Summary | dict[str, Any]) -> Summary:
    """A Summary from itself or from a summary.json dict (any readable version)."""
    return data if isinstance(data, Summary) else parse_summary(data)


def parse_summary(data: dict[str, Any], source: str = "summary.json") -> Summary:
    """A Summary from a summary.json dict.

    Format 0 (no ``format_version``, written before this model): its repetitions and paper
    rows are read as they are, its aggregates are recomputed from the repetitions with the
    current definitions (format 0 defined median_seg differently). A newer format is refused.
    """
    if not isinstance(data, dict):
        raise ResultsFormatError(source, "", "not a JSON object")
    version = data.get("format_version", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ResultsFormatError(source, "format_version", f"{version!r} is not a version number")
    if version > FORMAT_VERSION:
        raise ResultsFormatError(source, "format_version", f"{version!r} is newer than this engine reads "
                                 f"({FORMAT_VERSION}); update mptcplab")
    try:
        s = Summary.model_validate({k: v for k, v in data.items() if k != "aggregates"} if version == 0 else data)
    except ValidationError as e:
        raise ResultsFormatError(source, validation_where(e),
                                 f"not a readable summary: {e.errors()[0]['msg']}") from None
    if version == 0:
        s.aggregates = aggregates(s.scenarios)
        s.format_version = FORMAT_VERSION  # upgraded in memory; the file is left as it was
    s.file_format_version = version
    return s


def load_summary(run_dir: str | Path) -> Summary:
    """summary.json of a run directory; a clear error when it is not one."""
    path = Path(run_dir) / "summary.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no summary.json here; is {Path(run_dir)} a run directory "
            "(results/<lab>/<run-id>/ or results/<lab>/latest)?"
        )
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ResultsFormatError(str(path), "", f"not JSON: {e}") from None
    summary = parse_summary(data, str(path))
    for r in summary.scenarios:
        r.at_run_dir(run_dir)
    return summary


def flow_file(r: Repetition, flow: str | None, filename: str) -> str:
    """Where repetition ``r`` keeps a flow's table, relative to its directory: the top-level
    flow's (``flow`` None or the first measured flow) in the directory itself, another
    flow's in flows/<name>/ (analysis.analyze.write_tables, docs/results-format.md)."""
    top = next((f.name for f in r.flows if f.role == "measured"), None)
    return filename if flow is None or flow == top else f"flows/{flow}/{filename}"


def _load_per_rep_csv(run_dir: str | Path, summary: Summary | None, filename: str,
                      columns: list[str], flow: str | None = None) -> pd.DataFrame:
    """``filename`` of every repetition, of the flow ``flow`` (None: the top-level flow);
    repetitions without that flow are left out."""
    run_dir = Path(run_dir)
    summary = summary if summary is not None else load_summary(run_dir)
    frames: list[pd.DataFrame] = []
    missing: list[str] = []
    for r in summary.scenarios:
        if flow is not None and r.flows and flow not in {f.name for f in r.flows}:
            continue
        rel = Path(r.rel_dir()) / flow_file(r, flow, filename)  # absolute in a merged campaign
        path = run_dir / rel
        if not path.is_file():
            mine = next((f for f in r.flows if (f.role == "measured" if flow is None else f.name == flow)), None)
            # a flow of many connections (churn, http) is analyzed per connection
            # (flows/<name>/connections.csv): it has no time series nor ICMP table to miss
            if mine is None or mine.connections is None:
                missing.append(str(rel))
            continue
        df = pd.read_csv(path)
        if df.empty:
            continue
        df.insert(0, "rep", r.rep)
        df.insert(0, "scenario", r.name)
        frames.append(df)
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["scenario", "rep", *columns])
    # Which files were absent is part of the result: the report lists them, it does not guess.
    out.attrs["missing"] = missing
    return out


def bin_width(ts: pd.DataFrame) -> float:
    """The time-series bin width, read off the data (0.1 s by contract)."""
    t = pd.Series(sorted(pd.to_numeric(ts["t"], errors="coerce").dropna().unique()))
    d = t.diff().dropna()
    d = d[d > 1e-9]
    return float(d.min()) if not d.empty else 0.1


def load_timeseries(run_dir: str | Path, summary: Summary | None = None, flow: str | None = None) -> pd.DataFrame:
    """All timeseries.csv of the run in one frame: scenario, rep, t, path, subflow, bytes, mbps.
    ``flow``: that flow's (flow_file), default the top-level flow's."""
    df = _load_per_rep_csv(run_dir, summary, "timeseries.csv", TIMESERIES_COLUMNS, flow)
    if not df.empty:
        if "mbps" not in df.columns and "bytes" in df.columns:
            df["mbps"] = df["bytes"] * 8 / bin_width(df) / 1e6
        df["path"] = df["path"].astype(str)
    return df


SUBFLOW_SERIES_FILE = "probes/subflow_series.csv"


def load_subflow_series(run_dir: str | Path, summary: Summary | None = None) -> pd.DataFrame:
    """All probes/subflow_series.csv of the run (repetitions with the tcp_probe probe):
    scenario, rep, t, path, subflow, ..., mbps, snd_cwnd, ssthresh, srtt_ms. A
    repetition without the probe has no such file; that is not missing evidence."""
    df = _load_per_rep_csv(run_dir, summary, SUBFLOW_SERIES_FILE, ["t", "path", "subflow", "mbps", "snd_cwnd"])
    df.attrs["missing"] = []
    if not df.empty:
        df["path"] = df["path"].fillna("?").astype(str)
    return df


DSN_COLUMNS = ["t", "path", "subflow", "kind", "dsn", "length", "ssn"]
MPTCP_EVENT_COLUMNS = ["t", "path", "subflow", "event", "detail"]


def load_dsn(run_dir: str | Path, summary: Summary | None = None, flow: str | None = None) -> pd.DataFrame:
    """All dsn.csv of the run: scenario, rep, t, path, subflow, kind ("map"/"ack"), dsn, length, ssn.
    ``flow``: that flow's (flow_file), default the top-level flow's."""
    df = _load_per_rep_csv(run_dir, summary, "dsn.csv", DSN_COLUMNS, flow)
    if not df.empty:
        df["path"] = df["path"].fillna("?").astype(str)
    return df


def load_events(run_dir: str | Path, summary: Summary | None = None) -> pd.DataFrame:
    """All events.csv of the run in one frame: scenario, rep, planned_s, actual_s, action,
    target, ..., the typed columns (derived for older files), capture_s (the time-series
    axis). Runs before the timeline have none: their absence is not reported as missing."""
    run_dir = Path(run_dir)
    summary = summary if summary is not None else load_summary(run_dir)
    rows = [{"scenario": r.name, "rep": r.rep, **e.model_dump()}
            for r in summary.scenarios for e in read_events(run_dir / r.rel_dir() / EVENTS_FILE)]
    df = pd.DataFrame(rows, columns=["scenario", "rep", *EVENT_COLUMNS, "capture_s"])
    df.attrs["missing"] = []
    return df


def load_controller_trace(run_dir: str | Path, name: str, node: str, summary: Summary | None = None) -> pd.DataFrame:
    """Every repetition's controller-<name>-<node>.csv in one frame: scenario, rep, and the
    controller's own columns (dynamic_threshold: t, epoch_s, subflow, m_mbps, max_mbps,
    total_mbps, threshold_mbps, role, ..., capture_s). Repetitions without it (another
    controller, an older run) are listed in ``attrs["missing"]``."""
    return _load_per_rep_csv(run_dir, summary, f"controller-{name}-{node}.csv", ["t", "epoch_s", "capture_s"])


def load_mptcp_events(run_dir: str | Path, summary: Summary | None = None, flow: str | None = None) -> pd.DataFrame:
    """All mptcp_events.csv of the run: scenario, rep, t, path, subflow, event, detail.
    ``flow``: that flow's (flow_file), default the top-level flow's."""
    return _load_per_rep_csv(run_dir, summary, "mptcp_events.csv", MPTCP_EVENT_COLUMNS, flow)


def load_icmp(run_dir: str | Path, summary: Summary | None = None, flow: str | None = None) -> pd.DataFrame:
    """All icmp.csv of the run in one frame: scenario, rep, t, src, dst, type, code, mtu, ..., path.
    ``flow``: that flow's (flow_file), default the top-level flow's."""
    df = _load_per_rep_csv(run_dir, summary, "icmp.csv", ICMP_COLUMNS, flow)
    if not df.empty and "path" in df.columns:
        df["path"] = df["path"].fillna("?").astype(str)
    return df

"""After a repetition (in the analysis worker): each enabled probe's files -> its
table (``probes/<probe>.csv``), the per-subflow join (``probes/subflow_series.csv``),
and a short summary for the repetition record (``probes`` in rep.json)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..analysis.cwnd_events import counts_by_subflow, implausible, subflow_reductions
from . import memory
from .base import probes_dir
from .join import COLUMNS as SERIES_COLUMNS
from .join import sender_samples, subflow_series
from .monitor import MptcpMonitor
from .nstat import NstatProbe
from .registry import enabled
from .tcp_probe import TRACE_FILE, TcpProbe, lost_events

if TYPE_CHECKING:
    from ..analysis.model import FlowAnalysis, SubflowResult
    from ..lab.schema import ExperimentBody

SERIES_FILE = "subflow_series.csv"
REDUCTIONS_FILE = "cwnd_reductions.csv"


def table_file(name: str) -> str:
    return f"{name}.csv"


@dataclass(frozen=True)
class OtherFlow:
    """A flow beside the measured one whose data senders' samples are joined too (the
    single-path TCP flow of labs/cc: its cwnd is the comparison)."""

    name: str
    fa: FlowAnalysis
    upload: bool


def _series(df: pd.DataFrame, fa: FlowAnalysis, upload: bool, backup_paths: tuple[str, ...], flow: str,
            others: Sequence[OtherFlow]) -> pd.DataFrame:
    """subflow_series.csv: the measured flow's subflows, then each other flow's, on the
    measured flow's time axis (join.py)."""
    parts = [subflow_series(fa.timeseries, fa.subflows, df, fa.t0_epoch, upload, backup_paths, flow=flow)]
    for o in others:
        if o.fa.t0_epoch is None or fa.t0_epoch is None:
            continue  # no SYN seen: no axis to put its bins on
        parts.append(subflow_series(o.fa.timeseries, o.fa.subflows, df, fa.t0_epoch, o.upload, flow=o.name,
                                    shift_s=o.fa.t0_epoch - fa.t0_epoch))
    parts = [p for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=SERIES_COLUMNS)


def implausible_windows(df: pd.DataFrame,
                        flows: Sequence[tuple[str, Sequence[SubflowResult], bool]]) -> dict[str, Any]:
    """{subflow: {flow, path, samples, max_cwnd}} for each data sender with per-ACK samples
    whose cwnd no TCP window can be (analysis/cwnd_events.implausible); only those with some."""
    out: dict[str, Any] = {}
    for name, subflows, upload in flows:
        for sf in subflows:
            s = sender_samples(df, sf, upload)
            bad = s[implausible(s["snd_cwnd"])] if not s.empty else s
            if not bad.empty:
                out[sf.name] = {"flow": name, "path": sf.path, "samples": int(len(bad)),
                                "of": int(len(s)), "max_cwnd": int(bad["snd_cwnd"].max())}
    return out


def analyse_probes(rep_dir: Path, body: ExperimentBody, fa: FlowAnalysis, upload: bool,
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
    for cls in classes:
        df = cls.analyse(rep_dir)
        df.to_csv(d / (cls.table or table_file(cls.name)), index=False)
        if cls is TcpProbe:
            _series(df, fa, upload, backup_paths, flow, others).to_csv(d / SERIES_FILE, index=False)
            flows = [(flow, fa.subflows, upload)] + [(o.name, o.fa.subflows, o.upload) for o in others]
            with_samples = [sf.name for _, sfs, up in flows for sf in sfs if not sender_samples(df, sf, up).empty]
            try:
                lost = lost_events((d / TRACE_FILE).read_text(errors="replace"))
            except OSError:
                lost = 0
            # cwnd reductions of each subflow's sender, with and without a retransmission
            # (analysis/cwnd_events.py has the definition)
            episodes = subflow_reductions(df, fa.subflows, upload)
            if fa.t0_epoch is not None and not episodes.empty:  # the time series' origin
                episodes[["start_t", "end_t"]] = (episodes[["start_t", "end_t"]] - fa.t0_epoch).round(6)
            episodes.to_csv(d / REDUCTIONS_FILE, index=False)
            summary[cls.name] = {
                "samples": int((df["event"] == "tcp_probe").sum()) if not df.empty else 0,
                "retransmits": int((df["event"] == "tcp_retransmit_skb").sum()) if not df.empty else 0,
                "lost_events": lost, "subflows": len(fa.subflows), "subflows_with_samples": with_samples,
                "cwnd_reductions": counts_by_subflow(df, fa.subflows, upload, episodes),
            }
            odd = implausible_windows(df, flows)
            if odd:
                summary[cls.name]["cwnd_implausible"] = odd
                warnings += [f"tcp_probe: {v['samples']} of {v['of']} samples of subflow {k} (flow {v['flow']}, "
                             f"path {v['path']}) have a cwnd above 2^21 segments (up to {v['max_cwnd']}), more "
                             "than any TCP window can hold: left out of the cwnd metrics (docs/cc-lia.md, cwnd "
                             "jumps)" for k, v in odd.items()]
            if lost:
                warnings.append(f"tcp_probe: the trace buffer overflowed, {lost} events lost: the cwnd series "
                                "has gaps")
            missing = [sf.name for _, sfs, _ in flows for sf in sfs if sf.established and sf.name not in with_samples]
            if missing:
                warnings.append(f"tcp_probe: no sample from the sender of subflow(s) {', '.join(missing)}")
        elif cls is NstatProbe:
            nz = df[(df["delta"] != 0) & df["counter"].str.startswith("MPTcpExt")] if not df.empty else df
            summary[cls.name] = {n: dict(zip(g["counter"], g["delta"].astype(int), strict=True))
                                 for n, g in nz.groupby("node")} if not nz.empty else {}
        elif cls is memory.SsMemoryProbe:
            summary[cls.name] = memory.summary(df, body)
        elif cls is MptcpMonitor:
            summary[cls.name] = ({n: {str(k): int(v) for k, v in g["event"].value_counts().items()}
                                  for n, g in df.groupby("node")} if not df.empty else {})
    return summary, warnings

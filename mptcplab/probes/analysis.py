"""After a repetition (in the analysis worker): each enabled probe's files -> its
table (``probes/<probe>.csv``), the per-subflow join (``probes/subflow_series.csv``),
and a short summary for the repetition record (``probes`` in rep.json)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import memory
from .base import probes_dir
from .join import sender_samples, subflow_series
from .monitor import MptcpMonitor
from .nstat import NstatProbe
from .registry import enabled
from .tcp_probe import TRACE_FILE, TcpProbe, lost_events

if TYPE_CHECKING:
    from ..analysis.model import FlowAnalysis
    from ..lab.schema import ExperimentBody

SERIES_FILE = "subflow_series.csv"


def table_file(name: str) -> str:
    return f"{name}.csv"


def analyse_probes(rep_dir: Path, body: ExperimentBody, fa: FlowAnalysis, upload: bool,
                   backup_paths: tuple[str, ...] = ()) -> tuple[dict[str, Any], list[str]]:
    """Writes the probes' tables; returns (summary for the record, warnings)."""
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
            series = subflow_series(fa.timeseries, fa.subflows, df, fa.t0_epoch, upload, backup_paths)
            series.to_csv(d / SERIES_FILE, index=False)
            with_samples = [sf.name for sf in fa.subflows if not sender_samples(df, sf, upload).empty]
            try:
                lost = lost_events((d / TRACE_FILE).read_text(errors="replace"))
            except OSError:
                lost = 0
            summary[cls.name] = {
                "samples": int((df["event"] == "tcp_probe").sum()) if not df.empty else 0,
                "retransmits": int((df["event"] == "tcp_retransmit_skb").sum()) if not df.empty else 0,
                "lost_events": lost, "subflows": len(fa.subflows), "subflows_with_samples": with_samples,
            }
            if lost:
                warnings.append(f"tcp_probe: the trace buffer overflowed, {lost} events lost: the cwnd series "
                                "has gaps")
            missing = [sf.name for sf in fa.subflows if sf.established and sf.name not in with_samples]
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

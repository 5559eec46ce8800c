"""Connection setup at the server from a run's files: every measured connection's SYN ->
SYN/ACK time (the per-flow connections.csv that traffic/flowresult.py writes) as one table, and
its CDF per scenario (labs/setup, the NSDI 2012 paper's Fig 10; the paper draws a PDF, a CDF
reads the 91%-within-6-us statement directly).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from ..record.model import Summary

COLUMNS = ["scenario", "rep", "flow", "mptcp", "us"]


def load_syn_synack(run_dir: Path, summary: Summary) -> pd.DataFrame:
    """One row per timed connection of every measured flow with a connections check:
    scenario, repetition, flow, whether MPTCP, SYN -> SYN/ACK in microseconds. Missing files
    are listed in ``attrs["missing"]``."""
    parts: list[pd.DataFrame] = []
    missing: list[str] = []
    for r in summary.scenarios:
        for f in r.flows:
            if f.role != "measured" or f.connections is None or not f.connections.syn_synack_n:
                continue
            rel = Path(r.rel_dir()) / "flows" / f.name / "connections.csv"  # absolute in a merged campaign
            p = Path(run_dir) / rel
            if not p.is_file():
                missing.append(str(rel))
                continue
            c = pd.read_csv(p, usecols=["mptcp", "syn_synack_ms"]).dropna(subset=["syn_synack_ms"])
            parts.append(pd.DataFrame({"scenario": r.name, "rep": r.rep, "flow": f.name,
                                       "mptcp": c["mptcp"].astype(bool), "us": c["syn_synack_ms"] * 1e3}))
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
    out.attrs["missing"] = missing
    return out


def plot_syn_synack_cdf(df: pd.DataFrame, order: list[str] | None = None, mark_us: float = 6.0) -> Figure:
    """The CDF of SYN -> SYN/ACK per scenario (all repetitions together), log x axis; MPTCP
    scenarios solid, TCP dashed; a vertical line at ``mark_us`` (the paper's 6 us)."""
    fig = Figure(figsize=(9.0, 5.0))
    ax = fig.add_subplot(1, 1, 1)
    names = [s for s in (order or list(dict.fromkeys(df["scenario"]))) if (df["scenario"] == s).any()]
    for s in names:
        d = df[df["scenario"] == s]
        x = d["us"].sort_values().to_numpy()
        y = (pd.RangeIndex(1, len(x) + 1) / len(x)).to_numpy()
        ax.step(x, y, where="post", linestyle="-" if d["mptcp"].all() else "--",
                label=f"{s} (median {float(d['us'].median()):.2f} us, n={len(x)})")
    ax.axvline(mark_us, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("SYN in -> SYN/ACK out at the server (us)")
    ax.set_ylabel("fraction of connections")
    ax.set_ylim(0, 1)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("Connection setup at the server (CDF; dashed: TCP, solid: MPTCP)")
    fig.tight_layout()
    return fig

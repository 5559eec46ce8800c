"""Figures that put several scenarios' time series on one axis: the paper-style "Iperf
graph" (connection throughput over time, one line per scenario, e.g. TCP vs MPTCP vs a
controller) and "Wireshark graph" (packets per second per subflow), with the timeline's and
controllers' events marked. figures.py draws one panel per scenario; a comparison of
variants needs them on the same axes, which is what this module adds.

Data: results.read.load_timeseries (timeseries.csv, 100 ms bins since the first SYN; the
``packets`` column for packets/s) and load_events (events.csv, ``capture_s`` on that axis).
A scenario the run does not have is left out and named in the panel's note, never an error.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from matplotlib.figure import Figure

from ..units import rate_unit
from .figures import _empty, events_of, mark_events, path_color, throughput_by_path

#: line styles for the scenarios of one comparison, in order (TCP first: the reference)
STYLES = [("black", "-"), ("tab:red", "-"), ("tab:blue", "-"), ("tab:green", "--"), ("tab:purple", ":")]


def connection_series(ts: pd.DataFrame, scenario: str, column: str = "mbps") -> pd.Series:
    """The connection's ``column`` per bin (all subflows summed), mean over repetitions;
    a repetition without a bin counts 0 there. Empty when the scenario has no series."""
    d = ts[ts["scenario"] == scenario] if not ts.empty else ts
    if d.empty or column not in d.columns:
        return pd.Series(dtype=float)
    d = d.assign(t=pd.to_numeric(d["t"], errors="coerce").round(3))
    per_rep = d.pivot_table(index="t", columns="rep", values=column, aggfunc="sum").sort_index().fillna(0.0)
    return per_rep.mean(axis=1)


def plot_compare(ts: pd.DataFrame, scenarios: Sequence[str], *, title: str = "",
                 events: pd.DataFrame | None = None, marks_of: str | None = None,
                 scale: float = 1.0, labels: dict[str, str] | None = None) -> Figure:
    """Connection throughput over time of ``scenarios`` on one axis (the "Iperf graph");
    the events of ``marks_of`` (default the last scenario) are marked."""
    have = [s for s in scenarios if not connection_series(ts, s).empty]
    if not have:
        return _empty(f"{title}: none of {', '.join(scenarios)} is in this run.")
    fig = Figure(figsize=(8.0, 3.2))
    ax = fig.subplots()
    for i, name in enumerate(have):
        color, ls = STYLES[i % len(STYLES)]
        s = connection_series(ts, name)
        nreps = ts.loc[ts["scenario"] == name, "rep"].nunique()
        label = (labels or {}).get(name, name)
        reps = f"{nreps} rep{'s' if nreps > 1 else ''}"
        ax.plot(s.index.to_numpy(), s.to_numpy(), color=color, ls=ls, lw=1.2, label=f"{label} ({reps})")
    mark_events(ax, events_of(events, marks_of or have[-1]))
    missing = [s for s in scenarios if s not in have]
    ax.set_title(title + (f"  [not in this run: {', '.join(missing)}]" if missing else ""), fontsize=10)
    ax.set_xlabel("time since the first SYN (s)")
    ax.set_ylabel(rate_unit(scale))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def packets_by_path(ts: pd.DataFrame, scenario: str) -> pd.DataFrame:
    """t x path packets per second, mean over repetitions (0 where a rep has no bin);
    empty when the run's timeseries.csv has no ``packets`` column (before it existed)."""
    if ts.empty or "packets" not in ts.columns:
        return pd.DataFrame()
    d = ts[ts["scenario"] == scenario]
    if d.empty:
        return pd.DataFrame()
    # throughput_by_path's averaging over reps and paths, on packets per 0.1 s bin
    return throughput_by_path(d.assign(mbps=pd.to_numeric(d["packets"], errors="coerce") / 0.1), scenario)


def plot_packets(ts: pd.DataFrame, scenario: str, *, title: str = "",
                 events: pd.DataFrame | None = None, scale: float = 1.0) -> Figure:
    """Packets per second per subflow path over time (the "Wireshark graph")."""
    pp = packets_by_path(ts, scenario)
    if pp.empty:
        why = "no packets column (a run before it)" if not ts.empty and "packets" not in ts.columns \
            else "not in this run"
        return _empty(f"{title or scenario}: {why}.")
    fig = Figure(figsize=(8.0, 2.8))
    ax = fig.subplots()
    for path in sorted(pp.columns):
        ax.plot(pp.index, pp[path], color=path_color(path), lw=1.1, label=f"path {path}")
    mark_events(ax, events_of(events, scenario))
    ax.set_title(title or scenario, fontsize=10)
    ax.set_xlabel("time since the first SYN (s)")
    ax.set_ylabel("packets/s" + (f" (scaled ×{scale:g})" if scale != 1 else ""))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig

"""Figures drawn from a run directory (`results/<lab>/<run-id>/`).

Used by the report (report.py) and by the notebooks, so everything here takes the result
model (model.Summary) or plain DataFrames (tables.py, read.load_*) and returns a matplotlib
Figure. Figures are built
with `matplotlib.figure.Figure` rather than pyplot: no global backend state, nothing to close,
and the same object saves to PNG headless (Agg) or displays inline in a notebook.

Nothing here knows a measurement: every number drawn comes from summary.json, the per-rep
CSV files, or the published values the runner copied into the summary.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..analysis.cwnd_events import implausible
from ..analysis.model import FlowAnalysis
from ..analysis.stats import too_big
from ..analysis.table import Table
from ..emulation.trace import WINDOW_S as TRACE_WINDOW_S
from ..emulation.trace import Trace
from ..record.model import Summary
from ..units import rate_unit
from .fmt import missing
from .tables import aggregates_frame, path_stats, published_for, reps_frame

# Fixed colours per path so every figure of a report agrees.
PATH_COLORS: dict[str, str] = {"A": "tab:blue", "B": "tab:orange", "C": "tab:green", "D": "tab:red"}
_OTHER_COLORS = ["tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:gray"]


def path_color(path: str) -> str:
    if path in PATH_COLORS:
        return PATH_COLORS[path]
    return _OTHER_COLORS[sum(map(ord, str(path))) % len(_OTHER_COLORS)]


# --------------------------------------------------------------------------- figures


def frag_needed(icmp: pd.DataFrame) -> pd.DataFrame:
    """Only the ICMP 'fragmentation needed' messages (type 3, code 4) and ICMPv6 'packet too
    big' (type 2)."""
    if icmp.empty or "type" not in icmp.columns:
        return icmp
    return icmp[too_big(Table.from_pandas(icmp))]


def _grid(n: int, ncols: int, height: float, width: float = 11.0) -> tuple[Figure, list[Any]]:
    ncols = max(1, min(ncols, n))
    nrows = max(1, math.ceil(n / ncols))
    fig = Figure(figsize=(width, height * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=False, sharey=True)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _empty(message: str, size: tuple[float, float] = (8.0, 2.0)) -> Figure:
    fig = Figure(figsize=size, layout="constrained")
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True)
    return fig


def throughput_by_path(ts: pd.DataFrame, scenario: str, mean: bool = True) -> pd.DataFrame:
    """t x path throughput (Mbit/s) for one scenario: mean over reps, or rep 1 only.

    Bins a repetition has no row for count as 0 Mbit/s (nothing sent), so the mean is over
    all repetitions and an idle rep pulls the curve down rather than disappearing.
    """
    d = ts[ts["scenario"] == scenario]
    if d.empty:
        return pd.DataFrame()
    if not mean:
        d = d[d["rep"] == d["rep"].min()]
    # a subflow on no known path (behind NAT the server side sees other addresses) is "?",
    # as in the report's tables: NaN beside path names cannot be sorted
    d = d.assign(t=pd.to_numeric(d["t"], errors="coerce").round(3), path=d["path"].fillna("?").astype(str))
    per_rep = d.pivot_table(index="t", columns=["rep", "path"], values="mbps", aggfunc="sum")
    # Every rep gets every path's column: a rep whose path-B subflow sent nothing has no rows
    # for B at all, and must count as zeros in B's mean, not be left out of it.
    full = pd.MultiIndex.from_product([sorted(d["rep"].unique()), sorted(d["path"].unique())],
                                      names=["rep", "path"])
    per_rep = per_rep.reindex(columns=full).sort_index().fillna(0.0)
    return per_rep.T.groupby(level="path").mean().T


def events_of(events: pd.DataFrame | None, scenario: str) -> pd.DataFrame:
    """The events of one scenario's first repetition that ran, on the time-series axis."""
    if events is None or events.empty or "capture_s" not in events.columns:
        return pd.DataFrame(columns=["capture_s", "action", "target", "source"])
    d = events[events["scenario"] == scenario]
    d = d[d["rep"] == d["rep"].min()] if not d.empty else d
    d = d.assign(capture_s=pd.to_numeric(d["capture_s"], errors="coerce"))
    return d.dropna(subset=["capture_s"])


def event_label(e: Any) -> str:
    """An event's label: its action; a controller's, with the controller's name, and its
    decision (events.csv detail ``decision=demote ...``) in place of the action when given."""
    if str(e.get("source", "timeline")) == "timeline":
        return str(e["action"])
    detail = e.get("detail", "")
    verb = re.match(r"decision=(\S+)", detail if isinstance(detail, str) else "")
    return f"{verb.group(1) if verb else e['action']} ({str(e['source']).split(':', 1)[-1]})"


def mark_events(ax: Any, events: pd.DataFrame) -> None:
    """Vertical lines with labels at each event (timeline: dashed, controllers: dotted)."""
    for _, e in events.iterrows():
        timeline = str(e.get("source", "timeline")) == "timeline"
        ax.axvline(float(e["capture_s"]), color="dimgray", lw=0.9, ls="--" if timeline else ":")
        label = event_label(e)
        ax.annotate(label, (float(e["capture_s"]), 1.0), xycoords=("data", "axes fraction"), xytext=(2, -2),
                    textcoords="offset points", rotation=90, ha="left", va="top", fontsize=6, color="dimgray")


def plot_throughput(
    ts: pd.DataFrame,
    scenarios: Sequence[str] | None = None,
    *,
    mean: bool = True,
    ncols: int = 2,
    total: bool = True,
    events: pd.DataFrame | None = None,
    scale: float = 1.0,
) -> Figure:
    """Throughput over time per scenario, one line per path (plus the connection total);
    ``events`` (results.read.load_events) are marked: those of each scenario's first
    repetition (repetitions run the same timeline, at times within milliseconds)."""
    if ts.empty:
        return _empty("No throughput time series in this run (timeseries.csv missing or empty).")
    names = list(scenarios) if scenarios is not None else list(dict.fromkeys(ts["scenario"]))
    names = [n for n in names if (ts["scenario"] == n).any()]
    if not names:
        return _empty("None of the requested scenarios has a throughput time series.")
    fig, axes = _grid(len(names), ncols, height=2.6)
    top = 0.0
    for ax, name in zip(axes, names, strict=True):
        tp = throughput_by_path(ts, name, mean=mean)
        if not tp.empty:
            top = max(top, float(tp.sum(axis=1).max() if total else tp.max().max()))
        nreps = ts.loc[ts["scenario"] == name, "rep"].nunique()
        for path in sorted(tp.columns):
            ax.plot(tp.index, tp[path], label=f"path {path}", color=path_color(path), lw=1.2)
        if total and len(tp.columns) > 1:
            ax.plot(tp.index, tp.sum(axis=1), label="total", color="black", lw=1.0, ls="--")
        how = f"mean of {nreps} reps" if mean and nreps > 1 else "rep 1" if nreps > 1 else "1 rep"
        ax.set_title(f"{name} ({how})", fontsize=10)
        mark_events(ax, events_of(events, name))
        ax.set_xlabel("time since first SYN (s)")
        ax.set_ylabel(rate_unit(scale))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    # the y axis is shared: scale it once, to the largest total, so no line is clipped
    axes[0].set_ylim(0, top * 1.05 if top > 0 else 1)
    return fig


def plot_cwnd(series: pd.DataFrame, scenarios: Sequence[str] | None = None, ncols: int = 2) -> Figure:
    """Congestion window over time per subflow (tcp_probe, the data sender's socket,
    last sample of each 100 ms bin), one panel per scenario, its first repetition. Samples
    above 2^21 segments (no real window; metrics/cwnd.py) are left out: one would flatten
    every other line to the axis."""
    d = series.dropna(subset=["snd_cwnd"]) if not series.empty else series
    d = d[~implausible(d["snd_cwnd"])] if not d.empty else d
    if d.empty:
        return _empty("No tcp_probe congestion-window series in this run (probes: tcp_probe off).")
    names = [n for n in (scenarios or list(dict.fromkeys(d["scenario"]))) if (d["scenario"] == n).any()]
    if not names:
        return _empty("None of the requested scenarios has a congestion-window series.")
    fig, axes = _grid(len(names), ncols, height=2.6)
    for ax, name in zip(axes, names, strict=True):
        s = d[d["scenario"] == name]
        s = s[s["rep"] == s["rep"].min()]
        for (path, subflow), g in s.groupby(["path", "subflow"], sort=True):
            ax.plot(g["t"], g["snd_cwnd"], label=f"{path} {subflow}", color=path_color(str(path)), lw=1.1,
                    drawstyle="steps-post")
        ax.set_title(f"{name} (rep {int(s['rep'].min())})", fontsize=10)
        ax.set_xlabel("time since first SYN (s)")
        ax.set_ylabel("cwnd (segments)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    return fig


def default_baseline(summary: Summary) -> str | None:
    """The lab's first scenario without MPTCP (single-path TCP), the usual reference line."""
    return next((a.scenario for a in summary.aggregates if not a.mptcp_requested), None)


def plot_goodput(summary: Summary, baseline: str | None = None) -> Figure:
    """Goodput per scenario: mean with std error bars, each rep as a dot, a baseline scenario
    as a line (default: default_baseline) and the paper's goodput where it reports one."""
    if baseline is None:
        baseline = default_baseline(summary)
    agg = aggregates_frame(summary)
    agg = agg[agg["goodput_mean"].notna()] if not agg.empty else agg
    if agg.empty:
        return _empty("No goodput measured in this run.")
    reps = reps_frame(summary)
    fig = Figure(figsize=(max(7.0, 0.9 * len(agg) + 3), 4.6), layout="constrained")
    ax = fig.add_subplot()
    x = list(range(len(agg)))
    colors = ["tab:green" if m else "tab:gray" for m in agg["mptcp_requested"]]
    # MPTCP requested but not verified in every rep: not a multipath result, hatched
    unverified = [bool(m) and v < n
                  for m, v, n in zip(agg["mptcp_requested"], agg["verified_reps"], agg["n"], strict=True)]
    bars = ax.bar(x, agg["goodput_mean"], yerr=agg["goodput_std"].fillna(0.0), capsize=4,
                  color=colors, alpha=0.75, edgecolor="black", lw=0.5)
    for bar, bad in zip(bars, unverified, strict=True):
        if bad:
            bar.set_hatch("//")
            bar.set_facecolor("tab:orange")
    if any(unverified):
        ax.bar([0], [0], color="tab:orange", hatch="//", edgecolor="black", lw=0.5,
               label="MPTCP NOT verified in every rep")
    for i, name in enumerate(agg["scenario"]):
        g = reps.loc[reps["scenario"] == name, "goodput_mbps"].dropna()
        ax.plot([i] * len(g), g, "o", color="black", ms=3, zorder=3)
        ax.annotate(f"{agg['goodput_mean'].iloc[i]:.1f}", (i, agg["goodput_mean"].iloc[i]),
                    xytext=(0, 3), textcoords="offset points", ha="center", va="bottom",
                    fontsize=7)
    top = float((agg["goodput_mean"] + agg["goodput_std"].fillna(0.0)).max()) * 1.3 or 1.0
    if baseline is not None and baseline in set(agg["scenario"]):
        b = float(agg.loc[agg["scenario"] == baseline, "goodput_mean"].iloc[0])
        ax.axhline(b, color="tab:blue", ls="--", lw=1,
                   label=f"{baseline} baseline ({b:.1f} {rate_unit(summary.scale)})")
    # The paper's numbers were measured elsewhere (other kernel, often no rate limit), so a
    # value far above this run's scale is marked at the top edge instead of rescaling the plot.
    pub = published_for(summary, "goodput_mbps")
    pos = {n: i for i, n in enumerate(agg["scenario"])}
    labelled: set[str] = set()
    for _, p in pub.iterrows():
        if p["scenario"] not in pos:
            continue
        i = pos[p["scenario"]]
        # a scaled run is compared with the paper's rate x the factor (lab/scale.py)
        scaled = not missing(p["paper_value_scaled"])
        v = float(p["paper_value_scaled"] if scaled else p["paper_value"])
        kind = "in" if v <= top else "off"
        paper = f"paper ×{summary.scale:g}" if scaled else "paper"
        lab = None if kind in labelled else (
            f"{paper} (its kernel)" if kind == "in" else f"{paper}, above this scale (value printed)")
        labelled.add(kind)
        if kind == "in":
            ax.plot([i], [v], marker="D", color="tab:red", ms=6, ls="", label=lab, zorder=4)
        else:
            ax.plot([i], [top * 0.97], marker="^", color="tab:red", ms=7, ls="", label=lab,
                    zorder=4)
        ax.annotate(f"{paper} {v:g}", (i, min(v, top * 0.97)), xytext=(6, -3),
                    textcoords="offset points", fontsize=7, color="tab:red")
    ax.set_ylim(0, top)
    ax.set_xticks(x, agg["scenario"], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(f"goodput ({rate_unit(summary.scale)})")
    # two lines: one would be cut off at the figure's width with few scenarios
    ax.set_title("Goodput per scenario (bar: mean ± std over reps; dots: reps)\n"
                 "green: MPTCP verified, orange hatched: MPTCP not verified, grey: TCP", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        fig.legend(fontsize=8, loc="outside lower center", ncols=2)
    return fig


def plot_subflow_share(summary: Summary) -> Figure:
    """Mean byte share of each path per scenario (stacked horizontal bars)."""
    ps = path_stats(summary)
    if ps.empty:
        return _empty("No per-subflow data in this run.")
    names = [n for n in summary.scenario_order() if (ps["scenario"] == n).any()]
    paths = sorted(ps["path"].unique())
    fig = Figure(figsize=(9, 0.45 * len(names) + 1.6), layout="constrained")
    ax = fig.add_subplot()
    left = [0.0] * len(names)
    for path in paths:
        vals = []
        for n in names:
            row = ps[(ps["scenario"] == n) & (ps["path"] == path)]
            v = float(row["share_mean_over_reps"].iloc[0]) if not row.empty else 0.0
            vals.append(0.0 if math.isnan(v) else v)
        ax.barh(names, vals, left=left, color=path_color(path), label=f"path {path}",
                edgecolor="black", lw=0.4)
        for i, v in enumerate(vals):
            if v >= 0.06:
                ax.text(left[i] + v / 2, i, f"{v:.2f}", ha="center", va="center", fontsize=7)
        left = [a + b for a, b in zip(left, vals, strict=True)]
    ax.set_xlim(0, 1.0)
    ax.invert_yaxis()
    ax.set_xlabel("share of the connection's bytes (mean over reps)")
    ax.set_title("Per-subflow byte share", fontsize=10)
    fig.legend(fontsize=8, loc="outside right upper")
    return fig


def plot_segment_sizes(summary: Summary, icmp: pd.DataFrame | None = None) -> Figure:
    """Median segment size per scenario and path (bars), max as a tick, the paper's segment
    sizes as red crosses, and the payload that fits each MTU an ICMP message reported."""
    ps = path_stats(summary)
    if ps.empty or ps["median_seg_median_over_reps"].notna().sum() == 0:
        return _empty("No segment sizes in this run.")
    names = [n for n in summary.scenario_order() if (ps["scenario"] == n).any()]
    paths = sorted(ps["path"].unique())
    width = 0.8 / max(1, len(paths))
    fig = Figure(figsize=(max(7.0, 0.9 * len(names) + 3), 4.6), layout="constrained")
    ax = fig.add_subplot()
    pub = published_for(summary, "median_seg")
    pub_labelled = False
    for j, path in enumerate(paths):
        xs, med, mx = [], [], []
        for i, n in enumerate(names):
            row = ps[(ps["scenario"] == n) & (ps["path"] == path)]
            if row.empty:
                continue
            xs.append(i - 0.4 + width * (j + 0.5))
            med.append(float(row["median_seg_median_over_reps"].iloc[0]))
            mx.append(float(row["max_seg_max_over_reps"].iloc[0]))
        ax.bar(xs, [0 if math.isnan(v) else v for v in med], width=width * 0.95,
               color=path_color(path), label=f"path {path} median", edgecolor="black", lw=0.4)
        ax.plot(xs, mx, ls="", marker="_", ms=12, mew=2, color="black",
                label="max" if j == 0 else None)
        for x, v in zip(xs, med, strict=True):
            if not math.isnan(v):
                ax.annotate(f"{v:.0f}", (x, v), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7)
        for _, p in pub[pub["path"] == path].iterrows():
            if p["scenario"] in names:
                i = names.index(p["scenario"])
                ax.plot([i - 0.4 + width * (j + 0.5)], [p["paper_value"]], ls="", marker="x",
                        ms=9, mew=2, color="tab:red",
                        label=None if pub_labelled else "paper median (its kernel)")
                pub_labelled = True
    # A frag-needed message says which MTU a router can forward; 40 bytes of IPv4 + TCP
    # headers below it is the most payload that fits (options take a little more).
    if icmp is not None and not icmp.empty and "mtu" in icmp.columns:
        for mtu in sorted(pd.to_numeric(frag_needed(icmp)["mtu"], errors="coerce").dropna()
                          .unique()):
            ax.axhline(mtu - 40, color="gray", ls=":", lw=1)
            ax.annotate(f"MTU {mtu:g} (from ICMP) - 40", (-0.45, mtu - 40),
                        ha="left", va="bottom", fontsize=7, color="gray")
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("TCP payload per segment (bytes)")
    ax.set_title("Segment sizes per subflow path\n(bar: median over reps of each rep's median; tick: max over reps)",
                 fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    fig.legend(fontsize=8, loc="outside right upper")
    return fig


def plot_icmp(icmp: pd.DataFrame, scenarios: Iterable[str] | None = None,
              events: pd.DataFrame | None = None) -> Figure:
    """ICMP events over time per scenario; frag-needed as dots labelled with the MTU.

    With `scenarios` given every one of them gets a row, so a scenario without any ICMP
    shows as an empty row (that absence is the result in a black hole)."""
    if icmp is None or icmp.empty:
        return _empty("No ICMP messages captured in this run.")
    if scenarios is not None:
        names = list(scenarios)
    else:
        names = list(dict.fromkeys(icmp["scenario"]))
    d = icmp[icmp["scenario"].isin(names)]
    if d.empty:
        return _empty("No ICMP messages in the selected scenarios.")
    fig = Figure(figsize=(10, 0.45 * len(names) + 1.8), layout="constrained")
    ax = fig.add_subplot()
    fn = frag_needed(d)
    other = d.drop(index=fn.index)
    ypos = {n: i for i, n in enumerate(names)}
    for path, g in fn.groupby("path"):
        y = [ypos[s] + 0.08 * (r - 1) for s, r in zip(g["scenario"], g["rep"], strict=True)]
        ax.plot(g["t"], y, "o", ms=5, color=path_color(str(path)), alpha=0.8,
                label=f"frag-needed, path {path}")
    # Label the first message of each scenario/path/MTU: the MTU it advertises is the point.
    for (s, _path, mtu), g in fn.groupby(["scenario", "path", "mtu"]):
        ax.annotate(f"mtu={mtu:g}", (g["t"].min(), ypos[str(s)]), xytext=(4, 4),
                    textcoords="offset points", fontsize=7)
    if not other.empty:
        y = [ypos[s] for s in other["scenario"]]
        ax.plot(other["t"], y, "x", color="black", ms=5, label="other ICMP")
    for name in names:  # each scenario's events, as ticks on its row
        ev = events_of(events, name)
        if not ev.empty:
            ax.plot(ev["capture_s"], [ypos[name]] * len(ev), "|", color="dimgray", ms=14,
                    label="timeline event" if name == names[0] else None)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlim(left=0)
    ax.set_xlabel("time since first SYN (s)")
    ax.set_title("ICMP messages captured (reps offset vertically)", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.legend(fontsize=8, loc="outside right upper")
    return fig


def _bars(ax: Any, x: pd.Series, lo: pd.Series, hi: pd.Series, **kw: Any) -> None:
    """Vertical bars from ``lo`` to ``hi`` at ``x``, drawn as ax.vlines draws them but as one
    line broken by NaNs: vlines makes one path per bar, which takes seconds for the ~500k
    segments of a large capture; one path draws the same picture in a fraction of that."""
    n = len(x)
    xs = np.empty(3 * n)
    ys = np.empty(3 * n)
    xs[0::3] = xs[1::3] = x.to_numpy(dtype=float)
    xs[2::3] = np.nan
    ys[0::3] = lo.to_numpy(dtype=float)
    ys[1::3] = hi.to_numpy(dtype=float)
    ys[2::3] = np.nan
    ax.plot(xs, ys, solid_capstyle="butt", **kw)


def plot_dsn(dsn: pd.DataFrame, events: pd.DataFrame | None = None, title: str = "") -> Figure:
    """Data sequence number vs time per subflow of one connection (one repetition's dsn.csv):
    each mapping as a vertical bar from its first to its last data byte, in the subflow's
    path colour; the receiver's data ACK as a step line; MPTCP signalling events
    (mptcp_events.csv) as dashed vertical lines. The DSN graph of Kato et al.: which subflow
    carried which part of the byte stream, and when."""
    if dsn is None or dsn.empty:
        return _empty("No DSS mappings in this repetition (plain TCP, or MPTCP not negotiated).")
    fig = Figure(figsize=(10, 5), layout="constrained")
    ax = fig.add_subplot()
    maps = dsn[dsn["kind"] == "map"]
    for (path, sub), g in maps.groupby(["path", "subflow"], sort=False):
        _bars(ax, g["t"], g["dsn"], g["dsn"] + g["length"], color=path_color(str(path)), lw=1.5,
              label=f"path {path} {sub}: mappings")
    acks = dsn[dsn["kind"] == "ack"].sort_values("t")
    if not acks.empty:
        ax.step(acks["t"], acks["dsn"].cummax(), where="post", color="black", lw=0.8, label="data ACK")
    for _, ev in (events if events is not None else pd.DataFrame()).iterrows():
        ax.axvline(float(ev["t"]), color="gray", ls="--", lw=0.8)
        ax.annotate(str(ev["event"]), (float(ev["t"]), 1.0), xycoords=("data", "axes fraction"),
                    rotation=90, fontsize=7, va="top", ha="right")
    return _finish(fig, ax, "time since first SYN (s)", "data sequence number (bytes, relative)",
                   title or "Data sequence numbers per subflow")


def plot_tcp_seq(tcp_seq: pd.DataFrame, title: str = "") -> Figure:
    """TCP sequence numbers vs time per subflow (tcp_seq.csv, analysis/tcpseq.py): above,
    each data segment of the sender as a vertical bar over its bytes (relative to the
    subflow's ISN) in the subflow's path colour, and the receiver's ACK as a step line;
    below, the receiver's advertised window (the raw field, before window scaling). The
    subflow-level graph beside plot_dsn's data-level one (mptcpanalyzer's ``plot tcp_attr``)."""
    if tcp_seq is None or tcp_seq.empty:
        return _empty("No TCP segments of the data connection in the capture.")
    fig = Figure(figsize=(10, 6.5), layout="constrained")
    ax, wax = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
    snd = tcp_seq[(tcp_seq["side"] == "sender") & (tcp_seq["len"] > 0)]
    rcv = tcp_seq[tcp_seq["side"] == "receiver"]
    for (path, sub), g in snd.groupby(["path", "subflow"], sort=False, dropna=False):
        _bars(ax, g["t"], g["seq"], g["seq"] + g["len"], color=path_color(str(path)), lw=1.2,
              label=f"path {path} {sub}: segments")
    for (path, sub), g in rcv.groupby(["path", "subflow"], sort=False, dropna=False):
        g = g[g["ack"].notna()]
        if g.empty:
            continue
        ax.step(g["t"], g["ack"].astype(float), where="post", color=path_color(str(path)), lw=0.8, ls="--",
                label=f"path {path} {sub}: ACK")
        wax.step(g["t"], g["win"].astype(float), where="post", color=path_color(str(path)), lw=0.8,
                 label=f"path {path} {sub}")
    wax.set_xlabel("time since first SYN (s)")
    wax.set_ylabel("receiver window (raw)")
    wax.grid(alpha=0.3)
    if wax.get_legend_handles_labels()[0]:
        wax.legend(fontsize=7, loc="upper left")
    return _finish(fig, ax, "", "sequence number (bytes, relative to the subflow's ISN)",
                   title or "TCP sequence numbers and ACKs per subflow")


def _finish(fig: Figure, ax: Any, xlabel: str, ylabel: str, title: str) -> Figure:
    """A one-panel figure's labels, grid and legend (upper left, small: several subflows)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return fig


def plot_delivery(hol: pd.DataFrame, owd: pd.DataFrame | None = None, title: str = "",
                  unavailable: str | None = None) -> Figure:
    """One repetition's delivery per subflow and 100 ms bin (hol.csv, owd.csv): the goodput each
    subflow gave the receiver (the data it delivered first, each byte counted once, and their
    sum; hol.csv's ``first_bytes``, absent in runs before it), the share of bytes arriving out
    of data-sequence order at the receiver and the largest head-of-line delay among them;
    below, the median one-way delay when two capture points shared a clock. ``unavailable``:
    why the analysis withheld the receiver-side figures (e.g. a capture at the sender), the
    empty chart's caption then."""
    if unavailable:
        return _empty(f"Receiver-side figures withheld: {unavailable}.")
    if hol is None or hol.empty:
        return _empty("No data segments at a receiver point (plain TCP, or MPTCP not negotiated).")
    has_owd = owd is not None and not owd.empty
    has_gput = "first_bytes" in hol.columns
    n = 2 + int(has_owd) + int(has_gput)
    fig = Figure(figsize=(10, 2.4 * n + 0.2), layout="constrained")
    axes = list(fig.subplots(n, 1, sharex=True))
    if has_gput:
        gax = axes.pop(0)
        ts = np.sort(hol["t"].unique())
        steps = np.diff(ts)
        bin_s = float(steps[steps > 0].min()) if (steps > 0).any() else 0.1
        for (path, sub), g in hol.groupby(["path", "subflow"], sort=False, dropna=False):
            gax.plot(g["t"], g["first_bytes"] * 8 / bin_s / 1e6, color=path_color(str(path)), lw=1,
                     label=f"path {path} {sub}")
        total = hol.groupby("t")["first_bytes"].sum()
        gax.plot(total.index, total * 8 / bin_s / 1e6, color="black", lw=1, label="connection")
        gax.set_ylabel("goodput (Mbit/s)")
        gax.set_title(title or "Goodput, reordering and head-of-line delay at the receiver", fontsize=10)
        gax.legend(fontsize=7, loc="upper left")
        gax.grid(alpha=0.3)
    for (path, sub), g in hol.groupby(["path", "subflow"], sort=False, dropna=False):
        c = path_color(str(path))
        axes[0].plot(g["t"], g["ooo_bytes"] / g["bytes"].where(g["bytes"] > 0), color=c, lw=1,
                     label=f"path {path} {sub}")
        axes[1].plot(g["t"], g["hol_max_ms"], color=c, lw=1, marker=".", ms=3)
    axes[0].set_ylabel("out-of-order share")
    axes[1].set_ylabel("max HoL delay (ms)")
    if has_owd:
        for (path, _sub), g in owd.groupby(["path", "subflow"], sort=False, dropna=False):  # type: ignore[union-attr]
            axes[2].plot(g["t"], g["owd_median_ms"], color=path_color(str(path)), lw=1)
        axes[2].set_ylabel("one-way delay, median (ms)")
    axes[-1].set_xlabel("time since first SYN (s)")
    if not has_gput:
        axes[0].set_title(title or "Receiver reordering and head-of-line delay", fontsize=10)
        axes[0].legend(fontsize=7, loc="upper left")
    for ax in axes:
        ax.grid(alpha=0.3)
    return fig


def plot_resend_gain(reinj: pd.DataFrame, title: str = "") -> Figure:
    """CDF of how much earlier each MPTCP-level re-send's copy reached the receiver than the
    first carrier's (mptcp_retransmissions.csv ``gain_ms``, analysis/usefulness.py), one line
    per re-sending subflow: right of 0 useful re-sends, left of it redundant ones
    (mptcpanalyzer's reinjection CDF)."""
    d = reinj.dropna(subset=["gain_ms"]) if "gain_ms" in reinj.columns else reinj.iloc[0:0]
    if d.empty:
        return _empty("No re-send qualified: none on another subflow, or no capture at the receiver.")
    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.add_subplot()
    for (path, sub), g in d.groupby(["path", "subflow"], sort=False, dropna=False):
        x = np.sort(g["gain_ms"].to_numpy(dtype=float))
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", color=path_color(str(path)),
                label=f"path {path} {sub} ({len(x)} re-sends)")
    ax.axvline(0.0, color="gray", ls="--", lw=0.8)
    return _finish(fig, ax, "first carrier's arrival - re-send's arrival (ms); > 0: the re-send was useful",
                   "fraction of re-sends", title or "MPTCP-level re-sends: gain at the receiver")


def capture_figures(fa: FlowAnalysis, figdir: Path) -> None:
    """The figures of ``mptcplab analyze --figures`` (a capture made elsewhere): data sequence, TCP
    sequence, delivery, resends and throughput, as PNGs in ``figdir``."""
    figdir.mkdir(exist_ok=True)
    plot_dsn(fa.dsn.to_pandas(), fa.mptcp_events.to_pandas()).savefig(figdir / "dsn.png", dpi=110)
    if fa.tcp_seq is not None:
        plot_tcp_seq(fa.tcp_seq.to_pandas()).savefig(figdir / "tcp_seq.png", dpi=110)
    plot_delivery(fa.hol.to_pandas(), fa.owd.to_pandas(), unavailable=fa.hol_unavailable).savefig(
        figdir / "delivery.png", dpi=110)
    plot_resend_gain(fa.reinjections.to_pandas()).savefig(figdir / "resends.png", dpi=110)
    ts = fa.timeseries.to_pandas().assign(scenario="capture", rep=1)
    plot_throughput(ts, ["capture"]).savefig(figdir / "throughput.png", dpi=110)


def plot_trace_capacity(traces: Sequence[Trace]) -> Figure:
    """Each delivery trace a run replayed: its capacity per 100 ms window over one period
    (Mbit/s, as the delay line counts bytes: ``Trace.capacity_series``), with its mean."""
    if not traces:
        return _empty("no trace link in this run")
    fig = Figure(figsize=(11.0, 2.2 * len(traces)), layout="constrained")
    axes = [row[0] for row in fig.subplots(len(traces), 1, squeeze=False)]  # each its own scale
    for ax, tr in zip(axes, traces, strict=True):
        series = tr.capacity_series(tr.period_ms / 1000)
        t = np.arange(len(series)) * TRACE_WINDOW_S
        ax.step(t, np.array(series) * 8 / TRACE_WINDOW_S / 1e6, where="post", lw=0.8, color="tab:blue")
        ax.axhline(tr.mean_rate_bps / 1e6, color="0.4", ls="--", lw=0.8, label=f"mean {tr.mean_rate_bps / 1e6:.3g}")
        ax.set_title(tr.describe(), fontsize=8)
        ax.set_ylabel("Mbit/s")
        ax.legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel(f"trace time (s), {TRACE_WINDOW_S * 1000:g} ms windows")
    return fig

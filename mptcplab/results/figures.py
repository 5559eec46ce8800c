"""Tables and figures drawn from a run directory (`results/<lab>/<run-id>/`).

Used by the report (report.py) and by the notebooks, so everything here takes the summary
dict or plain DataFrames and returns a DataFrame or a matplotlib Figure. Figures are built
with `matplotlib.figure.Figure` rather than pyplot: no global backend state, nothing to close,
and the same object saves to PNG headless (Agg) or displays inline in a notebook.

Nothing here knows a measurement: every number drawn comes from summary.json, the per-rep
CSV files, or the published values the runner copied into the summary.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

# Fixed colours per path so every figure of a report agrees.
PATH_COLORS: dict[str, str] = {"A": "tab:blue", "B": "tab:orange", "C": "tab:green", "D": "tab:red"}
_OTHER_COLORS = ["tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:gray"]

TIMESERIES_COLUMNS = ["t", "path", "subflow", "bytes", "mbps"]
ICMP_COLUMNS = ["t", "src", "dst", "type", "code", "mtu", "quoted_src", "quoted_sport", "path"]

# ICMPv4 destination unreachable / fragmentation needed (RFC 792, RFC 1191).
ICMP_DEST_UNREACH = 3
ICMP_FRAG_NEEDED = 4


def path_color(path: str) -> str:
    if path in PATH_COLORS:
        return PATH_COLORS[path]
    return _OTHER_COLORS[sum(map(ord, str(path))) % len(_OTHER_COLORS)]


# --------------------------------------------------------------------------- loading


def load_summary(run_dir: str | Path) -> dict[str, Any]:
    """summary.json of a run directory; a clear error when it is not one."""
    path = Path(run_dir) / "summary.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no summary.json here; is {Path(run_dir)} a run directory "
            "(results/<lab>/<run-id>/ or results/<lab>/latest)?"
        )
    with path.open() as f:
        return json.load(f)


def load_manifest(run_dir: str | Path) -> dict[str, Any]:
    """manifest.json, or {} when the run has none (the report says so)."""
    path = Path(run_dir) / "manifest.json"
    if not path.is_file():
        return {}
    with path.open() as f:
        return json.load(f)


def scenario_order(summary: dict[str, Any]) -> list[str]:
    """Scenario names in the order the run lists them (the lab's order)."""
    seen: dict[str, None] = {}
    for s in summary.get("scenarios", []):
        seen.setdefault(s["name"], None)
    for a in summary.get("aggregates", []):
        seen.setdefault(a["scenario"], None)
    return list(seen)


def _rep_dir(run_dir: Path, s: dict[str, Any]) -> Path:
    rel = s.get("dir") or f"scenarios/{s['name']}/rep{s.get('rep', 1)}"
    return run_dir / rel


def _load_per_rep_csv(
    run_dir: str | Path, summary: dict[str, Any] | None, filename: str, columns: list[str]
) -> pd.DataFrame:
    run_dir = Path(run_dir)
    if summary is None:
        summary = load_summary(run_dir)
    frames: list[pd.DataFrame] = []
    missing: list[str] = []
    for s in summary.get("scenarios", []):
        path = _rep_dir(run_dir, s) / filename
        if not path.is_file():
            missing.append(str(path.relative_to(run_dir)))
            continue
        df = pd.read_csv(path)
        if df.empty:
            continue
        df.insert(0, "rep", s.get("rep", 1))
        df.insert(0, "scenario", s["name"])
        frames.append(df)
    if frames:
        out = pd.concat(frames, ignore_index=True)
    else:
        out = pd.DataFrame(columns=["scenario", "rep", *columns])
    # Which files were absent is part of the result: the report lists them, it does not guess.
    out.attrs["missing"] = missing
    return out


def load_timeseries(run_dir: str | Path, summary: dict[str, Any] | None = None) -> pd.DataFrame:
    """All timeseries.csv of the run in one frame: scenario, rep, t, path, subflow, bytes, mbps."""
    df = _load_per_rep_csv(run_dir, summary, "timeseries.csv", TIMESERIES_COLUMNS)
    if not df.empty:
        if "mbps" not in df.columns and "bytes" in df.columns:
            width = _bin_width(df)
            df["mbps"] = df["bytes"] * 8 / width / 1e6
        df["path"] = df["path"].astype(str)
    return df


def load_icmp(run_dir: str | Path, summary: dict[str, Any] | None = None) -> pd.DataFrame:
    """All icmp.csv of the run in one frame: scenario, rep, t, src, dst, type, code, mtu, ...,
    path."""
    df = _load_per_rep_csv(run_dir, summary, "icmp.csv", ICMP_COLUMNS)
    if not df.empty and "path" in df.columns:
        df["path"] = df["path"].fillna("?").astype(str)
    return df


def frag_needed(icmp: pd.DataFrame) -> pd.DataFrame:
    """Only the ICMP 'fragmentation needed' messages (type 3, code 4)."""
    if icmp.empty or "type" not in icmp.columns:
        return icmp
    mask = (pd.to_numeric(icmp["type"], errors="coerce") == ICMP_DEST_UNREACH) & (
        pd.to_numeric(icmp["code"], errors="coerce") == ICMP_FRAG_NEEDED
    )
    return icmp[mask]


# --------------------------------------------------------------------------- tables


def _num(value: Any) -> float:
    """A float, NaN for None/missing, so pandas aggregation treats absence as absence."""
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def reps_frame(summary: dict[str, Any]) -> pd.DataFrame:
    """One row per scenario x repetition."""
    rows = []
    for s in summary.get("scenarios", []):
        mp = s.get("mptcp") or {}
        rows.append(
            {
                "scenario": s["name"],
                "rep": s.get("rep", 1),
                "goodput_mbps": _num(s.get("goodput_mbps")),
                "duration_s": _num(s.get("duration_s")),
                "mptcp_requested": bool(mp.get("requested", False)),
                "mptcp_negotiated": mp.get("negotiated"),
                "mptcp_verified": bool(mp.get("verified", False)),
                "subflows": mp.get("subflows"),
                "fallback": bool(mp.get("fallback", False)),
                "calibration_ok": s.get("calibration_ok"),
                "warnings": len(s.get("warnings") or []),
            }
        )
    return pd.DataFrame(rows)


def subflows_frame(summary: dict[str, Any]) -> pd.DataFrame:
    """One row per scenario x repetition x subflow."""
    rows = []
    for s in summary.get("scenarios", []):
        for sf in s.get("subflows") or []:
            rows.append(
                {
                    "scenario": s["name"],
                    "rep": s.get("rep", 1),
                    "path": str(sf.get("path") or "?"),
                    "src": sf.get("src"),
                    "sport": sf.get("sport"),
                    "dst": sf.get("dst"),
                    "dport": sf.get("dport"),
                    "initial": sf.get("initial"),
                    "established": sf.get("established"),
                    "bytes": _num(sf.get("bytes")),
                    "share": _num(sf.get("share")),
                    "median_seg": _num(sf.get("median_seg")),
                    "max_seg": _num(sf.get("max_seg")),
                    "icmp_frag_needed": _num(sf.get("icmp_frag_needed")),
                    "retransmissions": _num(sf.get("retransmissions")),
                }
            )
    cols = ["scenario", "rep", "path", "src", "sport", "dst", "dport", "initial", "established",
            "bytes", "share", "median_seg", "max_seg", "icmp_frag_needed", "retransmissions"]
    return pd.DataFrame(rows, columns=cols)


def path_stats(summary: dict[str, Any]) -> pd.DataFrame:
    """Per scenario x path over the repetitions: mean share, median/max segment, ICMP count.

    Several subflows on one path in one repetition (fullmesh) are first combined per rep:
    shares and ICMP counts add up, segment sizes take the largest.
    """
    sf = subflows_frame(summary)
    cols = ["scenario", "path", "reps", "share_mean", "share_std", "median_seg", "max_seg",
            "icmp_total", "icmp_reps"]
    if sf.empty:
        return pd.DataFrame(columns=cols)
    per_rep = (
        sf.groupby(["scenario", "path", "rep"], sort=False)
        .agg(share=("share", lambda x: x.sum(min_count=1)),
             median_seg=("median_seg", "max"),
             max_seg=("max_seg", "max"),
             icmp=("icmp_frag_needed", lambda x: x.sum(min_count=1)))
        .reset_index()
    )
    out = (
        per_rep.groupby(["scenario", "path"], sort=False)
        .agg(reps=("rep", "nunique"),
             share_mean=("share", "mean"),
             share_std=("share", "std"),
             median_seg=("median_seg", "median"),
             max_seg=("max_seg", "max"),
             icmp_total=("icmp", lambda x: x.sum(min_count=1)),
             icmp_reps=("icmp", lambda x: list(x)))
        .reset_index()
    )
    return out[cols]


def aggregates_frame(summary: dict[str, Any]) -> pd.DataFrame:
    """Per scenario: goodput mean/std/min/max over reps and MPTCP-verified reps.

    The runner's `aggregates` are used when present (they are the numbers the published table
    was compared with); a scenario without one is computed from its repetitions.
    """
    reps = reps_frame(summary)
    given = {a["scenario"]: a for a in summary.get("aggregates", [])}
    rows = []
    for name in scenario_order(summary):
        r = reps[reps["scenario"] == name] if not reps.empty else reps
        g = r["goodput_mbps"] if not r.empty else pd.Series(dtype=float)
        computed = {
            "n": int(len(r)),
            "goodput_mean": _num(g.mean()) if g.notna().any() else math.nan,
            "goodput_std": _num(g.std()) if g.notna().sum() > 1 else math.nan,
            "goodput_min": _num(g.min()) if g.notna().any() else math.nan,
            "goodput_max": _num(g.max()) if g.notna().any() else math.nan,
            "verified_reps": int(r["mptcp_verified"].sum()) if not r.empty else 0,
        }
        a = given.get(name, {})
        n = int(a.get("n", computed["n"]))
        rows.append(
            {
                "scenario": name,
                "n": n,
                "goodput_mean": _num(a.get("goodput_mean", computed["goodput_mean"])),
                # one repetition has no spread; a "± 0" would claim a measured one
                "goodput_std": (_num(a.get("goodput_std", computed["goodput_std"])) if n > 1
                                else math.nan),
                "goodput_min": _num(a.get("goodput_min", computed["goodput_min"])),
                "goodput_max": _num(a.get("goodput_max", computed["goodput_max"])),
                "verified_reps": int(a.get("verified_reps", computed["verified_reps"])),
                "mptcp_requested": bool(r["mptcp_requested"].any()) if not r.empty else False,
                "fallback_reps": int(r["fallback"].sum()) if not r.empty else 0,
            }
        )
    return pd.DataFrame(rows)


def published_frame(summary: dict[str, Any]) -> pd.DataFrame:
    """The 'published vs this run' rows as the runner compared them."""
    src = summary.get("published_source") or {}
    rows = []
    for p in summary.get("published", []):
        rows.append(
            {
                "id": p.get("id"),
                "scenario": p.get("scenario"),
                "metric": p.get("metric"),
                "path": p.get("path"),
                "paper_value": _num(p.get("paper_value")),
                "unit": p.get("unit") or "",
                "paper_kernel": p.get("paper_kernel") or src.get("kernel"),
                "where": p.get("where"),
                "this_mean": _num(p.get("this_mean")),
                "this_std": _num(p.get("this_std")),
                "this_n": p.get("this_n") or 0,
                "this_kernel": p.get("this_kernel") or summary.get("kernel"),
                "note": p.get("note"),
            }
        )
    cols = ["id", "scenario", "metric", "path", "paper_value", "unit", "paper_kernel", "where",
            "this_mean", "this_std", "this_n", "this_kernel", "note"]
    return pd.DataFrame(rows, columns=cols)


def findings_frame(summary: dict[str, Any]) -> pd.DataFrame:
    """Findings of the paper and whether each holds on this run (yes / no / unknown)."""
    rows = []
    for f in summary.get("findings", []):
        h = f.get("holds_here")
        rows.append(
            {
                "id": f.get("id"),
                "scenario": f.get("scenario"),
                "statement": f.get("statement"),
                "where": f.get("where"),
                "holds_here": "yes" if h is True else "no" if h is False else "unknown",
                "evidence": f.get("evidence") or "",
            }
        )
    cols = ["id", "scenario", "statement", "where", "holds_here", "evidence"]
    return pd.DataFrame(rows, columns=cols)


def _published_for(summary: dict[str, Any], metric: str) -> pd.DataFrame:
    pub = published_frame(summary)
    if pub.empty:
        return pub
    return pub[(pub["metric"] == metric) & pub["scenario"].notna() & pub["paper_value"].notna()]


# --------------------------------------------------------------------------- figures


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


def _bin_width(ts: pd.DataFrame) -> float:
    """The time-series bin width, read off the data (0.1 s by contract)."""
    t = pd.Series(sorted(pd.to_numeric(ts["t"], errors="coerce").dropna().unique()))
    d = t.diff().dropna()
    d = d[d > 1e-9]
    return float(d.min()) if not d.empty else 0.1


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
    d = d.assign(t=pd.to_numeric(d["t"], errors="coerce").round(3))
    per_rep = d.pivot_table(index="t", columns=["rep", "path"], values="mbps", aggfunc="sum")
    # Every rep gets every path's column: a rep whose path-B subflow sent nothing has no rows
    # for B at all, and must count as zeros in B's mean, not be left out of it.
    full = pd.MultiIndex.from_product([sorted(d["rep"].unique()), sorted(d["path"].unique())],
                                      names=["rep", "path"])
    per_rep = per_rep.reindex(columns=full).sort_index().fillna(0.0)
    return per_rep.T.groupby(level="path").mean().T


def plot_throughput(
    ts: pd.DataFrame,
    scenarios: Sequence[str] | None = None,
    *,
    mean: bool = True,
    ncols: int = 2,
    total: bool = True,
) -> Figure:
    """Throughput over time per scenario, one line per path (plus the connection total)."""
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
        ax.set_xlabel("time since first SYN (s)")
        ax.set_ylabel("Mbit/s")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    # the y axis is shared: scale it once, to the largest total, so no line is clipped
    axes[0].set_ylim(0, top * 1.05 if top > 0 else 1)
    return fig


def plot_goodput(summary: dict[str, Any], baseline: str = "tcp-a") -> Figure:
    """Goodput per scenario: mean with std error bars, each rep as a dot, the TCP-over-A
    baseline as a line and the paper's goodput where it reports one."""
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
    unverified = [bool(m) and v < n for m, v, n in zip(agg["mptcp_requested"], agg["verified_reps"], agg["n"])]
    bars = ax.bar(x, agg["goodput_mean"], yerr=agg["goodput_std"].fillna(0.0), capsize=4,
                  color=colors, alpha=0.75, edgecolor="black", lw=0.5)
    for bar, bad in zip(bars, unverified):
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
    if baseline in set(agg["scenario"]):
        b = float(agg.loc[agg["scenario"] == baseline, "goodput_mean"].iloc[0])
        ax.axhline(b, color="tab:blue", ls="--", lw=1,
                   label=f"{baseline} baseline ({b:.1f} Mbit/s)")
    # The paper's numbers were measured elsewhere (other kernel, often no rate limit), so a
    # value far above this run's scale is marked at the top edge instead of rescaling the plot.
    pub = _published_for(summary, "goodput_mbps")
    pos = {n: i for i, n in enumerate(agg["scenario"])}
    labelled: set[str] = set()
    for _, p in pub.iterrows():
        if p["scenario"] not in pos:
            continue
        i = pos[p["scenario"]]
        v = float(p["paper_value"])
        kind = "in" if v <= top else "off"
        lab = None if kind in labelled else (
            "paper (its kernel)" if kind == "in" else "paper, above this scale (value printed)")
        labelled.add(kind)
        if kind == "in":
            ax.plot([i], [v], marker="D", color="tab:red", ms=6, ls="", label=lab, zorder=4)
        else:
            ax.plot([i], [top * 0.97], marker="^", color="tab:red", ms=7, ls="", label=lab,
                    zorder=4)
        ax.annotate(f"paper {v:g}", (i, min(v, top * 0.97)), xytext=(6, -3),
                    textcoords="offset points", fontsize=7, color="tab:red")
    ax.set_ylim(0, top)
    ax.set_xticks(x, agg["scenario"], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_title("Goodput per scenario (bar: mean ± std over reps; dots: reps; "
                 "green: MPTCP verified, orange hatched: MPTCP not verified, grey: TCP)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        fig.legend(fontsize=8, loc="outside lower center", ncols=2)
    return fig


def plot_subflow_share(summary: dict[str, Any]) -> Figure:
    """Mean byte share of each path per scenario (stacked horizontal bars)."""
    ps = path_stats(summary)
    if ps.empty:
        return _empty("No per-subflow data in this run.")
    names = [n for n in scenario_order(summary) if (ps["scenario"] == n).any()]
    paths = sorted(ps["path"].unique())
    fig = Figure(figsize=(9, 0.45 * len(names) + 1.6), layout="constrained")
    ax = fig.add_subplot()
    left = [0.0] * len(names)
    for path in paths:
        vals = []
        for n in names:
            row = ps[(ps["scenario"] == n) & (ps["path"] == path)]
            v = float(row["share_mean"].iloc[0]) if not row.empty else 0.0
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


def plot_segment_sizes(summary: dict[str, Any], icmp: pd.DataFrame | None = None) -> Figure:
    """Median segment size per scenario and path (bars), max as a tick, the paper's segment
    sizes as red crosses, and the payload that fits each MTU an ICMP message reported."""
    ps = path_stats(summary)
    if ps.empty or ps["median_seg"].notna().sum() == 0:
        return _empty("No segment sizes in this run.")
    names = [n for n in scenario_order(summary) if (ps["scenario"] == n).any()]
    paths = sorted(ps["path"].unique())
    width = 0.8 / max(1, len(paths))
    fig = Figure(figsize=(max(7.0, 0.9 * len(names) + 3), 4.6), layout="constrained")
    ax = fig.add_subplot()
    pub = _published_for(summary, "median_seg")
    pub_labelled = False
    for j, path in enumerate(paths):
        xs, med, mx = [], [], []
        for i, n in enumerate(names):
            row = ps[(ps["scenario"] == n) & (ps["path"] == path)]
            if row.empty:
                continue
            xs.append(i - 0.4 + width * (j + 0.5))
            med.append(float(row["median_seg"].iloc[0]))
            mx.append(float(row["max_seg"].iloc[0]))
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
    ax.set_title("Segment sizes per subflow path (bar: median, tick: max)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    fig.legend(fontsize=8, loc="outside right upper")
    return fig


def plot_icmp(icmp: pd.DataFrame, scenarios: Iterable[str] | None = None) -> Figure:
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
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlim(left=0)
    ax.set_xlabel("time since first SYN (s)")
    ax.set_title("ICMP messages captured (reps offset vertically)", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.legend(fontsize=8, loc="outside right upper")
    return fig

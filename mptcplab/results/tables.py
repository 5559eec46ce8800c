"""Tables of a run, from the result model: DataFrames for figures and notebooks, and the same
tables as display strings for report.md and notebooks.

Nothing is recomputed here: the numbers are the model's (aggregates from aggregate.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..metrics import Select
from ..record.model import VERDICTS, CheckStat, FindingRow, Summary
from ..units import fmt_factor, rate_unit
from .fmt import DASH, fmt_mean_std, fmt_num, missing, text
from .policy import functional_check_reason


def _num(value: Any) -> float:
    """A float, NaN for None, so pandas treats absence as absence."""
    return math.nan if value is None or isinstance(value, bool) else float(value)


REPS_COLUMNS = ["scenario", "rep", "goodput_mbps", "duration_s", "mptcp_requested", "mptcp_negotiated",
                "mptcp_verified", "subflows", "fallback", "calibration_ok", "warnings", "warning_codes"]


def reps_frame(summary: Summary) -> pd.DataFrame:
    """One row per scenario x repetition."""
    rows = [{"scenario": r.name, "rep": r.rep, "goodput_mbps": _num(r.goodput_mbps),
             "duration_s": _num(r.duration_s), "mptcp_requested": r.mptcp.requested,
             "mptcp_negotiated": r.mptcp.negotiated, "mptcp_verified": r.mptcp.verified,
             "subflows": r.mptcp.subflows, "fallback": r.mptcp.fallback, "calibration_ok": r.calibration_ok,
             "warnings": len(r.warnings), "warning_codes": sorted(r.warning_codes())}
            for r in summary.scenarios]
    return pd.DataFrame(rows, columns=REPS_COLUMNS)


#: a scenario whose CPUs were idle less than this share of its traffic time was limited by the
#: host's CPU: its numbers say what these cores carried, not what the links would have
CPU_BOUND_IDLE = 0.10

HOST_CPU_COLUMNS = ["scenario", "reps", "idle", "softirq", "steal", "psi_some"]


def host_cpu_frame(summary: Summary) -> pd.DataFrame:
    """Per scenario, the host's CPU over its repetitions' traffic (record ``host_cpu``), each a
    share of the time, mean over the repetitions that recorded it: idle (the headroom),
    softirq (packet processing, the delay lines' kernel work), steal (the hypervisor's),
    psi_some (time some runnable task waited for a CPU). Empty when no repetition recorded it."""
    rows: dict[str, list[tuple[float, float, float, float]]] = {}
    for r in summary.scenarios:
        h = r.host_cpu
        capacity = h.interval_s * 1000 * h.cpus if h is not None else 0.0
        if h is None or capacity <= 0:
            continue
        psi = _num(h.psi_cpu_some_us) / 1000 / (h.interval_s * 1000)
        rows.setdefault(r.name, []).append((h.total.idle_ms / capacity, h.total.softirq_ms / capacity,
                                            h.total.steal_ms / capacity, psi))
    out = [{"scenario": name, "reps": len(v), **{c: sum(x[i] for x in v) / len(v)
                                                for i, c in enumerate(HOST_CPU_COLUMNS[2:])}}
           for name, v in rows.items()]
    return pd.DataFrame(out, columns=HOST_CPU_COLUMNS)


SUBFLOW_COLUMNS = ["scenario", "rep", "path", "src", "sport", "dst", "dport", "initial", "established",
                   "bytes", "share", "median_seg", "max_seg", "icmp_frag_needed", "retransmissions"]


def subflows_frame(summary: Summary) -> pd.DataFrame:
    """One row per scenario x repetition x subflow."""
    rows = []
    for r in summary.scenarios:
        for sf in r.subflows:
            rows.append({"scenario": r.name, "rep": r.rep, "path": sf.path or "?", "src": sf.src,
                         "sport": sf.sport, "dst": sf.dst, "dport": sf.dport, "initial": sf.initial,
                         "established": sf.established, "bytes": _num(sf.bytes), "share": _num(sf.share),
                         "median_seg": _num(sf.median_seg), "max_seg": _num(sf.max_seg),
                         "icmp_frag_needed": _num(sf.icmp_frag_needed),
                         "retransmissions": _num(sf.retransmissions)})
    return pd.DataFrame(rows, columns=SUBFLOW_COLUMNS)


PATH_COLUMNS = ["scenario", "path", "reps", "share_mean_over_reps", "share_std_over_reps",
                "median_seg_median_over_reps", "max_seg_max_over_reps", "icmp_frag_needed_total",
                "icmp_frag_needed_per_rep"]


def path_stats(summary: Summary) -> pd.DataFrame:
    """Per scenario x path over the repetitions (the summary's aggregates, aggregate.py's definitions)."""
    rows = []
    for a in summary.aggregates:
        for path, p in a.paths.items():
            rows.append({"scenario": a.scenario, "path": path, "reps": p.reps,
                         "share_mean_over_reps": _num(p.share_mean_over_reps),
                         "share_std_over_reps": _num(p.share_std_over_reps),
                         "median_seg_median_over_reps": _num(p.median_seg_median_over_reps),
                         "max_seg_max_over_reps": _num(p.max_seg_max_over_reps),
                         "icmp_frag_needed_total": p.icmp_frag_needed_total,
                         "icmp_frag_needed_per_rep": list(p.icmp_frag_needed_per_rep)})
    return pd.DataFrame(rows, columns=PATH_COLUMNS)


AGG_COLUMNS = ["scenario", "n", "goodput_mean", "goodput_std", "goodput_min", "goodput_max",
               "verified_reps", "mptcp_requested", "fallback_reps", "warning_reps"]


def aggregates_frame(summary: Summary) -> pd.DataFrame:
    """Per scenario: goodput mean/std/min/max over reps, MPTCP-verified and fallback reps."""
    rows = [{"scenario": a.scenario, "n": a.n, "goodput_mean": _num(a.goodput_mean),
             "goodput_std": _num(a.goodput_std), "goodput_min": _num(a.goodput_min),
             "goodput_max": _num(a.goodput_max), "verified_reps": a.verified_reps,
             "mptcp_requested": a.mptcp_requested, "fallback_reps": a.fallback_reps,
             "warning_reps": a.warning_reps} for a in summary.aggregates]
    return pd.DataFrame(rows, columns=AGG_COLUMNS)


PUBLISHED_COLUMNS = ["id", "scenario", "metric", "path", "flow", "window", "paper_value", "unit", "paper_kernel",
                     "where", "this_value", "this_statistic", "this_std", "this_n", "this_kernel", "note",
                     "paper_value_scaled"]


def published_frame(summary: Summary) -> pd.DataFrame:
    """The 'published vs this run' rows as the summary compared them."""
    src_kernel = summary.published_source.kernel if summary.published_source else None
    rows = [{"id": p.id, "scenario": p.scenario, "metric": p.metric, "path": p.path, "flow": p.flow,
             "window": p.window, "paper_value": _num(p.paper_value), "unit": p.unit or "",
             "paper_kernel": p.paper_kernel or src_kernel, "where": p.where,
             "this_value": _num(p.this_value), "this_statistic": p.this_statistic,
             "this_std": _num(p.this_std), "this_n": p.this_n,
             "this_kernel": p.this_kernel or summary.kernel, "note": p.note,
             "paper_value_scaled": _num(p.paper_value_scaled)} for p in summary.published]
    return pd.DataFrame(rows, columns=PUBLISHED_COLUMNS)


def published_for(summary: Summary, metric: str) -> pd.DataFrame:
    pub = published_frame(summary)
    if pub.empty:
        return pub
    return pub[(pub["metric"] == metric) & pub["scenario"].notna() & pub["paper_value"].notna()]


# --------------------------------------------------------------------------- display tables


def scenario_table(summary: Summary, bold: bool = True) -> pd.DataFrame:
    """Per-scenario table as display strings (the report's and the notebook's). The
    aggregation benefit column (metric ``aggregation_benefit``) only when a scenario has one."""
    from .aggregate import scenario_value  # aggregate imports the metrics, which import the model

    agg = aggregates_frame(summary)
    ps = path_stats(summary)
    paths = sorted(ps["path"].unique()) if not ps.empty else []
    ben = {name: scenario_value(summary.reps_of(name), "aggregation_benefit") for name in agg["scenario"]}
    with_ben = any(v.value is not None for v in ben.values())
    header = ["scenario", "reps", f"goodput {rate_unit(summary.scale)} (mean ± std)", "min – max", "MPTCP verified"]
    header += ["aggregation benefit (mean ± std)"] if with_ben else []
    header += [f"path {p}: share / median / max seg" for p in paths]
    header += ["ICMP frag-needed (total; per rep)"]
    rows = []
    for _, a in agg.iterrows():
        name = a["scenario"]
        mp = (f"{a['verified_reps']}/{a['n']}" if a["mptcp_requested"] else "TCP")
        if a["mptcp_requested"] and a["fallback_reps"]:
            fb = f"{a['fallback_reps']} fallback"
            mp += f" (**{fb}**)" if bold else f" ({fb.upper()})"
        rng = (f"{fmt_num(a['goodput_min'], 'goodput_mbps')} – {fmt_num(a['goodput_max'], 'goodput_mbps')}"
               if not missing(a["goodput_min"]) else DASH)
        row = [name, a["n"], fmt_mean_std(a["goodput_mean"], a["goodput_std"], "goodput_mbps"), rng, mp]
        if with_ben:
            row.append(fmt_mean_std(ben[name].value, ben[name].std, "aggregation_benefit"))
        icmp_parts = []
        for p in paths:
            r = ps[(ps["scenario"] == name) & (ps["path"] == p)]
            if r.empty:
                row.append(DASH)
                continue
            r = r.iloc[0]
            row.append(f"{fmt_num(r['share_mean_over_reps'], 'subflow_share')} / "
                       f"{fmt_num(r['median_seg_median_over_reps'], 'median_seg')} / "
                       f"{fmt_num(r['max_seg_max_over_reps'], 'max_seg')}")
            if not missing(r["icmp_frag_needed_total"]):
                per = ", ".join(fmt_num(x) for x in r["icmp_frag_needed_per_rep"])
                icmp_parts.append(f"{p}: {fmt_num(r['icmp_frag_needed_total'])} ({per})")
        row.append("; ".join(icmp_parts) if icmp_parts else DASH)
        rows.append(row)
    return pd.DataFrame(rows, columns=header)


def measured_flow_names(summary: Summary, scenario: str) -> list[str]:
    """The scenario's measured flows, in the lab's order, when it has two or more (one flow
    alone has nothing to share: its numbers are the scenario table's)."""
    names: dict[str, None] = {}
    for r in summary.reps_of(scenario):
        names.update(dict.fromkeys(f.name for f in r.flows if f.role == "measured"))
    return list(names) if len(names) > 1 else []


def flows_frame(summary: Summary) -> pd.DataFrame:
    """One row per scenario x measured flow, for scenarios with several measured flows: the
    flow's goodput and share (metrics/flows.py) and the scenario's Jain's index, each the
    metric's one aggregate over the repetitions (results/aggregate.py)."""
    from .aggregate import scenario_value  # aggregate imports the metrics, which import the model

    rows = []
    for name in summary.scenario_order():
        reps = summary.reps_of(name)
        jain = scenario_value(reps, "jain_index")
        for flow in measured_flow_names(summary, name):
            g = scenario_value(reps, "flow_goodput_mbps", flow=flow)
            sh = scenario_value(reps, "flow_share", flow=flow)
            mptcp = [f.mptcp.verified for r in reps for f in r.flows if f.name == flow and f.mptcp.requested]
            rows.append({"scenario": name, "flow": flow,
                         "mptcp": f"{sum(mptcp)}/{len(mptcp)}" if mptcp else "TCP",
                         "goodput_mean": _num(g.value), "goodput_std": _num(g.std),
                         "share_mean": _num(sh.value), "share_std": _num(sh.std),
                         "jain_mean": _num(jain.value), "jain_std": _num(jain.std), "n": g.n})
    return pd.DataFrame(rows, columns=["scenario", "flow", "mptcp", "goodput_mean", "goodput_std", "share_mean",
                                       "share_std", "jain_mean", "jain_std", "n"])


def flows_table(summary: Summary) -> pd.DataFrame:
    """flows_frame as display strings (the report's and the notebook's)."""
    fr = flows_frame(summary)
    rows = [[f["scenario"], f["flow"], f["mptcp"],
             fmt_mean_std(f["goodput_mean"], f["goodput_std"], "goodput_mbps"),
             fmt_mean_std(f["share_mean"], f["share_std"], "subflow_share"),
             fmt_mean_std(f["jain_mean"], f["jain_std"], "jain_index"), f["n"]] for _, f in fr.iterrows()]
    return pd.DataFrame(rows, columns=["scenario", "flow", "MPTCP verified",
                                       f"goodput {rate_unit(summary.scale)} (mean ± std)", "share (mean ± std)",
                                       "Jain's index (mean ± std)", "reps"])


def this_run_cell(p: pd.Series) -> str:
    """This run's value of a published row: mean ± std for a mean, else the statistic named."""
    n = int(p["this_n"]) if not missing(p["this_n"]) else 0
    if not n or missing(p["this_value"]):
        return DASH
    stat = text(p["this_statistic"]) or ""
    metric = text(p["metric"])
    if stat.startswith("mean"):
        return fmt_mean_std(p["this_value"], p["this_std"] if n > 1 else None, metric)
    return f"{fmt_num(p['this_value'], metric)} ({stat})" if n > 1 else fmt_num(p["this_value"], metric)


def published_table(summary: Summary) -> pd.DataFrame:
    """'Published vs this run' as display strings; DASH wherever this run has no value."""
    pub = published_frame(summary)
    rows = []
    for _, p in pub.iterrows():
        # which path, flow or window the number is of: two flows of one scenario (labs/cc)
        # differ only here
        window = p["window"] if isinstance(p["window"], list) and len(p["window"]) == 2 else None
        of = Select(text(p["path"]) or None, text(p["flow"]) or None,
                    (float(window[0]), float(window[1])) if window else None).describe()
        metric = (text(p["metric"]) or DASH) + (f" ({of})" if of else "")
        unit = text(p["unit"]) or ""
        paper = f"{p['paper_value']:g} {unit}".strip() if not missing(p["paper_value"]) else DASH
        if not missing(p["paper_value_scaled"]):  # a rate, in a scaled run: compared scaled
            paper += f"; compared scaled {fmt_factor(summary.scale)}: {p['paper_value_scaled']:g} {unit}".rstrip()
        n = int(p["this_n"]) if not missing(p["this_n"]) else 0
        rows.append([p["id"], text(p["scenario"]) or DASH, metric, paper, text(p["paper_kernel"]) or DASH,
                     text(p["where"]) or DASH, this_run_cell(p), n if n else DASH,
                     (text(p["this_kernel"]) or DASH) if n else DASH])
    this_run = ("this run (functional check)" if functional_check_reason(summary)
                else "this run (mean ± std, or the statistic named)")
    if summary.scale != 1:
        this_run += f", rates scaled {fmt_factor(summary.scale)}"
    header = ["id", "scenario", "metric", "paper", "paper kernel", "where", this_run, "n", "this kernel"]
    return pd.DataFrame(rows, columns=header)


def published_notes(summary: Summary) -> list[tuple[str, str]]:
    """(id, note) for the published values whose conditions the lab file describes."""
    return [(p.id, p.note) for p in summary.published if p.note]


def _check_stat(c: CheckStat) -> str:
    if c.estimate is None:
        return DASH
    n = " x ".join(str(k) for k in c.n)
    if c.low is None or c.high is None:
        return f"{fmt_num(c.estimate)} (n = {n}; {c.method})"
    conf = f"{c.confidence:.0%}" if c.confidence is not None else "?"
    return f"{fmt_num(c.estimate)} [{fmt_num(c.low)}, {fmt_num(c.high)}] ({conf}, n = {n})"


def statistic_cell(f: FindingRow) -> str:
    """Each check's statistic with its interval, its coverage and n."""
    return "; ".join(f"{c.statistic}: {_check_stat(c)}" if c.statistic else _check_stat(c)
                     for c in f.checks) or DASH


def claim_cell(f: FindingRow) -> str:
    """Each check's claim with where its value comes from."""
    return "; ".join((c.target or DASH) + (f" ({c.source})" if c.source else "") for c in f.checks) or DASH


def findings_table(summary: Summary, bold: bool = True, setup: bool = False) -> pd.DataFrame:
    """The paper's findings (or, ``setup``, the lab's setup checks) and each one's verdict,
    as display strings: the verdict, the statistic with its interval, the claim with its
    source, the evidence."""
    rows = [[f.id, f.scenario or DASH, f.statement or DASH, f.where or DASH,
             f"**{f.shown}**" if bold and f.verdict == "does not hold" else f.shown,
             statistic_cell(f), claim_cell(f), f.evidence or DASH]
            for f in (summary.setup_checks if setup else summary.findings)]
    return pd.DataFrame(rows, columns=["id", "scenario", "statement", "where", "verdict",
                                       "statistic [interval] (coverage, n)", "claim (source)", "evidence"])


def verdict_counts(rows: Sequence[FindingRow]) -> dict[str, int]:
    """How many findings have each verdict, in VERDICTS' order."""
    return {v: sum(1 for f in rows if f.verdict == v) for v in VERDICTS}


def calibration_rows(cal: Any) -> list[dict[str, Any]]:
    """Flatten the manifest's calibration into one row per link check.

    The runner writes {scenario: {"rep1": [{"link", "configured", "checks": [...], "ok"}]}};
    a flat list of link dicts, or {link: dict}, are accepted too.
    """
    rows: list[dict[str, Any]] = []
    levels = ["scenario", "rep"]

    def link_rows(entry: dict[str, Any], ctx: dict[str, Any]) -> None:
        base = {**ctx, "link": entry.get("link")}
        checks = entry.get("checks")
        if isinstance(checks, list) and checks:
            for c in checks:
                rows.append({**base, **c})
        else:
            rows.append({**base, **{k: v for k, v in entry.items() if k not in ("link", "checks")}})

    def walk(obj: Any, ctx: dict[str, Any], depth: int) -> None:
        if isinstance(obj, list):
            for e in obj:
                if isinstance(e, dict):
                    link_rows(e, dict(ctx))
        elif isinstance(obj, dict):
            if "link" in obj or "checks" in obj:
                link_rows(obj, dict(ctx))
            elif all(isinstance(v, (dict, list)) for v in obj.values()):
                name = levels[depth] if depth < len(levels) else f"level{depth}"
                for k, v in obj.items():
                    if isinstance(v, dict) and not any(isinstance(x, (dict, list)) for x in v.values()):
                        link_rows({"link": k, **v}, dict(ctx))  # {link: {...}} form
                    else:
                        walk(v, {**ctx, name: k}, depth + 1)
            else:
                link_rows(obj, dict(ctx))

    walk(cal, {}, 0)
    return rows


def sysctl_rows(sysctls: Any) -> list[list[str]]:
    """(node, sysctl, value, scenarios) rows from the manifest's read-back sysctls.

    The runner writes {scenario: {node: {name: value}}}; a value the same in every scenario
    is one row ("all"), one that differs gets a row per value with the scenarios that had it.
    {node: {name: value}} (no scenarios) is accepted too.
    """
    if not isinstance(sysctls, dict) or not sysctls:
        return []
    per_scenario = all(isinstance(v, dict) and all(isinstance(x, dict) for x in v.values())
                       for v in sysctls.values())
    if not per_scenario:
        sysctls = {"all": sysctls}
    seen: dict[tuple[str, str], dict[str, list[str]]] = {}
    for scen, nodes in sysctls.items():
        for node, vals in (nodes or {}).items():
            if not isinstance(vals, dict):
                vals = {DASH: vals}
            for k, v in vals.items():
                seen.setdefault((node, k), {}).setdefault(str(v), []).append(str(scen))
    n_scen = len(sysctls)
    rows = []
    for (node, k), by_value in seen.items():
        for v, scens in by_value.items():
            where = "all" if len(by_value) == 1 and len(scens) == n_scen else ", ".join(scens)
            rows.append([node, k, v, where])
    return rows

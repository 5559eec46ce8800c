"""The short table printed at the end of `make lab-<name>`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..record.model import Summary
from ..units import rate_unit
from .fmt import DASH, fmt_mean_std, fmt_num, missing, text
from .policy import FUNCTIONAL, collect_warnings, functional_check_reason
from .read import as_summary
from .tables import CPU_BOUND_IDLE, aggregates_frame, flows_frame, host_cpu_frame, path_stats, published_frame

_SHORT = {"goodput_mbps": "goodput", "subflow_share": "share", "median_seg": "median seg",
          "max_seg": "max seg", "icmp_frag_needed": "ICMP", "flow_goodput_mbps": "goodput",
          "flow_share": "share"}


def print_table(summary: Summary | dict[str, Any]) -> str:
    """scenario, goodput, MPTCP verified reps, per path share / median segment (median over
    reps), and the paper's numbers for that scenario where it has any."""
    s = as_summary(summary)
    agg = aggregates_frame(s)
    ps = path_stats(s)
    pub = published_frame(s)
    paths = sorted(ps["path"].unique()) if not ps.empty else []
    fr = flows_frame(s)
    header = ["scenario", f"goodput {rate_unit(s.scale)}", "MPTCP"] + [f"{p}: share / seg" for p in paths]
    # several measured flows at once (labs/cc): each flow's goodput and share, and Jain's index
    header += ["flows: goodput (share); Jain"] if not fr.empty else []
    header += ["paper"]
    rows = []
    for _, a in agg.iterrows():
        name = a["scenario"]
        mp = f"{a['verified_reps']}/{a['n']}" if a["mptcp_requested"] else "TCP"
        if a["mptcp_requested"] and a["fallback_reps"]:
            mp += " FALLBACK"
        row = [name, fmt_mean_std(a["goodput_mean"], a["goodput_std"], "goodput_mbps"), mp]
        for p in paths:
            r = ps[(ps["scenario"] == name) & (ps["path"] == p)]
            row.append(DASH if r.empty else
                       f"{fmt_num(r['share_mean_over_reps'].iloc[0], 'subflow_share')} / "
                       f"{fmt_num(r['median_seg_median_over_reps'].iloc[0], 'median_seg')}")
        if not fr.empty:
            mine = fr[fr["scenario"] == name]
            each = [f"{f['flow']} {fmt_num(f['goodput_mean'], 'goodput_mbps')} "
                    f"({fmt_num(f['share_mean'], 'subflow_share')})" for _, f in mine.iterrows()]
            jain = [f"J {fmt_num(mine['jain_mean'].iloc[0], 'jain_index')}"] if not mine.empty else []
            row.append("; ".join(each + jain) or DASH)
        paper = []
        for _, p in pub[pub["scenario"] == name].iterrows():
            if missing(p["paper_value"]):
                continue
            what = _SHORT.get(p["metric"], p["metric"])
            if text(p["path"]):
                what = f"{p['path']} {what}"
            if text(p["flow"]):
                what = f"{p['flow']} {what}"
            scaled = p["paper_value_scaled"]
            as_run = f" (×{s.scale:g}: {scaled:g})" if not missing(scaled) else ""
            paper.append(f"{what} {p['paper_value']:g}{as_run}")
        row.append("; ".join(paper) if paper else DASH)
        rows.append(row)
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(header)]

    def line(cells: Sequence[Any]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    state = ", ".join(["complete" if s.complete else "INCOMPLETE",
                       "valid" if s.valid is not False else "INVALID",
                       "QUICK" if s.quick else "full"])
    out = [f"{s.lab} run {s.run_id} on kernel {s.kernel or '?'} ({state})"]
    src = s.published_source
    if src and src.kernel:
        out.append(f"paper: {src.id or '?'} on {src.kernel}")
    functional = functional_check_reason(s)
    if functional:
        out.append(f"{FUNCTIONAL}: {functional}")
    if s.scale != 1:
        out.append(f"SCALED RUN: every link rate ×{s.scale:g} (delays kept); goodput is in scaled Mbit/s, "
                   f"the paper's rates are compared ×{s.scale:g}")
    out += ["", line(header), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    hc = host_cpu_frame(s)
    bound = hc[hc["idle"] < CPU_BOUND_IDLE]["scenario"].tolist() if not hc.empty else []
    if bound:
        out += ["", f"CPU-BOUND (CPUs idle below {CPU_BOUND_IDLE:.0%} during the traffic): {', '.join(bound)}: "
                "their numbers are this host's, not the links' (report.md, Host CPU)"]
    n_warn = len(collect_warnings(s))
    if n_warn:
        out += ["", f"{n_warn} WARNING(S): see the WARNINGS section of report.md"]
    return "\n".join(out) + "\n"

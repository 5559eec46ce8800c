"""report.md and figures/*.png for one run directory.

The report reads only what the run wrote (summary.json and manifest.json through the result
model, per-rep CSV files): it measures nothing and hard-codes no number. Its job is to make
the run legible: what ran on which kernel, what the paper said, what this kernel did, and,
loudly, everything that went wrong (policy.py decides what that is; this module writes it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ..checks.stats import CONFIDENCE
from ..emulation.trace import Trace, load_trace, traces_dir
from ..record.model import FindingRow, Manifest, Summary, Warning, load_manifest
from ..units import fmt_factor, rate_unit
from . import figures as F
from .crossover import CROSSOVER_COLUMNS, crossover_rows
from .fmt import DASH, df_to_md, fmt_num, md_table, show, yes_no
from .handshake import load_syn_synack, plot_syn_synack_cdf
from .policy import collect_warnings, functional_check_reason
from .read import as_summary, load_events, load_icmp, load_subflow_series, load_summary, load_timeseries
from .tables import (
    CPU_BOUND_IDLE,
    aggregates_frame,
    calibration_rows,
    findings_table,
    flows_table,
    host_cpu_frame,
    published_notes,
    published_table,
    reps_frame,
    scenario_table,
    subflows_frame,
    sysctl_rows,
    verdict_counts,
)
from .terminal import print_table


def _header(summary: Summary, manifest: Manifest) -> list[str]:
    src = summary.published_source
    agg = aggregates_frame(summary)
    reps = summary.repetitions or (int(agg["n"].max()) if not agg.empty else 0)
    commit, dirty = manifest.git.commit, manifest.git.dirty
    wall, traffic = manifest.wall_seconds, manifest.traffic_seconds
    rows: list[tuple[str, Any]] = [
        ("lab", summary.lab),
        ("run id", summary.run_id),
        ("kernel (this run)", summary.kernel or manifest.kernel),
        ("project kernel patches", "; ".join(f"{k.name}: {'yes' if k.present else 'no'} ({k.evidence})"
                                             for k in manifest.kernel_patches or []) or None),
        ("OS", manifest.os_release),
        ("complete", yes_no(summary.complete)),
        ("valid", yes_no(summary.valid)),
        ("run kind", summary.run_kind),
        ("mode", "QUICK (1 repetition, short transfers)" if summary.quick
         else f"full ({reps} repetitions per scenario)"),
        ("subset", _subset_text(manifest)),
        ("started", manifest.started),
        ("finished", manifest.finished),
        ("wall time / traffic time", f"{fmt_num(wall)} s / {fmt_num(traffic)} s" if wall is not None else None),
        ("git commit", f"{commit}{' (dirty)' if dirty else ''}" if commit else None),
        ("CPUs", manifest.cpu_count),
        ("network backend", manifest.backend),
        ("link emulation", manifest.link_emulation),
        ("scale", _scale_text(summary, manifest)),
        ("paper", f"{src.title or DASH} ({src.id or DASH})" if src else None),
        ("paper kernel", src.kernel if src else None),
        ("results format", f"version {summary.format_version}"),
    ]
    lines = [f"# Lab `{summary.lab}`: run `{summary.run_id}`", ""]
    functional = functional_check_reason(summary)
    if functional:
        lines += [f"> **Functional check, not a measurement**: {functional}. No number in this report "
                  "measures the kernel or reproduces (or contradicts) the paper's numbers.", ""]
    lines += [md_table(["", ""], [(k, v) for k, v in rows if v is not None]), ""]
    lines += _subset_note(manifest)
    if manifest.not_on_this_kernel:
        lines += [f"> **Not run on this kernel** ({len(manifest.not_on_this_kernel)} scenario(s)): every finding "
                  "of each needs what this kernel lacks (published.yml `requires`), so it was left out, as "
                  "mptcp_join.sh's `continue_if` skips such a case: "
                  + "; ".join(f"`{n}`: {why}" for n, why in manifest.not_on_this_kernel.items()) + ".", ""]
    if summary.quick:
        lines += ["> **Quick mode.** One repetition with shortened transfers: there is no spread, "
                  "slow-start and PMTUD transients weigh more, and the numbers are for checking "
                  "the lab works, not for comparing with the paper. Run without `--quick` for that.", ""]
    return lines


def _subset_text(manifest: Manifest) -> str | None:
    sub = manifest.subset
    if not sub:
        return None
    total = sub.get("scenarios_in_lab")
    of = f" ({sub.get('scenarios_run')} of {total} scenarios)" if total else ""
    return f"`{sub.get('name')}`{of}: {' '.join(map(str, sub.get('scenarios') or []))}"


def _subset_note(manifest: Manifest) -> list[str]:
    """A subset run says which of the paper's findings it cannot judge (manifest ``subset``)."""
    sub = manifest.subset
    if not sub:
        return []
    not_run, partly = sub.get("findings_not_run") or [], sub.get("findings_partly_run") or []
    text = (f"> **Subset `{sub.get('name')}` of the lab**, not the whole lab. Findings it cannot judge "
            f"(none of their checks' scenarios ran; 'unknown' below): {', '.join(not_run) or 'none'}.")
    if partly:
        text += f" Judged in part (some checks' scenarios ran: 'no' is a verdict, 'yes' is not): {', '.join(partly)}."
    return [text, ""]


def _scale_text(summary: Summary, manifest: Manifest) -> str | None:
    """The run's scale factor, where it came from and what it left alone (lab/scale.py)."""
    if summary.scale == 1:
        return None
    rec = manifest.scale or {}
    unscaled = rec.get("unscaled_fields") or []
    why = f"; why: {rec['reason']}" if rec.get("reason") else ""
    return (f"**every link rate {fmt_factor(summary.scale)}** ({rec.get('source', '?')}{why}); delays, loss, MTUs "
            "unchanged; goodput is in scaled Mbit/s and compared with the paper's rates "
            f"{fmt_factor(summary.scale)}" + (f"; not scaled: {', '.join(unscaled)}" if unscaled else ""))


def _records_table(records: list[dict[str, Any]]) -> str:
    cols: list[str] = []
    for r in records:
        cols += [k for k in r if k not in cols]
    return md_table(cols, [[show(r.get(c)) for c in cols] for r in records])


def _calibration(manifest: Manifest) -> list[str]:
    rows = calibration_rows(manifest.calibration)
    emulation = manifest.link_emulation or DASH
    lines = ["## Link emulation and calibration", ""]
    if not rows:
        return lines + [f"Link emulation: {emulation}. The manifest records no link calibration for this run.", ""]
    bad = [r for r in rows if r.get("ok") is False]
    lines += [f"Link emulation: {emulation}. Every repetition checks "
              "each emulated link's RTT against its configuration; the rate is measured once per run "
              "for each distinct link configuration and shown with every repetition that relies on it.", ""]
    if bad:
        lines += [f"**{len(bad)} of {len(rows)} link checks out of tolerance:**", "", _records_table(bad), ""]
    else:
        lines += [f"All {len(rows)} link checks within tolerance.", ""]
    return lines + ["<details><summary>every link check</summary>", "", _records_table(rows), "", "</details>", ""]


def _host_cpu_section(summary: Summary) -> list[str]:
    """How much of the two cores the traffic left: a scenario that had no headroom measured
    the host, and the report says so beside its numbers' section. Nothing when no repetition
    recorded the host's CPU (runs before the probe)."""
    hc = host_cpu_frame(summary)
    if hc.empty:
        return []
    bound = hc[hc["idle"] < CPU_BOUND_IDLE]["scenario"].tolist()
    rows = [[str(r["scenario"]), str(r["reps"]), f"{float(r['idle']):.0%}", f"{float(r['softirq']):.0%}",
             f"{float(r['steal']):.1%}", DASH if math.isnan(float(r["psi_some"])) else f"{float(r['psi_some']):.0%}"]
            for r in hc.to_dict("records")]
    lines = ["## Host CPU during the traffic", "",
             "Shares of the CPUs' time over each repetition's traffic (/proc/stat and /proc/pressure/cpu, "
             "record `host_cpu`), mean over repetitions: idle is the headroom; softirq is packet work "
             "(the delay lines' included); steal is the hypervisor's; PSI some is the time a runnable "
             "task waited for a CPU.", ""]
    if bound:
        lines += [f"**CPU-bound (idle below {CPU_BOUND_IDLE:.0%}): {', '.join(bound)}.** These numbers are "
                  "what this host's cores carried, not what the emulated links allow.", ""]
    else:
        lines += [f"Every scenario left at least {CPU_BOUND_IDLE:.0%} of the CPUs idle.", ""]
    header = ["scenario", "reps", "idle", "softirq", "steal", "PSI some"]
    return lines + ["<details><summary>per scenario</summary>", "", md_table(header, rows), "", "</details>", ""]


def _warnings_section(warnings: list[Warning]) -> list[str]:
    lines = ["## WARNINGS", ""]
    if not warnings:
        return lines + ["None: every MPTCP scenario was verified, every subflow formed and "
                        "carried data, and the run is complete and valid.", ""]
    lines += [f"**{len(warnings)} warning(s). Read these before any number below.**", ""]
    lines += [f"- **WARNING** {w.message}" for w in warnings]
    return lines + [""]


def _scenario_section(summary: Summary) -> list[str]:
    table = scenario_table(summary)
    lines = ["## Scenarios", "",
             "Goodput is iperf3's receiver-side figure (mean ± std over reps); share is the fraction of "
             "the connection's bytes each path carried (mean over reps); segment sizes are TCP payload "
             "bytes seen in the capture: median over reps of each rep's median, and max over reps "
             "(docs/results-format.md, Aggregates)."
             + (" Aggregation benefit (Kaspar et al.): goodput against the paths' configured rates, 1 = their "
                "sum, 0 = the best path alone, < 0 below it." if any(c.startswith("aggregation benefit")
                                                                   for c in table.columns) else ""), ""]
    return lines + [df_to_md(table) if not table.empty else "No scenario results in this run.", ""]


def _flows_section(summary: Summary) -> list[str]:
    """Scenarios with several measured flows at once: each flow beside the others. Nothing
    for a run whose scenarios each measure one flow."""
    table = flows_table(summary)
    if table.empty:
        return []
    return ["## Flows measured together", "",
            "Scenarios with several measured flows: each flow's goodput (receiver side), its share of "
            "the flows' summed goodput, and Jain's fairness index across them (1: equal; 1/n: one flow "
            "takes everything), each mean ± std over reps (metrics flow_goodput_mbps, flow_share, "
            "jain_index; the scenario table above shows the first measured flow only).", "",
            df_to_md(table), ""]


def _per_rep_section(summary: Summary) -> list[str]:
    sf = subflows_frame(summary)
    reps = reps_frame(summary)
    lines = ["## Per repetition and subflow", ""]
    if reps.empty:
        return lines + ["No repetitions recorded.", ""]
    rows = []
    for _, r in reps.iterrows():
        subs = sf[(sf["scenario"] == r["scenario"]) & (sf["rep"] == r["rep"])]
        mp = ("TCP" if not r["mptcp_requested"] else "fallback" if r["fallback"]
              else "verified" if r["mptcp_verified"] else "**not verified**")
        if subs.empty:
            rows.append([r["scenario"], r["rep"], fmt_num(r["goodput_mbps"], "goodput_mbps"), mp] + [DASH] * 9)
            continue
        for _, s in subs.iterrows():
            rows.append([
                r["scenario"], r["rep"], fmt_num(r["goodput_mbps"], "goodput_mbps"), mp,
                s["path"], f"{s['src']}:{s['sport']} → {s['dst']}:{s['dport']}",
                yes_no(s["initial"], no="no"), yes_no(s["established"]), fmt_num(s["bytes"]),
                fmt_num(s["share"], "subflow_share"),
                f"{fmt_num(s['median_seg'], 'median_seg')} / {fmt_num(s['max_seg'], 'max_seg')}",
                fmt_num(s["icmp_frag_needed"]), fmt_num(s["retransmissions"]),
            ])
    header = ["scenario", "rep", f"goodput {rate_unit(summary.scale)}", "MPTCP", "path", "subflow", "initial",
              "established", "bytes", "share", "median / max seg", "ICMP frag-needed", "retransmissions"]
    return lines + [md_table(header, rows), ""]


def _published_section(summary: Summary) -> list[str]:
    table = published_table(summary)
    src = summary.published_source
    lines = ["## Published vs this run", ""]
    if table.empty:
        return lines + ["The lab has no published values to compare with.", ""]
    lines += [f"Paper: {(src.title if src else None) or DASH}. Its numbers were measured on "
              f"{(src.kernel if src else None) or DASH}; this run on {summary.kernel or DASH}. "
              "This run's column is each metric's one aggregate over the repetitions (goodput, "
              "share and ICMP counts: mean with its standard deviation; median segment: median; max segment: max). "
              "A value with no scenario here needs something this lab does not run "
              "(usually the paper's patched kernel).", ""]
    lines += [df_to_md(table), ""]
    if functional_check_reason(summary):
        lines += ["*This run is a functional check on a software-emulated CPU: its column is no "
                  "reproduction of the paper's numbers, and a difference is no evidence against them.*", ""]
    notes = published_notes(summary)
    if notes:
        lines += ["Conditions of the paper's numbers:", ""] + [f"- `{i}`: {n}" for i, n in notes] + [""]
    return lines


def _counts_line(rows: list[FindingRow]) -> str:
    counts = verdict_counts(rows)
    return ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "none"


def _skipped_line(rows: list[FindingRow]) -> str:
    """" N checks in M findings skipped ..." when this kernel lacks what some checks read."""
    gone = sorted({(c.brief or c.statistic or "?").split(" ", 1)[0] for f in rows for c in f.skipped})
    n = sum(len(f.skipped) for f in rows)
    if not n:
        return ""
    return (f" {n} check(s) in {sum(1 for f in rows if f.skipped)} finding(s) skipped, not on this kernel "
            f"(neither pass nor fail; each finding judged on its other checks): {', '.join(gone)}.")


def _findings_section(summary: Summary) -> list[str]:
    table = findings_table(summary)
    lines = ["## Findings of the paper, checked on this run", ""]
    if table.empty:
        return lines + ["The lab lists no findings.", ""]
    lines += [f"Verdicts: {_counts_line(summary.findings)}.{_skipped_line(summary.findings)}", "",
              "Each check compares a statistic of the repetitions with the paper's claim (lab file: `expect`, "
              "with the claim's source: the paper, a derivation or the project's convention). The verdict "
              f"comes from the statistic's {CONFIDENCE:.0%} interval over the repetitions "
              "(mptcplab/checks/stats.py): the median's order-statistic interval, or between two scenarios "
              "the Hodges-Lehmann difference or ratio with Moses' interval. *holds*: the whole interval "
              "satisfies the claim; *does not hold*: none of it does; *inconclusive*: it straddles the "
              "claim, or the repetitions are too few for the interval's coverage (shown beside it) to "
              "reach the level; *not measurable*: this run cannot decide it (the evidence says why). "
              "`min`/`max` checks are claims about every/some repetition and have no interval.", ""]
    if functional_check_reason(summary):
        lines += ["*Functional check: only findings about whether something happens (a subflow forms, "
                  "a segment size appears) mean anything here; those about goodput, shares or timing do "
                  "not.*", ""]
    lines += [df_to_md(table), ""]
    setup = findings_table(summary, setup=True)
    if not setup.empty:
        lines += ["### Setup checks (the lab's own configuration, not the paper's claims)", "",
                  f"Verdicts: {_counts_line(summary.setup_checks)}. These read back what the lab configured; "
                  "they say whether the run did what it was asked, and are never counted as findings.", "",
                  df_to_md(setup), ""]
    return lines


def _crossover_section(summary: Summary) -> list[str]:
    """The size sweep's crossovers (crossover.py): nothing for a lab without scenario families."""
    rows = crossover_rows(summary)
    if not rows:
        return []
    lines = ["## Crossovers of the size sweep", "",
             "The size from which one family of scenarios (`<family>-<size>k`) does better than another: "
             "where the ratio of this run's aggregates (family / other, per size) last rises through 1, "
             "interpolated on log size (mptcplab/results/crossover.py). A result of this run, never "
             "written in the lab files: it moves with rate × RTT and the CPU.", "",
             md_table(CROSSOVER_COLUMNS, rows), ""]
    if functional_check_reason(summary):
        lines += ["*Functional check: these ratios do not measure the kernel.*", ""]
    return lines


def _details_section(manifest: Manifest) -> list[str]:
    lines = ["## Run details (from manifest.json)", ""]
    if not manifest.present:
        return lines + ["This run has no manifest.json.", ""]
    rows = sysctl_rows(manifest.sysctls)
    if rows:
        lines += ["Sysctls as read back from each node (first repetition of each scenario):", "",
                  md_table(["node", "sysctl", "value", "scenarios"], rows), ""]
    if manifest.tools:
        lines += ["Tools:", "", md_table(["tool", "version"], list(manifest.tools.items())), ""]
    if manifest.lab_files_sha256:
        lines += ["Lab files:", "", md_table(["file", "sha256"], list(manifest.lab_files_sha256.items())), ""]
    if manifest.command_line:
        lines += [f"Command line: `{' '.join(map(str, manifest.command_line))}`", ""]
    return lines


def render_report(
    summary: Summary | dict[str, Any],
    manifest: Manifest | dict[str, Any] | None = None,
    figure_files: dict[str, str] | None = None,
    missing_files: Sequence[str] = (),
    figure_errors: Sequence[str] = (),
    figures_left_out: bool = False,
) -> str:
    """report.md text. figure_files maps a caption to a path relative to the run directory;
    ``figures_left_out``: the run drew none (``run --no-figures``), and the report says how to."""
    s = as_summary(summary)
    m = manifest if isinstance(manifest, Manifest) else (
        Manifest.model_validate(manifest) if manifest else Manifest(present=False))
    lines: list[str] = []
    lines += _header(s, m)
    lines += _warnings_section(collect_warnings(s, missing_files, figure_errors, m))
    lines += _calibration(m)
    lines += _host_cpu_section(s)
    lines += _scenario_section(s)
    lines += _flows_section(s)
    lines += _published_section(s)
    lines += _findings_section(s)
    lines += _crossover_section(s)
    if figures_left_out:
        lines += ["## Figures", "", "Not drawn by this run (`--no-figures`): `mptcplab report RUN_DIR` draws them "
                  "from its files.", ""]
    if figure_files:
        lines += ["## Figures", ""]
        for caption, rel in figure_files.items():
            lines += [f"### {caption}", "", f"![{caption}]({rel})", ""]
    lines += _per_rep_section(s)
    lines += _details_section(m)
    return "\n".join(lines).rstrip() + "\n"


def _save(fig: Figure, path: Path) -> None:
    fig.savefig(path, dpi=100, format="png")


def write_figures(run_dir: Path, summary: Summary,
                  manifest: Manifest) -> tuple[dict[str, str], list[str], list[str]]:
    """Draw every report figure into <run_dir>/figures/.

    Returns (caption -> relative path, missing input files, figure errors). A figure that
    fails is reported in the WARNINGS, not allowed to lose the whole report at the end of a
    long run.
    """
    figdir = run_dir / "figures"
    figdir.mkdir(exist_ok=True)
    ts = load_timeseries(run_dir, summary)
    icmp = load_icmp(run_dir, summary)
    events = load_events(run_dir, summary)
    missing = list(ts.attrs.get("missing", [])) + list(icmp.attrs.get("missing", []))
    order = summary.scenario_order()
    plan: list[tuple[str, str, Callable[[], Figure]]] = [
        ("Throughput over time", "throughput.png",
         lambda: F.plot_throughput(ts, [s for s in order if (ts["scenario"] == s).any()] if not ts.empty else None,
                                   events=events, scale=summary.scale)),
        ("Goodput per scenario", "goodput.png", lambda: F.plot_goodput(summary)),
        ("Per-subflow byte share", "subflow_share.png", lambda: F.plot_subflow_share(summary)),
        ("Segment sizes per path", "segment_sizes.png", lambda: F.plot_segment_sizes(summary, icmp)),
        ("ICMP events", "icmp.png", lambda: F.plot_icmp(icmp, order, events=events)),
    ]
    traces = run_traces(manifest)
    if traces:
        plan.append(("Capacity of each replayed trace", "traces.png", lambda: F.plot_trace_capacity(traces)))
    handshakes = load_syn_synack(run_dir, summary)
    missing += list(handshakes.attrs.get("missing", []))
    if not handshakes.empty:  # flows that open many connections (churn, http): labs/setup
        plan.append(("SYN -> SYN/ACK at the server (CDF)", "syn_synack_cdf.png",
                     lambda: plot_syn_synack_cdf(handshakes, order)))
    series = load_subflow_series(run_dir, summary)
    if not series.empty:  # only runs with the tcp_probe probe
        plan.append(("Congestion window per subflow (tcp_probe)", "cwnd.png", lambda: F.plot_cwnd(series, order)))
    # DSN vs time of the first repetition of each MPTCP scenario (the files are per repetition)
    for r in summary.scenarios:
        d = run_dir / r.rel_dir()
        if r.rep != 1 or not r.mptcp.negotiated or not (d / "dsn.csv").is_file():
            continue
        plan.append((f"Data sequence numbers per subflow, {r.name}", f"dsn-{r.name}.png",
                     partial(_dsn_figure, d, r.name)))
        # runs before delivery.py have no hol.csv; a run without a receiver capture a header only
        if (d / "hol.csv").is_file() and len((d / "hol.csv").read_text().splitlines()) > 1:
            plan.append((f"Reordering and head-of-line delay, {r.name}", f"delivery-{r.name}.png",
                         partial(_delivery_figure, d, r.name)))
    files: dict[str, str] = {}
    errors: list[str] = []
    for caption, name, draw in plan:
        try:
            _save(draw(), figdir / name)
            files[caption] = f"figures/{name}"
        except Exception as exc:  # noqa: BLE001 - reported in the WARNINGS section
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
    return files, missing, errors


def run_traces(manifest: Manifest) -> list[Trace]:
    """The delivery traces the run's links replayed, from the link checks' configured shapes
    (manifest.json ``calibration``), each once, in order. A record restored on another
    machine names a path that is not there: a shipped trace is then found by its file name
    in traces/; a trace found nowhere is left out (the figure is an aid, the record keeps
    the path)."""
    seen: dict[str, Trace] = {}
    for by_rep in manifest.calibration.values():
        for entries in (by_rep or {}).values():
            for e in entries or []:
                for shape in (e.get("configured"), e.get("configured_reverse")):
                    ref = (shape or {}).get("trace")
                    if not ref or ref in seen:
                        continue
                    for cand in (Path(ref), traces_dir() / Path(ref).name):
                        if cand.is_file():
                            try:
                                seen[ref] = load_trace(cand)
                            except (OSError, ValueError):
                                continue
                            break
    return list(seen.values())


def _dsn_figure(rep_dir: Path, scenario: str) -> Figure:
    return F.plot_dsn(pd.read_csv(rep_dir / "dsn.csv"), _events(rep_dir), f"{scenario}, repetition 1")


def _delivery_figure(rep_dir: Path, scenario: str) -> Figure:
    owd = rep_dir / "owd.csv"
    return F.plot_delivery(pd.read_csv(rep_dir / "hol.csv"), pd.read_csv(owd) if owd.is_file() else None,
                           f"{scenario}, repetition 1")


def _events(rep_dir: Path) -> pd.DataFrame | None:
    p = rep_dir / "mptcp_events.csv"
    return pd.read_csv(p) if p.is_file() and p.stat().st_size > 1 else None


def write_report(run_dir: str | Path, figures: bool = True) -> Path:
    """Write <run_dir>/report.md and, with ``figures``, <run_dir>/figures/*.png; return the
    report's path. Without: a campaign item on an emulated CPU, where drawing a big lab's
    figures takes longer than its cases and the records keep none."""
    run_dir = Path(run_dir)
    summary = load_summary(run_dir)
    manifest = load_manifest(run_dir)
    files, missing, errors = write_figures(run_dir, summary, manifest) if figures else ({}, [], [])
    if not manifest.present:
        missing = ["manifest.json", *missing]
    out = run_dir / "report.md"
    out.write_text(render_report(summary, manifest, files, missing, errors, figures_left_out=not figures),
                   encoding="utf-8")
    return out


__all__ = ["print_table", "render_report", "write_figures", "write_report"]

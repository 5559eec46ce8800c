"""report.md and figures/*.png for one run directory, and the terminal table of `make lab-*`.

The report reads only what the run wrote (summary.json, manifest.json, per-rep CSV files):
it measures nothing and hard-codes no number. Its job is to make the run legible: what ran
on which kernel, what the paper said, what this kernel did, and, loudly, everything that
went wrong (MPTCP fallback, a subflow that never formed or carried nothing, failed link
calibration, an incomplete or invalid run).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from mptcplab.platform import FUNCTIONAL_CHECK
from mptcplab.results import figures as F

DASH = "—"  # shown wherever a value is absent; never 0, which would be a measurement

# How each metric is printed. Segment sizes are whole bytes; shares and Mbit/s two decimals.
_METRIC_FORMAT = {
    "goodput_mbps": "{:.2f}",
    "subflow_share": "{:.2f}",
    "median_seg": "{:.0f}",
    "max_seg": "{:.0f}",
}


# --------------------------------------------------------------------------- formatting


def _missing(v: Any) -> bool:
    """None, NaN or pandas' NA (pandas 3 stores an absent string as NaN)."""
    if v is None:
        return True
    if isinstance(v, (list, tuple, dict)):
        return False
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _text(v: Any) -> str | None:
    """A text field of a frame, None when absent."""
    return None if _missing(v) or v == "" else str(v)


def fmt_num(v: Any, metric: str | None = None) -> str:
    """A number for a table cell; DASH when absent."""
    if _missing(v):
        return DASH
    f = float(v)
    if metric in _METRIC_FORMAT:
        return _METRIC_FORMAT[metric].format(f)
    # Counts and anything else: no spurious decimals ("3", "2.33").
    s = f"{f:.2f}".rstrip("0").rstrip(".")
    return s if s not in ("", "-0") else "0"


def fmt_mean_std(mean: Any, std: Any, metric: str | None = None) -> str:
    if _missing(mean):
        return DASH
    if _missing(std):
        return fmt_num(mean, metric)
    return f"{fmt_num(mean, metric)} ± {fmt_num(std, metric)}"


def _cell(v: Any) -> str:
    """Markdown table cell: pipes and newlines would break the row."""
    if _missing(v):
        return DASH
    s = str(v).replace("|", "\\|").replace("\n", " ").strip()
    return s if s else DASH


def md_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = [str(h).replace("|", "\\|") for h in header]  # a blank header stays blank
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(_cell(c) for c in r) + " |")
    return "\n".join(lines)


def _yes_no(v: Any, no: str = "**NO**") -> str:
    return DASH if _missing(v) else "yes" if bool(v) else no


# --------------------------------------------------------------------------- warnings

FUNCTIONAL = "FUNCTIONAL CHECK, NOT A MEASUREMENT"


def functional_check_reason(summary: dict[str, Any]) -> str | None:
    """Why the run is a functional check (software-emulated CPU); None for a measurement."""
    if summary.get("run_kind") != FUNCTIONAL_CHECK:
        return None
    return str(summary.get("run_kind_reason") or "software-emulated CPU")


def collect_warnings(
    summary: dict[str, Any],
    missing_files: Sequence[str] = (),
    figure_errors: Sequence[str] = (),
    manifest: dict[str, Any] | None = None,
) -> list[str]:
    """Every problem the run shows, one line each, most serious first.

    The runner's own warnings carry the reason (join SYN unanswered, RST on MP_JOIN, ...);
    the checks added here only catch what the summary shows but no warning mentions, so a
    silent failure cannot pass unnoticed in the report.
    """
    out: list[str] = []
    manifest = manifest or {}
    functional = functional_check_reason(summary)
    if functional:
        out.append(f"{FUNCTIONAL}: {functional}.")
    if not summary.get("complete", False):
        why = manifest.get("incomplete_reason")
        out.append("RUN INCOMPLETE: this run did not finish every scenario"
                   + (f" ({why})" if why else "")
                   + "; it is not `latest` and its numbers are partial.")
    if summary.get("valid") is False:
        reasons = summary.get("invalid_reasons") or ["no reason recorded"]
        for r in reasons:
            out.append(f"RUN INVALID: {r}")
    for note in summary.get("timing_notes") or []:
        out.append(f"timing (not held against a functional check): {note}")
    for s in summary.get("scenarios", []):
        where = f"`{s['name']}` rep {s.get('rep', 1)}"
        given = [str(w) for w in s.get("warnings") or []]
        text = " ".join(given).lower()
        for w in given:
            out.append(f"{where}: {w}")
        mp = s.get("mptcp") or {}
        if mp.get("requested"):
            if mp.get("fallback") or mp.get("negotiated") is False:
                if "fallback" not in text and "fell back" not in text:
                    out.append(f"{where}: MPTCP FALLBACK: the connection is plain TCP "
                               "(the run gives no reason).")
            elif not mp.get("verified") and "transfer failed" not in text:
                expected = ", ".join(mp.get("expected_paths") or []) or "?"
                out.append(f"{where}: MPTCP NOT VERIFIED: MPTCP was negotiated, but not every expected "
                           f"path ({expected}) had an established subflow that contributed to the transfer "
                           "(docs/architecture.md, Verification of MPTCP); this is not a multipath result.")
            subflows = s.get("subflows") or []
            for sf in subflows:
                path = str(sf.get("path") or "?")
                if f"path {path.lower()}" in text or (sf.get("src") and str(sf["src"]) in text):
                    continue  # the runner already said what happened on this path, with why
                ends = f"{sf.get('src')}:{sf.get('sport')} -> {sf.get('dst')}:{sf.get('dport')}"
                if sf.get("established") is False:
                    out.append(f"{where}: SUBFLOW NEVER FORMED on path {path} ({ends}) "
                               "(the run gives no reason).")
                elif _missing(sf.get("bytes")) or float(sf.get("bytes") or 0) == 0:
                    out.append(f"{where}: SUBFLOW IDLE on path {path} ({ends}): established "
                               "but carried no data (the run gives no reason).")
            seen = {str(sf.get("path")) for sf in subflows}
            for path in mp.get("expected_paths") or []:
                if str(path) not in seen and f"path {str(path).lower()}" not in text:
                    out.append(f"{where}: NO SUBFLOW AT ALL on path {path}: not even a SYN was "
                               "captured there (the run gives no reason).")
        if s.get("calibration_ok") is False and "tolerance" not in text:
            out.append(f"{where}: LINK CALIBRATION FAILED: the emulated links did not meet "
                       "their targets; see the calibration table.")
    for f in missing_files:
        out.append(f"MISSING FILE: {f}")
    for e in figure_errors:
        out.append(f"FIGURE NOT DRAWN: {e}")
    return out


# --------------------------------------------------------------------------- sections


def _header(summary: dict[str, Any], manifest: dict[str, Any]) -> list[str]:
    src = summary.get("published_source") or {}
    agg = F.aggregates_frame(summary)
    reps = summary.get("repetitions") or (int(agg["n"].max()) if not agg.empty else 0)
    git_entry = manifest.get("git")
    git: dict[str, Any] = git_entry if isinstance(git_entry, dict) else {}
    commit = git.get("commit") or manifest.get("git_commit")
    dirty = git.get("dirty", manifest.get("git_dirty"))
    wall, traffic = manifest.get("wall_seconds"), manifest.get("traffic_seconds")
    rows: list[tuple[str, Any]] = [
        ("lab", summary.get("lab")),
        ("run id", summary.get("run_id")),
        ("kernel (this run)", summary.get("kernel") or manifest.get("kernel")),
        ("OS", manifest.get("os_release")),
        ("complete", _yes_no(summary.get("complete"))),
        ("valid", _yes_no(summary.get("valid"))),
        ("run kind", summary.get("run_kind")),
        ("mode", "QUICK (1 repetition, short transfers)" if summary.get("quick")
         else f"full ({reps} repetitions per scenario)"),
        ("started", _first(manifest, "started", "start", "start_time")),
        ("finished", _first(manifest, "finished", "end", "end_time")),
        ("wall time / traffic time",
         f"{fmt_num(wall)} s / {fmt_num(traffic)} s" if wall is not None else None),
        ("git commit", f"{commit}{' (dirty)' if dirty else ''}" if commit else None),
        ("CPUs", _first(manifest, "cpu_count", "cpus")),
        ("network backend", manifest.get("backend") if isinstance(manifest.get("backend"), str)
         else None),
        ("link emulation", _emulation(manifest)),
        ("paper", f"{src.get('title', DASH)} ({src.get('id', DASH)})" if src else None),
        ("paper kernel", src.get("kernel")),
    ]
    title = f"# Lab `{summary.get('lab', '?')}`: run `{summary.get('run_id', '?')}`"
    lines = [title, ""]
    functional = functional_check_reason(summary)
    if functional:
        lines += [f"> **Functional check, not a measurement**: {functional}. No number in this report "
                  "measures the kernel or reproduces (or contradicts) the paper's numbers.", ""]
    lines += [md_table(["", ""], [(k, v) for k, v in rows if v is not None]), ""]
    if summary.get("quick"):
        lines += ["> **Quick mode.** One repetition with shortened transfers: there is no spread, "
                  "slow-start and PMTUD transients weigh more, and the numbers are for checking "
                  "the lab works, not for comparing with the paper. Run without `--quick` for "
                  "that.",
                  ""]
    return lines


def _first(d: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if d.get(k) not in (None, ""):
            return d[k]
    return None


def _emulation(manifest: dict[str, Any]) -> Any:
    """The link-emulation backend, whatever shape the manifest gives it."""
    e = _first(manifest, "link_emulation", "emulation_backend", "emulation")
    if isinstance(e, dict):
        return e.get("backend") or e.get("name") or ", ".join(
            f"{k}={v}" for k, v in e.items() if not isinstance(v, (dict, list)))
    return e


def manifest_emulation(manifest: dict[str, Any]) -> str | None:
    """Public form of the above for notebooks."""
    e = _emulation(manifest)
    return None if e is None else str(e)


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "**NO**"
    if isinstance(v, float):
        return fmt_num(v)
    if isinstance(v, (dict, list)):
        return ", ".join(f"{k}={_show(x)}" for k, x in v.items()) if isinstance(v, dict) \
            else ", ".join(_show(x) for x in v)
    return DASH if v is None else str(v)


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
            rows.append({**base, **{k: v for k, v in entry.items()
                                    if k not in ("link", "checks")}})

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
                    if isinstance(v, dict) and not any(isinstance(x, (dict, list))
                                                       for x in v.values()):
                        link_rows({"link": k, **v}, dict(ctx))  # {link: {...}} form
                    else:
                        walk(v, {**ctx, name: k}, depth + 1)
            else:
                link_rows(obj, dict(ctx))

    walk(cal, {}, 0)
    return rows


def _records_table(records: list[dict[str, Any]]) -> str:
    cols: list[str] = []
    for r in records:
        for k in r:
            if k not in cols:
                cols.append(k)
    return md_table(cols, [[_show(r.get(c)) for c in cols] for r in records])


def _calibration(manifest: dict[str, Any]) -> list[str]:
    rows = calibration_rows(manifest.get("calibration"))
    lines = ["## Link emulation and calibration", ""]
    if not rows:
        return lines + [f"Link emulation: {_emulation(manifest) or DASH}. The manifest records no "
                        "link calibration for this run.", ""]
    bad = [r for r in rows if r.get("ok") is False]
    lines += [f"Link emulation: {_emulation(manifest) or DASH}. Every repetition checks "
              "each emulated link's RTT against its configuration; the rate is measured once per run "
              "for each distinct link configuration and shown with every repetition that relies on it.",
              ""]
    if bad:
        lines += [f"**{len(bad)} of {len(rows)} link checks out of tolerance:**", "",
                  _records_table(bad), ""]
    else:
        lines += [f"All {len(rows)} link checks within tolerance.", ""]
    lines += ["<details><summary>every link check</summary>", "", _records_table(rows), "",
              "</details>", ""]
    return lines


def _warnings_section(warnings: list[str]) -> list[str]:
    lines = ["## WARNINGS", ""]
    if not warnings:
        return lines + ["None: every MPTCP scenario was verified, every subflow formed and "
                        "carried data, and the run is complete and valid.", ""]
    lines.append(f"**{len(warnings)} warning(s). Read these before any number below.**")
    lines.append("")
    lines += [f"- **WARNING** {w}" for w in warnings]
    return lines + [""]


def scenario_table(summary: dict[str, Any], bold: bool = True) -> pd.DataFrame:
    """Per-scenario table as display strings (the report's and the notebook's)."""
    agg = F.aggregates_frame(summary)
    ps = F.path_stats(summary)
    paths = sorted(ps["path"].unique()) if not ps.empty else []
    header = ["scenario", "reps", "goodput Mbit/s (mean ± std)", "min – max", "MPTCP verified"]
    header += [f"path {p}: share / median / max seg" for p in paths]
    header += ["ICMP frag-needed (total; per rep)"]
    rows = []
    for _, a in agg.iterrows():
        name = a["scenario"]
        mp = (f"{a['verified_reps']}/{a['n']}" if a["mptcp_requested"] else "TCP")
        if a["mptcp_requested"] and a["fallback_reps"]:
            fb = f"{a['fallback_reps']} fallback"
            mp += f" (**{fb}**)" if bold else f" ({fb.upper()})"
        rng = (f"{fmt_num(a['goodput_min'], 'goodput_mbps')} – "
               f"{fmt_num(a['goodput_max'], 'goodput_mbps')}"
               if not _missing(a["goodput_min"]) else DASH)
        row = [name, a["n"], fmt_mean_std(a["goodput_mean"], a["goodput_std"], "goodput_mbps"),
               rng, mp]
        icmp_parts = []
        for p in paths:
            r = ps[(ps["scenario"] == name) & (ps["path"] == p)]
            if r.empty:
                row.append(DASH)
                continue
            r = r.iloc[0]
            row.append(f"{fmt_num(r['share_mean'], 'subflow_share')} / "
                       f"{fmt_num(r['median_seg'], 'median_seg')} / "
                       f"{fmt_num(r['max_seg'], 'max_seg')}")
            if not _missing(r["icmp_total"]):
                per = ", ".join(fmt_num(x) for x in r["icmp_reps"])
                icmp_parts.append(f"{p}: {fmt_num(r['icmp_total'])} ({per})")
        row.append("; ".join(icmp_parts) if icmp_parts else DASH)
        rows.append(row)
    return pd.DataFrame(rows, columns=header)


def df_to_md(df: pd.DataFrame) -> str:
    return md_table([str(c) for c in df.columns], df.astype(object).values.tolist())


def _scenario_section(summary: dict[str, Any]) -> list[str]:
    table = scenario_table(summary)
    lines = ["## Scenarios", "",
             "Goodput is iperf3's receiver-side figure; share is the fraction of the "
             "connection's bytes each path carried; segment sizes are TCP payload bytes seen in "
             "the capture (median over reps of each rep's median; max over reps).", ""]
    lines += [df_to_md(table) if not table.empty else "No scenario results in this run.", ""]
    return lines


def _per_rep_section(summary: dict[str, Any]) -> list[str]:
    sf = F.subflows_frame(summary)
    reps = F.reps_frame(summary)
    lines = ["## Per repetition and subflow", ""]
    if reps.empty:
        return lines + ["No repetitions recorded.", ""]
    rows = []
    for _, r in reps.iterrows():
        subs = sf[(sf["scenario"] == r["scenario"]) & (sf["rep"] == r["rep"])]
        mp = ("TCP" if not r["mptcp_requested"] else "fallback" if r["fallback"]
              else "verified" if r["mptcp_verified"] else "**not verified**")
        if subs.empty:
            rows.append([r["scenario"], r["rep"], fmt_num(r["goodput_mbps"], "goodput_mbps"),
                         mp] + [DASH] * 9)
            continue
        for _, s in subs.iterrows():
            rows.append([
                r["scenario"], r["rep"], fmt_num(r["goodput_mbps"], "goodput_mbps"), mp,
                s["path"], f"{s['src']}:{s['sport']} → {s['dst']}:{s['dport']}",
                _yes_no(s["initial"], no="no"),
                _yes_no(s["established"]), fmt_num(s["bytes"]),
                fmt_num(s["share"], "subflow_share"),
                f"{fmt_num(s['median_seg'], 'median_seg')} / {fmt_num(s['max_seg'], 'max_seg')}",
                fmt_num(s["icmp_frag_needed"]), fmt_num(s["retransmissions"]),
            ])
    header = ["scenario", "rep", "goodput", "MPTCP", "path", "subflow", "initial",
              "established", "bytes", "share", "median / max seg", "ICMP frag-needed",
              "retransmissions"]
    return lines + [md_table(header, rows), ""]


def published_table(summary: dict[str, Any]) -> pd.DataFrame:
    """'Published vs this run' as display strings; DASH wherever this run has no value."""
    pub = F.published_frame(summary)
    rows = []
    for _, p in pub.iterrows():
        path = _text(p["path"])
        metric = (_text(p["metric"]) or DASH) + (f" (path {path})" if path else "")
        unit = _text(p["unit"]) or ""
        paper = (f"{p['paper_value']:g} {unit}".strip() if not _missing(p["paper_value"])
                 else DASH)
        n = int(p["this_n"]) if not _missing(p["this_n"]) else 0
        std = p["this_std"] if n > 1 else None  # one repetition has no spread
        this = fmt_mean_std(p["this_mean"], std, _text(p["metric"])) if n else DASH
        rows.append([p["id"], _text(p["scenario"]) or DASH, metric, paper,
                     _text(p["paper_kernel"]) or DASH, _text(p["where"]) or DASH, this,
                     n if n else DASH, (_text(p["this_kernel"]) or DASH) if n else DASH])
    this_run = "this run (functional check)" if functional_check_reason(summary) else "this run (mean ± std)"
    header = ["id", "scenario", "metric", "paper", "paper kernel", "where", this_run, "n", "this kernel"]
    return pd.DataFrame(rows, columns=header)


def published_notes(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """(id, note) for the published values whose conditions the lab file describes."""
    pub = F.published_frame(summary)
    return [(str(i), str(n)) for i, n in zip(pub["id"], pub["note"], strict=True) if _text(n)]


def _published_section(summary: dict[str, Any]) -> list[str]:
    table = published_table(summary)
    src = summary.get("published_source") or {}
    lines = ["## Published vs this run", ""]
    if table.empty:
        return lines + ["The lab has no published values to compare with.", ""]
    lines += [f"Paper: {src.get('title', DASH)}. Its numbers were measured on "
              f"{src.get('kernel', DASH)}; this run on {summary.get('kernel', DASH)}. "
              "A value with no scenario here needs something this lab does not run "
              "(usually the paper's patched kernel).", ""]
    lines += [df_to_md(table), ""]
    if functional_check_reason(summary):
        lines += ["*This run is a functional check on a software-emulated CPU: its column is no "
                  "reproduction of the paper's numbers, and a difference is no evidence against them.*", ""]
    notes = published_notes(summary)
    if notes:
        lines += ["Conditions of the paper's numbers:", ""]
        lines += [f"- `{i}`: {n}" for i, n in notes] + [""]
    return lines


def findings_table(summary: dict[str, Any], bold: bool = True) -> pd.DataFrame:
    """The paper's findings and whether each holds here, as display strings."""
    fd = F.findings_frame(summary)
    rows = [[f["id"], _text(f["scenario"]) or DASH, _text(f["statement"]) or DASH,
             _text(f["where"]) or DASH,
             f"**{f['holds_here']}**" if bold and f["holds_here"] == "no" else f["holds_here"],
             _text(f["evidence"]) or DASH] for _, f in fd.iterrows()]
    return pd.DataFrame(rows, columns=["id", "scenario", "statement", "where", "holds here",
                                       "evidence"])


def _findings_section(summary: dict[str, Any]) -> list[str]:
    table = findings_table(summary)
    lines = ["## Findings of the paper, checked on this run", ""]
    if table.empty:
        return lines + ["The lab lists no findings.", ""]
    lines += ["'unknown' means the finding has no check this lab can evaluate (it needs another "
              "kernel, or compares mechanisms rather than a measured value).", ""]
    if functional_check_reason(summary):
        lines += ["*Functional check: only findings about whether something happens (a subflow forms, "
                  "a segment size appears) mean anything here; those about goodput, shares or timing do "
                  "not.*", ""]
    return lines + [df_to_md(table), ""]


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


def _details_section(manifest: dict[str, Any]) -> list[str]:
    lines = ["## Run details (from manifest.json)", ""]
    if not manifest:
        return lines + ["This run has no manifest.json.", ""]
    rows = sysctl_rows(manifest.get("sysctls"))
    if rows:
        lines += ["Sysctls as read back from each node (first repetition of each scenario):", "",
                  md_table(["node", "sysctl", "value", "scenarios"], rows), ""]
    tools = _first(manifest, "tools", "tool_versions")
    if isinstance(tools, dict) and tools:
        lines += ["Tools:", "", md_table(["tool", "version"], list(tools.items())), ""]
    shas = _first(manifest, "lab_files_sha256", "lab_sha256", "lab_files")
    if isinstance(shas, dict) and shas:
        lines += ["Lab files:", "", md_table(["file", "sha256"], list(shas.items())), ""]
    elif isinstance(shas, str):
        lines += [f"Lab sha256: `{shas}`", ""]
    argv = _first(manifest, "command_line", "argv", "command")
    if argv:
        cmd = " ".join(map(str, argv)) if isinstance(argv, list) else str(argv)
        lines += [f"Command line: `{cmd}`", ""]
    return lines


def render_report(
    summary: dict[str, Any],
    manifest: dict[str, Any],
    figure_files: dict[str, str] | None = None,
    missing_files: Sequence[str] = (),
    figure_errors: Sequence[str] = (),
) -> str:
    """report.md text. figure_files maps a caption to a path relative to the run directory."""
    lines: list[str] = []
    lines += _header(summary, manifest)
    lines += _warnings_section(collect_warnings(summary, missing_files, figure_errors,
                                                manifest))
    lines += _calibration(manifest)
    lines += _scenario_section(summary)
    lines += _published_section(summary)
    lines += _findings_section(summary)
    if figure_files:
        lines += ["## Figures", ""]
        for caption, rel in figure_files.items():
            lines += [f"### {caption}", "", f"![{caption}]({rel})", ""]
    lines += _per_rep_section(summary)
    lines += _details_section(manifest)
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------- entry points


def _save(fig: Figure, path: Path) -> None:
    fig.savefig(path, dpi=100, format="png")


def write_figures(run_dir: Path, summary: dict[str, Any]) -> tuple[dict[str, str], list[str],
                                                                    list[str]]:
    """Draw every report figure into <run_dir>/figures/.

    Returns (caption -> relative path, missing input files, figure errors). A figure that
    fails is reported in the WARNINGS, not allowed to lose the whole report at the end of a
    long run.
    """
    figdir = run_dir / "figures"
    figdir.mkdir(exist_ok=True)
    ts = F.load_timeseries(run_dir, summary)
    icmp = F.load_icmp(run_dir, summary)
    missing = list(ts.attrs.get("missing", [])) + list(icmp.attrs.get("missing", []))
    order = F.scenario_order(summary)
    plan = [
        ("Throughput over time", "throughput.png",
         lambda: F.plot_throughput(ts, [s for s in order if (ts["scenario"] == s).any()]
                                   if not ts.empty else None)),
        ("Goodput per scenario", "goodput.png", lambda: F.plot_goodput(summary)),
        ("Per-subflow byte share", "subflow_share.png", lambda: F.plot_subflow_share(summary)),
        ("Segment sizes per path", "segment_sizes.png",
         lambda: F.plot_segment_sizes(summary, icmp)),
        ("ICMP events", "icmp.png", lambda: F.plot_icmp(icmp, order)),
    ]
    files: dict[str, str] = {}
    errors: list[str] = []
    for caption, name, draw in plan:
        try:
            _save(draw(), figdir / name)
            files[caption] = f"figures/{name}"
        except Exception as exc:  # noqa: BLE001 - reported in the WARNINGS section
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
    return files, missing, errors


def write_report(run_dir: Path) -> Path:
    """Write <run_dir>/report.md and <run_dir>/figures/*.png; return the report's path."""
    run_dir = Path(run_dir)
    summary = F.load_summary(run_dir)
    manifest = F.load_manifest(run_dir)
    files, missing, errors = write_figures(run_dir, summary)
    if not manifest:
        missing = ["manifest.json", *missing]
    text = render_report(summary, manifest, files, missing, errors)
    out = run_dir / "report.md"
    out.write_text(text, encoding="utf-8")
    return out


def print_table(summary: dict[str, Any]) -> str:
    """The short table printed at the end of `make lab-<name>`.

    scenario, goodput, MPTCP verified reps, per path share / median segment, and the paper's
    numbers for that scenario where it has any.
    """
    agg = F.aggregates_frame(summary)
    ps = F.path_stats(summary)
    pub = F.published_frame(summary)
    paths = sorted(ps["path"].unique()) if not ps.empty else []
    short = {"goodput_mbps": "goodput", "subflow_share": "share", "median_seg": "median seg",
             "max_seg": "max seg", "icmp_frag_needed": "ICMP"}
    header = ["scenario", "goodput Mbit/s", "MPTCP"] + [f"{p}: share / seg" for p in paths]
    header.append("paper")
    rows = []
    for _, a in agg.iterrows():
        name = a["scenario"]
        mp = (f"{a['verified_reps']}/{a['n']}" if a["mptcp_requested"] else "TCP")
        if a["mptcp_requested"] and a["fallback_reps"]:
            mp += " FALLBACK"
        row = [name, fmt_mean_std(a["goodput_mean"], a["goodput_std"], "goodput_mbps"), mp]
        for p in paths:
            r = ps[(ps["scenario"] == name) & (ps["path"] == p)]
            row.append(DASH if r.empty else
                       f"{fmt_num(r['share_mean'].iloc[0], 'subflow_share')} / "
                       f"{fmt_num(r['median_seg'].iloc[0], 'median_seg')}")
        paper = []
        if not pub.empty:
            for _, p in pub[pub["scenario"] == name].iterrows():
                if _missing(p["paper_value"]):
                    continue
                what = short.get(p["metric"], p["metric"])
                if _text(p["path"]):
                    what = f"{p['path']} {what}"
                paper.append(f"{what} {p['paper_value']:g}")
        row.append("; ".join(paper) if paper else DASH)
        rows.append(row)
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(header)]
    def line(cells: Sequence[Any]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
    src = summary.get("published_source") or {}
    state = ", ".join([
        "complete" if summary.get("complete") else "INCOMPLETE",
        "valid" if summary.get("valid", True) else "INVALID",
        "QUICK" if summary.get("quick") else "full",
    ])
    out = [f"{summary.get('lab', '?')} run {summary.get('run_id', '?')} on kernel "
           f"{summary.get('kernel', '?')} ({state})"]
    if src.get("kernel"):
        out.append(f"paper: {src.get('id', '?')} on {src['kernel']}")
    functional = functional_check_reason(summary)
    if functional:
        out.append(f"{FUNCTIONAL}: {functional}")
    out += ["", line(header), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    n_warn = len(collect_warnings(summary))
    if n_warn:
        out += ["", f"{n_warn} WARNING(S): see the WARNINGS section of report.md"]
    return "\n".join(out) + "\n"


__all__ = [
    "calibration_rows",
    "collect_warnings",
    "df_to_md",
    "findings_table",
    "fmt_mean_std",
    "fmt_num",
    "functional_check_reason",
    "manifest_emulation",
    "md_table",
    "print_table",
    "published_notes",
    "published_table",
    "render_report",
    "scenario_table",
    "sysctl_rows",
    "write_figures",
    "write_report",
]


"""`mptcplab compare RUN_OR_CAMPAIGN...`: the same lab on several kernels or hosts in
columns, beside the paper's numbers, from the typed result model only (model.Summary,
aggregate.scenario_value, the findings' FindingRow verdicts).

A run directory is one column; a campaign directory gives one column per target (its items
merged by merge.py). A finding that holds in one column and does not hold in another is
listed first and its changing cells are highlighted: that is what a kernel change did.
``by="host"`` splits a campaign's columns by the host that measured each round (merge.py's
``by_host``): every statistic of the report per host, so a host effect is not averaged away.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure

from ..errors import LabInputError
from ..record.model import FindingRow, Summary, load_manifest
from ..results.aggregate import scenario_value
from ..results.fmt import fmt_num, md_table
from ..results.read import load_summary
from .executor import STATE
from .merge import Column, merge

CHANGED = "⚠"


@dataclass
class Input:
    path: Path
    columns: list[Column]


def columns_of(path: Path, by: str | None = None) -> list[Column]:
    """The columns one command-line argument gives (``by="host"``: a campaign's per host)."""
    if (path / STATE).is_file():
        cols = merge(path, write=by is None, by_host=by == "host")
        if not cols:
            raise LabInputError("command line", "RUN_OR_CAMPAIGN", f"{path}: no finished work item yet")
        return cols
    if (path / "summary.json").is_file():
        s, m = load_summary(path), load_manifest(path)
        if not s.complete:
            raise LabInputError("command line", "RUN_OR_CAMPAIGN", f"{path}: an incomplete run (compare complete ones)")
        name = f"{m.hostname or 'run'} {s.kernel or ''}".strip()
        fp = {"target": name, "kind": "run", "kernels": [s.kernel], "kernel_patches": [s.kernel_patches],
              "hostnames": [m.hostname],
              "os_release": [m.os_release], "cpu_count": [m.cpu_count], "tools": m.tools,
              "runs": [{"run_dir": str(path.resolve()), "run_id": s.run_id}]}
        return [Column(s.lab, name, s, fp)]
    raise LabInputError("command line", "RUN_OR_CAMPAIGN",
                        f"{path} is neither a run directory (summary.json) nor a campaign directory ({STATE})")


def gather(paths: list[Path], by: str | None = None) -> list[Column]:
    cols: list[Column] = []
    for p in paths:
        for c in columns_of(p, by):
            label, n = c.target, 2
            while any(x.target == label and x.lab == c.lab for x in cols):
                label, n = f"{c.target} #{n}", n + 1
            c.target = label
            cols.append(c)
    return cols


def kernel_cell(c: Column) -> str:
    """The releases a column ran on, each with the project's patches it carried."""
    kernels = c.fingerprint.get("kernels") or []
    patches = c.fingerprint.get("kernel_patches") or []
    cells = []
    for j, k in enumerate(kernels):
        p = patches[j] if len(patches) == len(kernels) else None
        cells.append(str(k) + (f" (+{', '.join(p)})" if p else ""))
    return ", ".join(cells)


def _label(c: Column) -> str:
    return f"{c.target} ({c.kernel})" if c.kernel and c.kernel not in c.target else c.target


def goodput_cell(s: Summary, scenario: str) -> str:
    """Median over repetitions with the spread (min–max) and the count."""
    xs = [r.goodput_mbps for r in s.reps_of(scenario) if r.goodput_mbps is not None]
    if not xs:
        return "—"
    med = statistics.median(xs)
    spread = f" [{fmt_num(min(xs))}–{fmt_num(max(xs))}]" if len(xs) > 1 else ""
    return f"{fmt_num(med)}{spread} (n={len(xs)})"


def _paper(cols: list[Column], scenario: str | None, metric: str, path: str | None) -> str:
    for c in cols:
        for p in c.summary.published:
            if p.scenario == scenario and p.metric == metric and p.path == path and p.paper_value is not None:
                return fmt_num(p.paper_value) + (f" {p.unit}" if p.unit and metric != "goodput_mbps" else "")
    return ""


def _cell(f: FindingRow) -> str:
    """A finding's verdict with each check's estimate and interval, compactly; a check that
    says itself in brief (a counter: "MPJoinSynRx@server 1→0") is named only when it fails
    or is undecided, with what it expected and got; skipped ones are counted in the verdict."""
    parts = [f"{fmt_num(c.estimate)} [{fmt_num(c.low)}, {fmt_num(c.high)}] {c.confidence:.0%}"
             for c in f.checks if c.brief is None and c.estimate is not None and c.low is not None
             and c.high is not None and c.confidence is not None]
    off = [c.brief for c in f.checks if c.brief and not c.skipped and c.verdict in ("does not hold", "inconclusive")]
    return f.shown + (f" ({'; '.join(parts)})" if parts else "") + (f": {', '.join(off)}" if off else "")


def skipped_note(label: str, s: Summary) -> str | None:
    """One line: what a column skipped because its kernel does not have it (checks/counter.py)."""
    gone = [c for f in s.findings for c in f.skipped]
    if not gone:
        return None
    what = sorted({(c.brief or c.statistic or "?").split(" ", 1)[0].split("@", 1)[0] for c in gone})
    cases = sum(1 for f in s.findings if f.skipped)
    return (f"{label}: {len(gone)} check(s) in {cases} finding(s) skipped, not on this kernel: "
            f"{', '.join(what)}")


def verdict_cells(verdicts: list[str], shown: list[str] | None = None) -> tuple[list[str], bool]:
    """The cells of one finding's row and whether its verdict changes between columns: a
    decided verdict ("holds"/"does not hold") that differs from the previous decided one is
    highlighted (an inconclusive one decides nothing).
    ``shown``: each verdict as the cell writes it (FindingRow.shown), when not the verdict."""
    out, last, changed = [], None, False
    for v, text in zip(verdicts, shown or verdicts, strict=True):
        if v in ("holds", "does not hold"):
            if last is not None and v != last:
                out.append(f"**{text}** {CHANGED}")
                changed = True
            else:
                out.append(text)
            last = v
        else:
            out.append(text)
    return out, changed


def lab_section(lab: str, cols: list[Column]) -> tuple[list[str], list[str]]:
    """The markdown of one lab and the ids of its findings whose verdict changes."""
    labels = [_label(c) for c in cols]
    lines = [f"## lab {lab}", ""]
    src = next((c.summary.published_source for c in cols if c.summary.published_source), None)
    if src:
        lines += [f"Paper: {src.title or src.id} (kernel: {src.kernel or 'not stated'}).", ""]
    # the columns
    lines += ["### Columns", "", md_table(
        ["column", "kind", "host", "kernel", "OS", "rounds", "dropped", "run kind", "valid"],
        [[_label(c), c.fingerprint.get("kind"), ", ".join(str(h) for h in c.fingerprint.get("hostnames") or []),
          kernel_cell(c),
          ", ".join(str(o) for o in c.fingerprint.get("os_release") or []),
          len(c.fingerprint.get("runs") or []), sum(not d.surplus for d in c.summary.dropped), c.summary.run_kind,
          "yes" if c.summary.valid else "**no**"] for c in cols]), ""]
    # findings
    ids: list[str] = []
    stmt: dict[str, str] = {}
    for c in cols:
        for f in c.summary.findings:
            if f.id not in stmt:
                ids.append(f.id)
                stmt[f.id] = f.statement or ""
    changed_ids: list[str] = []
    rows = []
    for fid in ids:
        rows_of = [next((f for f in c.summary.findings if f.id == fid), None) for c in cols]
        cells, changed = verdict_cells([f.verdict if f else "not run" for f in rows_of],
                                       [_cell(f) if f else "not run" for f in rows_of])
        if changed:
            changed_ids.append(fid)
        rows.append([f"{CHANGED} {fid}" if changed else fid, *cells, "**changes**" if changed else ""])
    if rows:
        rows.sort(key=lambda r: 0 if r[-1] else 1)  # the changes first
        lines += ["### Findings: verdict per column", "",
                  f"`{CHANGED}` and **bold**: the verdict differs from the column to its left "
                  "(each cell: the verdict, then each check's estimate with its interval over the column's "
                  "repetitions and the interval's coverage, mptcplab/checks/stats.py; a counter check only when "
                  "it fails or is undecided: the counter on its node, expected→got per repetition).", "",
                  md_table(["finding", *labels, "verdict"], rows), ""]
        skipped = [n for c in cols if (n := skipped_note(_label(c), c.summary))]
        if skipped:
            lines += ["Skipped (the kernel has no such counter: neither pass nor fail, as the kernel's own "
                      "selftests skip it; the finding is judged on its other checks):", "",
                      *(f"- {n}" for n in skipped), ""]
        lines += [f"- `{fid}`: {stmt[fid]}" for fid in ids if stmt[fid]] + [""]
    # goodput
    scenarios = list(dict.fromkeys(s for c in cols for s in c.summary.scenario_order()))
    lines += ["### Goodput (Mbit/s): median over repetitions [min–max] (n)", "", md_table(
        ["scenario", "paper", *labels],
        [[s, _paper(cols, s, "goodput_mbps", None), *[goodput_cell(c.summary, s) for c in cols]]
         for s in scenarios]), ""]
    # per path
    prow = []
    for s in scenarios:
        paths = sorted({sf.path for c in cols for r in c.summary.reps_of(s) for sf in r.subflows if sf.path})
        for p in paths:
            share = []
            seg = []
            for c in cols:
                reps = c.summary.reps_of(s)
                v = scenario_value(reps, "subflow_share", p)
                share.append("—" if v.value is None else
                             f"{v.value:.2f}" + (f" ± {v.std:.2f}" if v.std is not None else ""))
                m = scenario_value(reps, "median_seg", p)
                seg.append("—" if m.value is None else fmt_num(m.value))
            prow.append([s, p, "share", _paper(cols, s, "subflow_share", p), *share])
            prow.append([s, p, "median segment (B)", _paper(cols, s, "median_seg", p), *seg])
    if prow:
        lines += ["### Per path: byte share (mean ± std over reps) and median data-segment payload "
                  "(median over reps)", "", md_table(["scenario", "path", "metric", "paper", *labels], prow), ""]
    notes = [f"- {_label(c)}: {n}" for c in cols for n in
             [*c.notes, *c.summary.invalid_reasons, *c.summary.timing_notes,
              *(f"dropped: round {d.rep} of `{d.scenario}`: {'; '.join(d.reasons)}"
                for d in c.summary.dropped if not d.surplus)]]
    if notes:
        lines += ["### Notes", "", *notes, ""]
    return lines, changed_ids


def goodput_figure(lab: str, cols: list[Column]) -> Figure:
    """Per scenario, one bar per column: the median, whiskers from min to max."""
    scenarios = list(dict.fromkeys(s for c in cols for s in c.summary.scenario_order()))
    fig = Figure(figsize=(max(6.0, 1.2 * len(scenarios) * max(1, len(cols)) * 0.6 + 2), 4), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(cols))
    for j, c in enumerate(cols):
        xs, meds, lo, hi = [], [], [], []
        for i, s in enumerate(scenarios):
            g = [r.goodput_mbps for r in c.summary.reps_of(s) if r.goodput_mbps is not None]
            if not g:
                continue
            m = statistics.median(g)
            xs.append(i + (j - (len(cols) - 1) / 2) * width)
            meds.append(m)
            lo.append(m - min(g))
            hi.append(max(g) - m)
        ax.bar(xs, meds, width, yerr=[lo, hi], capsize=3, label=_label(c))
    ax.set_xticks(range(len(scenarios)), scenarios, rotation=30, ha="right")
    ax.set_ylabel("goodput, Mbit/s (median, min–max)")
    ax.set_title(f"lab {lab}: goodput per column")
    ax.legend(fontsize="small")
    return fig


def write_compare(paths: list[Path], out: Path, figures: bool = True, by: str | None = None) -> Path:
    cols = gather(paths, by)
    out.mkdir(parents=True, exist_ok=True)
    labs = list(dict.fromkeys(c.lab for c in cols))
    body: list[str] = []
    changes: list[str] = []
    for lab in labs:
        lc = [c for c in cols if c.lab == lab]
        lines, changed = lab_section(lab, lc)
        body += lines
        changes += [f"- lab {lab}, finding `{f}`" for f in changed]
        if figures:
            name = f"compare-{lab}-goodput.png"
            goodput_figure(lab, lc).savefig(out / name, dpi=100)
            body += [f"![goodput of lab {lab} per column]({name})", ""]
    head = ["# Compare: " + ", ".join(f"lab {lab}" for lab in labs), "",
            "Inputs: " + ", ".join(f"`{p}`" for p in paths), "",
            *([f"Split by {by}: a campaign's target is one column per {by} that measured its rounds, "
               f"each merged from those rounds alone.", ""] if by else []),
            "## Verdicts that change between columns", ""]
    head += changes or ["none: every finding has the same verdict wherever it could be measured"]
    md = out / "compare.md"
    md.write_text("\n".join([*head, "", *body]).rstrip() + "\n")
    return md

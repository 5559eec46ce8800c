"""The markdown of docs/reproductions.md and of each lab's generated verdict section, from
merged records (collect.Reproduction). Only what the records and the engine's evaluation
hold is written, in a fixed order, so the same records give the same bytes."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ..checks.stats import median_interval
from ..record.model import VERDICTS, CheckStat, FindingRow, FlowResult, Repetition, Summary
from ..results.fmt import DASH, md_table
from ..traffic.results import headline
from .cases import cases_block
from .collect import Reproduction

NO_RUN = "no full run on record yet"
COUNT_WORDS = {"holds": "hold", "does not hold": "do not hold", "inconclusive": "inconclusive",
               "not measurable": "not measurable"}


def num(x: float | None) -> str:
    """Three significant digits, whole numbers from 1000 on; DASH when absent."""
    if x is None:
        return DASH
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    s = f"{x:.3g}"
    return "0" if s == "-0" else s


def counts(rows: Sequence[FindingRow]) -> dict[str, int]:
    return {v: sum(1 for f in rows if f.verdict == v) for v in VERDICTS}


def counts_text(rows: Sequence[FindingRow]) -> str:
    c = counts(rows)
    return ", ".join(f"{c[v]} {COUNT_WORDS[v]}" for v in VERDICTS)


def n_text(s: Summary) -> str:
    """Repetitions per scenario, grouped: "5 in each of the 74 scenarios"."""
    by_n: dict[int, list[str]] = {}
    for a in s.aggregates:
        by_n.setdefault(a.n, []).append(a.scenario)
    if not by_n:
        return "no scenario measured"
    if len(by_n) == 1:
        (n, names), = by_n.items()
        return f"{n} in each of the {len(names)} scenario(s)"
    # the most common n said as "the other K": a few short scenarios (dropped repetitions) stay readable
    common = max(by_n, key=lambda n: (len(by_n[n]), n))
    rest = "; ".join(f"{n} in {', '.join(f'`{x}`' for x in names)}"
                     for n, names in sorted(by_n.items(), reverse=True) if n != common)
    return f"{rest}; {common} in the other {len(by_n[common])}"


def valid_text(s: Summary) -> str:
    """Valid repetitions against the planned n, and how many were dropped: "10 planned per
    scenario; 9 valid in `x`, 10 in the other 11; 1 dropped"."""
    names = list(dict.fromkeys([*s.scenario_order(), *(d.scenario for d in s.dropped)]))
    planned = len(s.reps_of(names[0])) if s.repetitions is None and names else s.repetitions
    short = [x for x in names if len(s.reps_of(x)) != planned]
    full = len(names) - len(short)
    text = f"{DASH if planned is None else planned} planned per scenario; " + (
        f"{planned} valid in each of the {full} scenario(s)" if not short else
        ", ".join(f"{len(s.reps_of(x))} valid in `{x}`" for x in short)
        + (f", {planned} in the other {full}" if full else ""))
    dropped = [d for d in s.dropped if not d.surplus]
    surplus = len(s.dropped) - len(dropped)
    return text + f"; {len(dropped)} dropped" + (f", {surplus} valid beyond the planned n left out" if surplus else "")


def _estimate(c: CheckStat) -> str:
    if c.estimate is None:
        return DASH
    if c.low is None or c.high is None:
        return num(c.estimate)
    return f"{num(c.estimate)} [{num(c.low)}, {num(c.high)}]"


def _confidence(c: CheckStat) -> str:
    conf = DASH if c.confidence is None else f"{100 * c.confidence:.1f} %"
    return f"{conf} ({c.method})" if c.method else conf


def _check_cells(c: CheckStat) -> list[str]:
    return [c.statistic or DASH, _estimate(c), _confidence(c), ", ".join(str(k) for k in c.n) or DASH,
            c.target or DASH, c.source or DASH]


def findings_rows(rows: Sequence[FindingRow]) -> list[list[str]]:
    """One row per finding with one check (or none: its evidence instead of a statistic); a
    finding of several checks gets a row of its own, then one row per check."""
    out: list[list[str]] = []
    for f in rows:
        if len(f.checks) == 1:
            out.append([f"`{f.id}`", f.shown, *_check_cells(f.checks[0])])
        elif not f.checks:
            out.append([f"`{f.id}`", f.shown, f.evidence or DASH, DASH, DASH, DASH, DASH, DASH])
        else:
            out.append([f"`{f.id}`", f.shown, f"{len(f.checks)} checks:", "", "", "", "", ""])
            out += [["↳", c.verdict, *_check_cells(c)] for c in f.checks]
    return out


FINDINGS_HEADER = ["finding", "verdict", "statistic", "estimate [interval]", "confidence", "n", "claim", "source"]


def _headline(goodput: float | None, f: FlowResult | None) -> tuple[float | None, str]:
    """A flow's one number for the table: its goodput, or for a flow without one the number
    its kind names (a web flow: the requests it served per second)."""
    own = None if goodput is not None or f is None else headline(f)
    return own if own is not None else (goodput, "Mbit/s")


def _measured_flows(rep: Repetition) -> list[tuple[str, float | None, str, bool | None, bool]]:
    """(flow, its number, unit, proven by the capture, fell back to TCP) of each measured
    flow of a repetition; the top-level flow when the record lists none (older records)."""
    flows = [f for f in rep.flows if f.role == "measured"]
    if not flows:
        return [("main", rep.goodput_mbps, "Mbit/s", rep.mptcp.verified if rep.mptcp.requested else None,
                 rep.mptcp.fallback)]
    return [(f.name, *_headline(f.goodput_mbps, f), f.verified, f.mptcp.fallback) for f in flows]


def measured_rows(s: Summary) -> list[list[str]]:
    """Per scenario and measured flow, over the repetitions the findings use: n, the median
    of its number (goodput, or requests/s for a web flow) with its order-statistics interval
    (checks/stats.py; coverage below 90 % with fewer than 5 repetitions, and said so), the
    range, how many repetitions the capture proved (MPTCP negotiated with every expected
    subflow carrying data, or the TCP connection on its path) and how many fell back to TCP."""
    rows: list[list[str]] = []
    for name in s.scenario_order():
        by_flow: dict[str, list[tuple[float | None, str, bool | None, bool]]] = {}
        for r in s.reps_of(name):
            for flow, x, unit, ok, fellback in _measured_flows(r):
                by_flow.setdefault(flow, []).append((x, unit, ok, fellback))
        for flow, vals in by_flow.items():
            xs = [x for x, _, _, _ in vals if x is not None]
            unit = vals[0][1] if xs else DASH
            if xs:
                iv = median_interval(xs)
                med = f"{num(iv.estimate)} [{num(iv.low)}, {num(iv.high)}]" + ("" if iv.enough else " (*)")
                rng = f"{num(min(xs))} – {num(max(xs))}"
            else:
                med = rng = DASH
            proven = [p for _, _, p, _ in vals if p is not None]
            if not xs and not proven:
                continue  # a flow with neither a rate nor a capture verdict (a background hold)
            rows.append([f"`{name}`", flow, str(len(vals)), med, unit, rng,
                         f"{sum(proven)} of {len(proven)}" if proven else DASH,
                         str(sum(1 for v in vals if v[3]))])
    return rows


MEASURED_HEADER = ["scenario", "flow", "n", "median [interval]", "unit", "range", "proven by the capture",
                   "fallback"]


def measured_section(s: Summary) -> list[str]:
    rows = measured_rows(s)
    if not rows:
        return []
    scaled = (f" Rates are this run's, at scale {s.scale:g} (the paper's link rates x {s.scale:g})."
              if s.scale != 1 else "")
    short = any(r[3].endswith("(*)") for r in rows)
    return ["Measured per scenario (the repetitions the findings use; interval: 90 % order statistics "
            "of the median" + (", (*): fewer than 5 repetitions, coverage below 90 %" if short else "")
            + ")." + scaled, "", md_table(MEASURED_HEADER, rows), ""]


def claims(rows: Sequence[FindingRow]) -> list[str]:
    return [f"- `{f.id}`" + (f" ({'; '.join(x for x in (f.scenario, f.where) if x)})" if f.scenario or f.where else "")
            + f": {f.statement or DASH}" for f in rows]


def _validity(s: Summary) -> str:
    state = "complete" if s.complete else "INCOMPLETE"
    valid = "**valid**" if s.valid else f"**INVALID** ({len(s.invalid_reasons)} reason(s), below)"
    kind = s.run_kind or "unknown kind"
    return f"{state}, {valid}; {kind}" + ("; quick (not a full run)" if s.quick else "; full (not --quick)")


def _rounds_table(r: Reproduction) -> str:
    s, fp = r.column.summary, r.column.fingerprint
    walls = {int(x["round"]): x.get("wall_seconds") for x in fp.get("runs", [])}
    merged = (r.column.manifest.model_extra or {}).get("merged_from") or []  # merge.merged_manifest
    commits = {int(x["round"]): x.get("git") for x in merged}
    rows = []
    for ref in r.records:
        mine = [x for x in s.invalid_reasons if x.startswith(f"round {ref.round}: ")]
        drops = [d for d in s.dropped if d.rep == ref.round and not d.surplus]
        state = ([f"{len(drops)} repetition(s) dropped"] * bool(drops)
                 + [f"invalid ({len(mine)} reason(s))"] * bool(mine))
        wall = walls.get(ref.round)
        rows.append([str(ref.round), f"`{ref.path.name}`", f"`{ref.run_id}`", (commits.get(ref.round) or DASH)[:7],
                     DASH if wall is None else f"{wall:,.0f} s",
                     ", ".join(state) or "valid"])
    return md_table(["round", "record", "run", "commit", "wall time", "validity now"], rows)


def column_section(r: Reproduction, level: int, records_shown: str) -> list[str]:
    """One lab on one kernel: where it comes from, its validity, n, the verdicts."""
    s, col = r.column.summary, r.column
    h = "#" * level
    fp = col.fingerprint
    kernels = fp.get("kernels") or [s.kernel]
    desc = (fp.get("description") or "").strip()
    lines = [f"{h} labs/{r.lab} on {r.kernel} (campaign `{r.campaign}`, target `{col.target}`)", "",
             f"- **From**: {len(r.records)} record(s) of campaign `{r.campaign}` in `{records_shown}`, "
             f"target `{col.target}`" + (f" ({desc})" if desc else "") + ", merged as one run `"
             + s.run_id + "`.",
             f"- **Run**: {_validity(s)}; kernel(s) {', '.join(str(k) for k in kernels)}"
             + (f"; paper: {s.published_source.title}" if s.published_source and s.published_source.title else "")
             + ".",
             f"- **n per scenario**: {n_text(s)}.",
             f"- **Repetitions**: {valid_text(s)}"
             + (" (each below, with what its round held against it; not counted in the findings)."
                if any(not d.surplus for d in s.dropped) else "."),
             *(f"  - dropped: round {d.rep} of `{d.scenario}`: {'; '.join(d.reasons)}"
               for d in s.dropped if not d.surplus),
             f"- **Verdicts** of the paper's {len(s.findings)} finding(s): {counts_text(s.findings)}; "
             f"setup checks apart ({len(s.setup_checks)}): {counts_text(s.setup_checks)}.", "",
             _rounds_table(r), ""]
    notes = [*s.invalid_reasons, *(f"timing note: {x}" for x in s.timing_notes), *col.notes]
    if notes:
        lines += [f"- {x}" for x in notes] + [""]
    lines += [md_table(FINDINGS_HEADER, findings_rows(s.findings)), ""]
    lines += measured_section(s)
    if s.setup_checks:
        lines += ["Setup checks (the lab's own configuration, not counted with the paper's findings):", "",
                  md_table(FINDINGS_HEADER, findings_rows(s.setup_checks)), ""]
    lines += ["The claims:", "", *claims([*s.findings, *s.setup_checks]), ""]
    return lines


def lab_block(lab: str, found: Sequence[Reproduction], level: int, records_shown: str) -> list[str]:
    """A lab's generated part: each of its runs on record, or the line saying there is none."""
    mine = [r for r in found if r.lab == lab]
    if not any(not r.column.summary.quick for r in mine):
        lines = [f"labs/{lab}: {NO_RUN}.", ""]
        if not mine:
            return lines
    else:
        lines = []
    for r in mine:
        lines += column_section(r, level, records_shown)
    return lines


def overview(labs: Sequence[str], found: Sequence[Reproduction], doc_links: dict[str, str]) -> str:
    rows = []
    for lab in labs:
        name = f"[labs/{lab}]({doc_links[lab]})" if lab in doc_links else f"labs/{lab}"
        mine = [r for r in found if r.lab == lab and not r.column.summary.quick]
        if not mine:
            rows.append([name, NO_RUN, *[DASH] * 9])
        for r in mine:
            s, c = r.column.summary, counts(r.column.summary.findings)
            rows.append([name, r.kernel, f"`{r.campaign}`", str(len(r.records)),
                         "valid" if s.valid else "invalid", n_text(s), *(str(c[v]) for v in VERDICTS),
                         str(len(s.setup_checks))])
    return md_table(["lab", "kernel", "campaign", "runs", "validity", "n per scenario", *VERDICTS,
                     "setup checks"], rows)


HEADER = """# Reproductions on record

Generated by `mptcplab reproductions` (`make reproductions`) from the records in
`{records}`: every campaign's records restored into a temporary directory, the rounds of
each lab and target merged into one run (campaign/merge.py), and each finding judged again
by this engine against the lab's published.yml as it is now. Do not edit it by hand:
regenerate it. `mptcplab reproductions --check` (and tests/unit/test_reproductions.py) fail
when this file, or a lab's section between `<!-- reproductions:begin -->` and
`<!-- reproductions:end -->` in docs/labs/, disagrees with the records.

Verdicts: *holds* / *does not hold* when the interval of the statistic over the repetitions
decides, *inconclusive* when it straddles the claim, *not measurable* here (the reason is
given); setup checks (the lab's own configuration read back) are counted apart.
"""


def reproductions_md(labs: Sequence[str], found: Sequence[Reproduction], doc_links: dict[str, str],
                     records_shown: str, cases: Collection[str] = ()) -> str:
    """``cases``: the labs shown in the cases view (their doc asks for it, docs.cases_labs)."""
    lines = [HEADER.format(records=records_shown), overview(labs, found, doc_links), ""]
    for lab in labs:
        lines += [f"## labs/{lab}", ""]
        if lab in doc_links:
            lines += [f"The lab: [{doc_links[lab]}]({doc_links[lab]}).", ""]
        if lab in cases and any(r.lab == lab for r in found):
            lines += cases_block(lab, found, records_shown)
        else:
            lines += lab_block(lab, found, 3, records_shown)
    return "\n".join(lines).rstrip("\n") + "\n"


def lab_doc_block(lab: str, found: Sequence[Reproduction], link: str, records_shown: str, level: int = 4) -> str:
    """What a lab's doc holds between its markers."""
    lines = [f"*Generated by `make reproductions` from the records in `{records_shown}` "
             f"(all labs: [{link.rsplit('/', 1)[-1]}]({link})); edit nothing between these markers.*", "",
             *lab_block(lab, found, level, records_shown)]
    return "\n".join(lines).rstrip("\n") + "\n"


def cases_doc_block(lab: str, found: Sequence[Reproduction], link: str, records_shown: str) -> str:
    """What a lab's doc holds between its cases markers (cases.py)."""
    lines = [f"*Generated by `make reproductions` from the records in `{records_shown}` "
             f"(all labs: [{link.rsplit('/', 1)[-1]}]({link})); edit nothing between these markers.*", "",
             *cases_block(lab, found, records_shown)]
    return "\n".join(lines).rstrip("\n") + "\n"

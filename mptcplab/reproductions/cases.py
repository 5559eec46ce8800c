"""The cases view of a lab on record: one row per finding (a case of a test script, as in
labs/selftests: one finding per mptcp_join.sh case), one column per target of a campaign
(a kernel), each cell pass / fail / n/a; then one line per case of the first target with
its headline checks, expected → got. A lab doc asks for it with its own markers
(docs.CASES_BEGIN ... docs.CASES_END) instead of the per-run sections, which for 73 cases of
about ten checks each would be some 900 rows per kernel.

Read from the merged records (collect.Reproduction) only: a finding's verdict, its checks'
``brief`` (what a counter check expected and got, checks/counter.py) and ``skipped`` (not
on this kernel), the finding's statement. A statement written as the selftests lab writes it
(``mptcp_join.sh '<case>' (<group>): <the script's calls>``) gives the case's name and the
script's calls; any other is shown whole beside the finding's id.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..campaign.compare import skipped_note
from ..record.model import CheckStat, FindingRow
from ..results.fmt import DASH, md_table
from .collect import Reproduction

#: "mptcp_join.sh 'signal address' (signal_address_tests): chk_join_nr 1 1 1; chk_add_nr 1 1"
_STATEMENT = re.compile(r"^\S+ '(?P<case>.+?)' \((?P<group>[^()]*)\): (?P<calls>.*)$", re.S)
WORDS = {"holds": "pass", "does not hold": "**fail**", "inconclusive": "inconclusive", "not measurable": "n/a"}


def case_of(f: FindingRow) -> tuple[str, str]:
    """(the case's name, the script's calls) from the finding's statement."""
    m = _STATEMENT.match(" ".join((f.statement or "").split()))
    if m is None:
        return f.id, f.statement or DASH
    return m["case"], m["calls"]


def _off(f: FindingRow) -> list[CheckStat]:
    return [c for c in f.checks if not c.skipped and c.verdict in ("does not hold", "inconclusive")]


def cell(f: FindingRow | None, left: bool = False) -> str:
    """"pass", "pass (9 skipped)", "**fail**: MPJoinSynRx@server 1→0", "n/a: <why>"; "skip:
    <why>" for a case the run ``left`` because this kernel lacks what it needs."""
    if f is None:
        return "not run"
    if left:
        return f"skip: {f.kernel_lacks or 'not on this kernel'}"
    skipped = len(f.skipped)
    if skipped and skipped == len(f.checks):
        return "n/a: not on this kernel"
    word = WORDS[f.verdict]
    if f.verdict == "not measurable" and not skipped:
        why = f.evidence.removeprefix("not measurable here: ")
        return f"n/a: {why}" if why and len(why) <= 80 else word
    off = [c.brief or c.statistic or "?" for c in _off(f)]
    return word + (f" ({skipped} skipped)" if skipped else "") + (f": {', '.join(off)}" if off else "")


def _label(r: Reproduction) -> str:
    return f"{r.column.target} ({r.kernel})" if r.kernel not in r.column.target else r.column.target


def _ran(r: Reproduction) -> dict[str, FindingRow]:
    """A run's findings by id, those of the scenarios it ran and those this kernel cannot
    judge (their cases are not run on it: run/kernelgate.py); a campaign of a subset of the
    cases judges the others "scenario not run": no row for them."""
    ran = set(r.column.summary.scenario_order()) | set(r.column.manifest.not_on_this_kernel)
    return {f.id: f for f in r.column.summary.findings if f.scenario is None or f.scenario in ran}


def cross_table(runs: Sequence[Reproduction]) -> list[str]:
    """Case x target: one row per finding a run measured (in the lab's order), a cell per run."""
    by = [_ran(r) for r in runs]
    left = [set(r.column.manifest.not_on_this_kernel) for r in runs]
    ids = list(dict.fromkeys(fid for b in by for fid in b))
    rows = []
    for fid in ids:
        first = next(b[fid] for b in by if fid in b)
        rows.append([case_of(first)[0], *(cell(b.get(fid), (b[fid].scenario in out) if fid in b else False)
                                          for b, out in zip(by, left, strict=True))])
    counts = [", ".join([*(f"{sum(1 for f in b.values() if f.verdict == v and f.scenario not in out)} "
                           f"{WORDS[v].strip('*')}" for v in WORDS),
                         f"{sum(1 for f in b.values() if f.scenario in out)} skip"])
              for b, out in zip(by, left, strict=True)]
    lines = [md_table(["case", *(_label(r) for r in runs)], [*rows, ["**in all**", *counts]]), ""]
    if any(left):
        lines += ["skip: the case needs what this kernel lacks (its finding's `requires`, mptcp_join.sh's own "
                  "`continue_if` guard: a kernel symbol or a release); it is not run there, as the script "
                  "skips it (mptcplab/run/kernelgate.py).", ""]
    notes = [n for r in runs if (n := skipped_note(_label(r), r.column.summary))]
    if notes:
        lines += ["Skipped: a counter this kernel does not have is neither a pass nor a fail (the kernel's own "
                  "mptcp_lib.sh prints \"[skip] counter X is not available\"); the case is judged on its other "
                  "checks, and the cell counts the skipped ones.", "", *(f"- {n}" for n in notes), ""]
    return lines


def headline(f: FindingRow) -> str:
    """The checks worth a glance, expected → got: the failing or undecided ones first in
    bold, then the first check (the script's first count) and every one that expects more than
    zero; the checks a kernel skipped are counted, not listed."""
    briefed = [c for c in f.checks if c.brief and not c.skipped]
    off = _off(f)
    shown = [c for i, c in enumerate(briefed)
             if c not in off and (i == 0 or not (c.target or "").startswith("== 0 "))]
    cells = [f"**{c.brief}**" for c in off if c.brief] + [c.brief or "" for c in shown]
    skipped = len(f.skipped)
    return ", ".join(cells) + (f" ({skipped} skipped)" if skipped else "") if cells else DASH


def per_case_table(r: Reproduction) -> list[str]:
    """One line per case of one run: its name, the script's calls, the verdict, the headline checks."""
    rows = []
    left = r.column.manifest.not_on_this_kernel
    for f in _ran(r).values():
        case, calls = case_of(f)
        rows.append([case, f"`{calls}`", cell(f, f.scenario in left).split(":", 1)[0], headline(f)])
    return [md_table(["case", "script's calls", "this lab", "expected → got (headline checks)"], rows), ""]


def _when(r: Reproduction) -> str:
    """", commit abc1234, 2026-11-29T10:43Z, 2,100 s of run (N scenario(s) not run on this
    kernel)": what the run's manifest says of itself."""
    m = r.column.manifest
    parts = [f"commit {m.git.commit[:7]}" if m.git.commit else "",
             f"started {m.started}" if m.started else "",
             f"{m.wall_seconds:,.0f} s of run" if m.wall_seconds is not None else "",
             f"{len(m.not_on_this_kernel)} case(s) not run on this kernel" if m.not_on_this_kernel else ""]
    return "".join(f", {p}" for p in parts if p)


def cases_block(lab: str, found: Sequence[Reproduction], records_shown: str) -> list[str]:
    """The cases view of ``lab``: per campaign on record, its targets side by side (by kernel),
    then the cases of its native target (else its last) one per line."""
    mine = [r for r in found if r.lab == lab]
    if not mine:
        return [f"labs/{lab}: no campaign on record yet (campaigns/records/).", ""]
    lines: list[str] = []
    for campaign in dict.fromkeys(r.campaign for r in mine):
        runs = [r for r in mine if r.campaign == campaign]  # by kernel: oldest first
        # the one line per case: on a kernel run natively, which a qemu target is not
        first = next((r for r in runs if r.column.fingerprint.get("kind") != "qemu"), runs[-1])
        s = first.column.summary
        lines += [f"Campaign `{campaign}` ({len(runs)} target(s), records in `{records_shown}{campaign}/`; "
                  + ("quick: one repetition per case" if s.quick else "full runs")
                  + "). The cases (pass: every check of the case that this kernel has passes; **fail**: "
                    "the failing check, counter@node expected→got per repetition; n/a: not measurable, with why):",
                  "", *cross_table(runs)]
        lines += [f"- {_label(r)}: run `{r.column.summary.run_id}`, "
                  + ("valid" if r.column.summary.valid else
                     f"**invalid** ({'; '.join(r.column.summary.invalid_reasons)})")
                  + f", {r.column.summary.run_kind or 'unknown kind'}" + _when(r) for r in runs]
        lines += ["", f"One line per case on {_label(first)} (the checks named: the failing ones first, in bold, "
                  "then the script's first count and every count it expects above zero; report.md of the run "
                  "has every check's evidence):", "", *per_case_table(first)]
    return lines

"""The labs of a checkout and their latest runs, as the landing notebook (notebooks/index.ipynb)
lists them: the paper each lab reruns, what it measures, the verdicts of its latest run and
the notebook that explains it.

Everything about a run is read through the typed result model (record/model/); a lab or a
run that cannot be read becomes a one-line ``problem`` of its entry, never an exception, so
that one broken lab does not hide the others.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import LabInputError
from ..lab.loader import load_lab
from ..record.model import ResultsFormatError, Summary
from ..results.fmt import DASH, fmt_mean_std
from ..results.read import load_summary
from ..results.tables import statistic_cell

#: the landing notebook, notebooks/index.ipynb
LANDING = "index.ipynb"


@dataclass(frozen=True)
class LabEntry:
    name: str
    path: Path
    #: experiment.yml's description (what the lab measures)
    description: str
    #: "Authors, *Title*, year" of published.yml's source; None when the lab has none
    paper: str | None
    paper_kernel: str | None
    #: notebooks/<name>.ipynb when it exists
    notebook: Path | None
    #: why the lab's files could not be read (one line); None when they could
    problem: str | None = None


@dataclass(frozen=True)
class LatestRun:
    lab: str
    run_dir: Path | None
    summary: Summary | None
    #: why there is no summary to show: no run yet, or an unreadable one (one line)
    problem: str | None = None


def find_root(start: Path) -> Path:
    """The directory holding labs/ (the checkout, or /home/jovyan/work in the Jupyter image,
    where labs/, notebooks/ and results/ are mounted side by side), searched from ``start``
    upwards; ``start`` itself when none is found."""
    for d in [start, *start.parents]:
        if (d / "labs").is_dir():
            return d
    return start


def _paper(entry_source: object) -> tuple[str | None, str | None]:
    title = getattr(entry_source, "title", None)
    if not title:
        return None, None
    authors = list(getattr(entry_source, "authors", []) or [])
    who = authors[0] + (" et al." if len(authors) > 2 else f" and {authors[1]}" if len(authors) == 2 else "") \
        if authors else ""
    year = getattr(entry_source, "year", None)
    paper = ", ".join(x for x in (who, f"*{title}*", str(year) if year else "") if x)
    return paper, getattr(entry_source, "kernel", None)


def _shared_notebooks(root: Path) -> dict[str, Path]:
    """lab name -> a notebook covering several labs, named in its metadata
    (``"mptcplab": {"labs": [...]}``, e.g. deployability.ipynb for middlebox, setup, http)."""
    out: dict[str, Path] = {}
    folder = root / "notebooks"
    for nb in sorted(folder.glob("*.ipynb")) if folder.is_dir() else []:
        try:
            labs = json.loads(nb.read_text()).get("metadata", {}).get("mptcplab", {}).get("labs", [])
        except (OSError, ValueError, AttributeError):
            continue
        for name in labs if isinstance(labs, list) else []:
            out.setdefault(str(name), nb)
    return out


def list_labs(root: Path) -> list[LabEntry]:
    """Every labs/<name>/ with an experiment.yml, in name order: found in the directory, so a
    lab added there appears without any list to edit; its notebook is notebooks/<name>.ipynb
    when that file exists."""
    out: list[LabEntry] = []
    labs = root / "labs"
    if not labs.is_dir():
        return out
    shared = _shared_notebooks(root)
    for d in sorted(p for p in labs.iterdir() if (p / "experiment.yml").is_file()):
        nb = root / "notebooks" / f"{d.name}.ipynb"
        notebook = nb if nb.is_file() else shared.get(d.name)
        try:
            lab = load_lab(d)
        except (LabInputError, OSError) as e:
            out.append(LabEntry(d.name, d, "", None, None, notebook, problem=str(e).splitlines()[0]))
            continue
        paper, kernel = _paper(lab.published.source) if lab.published else (None, None)
        out.append(LabEntry(d.name, d, " ".join(lab.experiment.description.split()), paper, kernel, notebook))
    return out


def latest_run(results_root: Path, lab: str) -> LatestRun:
    """results/<lab>/latest through the result model. A lab that was never run, or whose runs
    never completed (``latest`` points at complete runs only), is said as such, not an error."""
    run = results_root / lab / "latest"
    if not (run / "summary.json").is_file():
        runs = _run_dirs(results_root / lab)
        if not runs:
            return LatestRun(lab, None, None, f"no run yet (nothing under {results_root / lab})")
        return LatestRun(lab, None, None, f"no complete run yet ({len(runs)} run(s) under {results_root / lab}, "
                         "none finished: one in progress, or stopped before its end)")
    try:
        return LatestRun(lab, run.resolve(), load_summary(run))
    except (ResultsFormatError, OSError) as e:
        return LatestRun(lab, run.resolve(), None, f"unreadable: {e}")


def _run_dirs(lab_results: Path) -> list[Path]:
    # run directories only: not the latest link, nor the hidden staging entries of a run
    try:
        return [d for d in lab_results.iterdir() if d.is_dir() and not d.is_symlink() and not d.name.startswith(".")]
    except OSError:
        return []


def other_notebooks(root: Path, labs: list[LabEntry]) -> list[Path]:
    """The notebooks of notebooks/ that belong to no lab (a lab's is notebooks/<lab>.ipynb) and
    are not the landing page itself, in name order: found in the directory, never listed by hand."""
    folder = root / "notebooks"
    if not folder.is_dir():
        return []
    taken = {lab.notebook.name for lab in labs if lab.notebook} | {LANDING}
    return sorted(p for p in folder.glob("*.ipynb") if p.name not in taken)


VERDICT_COLUMNS = ["scenario", "reps", "goodput Mbit/s (mean ± std)", "MPTCP verified", "reps with warnings"]


def verdict_table(summary: Summary) -> pd.DataFrame:
    """One row per scenario of a run: goodput, MPTCP verified out of the repetitions (or TCP),
    and how many repetitions carry warnings; a dash for what the run did not record."""
    rows = []
    for name in summary.scenario_order():
        a = summary.aggregate(name)
        if a is None:
            rows.append([name, len(summary.reps_of(name)), DASH, DASH, DASH])
            continue
        mp = f"{a.verified_reps}/{a.n}" if a.mptcp_requested else "TCP"
        if a.mptcp_requested and a.fallback_reps:
            mp += f" ({a.fallback_reps} FALLBACK)"
        rows.append([name, a.n, fmt_mean_std(a.goodput_mean, a.goodput_std, "goodput_mbps"), mp, a.warning_reps])
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


FINDING_COLUMNS = ["finding", "scenario", "verdict", "statistic [interval] (coverage, n)", "evidence"]


def findings_verdicts(summary: Summary) -> pd.DataFrame:
    """The paper's findings checked on the run: the verdict with its interval and the evidence."""
    rows = [[f.id, f.scenario or DASH, f.shown, statistic_cell(f), f.evidence or DASH] for f in summary.findings]
    return pd.DataFrame(rows, columns=FINDING_COLUMNS)

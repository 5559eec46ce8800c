"""What notebooks/compare.ipynb compares: columns of one or more labs (campaign directories,
run directories, or a directory of campaign records restored for the occasion), through the
same code as `mptcplab compare` (campaign/compare.py), so the notebook and the command show
the same columns, verdicts and figures.

A records directory (campaigns/records/<campaign>/, as the repository keeps them) is merged
as `mptcplab reproductions` merges it: restored into a temporary directory, removed before
this returns; the columns keep their summaries in memory, which is all the sections and the
figure read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..campaign.compare import gather
from ..campaign.merge import Column
from ..errors import LabInputError
from ..reproductions.collect import reproductions


def resolve(base: Path, p: str | Path) -> Path:
    """``p`` relative to ``base`` (the notebook's folder) unless absolute."""
    q = Path(p)
    return q if q.is_absolute() else (base / q).resolve()


def columns(inputs: Sequence[Path], records: Sequence[Path], labs_dir: Path) -> list[Column]:
    """Every column of the inputs (run or campaign directories) and of the records
    directories, in that order; a label repeated across them gets " #2", " #3"."""
    cols = gather(list(inputs)) if inputs else []
    for root in records:
        if not root.is_dir():
            raise LabInputError("notebook", "records", f"{root} is not a directory")
        # the campaign files beside the records root (campaigns/ for campaigns/records/<name>/)
        campaigns = next((d for d in (root.parent, root.parent.parent) if any(d.glob("*.yml"))), root.parent)
        for r in reproductions(root, labs_dir, campaigns):
            c = r.column
            label, n = f"{c.target} ({r.campaign})", 2
            while any(x.target == label and x.lab == c.lab for x in cols):
                label, n = f"{c.target} ({r.campaign}) #{n}", n + 1
            c.target = label
            cols.append(c)
    return cols


def by_lab(cols: Sequence[Column]) -> dict[str, list[Column]]:
    """The columns grouped by lab, labs in the order they first appear."""
    out: dict[str, list[Column]] = {}
    for c in cols:
        out.setdefault(c.lab, []).append(c)
    return out


__all__ = ["by_lab", "columns", "resolve"]

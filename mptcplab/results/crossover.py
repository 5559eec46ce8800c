"""Crossovers of a size sweep: the file size at which one scenario family overtakes another
(labs/http: MPTCP against TCP on one link and against bonding, NSDI 2012 Fig 11, where the
paper places them near 30-100 KB and 150 KB). Computed from the run, never written in a lab
file: the sizes where they fall depend on rate x RTT and on the CPU, so they are a result.

Scenario names follow the lab's sweep: ``<family>-<size>k`` (size in KB, 1000 bytes).
The report (report.py) prints the crossovers of the pairs ``compared_pairs`` picks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..record.model import Summary
from .aggregate import scenario_value
from .fmt import fmt_num

_NAME = re.compile(r"^(?P<family>[a-z0-9]+)-(?P<kb>\d+)k$")


def crossover(sizes: Sequence[float], ratios: Sequence[float | None]) -> float | None:
    """The size at which ``ratios`` (one family over another, per size, sizes ascending)
    rises through 1 for the last time: interpolated on log size between the last size below 1
    and the next one at or above it. The smallest size when the ratio is >= 1 throughout;
    None when it is below 1 at the largest size (no crossover in the sweep) or a ratio is missing."""
    if not sizes or any(r is None for r in ratios) or len(sizes) != len(ratios):
        return None
    rs = [float(r) for r in ratios if r is not None]
    if rs[-1] < 1.0:
        return None
    below = [i for i, r in enumerate(rs) if r < 1.0]
    if not below:
        return float(sizes[0])
    i = below[-1]
    (s0, r0), (s1, r1) = (sizes[i], rs[i]), (sizes[i + 1], rs[i + 1])
    frac = (1.0 - r0) / (r1 - r0) if r1 != r0 else 0.0
    return float(math.exp(math.log(s0) + frac * (math.log(s1) - math.log(s0))))


def family_values(summary: Summary, family: str, metric: str = "requests_per_s") -> dict[int, float | None]:
    """Size in KB -> the metric's aggregate for the family's scenarios in the run."""
    out: dict[int, float | None] = {}
    for rep in summary.scenarios:
        m = _NAME.match(rep.name)
        if m and m.group("family") == family and int(m.group("kb")) not in out:
            reps = [r for r in summary.scenarios if r.name == rep.name]
            out[int(m.group("kb"))] = scenario_value(reps, metric).value
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class Crossover:
    family: str
    other: str
    sizes_kb: list[int]
    #: family / other per size (None: one of them has no value)
    ratios: list[float | None]
    crossover_kb: float | None


def family_crossover(summary: Summary, family: str, other: str, metric: str = "requests_per_s") -> Crossover:
    """``family`` over ``other`` per size (the sizes both ran) and the crossover size in KB."""
    a, b = family_values(summary, family, metric), family_values(summary, other, metric)
    sizes = [s for s in a if s in b]
    ratios: list[float | None] = []
    for s in sizes:
        x, y = a[s], b[s]
        ratios.append(x / y if x is not None and y else None)
    return Crossover(family, other, sizes, ratios, crossover([float(s) for s in sizes], ratios))


def families(summary: Summary) -> dict[str, set[int]]:
    """The families of the run's scenarios (``<family>-<size>k``, at least two sizes) and
    their sizes in KB, in the order the run lists them."""
    sizes: dict[str, set[int]] = {}
    for rep in summary.scenarios:
        m = _NAME.match(rep.name)
        if m:
            sizes.setdefault(m.group("family"), set()).add(int(m.group("kb")))
    return {f: kb for f, kb in sizes.items() if len(kb) >= 2}


def compared_pairs(summary: Summary) -> list[tuple[str, str]]:
    """(family, other) pairs whose crossover the report prints: the ``mptcp`` family against
    each other one (what the papers ask: from which size MPTCP overtakes TCP, bonding...),
    then the other families among themselves, a later-listed one over an earlier one (labs list
    their baseline first). Only pairs that ran at least two common sizes."""
    sizes = families(summary)
    rest = [f for f in sizes if f != "mptcp"]
    pairs = [("mptcp", f) for f in rest] if "mptcp" in sizes else []
    pairs += [(later, first) for i, first in enumerate(rest) for later in rest[i + 1:]]
    return [(a, b) for a, b in pairs if len(sizes[a] & sizes[b]) >= 2]


CROSSOVER_COLUMNS = ["families compared", "metric", "ratio per size", "crossover"]


def _kb(x: float) -> str:
    return f"{x:.0f} KB" if x >= 10 or x == int(x) else f"{x:.1f} KB"


def crossover_text(c: Crossover) -> str:
    """The crossover in words: a size, none in the range, ahead everywhere, or unknown."""
    span = f"{_kb(c.sizes_kb[0])}-{_kb(c.sizes_kb[-1])}"
    gaps = [_kb(s) for s, r in zip(c.sizes_kb, c.ratios, strict=True) if r is None]
    if gaps:
        return f"unknown: no value at {', '.join(gaps)}"
    if c.crossover_kb is None:
        return f"none in the measured range ({span})"
    if all(r is not None and r >= 1 for r in c.ratios):
        return f"ahead at every size ({span})"
    return f"≈ {_kb(c.crossover_kb)}"


def crossover_rows(summary: Summary) -> list[list[str]]:
    """One display row (CROSSOVER_COLUMNS) per compared pair of the run: what report.md and
    notebooks/deployability.ipynb print; empty for a run without scenario families."""
    pairs = compared_pairs(summary)
    fams = {f for pair in pairs for f in pair}
    # wrk's requests/s for a web lab (labs/http); a sweep of bulk transfers compares goodput
    metric = ("requests_per_s" if any(v is not None for f in fams for v in family_values(summary, f).values())
              else "goodput_mbps")
    rows = []
    for fam, other in pairs:
        c = family_crossover(summary, fam, other, metric)
        ratios = ", ".join(f"{_kb(s)} {fmt_num(r)}" for s, r in zip(c.sizes_kb, c.ratios, strict=True))
        rows.append([f"{fam} over {other}", metric, ratios, crossover_text(c)])
    return rows

"""Per-repetition validity of a campaign's rounds: the one rule the merge (which repetitions
the merged run uses) and the executor (whether a lab x target needs another round) share.

A round's summary says what is wrong as "<scenario> rep <n>: <problem>" (run/verdicts.py),
so a problem belongs to one repetition: that repetition is dropped, the round's others are
kept. A problem that names no repetition of the round voids the merged run, as before. Per
scenario the first ``planned`` valid repetitions in round order are used; valid ones beyond
them (a re-measured round that turned out not needed for that scenario) are left out too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..record import validity
from ..record.model import Summary
from ..record.model.summary import DroppedRepetition


@dataclass
class Selection:
    """What the merge makes of a lab x target's rounds."""

    planned: int
    #: the scenarios, in the order the rounds list them
    scenarios: list[str]
    #: (round, scenario, the repetition's number in its round) of every repetition used
    used: list[tuple[int, str, int]] = field(default_factory=list)
    #: invalid repetitions, then (separately) valid ones beyond ``planned``
    dropped: list[DroppedRepetition] = field(default_factory=list)
    surplus: list[DroppedRepetition] = field(default_factory=list)
    #: "round R: reason" of each kept reason that names no repetition of its round
    unattributed: list[str] = field(default_factory=list)
    #: round -> how many CPU-bound reasons were not held against it (record/validity.exempt)
    exempted: dict[int, int] = field(default_factory=dict)

    def valid(self, scenario: str) -> int:
        return sum(1 for _, s, _ in self.used if s == scenario)

    def dropped_of(self, scenario: str) -> int:
        return sum(1 for d in self.dropped if d.scenario == scenario)

    def short(self) -> list[str]:
        """The scenarios with fewer than ``planned`` valid repetitions."""
        return [s for s in self.scenarios if self.valid(s) < self.planned]

    def shortfall(self, bound_reached: str) -> list[str]:
        """One invalid reason per short scenario; ``bound_reached``: why no more rounds came."""
        return [f"{s}: {self.valid(s)} of {self.planned} planned repetitions valid "
                f"({self.dropped_of(s)} dropped; {bound_reached})" for s in self.short()]


def select(rounds: Sequence[tuple[int, Summary]], planned: int, cpu_bound: set[str] | None = None,
           scenarios: Iterable[str] = ()) -> Selection:
    """``rounds``: (round, that round's summary); ``cpu_bound``: the scenarios the lab declares
    CPU-bound now (their CPU-bound reason is not held against them); ``scenarios``: ones the
    rounds should hold besides those they do (a scenario never measured is short too)."""
    order = sorted(rounds, key=lambda x: x[0])
    names = list(dict.fromkeys([*scenarios, *(r.name for _, s in order for r in s.scenarios)]))
    sel = Selection(planned, names)
    for rnd, s in order:
        kept = [x for x in s.invalid_reasons if not validity.exempt(x, cpu_bound or set())]
        if len(kept) < len(s.invalid_reasons):
            sel.exempted[rnd] = len(s.invalid_reasons) - len(kept)
        mine: dict[tuple[str, int], list[str]] = {}
        for reason in kept:
            owner = next(((r.name, r.rep) for r in s.scenarios if reason.startswith(f"{r.name} rep {r.rep}: ")), None)
            if owner is None:
                sel.unattributed.append(f"round {rnd}: {reason}")
            else:
                mine.setdefault(owner, []).append(reason)
        for r in s.scenarios:
            reasons = mine.get((r.name, r.rep))
            if reasons:
                sel.dropped.append(DroppedRepetition(scenario=r.name, rep=rnd, reasons=reasons))
            elif sel.valid(r.name) >= planned:
                sel.surplus.append(DroppedRepetition(
                    scenario=r.name, rep=rnd, surplus=True,
                    reasons=[f"valid, beyond the planned {planned} (a re-measured round not needed for it)"]))
            else:
                sel.used.append((rnd, r.name, r.rep))
    return sel


__all__ = ["Selection", "select"]

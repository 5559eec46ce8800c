"""A campaign as work items, in the order they run.

A work item is one lab's scenario set run once (`mptcplab run LAB --reps 1 --scenario ...`,
or `--subset NAME` for a lab entry that names one of the lab's subsets) on one target:
repetition k of that lab there. Items are independent (each has its own results root), so
a campaign resumes by skipping the items whose result directory holds a complete run. The
order is shuffled by default (Flent's batch default: slow drifts of the host do not line up
with one lab or one target) with a seed recorded in campaign.json, so a resumed campaign
keeps its order and a rerun with the same seed reproduces it.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LabInputError
from ..lab.loader import load_lab
from ..lab.selection import resolve_subset, subset_names
from .schema import Campaign, LabEntry, RunSettings, Target, resolve_lab_dir


@dataclass(frozen=True)
class WorkItem:
    target: Target
    lab: str
    lab_dir: Path
    scenarios: tuple[str, ...]
    round: int
    run: RunSettings
    #: the lab's named subset the item runs (``--subset``; ``scenarios`` are what it selects)
    subset: str | None = None
    #: the host of a pool this attempt runs on (campaign/pool.py); not part of the key:
    #: a pool's hosts are interchangeable
    on_host: str | None = None

    @property
    def host(self) -> str:
        """The inventory host the item runs on: the one chosen from a pool, else the target's
        (a pool run one item at a time, a pool of one host: its first host)."""
        if self.on_host:
            return self.on_host
        return self.target.pool[0] if self.target.pool else self.target.inventory_host

    @property
    def key(self) -> str:
        """What makes two items measure the same thing: an override (--quick, another
        scenario set) gives other items, so a quick result never counts as a full one."""
        what: dict[str, Any] = {
            "target": self.target.name, "kind": self.target.kind, "host": self.target.inventory_host,
            "lab": self.lab, "scenarios": list(self.scenarios), "run": self.run.key_fields()}
        if self.subset is not None:  # only then: the ids of campaigns without subsets stay as they were
            what["subset"] = self.subset
        if self.target.kind == "qemu":  # another kernel is another measurement
            what["debs"] = self.target.debs
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:8]

    @property
    def selection(self) -> str:
        """What the item runs, as the dry run and the progress lines say it."""
        return (f"subset {self.subset}: " if self.subset else "") + " ".join(self.scenarios)

    @property
    def id(self) -> str:
        return f"{self.lab}__{self.target.name}__r{self.round}__{self.key}"


@dataclass
class Overrides:
    """Command-line batch controls: they change what is planned, never the campaign file."""

    quick: bool = False
    scenarios: list[str] | None = None
    repetitions: int | None = None
    targets: list[str] | None = None
    seed: int | None = None
    no_shuffle: bool = False
    labs: list[str] = field(default_factory=list)


def _scenarios(campaign_file: str, lab_dir: Path, entry: LabEntry, only: list[str] | None,
               index: int) -> tuple[str, tuple[str, ...], str | None]:
    """The lab's name, the scenarios an entry's items run, and its subset (None when the
    entry names none, or when --scenario narrows it: the items then run those scenarios,
    not the subset, and their manifests say so)."""
    lab = load_lab(lab_dir)
    names = [s.name for s in lab.scenarios]
    listed = entry.scenarios
    for s in listed or []:
        if s not in names:
            raise LabInputError(campaign_file, f"labs.{index}.scenarios",
                                f"no scenario {s!r} in {lab.path} (have: {', '.join(names)})")
    if entry.subset is not None:
        listed = subset_names(lab, resolve_subset(lab, entry.subset, campaign_file, f"labs.{index}.subset"))
    chosen = [n for n in names if listed is None or n in listed]
    whole = len(chosen)
    if only:
        chosen = [n for n in chosen if n in only]
    return lab.name, tuple(chosen), entry.subset if len(chosen) == whole else None


def plan(c: Campaign, base: Path, campaign_file: str, o: Overrides | None = None) -> list[WorkItem]:
    """Every work item of the campaign, in campaign order (labs, targets, rounds)."""
    o = o or Overrides()
    targets = c.targets
    if o.targets:
        unknown = [t for t in o.targets if t not in {x.name for x in c.targets}]
        if unknown:
            raise LabInputError("command line", "--target", f"no target {unknown[0]!r} in {campaign_file} "
                                f"(have: {', '.join(t.name for t in c.targets)})")
        targets = [t for t in c.targets if t.name in o.targets]
    reps = o.repetitions if o.repetitions is not None else c.repetitions
    if reps < 1:
        raise LabInputError("command line", "--reps", "must be at least 1")
    run = c.run.model_copy(update={"quick": c.run.quick or o.quick})
    items: list[WorkItem] = []
    seen: set[str] = set()
    for i, entry in enumerate(c.labs):
        lab_dir = resolve_lab_dir(entry, base)
        name, scen, subset = _scenarios(campaign_file, lab_dir, entry, o.scenarios, i)
        if o.labs and name not in o.labs:
            continue
        seen.update(scen)
        if not scen:
            continue  # the scenario filter leaves this lab nothing
        for t in targets:
            items.extend(WorkItem(t, name, lab_dir, scen, k, run, subset) for k in range(1, reps + 1))
    if o.scenarios:
        missing = [s for s in o.scenarios if s not in seen]
        if missing:
            raise LabInputError("command line", "--scenario", f"no lab of {campaign_file} has scenario {missing[0]!r}")
    if not items:
        raise LabInputError("command line", "", "the overrides leave this campaign no work item")
    return items


def ordered(items: list[WorkItem], seed: int, shuffle: bool) -> list[WorkItem]:
    """The run order: shuffled with ``seed`` (a private generator: the same seed gives the
    same order whatever else uses random), or campaign order."""
    out = list(items)
    if shuffle:
        random.Random(seed).shuffle(out)
    return out


def new_seed() -> int:
    return random.SystemRandom().randrange(2**31)

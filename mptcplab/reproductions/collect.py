"""The records kept in the repository, merged as the campaign merges its items.

Every campaign item's record under a records root (campaigns/records/<campaign>/*.tar.xz,
packed by `mptcplab campaign --records`) is restored into a temporary directory, never into
results/; the records of one campaign, lab, target and run settings (one item key) become
one campaign directory there, and campaign/merge.py merges their rounds into one run
(a Column), its findings re-evaluated with the engine and the lab's published.yml as they
are now. Nothing is written outside the temporary directory, which is removed after.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..campaign.merge import Column, merge
from ..errors import LabInputError
from ..record import archive, store


@dataclass(frozen=True)
class RecordRef:
    """One campaign item's record, from its index (ARCHIVE.json) and its item id
    (``<lab>__<target>__r<round>__<key>``, campaign/planner.py WorkItem.id)."""

    path: Path
    campaign: str
    item: str
    lab: str
    target: str
    round: int
    key: str
    run_id: str
    packed_at: str | None


@dataclass
class Reproduction:
    """One lab on one target of one campaign: its records, in round order, and their merge."""

    campaign: str
    records: list[RecordRef]
    column: Column

    @property
    def lab(self) -> str:
        return self.column.lab

    @property
    def kernel(self) -> str:
        return self.column.summary.kernel or "unknown kernel"

    def sort_key(self) -> tuple[str, str, str, str, str]:
        return (self.lab, self.kernel, self.campaign, self.column.target, self.records[0].key)


def read_ref(path: Path) -> RecordRef:
    index = archive.read_index(path)
    if index["kind"] != "campaign-item":
        raise LabInputError(str(path), "kind", f"{index['kind']}: not a campaign item's record "
                            "(only campaigns' records are reproductions)")
    item, lab = str(index.get("item")), str(index.get("lab"))
    parts = item.removeprefix(f"{lab}__").rsplit("__", 2)
    if not item.startswith(f"{lab}__") or len(parts) != 3 or not parts[1][1:].isdigit() or parts[1][0] != "r":
        raise LabInputError(str(path), "item", f"{item!r} is not <lab>__<target>__r<round>__<key> of lab {lab}")
    return RecordRef(path, str(index.get("campaign")), item, lab, parts[0], int(parts[1][1:]), parts[2],
                     str(index.get("run_id")), index.get("packed_at"))


def find_records(root: Path) -> list[RecordRef]:
    """Every record under ``root``, in path order."""
    if not root.is_dir():
        raise LabInputError("command line", "--records", f"{root} is not a directory")
    return [read_ref(p) for p in sorted(root.rglob("*" + archive.SUFFIX))]


def _campaign_file(campaigns_dir: Path, campaign: str) -> dict[str, Any]:
    """The campaign file named ``campaign`` in ``campaigns_dir``, as YAML data; empty when none is there."""
    for f in sorted(campaigns_dir.glob("*.yml")):
        try:
            data = yaml.safe_load(f.read_text())
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(data, dict) and data.get("name") == campaign:
            return data
    return {}


def campaign_targets(campaigns_dir: Path, campaign: str) -> dict[str, dict[str, Any]]:
    """The targets of the campaign file named ``campaign`` in ``campaigns_dir``, as the
    campaign records them (kind, host, description); none when no such file is there."""
    data = _campaign_file(campaigns_dir, campaign)
    return {str(t.get("name")): {"kind": t.get("kind", "local"), "host": t.get("host"),
                                 "description": t.get("description")}
            for t in data.get("targets") or [] if isinstance(t, dict)}


def campaign_plan(campaigns_dir: Path, campaign: str) -> tuple[int | None, int]:
    """The campaign file's planned repetitions (the merge's n; None without a file: one per
    round on record) and its re-measure bound (campaign/schema.py's defaults when not given)."""
    data = _campaign_file(campaigns_dir, campaign)
    if not data:
        return None, 0
    return int(data.get("repetitions", 3)), int(data.get("remeasure", 0))


def _merge_group(out: Path, campaign: str, refs: list[RecordRef], labs: Path,
                 targets: dict[str, dict[str, Any]], planned: tuple[int | None, int] = (None, 0)) -> Column:
    """Restore one group's records into the campaign directory ``out`` and merge them."""
    for r in refs:
        archive.restore(r.path, out)
    items = {r.item: {"target": r.target, "kind": targets.get(r.target, {}).get("kind", "local"),
                      "lab": r.lab, "lab_dir": str((labs / r.lab).resolve()), "round": r.round}
             for r in refs}
    store.write_json(out / "campaign.json", {"name": campaign, "targets": targets, "items": items,
                                             "repetitions": planned[0], "remeasure": planned[1]})
    cols = merge(out, write=False)
    if len(cols) != 1:
        raise LabInputError(str(refs[0].path.parent), "records",
                            f"{len(refs)} record(s) of {campaign} item key {refs[0].key} hold "
                            f"{len(cols)} complete run(s) to merge, expected one lab on one target")
    return cols[0]


def reproductions(root: Path, labs: Path, campaigns_dir: Path | None = None) -> list[Reproduction]:
    """Every campaign, lab, target and settings of the records under ``root``, merged, in
    order of lab, kernel, campaign and target. ``labs``: the labs' directory (labs/<lab>);
    ``campaigns_dir``: where the campaign files are (default: ``root``'s parent, as for
    campaigns/records/)."""
    where = root.parent if campaigns_dir is None else campaigns_dir
    groups: dict[tuple[str, str], list[RecordRef]] = {}
    for r in find_records(root):
        groups.setdefault((r.campaign, r.key), []).append(r)
    found = []
    with tempfile.TemporaryDirectory(prefix="mptcplab-reproductions-") as tmp:
        for n, ((campaign, _key), refs) in enumerate(sorted(groups.items())):
            refs.sort(key=lambda r: (r.round, r.item))
            targets = campaign_targets(where, campaign)
            col = _merge_group(Path(tmp) / str(n), campaign, refs, labs, targets, campaign_plan(where, campaign))
            found.append(Reproduction(campaign, refs, col))
    return sorted(found, key=Reproduction.sort_key)


def lab_names(labs: Path) -> list[str]:
    """The labs of the labs' directory (each directory with an experiment.yml), sorted."""
    return sorted(p.parent.name for p in labs.glob("*/experiment.yml"))


__all__ = ["RecordRef", "Reproduction", "campaign_plan", "campaign_targets", "find_records", "lab_names", "read_ref",
           "reproductions"]

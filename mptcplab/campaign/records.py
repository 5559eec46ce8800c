"""A campaign's finished items kept as records (record/archive.py) in a directory of their
own, so a campaign run in parts on machines that do not keep results/ between parts
(a fresh CI or cloud machine per session) still merges every part: each part restores the
records of the items finished before, runs its items, and packs them.

Only the records of items this campaign plans are restored (the item id is a hash of the
target, lab, scenarios and run settings): a record measured with other settings is
another measurement, listed and skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import LabInputError
from ..record import archive
from .executor import finished, finished_items
from .planner import WorkItem


def pack_items(out: Path, records: Path, campaign: str, only: set[str] | None = None,
               log: Callable[[str], None] = print) -> list[archive.Packed]:
    """Every finished item of the campaign directory ``out`` (of ``only``, when given) as
    ``records/<item-id>.tar.xz``, kept as is when it holds the same files already."""
    packed = []
    for item, run in finished_items(out).items():
        if only is not None and item not in only:
            continue
        p = archive.pack_item(out, item, run, records, campaign)
        packed.append(p)
        log(p.line())
    return packed


def pack_finished(out: Path, order: list[WorkItem], records: Path, campaign: str,
                  log: Callable[[str], None] = print) -> list[archive.Packed]:
    """The finished items of this plan as records (a campaign run with ``--records``)."""
    return pack_items(out, records, campaign, {i.id for i in order}, log)


def restore_unfinished(out: Path, order: list[WorkItem], records: Path, campaign: str,
                       log: Callable[[str], None] = print) -> list[Path]:
    """Unpack into the campaign directory the records of planned items not finished here."""
    if not records.is_dir():
        return []
    planned = {i.id: i for i in order}
    restored = []
    for rec in sorted(records.glob("*" + archive.SUFFIX)):
        index = archive.read_index(rec)
        if index["kind"] != "campaign-item":
            raise LabInputError(str(rec), "kind", f"{index['kind']}: not a campaign item's record")
        item = planned.get(str(index.get("item")))
        if index.get("campaign") != campaign or item is None:
            log(f"record {rec.name}: not an item of this plan (campaign {index.get('campaign')}, "
                f"item {index.get('item')}); skipped")
            continue
        if finished(out, item) is not None:
            continue
        where, _ = archive.restore(rec, out)
        if finished(out, item) is None:
            raise LabInputError(str(rec), "run", f"restored into {where}, but it holds no complete run")
        restored.append(where)
        log(f"record {rec.name}: restored into {where} (round {item.round}, run {index.get('run_id')}, "
            f"packed {index.get('packed_at')})")
    return restored


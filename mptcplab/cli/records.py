"""Commands on records: pack runs without their captures, unpack them where they were."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import LabInputError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ar = sub.add_parser("archive", help="pack runs into records without their captures, to keep or move them")
    ar.add_argument("runs", nargs="+", type=Path, metavar="RUN_OR_CAMPAIGN",
                    help="run directories (results/<lab>/<run-id>), or campaign directories (each finished item)")
    ar.add_argument("--out", type=Path, required=True, help="directory the records (.tar.xz) are written to")
    ar.set_defaults(handler=cmd_archive)

    rs = sub.add_parser("restore", help="unpack records made by `mptcplab archive` where their runs were")
    rs.add_argument("records", nargs="+", type=Path, metavar="RECORD", help="records (.tar.xz)")
    rs.add_argument("--into", type=Path, help="results root for a run's record (default: results), campaign "
                                              "directory for an item's (default: results/campaigns/<campaign>)")
    rs.set_defaults(handler=cmd_restore)


def cmd_archive(a: argparse.Namespace) -> int:
    from ..campaign.executor import STATE, read_state
    from ..campaign.records import pack_items
    from ..record import archive

    for p in a.runs:
        if not p.is_dir():
            raise LabInputError("command line", "RUN_OR_CAMPAIGN", f"{p} is not a directory")
    for p in a.runs:
        if (p / STATE).is_file():
            state = read_state(p) or {}
            pack_items(p, a.out, str(state.get("name", p.name)))
        else:
            print(archive.pack_run(p, a.out).line())
    return 0


def cmd_restore(a: argparse.Namespace) -> int:
    from ..record import archive

    for rec in a.records:
        if not rec.is_file():
            raise LabInputError("command line", "RECORD", f"{rec} is not a file")
    for rec in a.records:
        index = archive.read_index(rec)
        into = a.into or (Path("results") if index["kind"] == "run"
                          else Path("results") / "campaigns" / str(index.get("campaign")))
        where, now = archive.restore(rec, into)
        print(f"{rec}: {'restored into' if now else 'already there:'} {where}")
    return 0

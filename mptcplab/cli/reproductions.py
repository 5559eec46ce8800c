"""`reproductions`: docs/reproductions.md and the labs' verdict sections from the records."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rp = sub.add_parser("reproductions", help="write docs/reproductions.md and each lab doc's verdict section "
                                              "from the records kept in the repository (or --check them)")
    rp.add_argument("--records", type=Path, default=Path("campaigns/records"),
                    help="records root: <campaign>/<item>.tar.xz (default: campaigns/records)")
    rp.add_argument("--out", type=Path, default=Path("docs/reproductions.md"),
                    help="the document written; the lab docs are <its directory>/labs/<lab>.md "
                         "(default: docs/reproductions.md)")
    rp.add_argument("--labs", type=Path, default=Path("labs"), help="the labs' directory (default: labs)")
    rp.add_argument("--check", action="store_true",
                    help="write nothing: exit 1 with one line per file that disagrees with the records")
    rp.set_defaults(handler=cmd_reproductions)


def cmd_reproductions(a: argparse.Namespace) -> int:
    from ..reproductions import docs

    if a.check:
        lines = docs.differing(docs.expected(a.records, a.out, a.labs))
        for line in lines:
            print(line)
        if not lines:
            print(f"{docs.shown(a.out)} and the lab docs agree with the records in {docs.shown(a.records)}")
        return 1 if lines else 0
    done, problems = docs.write(a.records, a.out, a.labs)
    print("\n".join(done))
    for p in problems:
        print(f"mptcplab: {p}", file=sys.stderr)
    return 1 if problems else 0

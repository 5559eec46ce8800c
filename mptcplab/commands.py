"""Commands as data: generated as argument lists, executed (or printed) elsewhere.

Keeping generation apart from execution is what lets ``--dry-run`` print the exact
ip/tc/nft/iperf3 commands a run would execute, and lets tests check them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class Cmd:
    """A command to run on a node (``node=None``: on the host itself)."""

    argv: tuple[str, ...]
    node: str | None = None
    check: bool = True
    #: what this command is for, printed with --dry-run (teaching aid)
    why: str = ""

    def __post_init__(self) -> None:
        if not all(isinstance(a, str) for a in self.argv):
            raise TypeError(f"argv must be strings: {self.argv!r}")

    def render(self) -> str:
        where = f"[{self.node}] " if self.node else "[host] "
        return where + shlex.join(self.argv)


def cmd(*argv: str | int | float, node: str | None = None, check: bool = True, why: str = "") -> Cmd:
    return Cmd(tuple(str(a) for a in argv), node=node, check=check, why=why)

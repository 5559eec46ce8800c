"""Where a verified transfer's received bytes differ from the sent stream, and whose bytes
they are. The server reports runs of consecutive differing bytes with what arrived
(transfer_tool.Comparison); here runs a few equal bytes apart become one range (random
bytes agree one time in 256, which splits a foreign range into runs), and each range's
bytes are looked up in the stream. A range found at another offset was misplaced: sent
bytes delivered at the wrong place (labs/middlebox row k: a receiver queuing bytes past
a DSS mapping at the data sequence numbers that follow it). A range found nowhere was made
up on the way (a middlebox rewriting payload: row l)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .transfer_tool import stream

#: equal bytes between two runs that still make one range
GAP = 16
#: the bytes of a range looked up in the stream: a shorter range is not looked up
PROBE = 32
#: streams longer than this are not generated to look ranges up in
MAX_LOOKUP = 256 * 1024 * 1024


@dataclass(frozen=True)
class Range:
    offset: int
    length: int
    #: bytes in it that differ (the rest equal the stream by chance)
    differing: int
    #: the stream offset these bytes were sent at; None: found nowhere, not looked up
    #: (shorter than PROBE, partly unknown or the stream too long)
    source: int | None


def _runs(raw: Iterable[object]) -> list[tuple[int, int, bytes]]:
    out = []
    for r in raw:
        if isinstance(r, Mapping) and isinstance(r.get("offset"), int) and isinstance(r.get("length"), int):
            data = r.get("data")
            out.append((r["offset"], r["length"], bytes.fromhex(data) if isinstance(data, str) else b""))
    return sorted(out)


def ranges(runs: Iterable[object], seed: int | None, n: int | None) -> list[Range]:
    """The server's runs merged into ranges and looked up in the stream of ``seed``, ``n``."""
    rs = _runs(runs)
    if not rs:
        return []
    expected = b"".join(stream(seed, n)) if seed is not None and n and n <= MAX_LOOKUP else None
    merged: list[tuple[int, int, int, bytes | None]] = []  # offset, end, differing, what arrived
    for off, length, data in rs:
        arrived = data if len(data) == length else None
        if merged and off - merged[-1][1] <= GAP:
            o, end, diff, got = merged[-1]
            # the bytes between two runs arrived equal to the stream's
            gap = expected[end:off] if expected is not None else None
            both = got + gap + arrived if got is not None and gap is not None and arrived is not None else None
            merged[-1] = (o, off + length, diff + length, both)
        else:
            merged.append((off, off + length, length, arrived))
    return [Range(o, end - o, diff, _source(got, expected)) for o, end, diff, got in merged]


def _source(got: bytes | None, expected: bytes | None) -> int | None:
    if got is None or expected is None or len(got) < PROBE:
        return None
    at = expected.find(got[:PROBE])
    while at != -1:
        if expected[at:at + len(got)] == got:
            return at
        at = expected.find(got[:PROBE], at + 1)
    return None


def foreign_bytes(found: list[Range], differing: int) -> int:
    """Differing bytes not shown to be the stream's own: in ranges found nowhere, and in runs
    the server left off (``differing`` is its count of them all)."""
    return differing - sum(r.differing for r in found if r.source is not None)

"""Where a verified transfer's received bytes differ from the sent stream, and whose bytes
they are. The server reports runs of consecutive differing bytes with what arrived
(transfer_tool.Comparison); here runs a few equal bytes apart become one range (random
bytes agree one time in 256, which splits a foreign range into runs), and each range's
bytes are looked up in the stream. A range found at another offset was misplaced: sent
bytes delivered at the wrong place (labs/middlebox row k: a receiver queuing bytes past
a DSS mapping at the data sequence numbers that follow it). A range may be several pieces
from several offsets, one after another (row d with one subflow: the sender's re-sends of one
chunk delivered again and again as new data): pieces are looked up while they are found. A
range found nowhere was made up on the way (a middlebox rewriting payload: row l)."""

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
    #: the stream offset these bytes were sent at (of the first piece); None: found nowhere, not
    #: looked up (shorter than PROBE, partly unknown or the stream too long)
    source: int | None
    #: of ``differing``, the bytes in pieces found elsewhere in the stream (misplaced)
    misplaced: int = 0


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
    return [_looked_up(o, end - o, diff, got, expected) for o, end, diff, got in merged]


def _looked_up(offset: int, length: int, differing: int, got: bytes | None, expected: bytes | None) -> Range:
    if got is None or expected is None:
        return Range(offset, length, differing, None)
    pieces = _pieces(got, expected)
    if not pieces:
        return Range(offset, length, differing, None)
    if len(pieces) == 1 and pieces[0][1] == length:
        return Range(offset, length, differing, pieces[0][2], differing)
    own = expected[offset:offset + length]
    # the differing bytes inside the pieces (a piece's byte may equal the stream's by chance)
    mis = sum(x != y for i, n, _ in pieces for x, y in zip(got[i:i + n], own[i:i + n], strict=False))
    return Range(offset, length, differing, pieces[0][2], mis)


def _pieces(got: bytes, expected: bytes) -> list[tuple[int, int, int]]:
    """``got`` as consecutive pieces of ``expected``: (start in got, length, offset in
    expected), from the start while each next piece is found; the longest match at each step."""
    out: list[tuple[int, int, int]] = []
    i = 0
    while len(got) - i >= PROBE:
        probe = got[i:i + PROBE]
        best: tuple[int, int] | None = None
        at = expected.find(probe)
        while at != -1:
            n = _common(got, i, expected, at)
            if best is None or n > best[1]:
                best = (at, n)
            if i + n == len(got):
                break
            at = expected.find(probe, at + 1)
        if best is None:
            break
        out.append((i, best[1], best[0]))
        i += best[1]
    return out


def _common(a: bytes, i: int, b: bytes, j: int) -> int:
    """Length of the common prefix of a[i:] and b[j:]: a binary search over slice
    comparisons, which run in C."""
    lo, hi = 0, min(len(a) - i, len(b) - j)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[i:i + mid] == b[j:j + mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def foreign_bytes(found: list[Range], differing: int) -> int:
    """Differing bytes not shown to be the stream's own: in ranges found nowhere, and in runs
    the server left off (``differing`` is its count of them all)."""
    return differing - sum(r.misplaced for r in found)

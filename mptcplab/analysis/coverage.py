"""Whether the capture holds all of a connection's data: the test for one interface's file
of a multi-subflow connection.

A capture taken on one interface of a host with several sees only the subflows that leave by
that interface; the data the others carried is not in the file. Reordering and head-of-line
figures computed over such a file count every byte another subflow carried as a hole that
never fills ("99 % out of order"), which says nothing about the receiver. The evidence is in
the file itself: a data ACK acknowledges data received on *any* subflow, so a data-level byte
that the data ACKs cover but that no captured mapping carried went by a path this capture did
not see (or the capture dropped it: either way the file cannot tell the receiver's order).

Hand-written on depth.py's DSN table (mappings and data ACKs, 64-bit, relative to the IDSN):
interval arithmetic over a few hundred mappings, no library needed.
"""

from __future__ import annotations

import numpy as np

from .flows import Subflow
from .table import Table

#: what the reason's leading words say (FlowAnalysis.hol_unavailable, the warning)
NOT_IN_CAPTURE = "not measurable from this capture"


def uncaptured_bytes(dsn: Table) -> tuple[int, int, int]:
    """(bytes, first, end) of the data the data ACKs acknowledge that no mapping in ``dsn``
    (depth.DSN_COLUMNS) carried: the bytes between the lowest mapped DSN and the highest data
    ACK outside every mapping's range, and the DSN range they span (relative). Bytes before
    the lowest mapping count as carried (a capture that starts mid-connection). The highest
    data ACK's last octet is left out: a DATA_FIN sent on a segment without payload takes one
    DSN that no data mapping covers."""
    kind = dsn.arr("kind")
    maps = dsn.take((kind == "map") & (dsn.arr("length") > 0))
    acks = dsn.take(kind == "ack")
    if maps.is_empty or acks.is_empty:
        return 0, 0, 0
    start = maps.arr("dsn").astype(np.int64)
    end = start + maps.arr("length").astype(np.int64)
    lo = int(start.min())
    top = int(acks.arr("dsn").astype(np.int64).max()) - 1
    if top <= lo:
        return 0, 0, 0
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    # the part of [lo, top) no mapping covers: gaps between the running end and the next start
    gap_lo = np.minimum(np.maximum.accumulate(end), top)
    gap_hi = np.minimum(np.r_[start[1:], top], top)
    open_ = gap_hi > gap_lo
    if not open_.any():
        return 0, 0, 0
    n = int((gap_hi[open_] - gap_lo[open_]).sum())
    return n, int(gap_lo[open_].min()), int(gap_hi[open_].max())


def uncaptured_reason(dsn: Table, conn: list[Subflow], seen_data: dict[str, int]) -> str | None:
    """Why the receiver-side figures cannot be taken from these files, or None when every
    data-acknowledged byte is in them (see the module docstring). ``seen_data``: subflow
    name -> its data segments in the files; a join seen without any names the likely
    carrier, as does an initial subflow missing from the files."""
    n, first, end = uncaptured_bytes(dsn)
    if n == 0:
        return None
    hints = [f"subflow {s.cip}:{s.cport}'s join is here, none of its data"
             for s in conn if s.kind == "mp_join" and not seen_data.get(f"{s.cip}:{s.cport}")]
    if conn and conn[0].kind == "mp_join":
        hints.append("the connection's initial subflow is not in the files")
    return (f"{NOT_IN_CAPTURE}: {n} data bytes (DSN {first} to {end}) are acknowledged at the data level "
            "but no captured segment carried them, so another subflow carried them outside these files "
            "(a capture of one interface of a multi-path host), or the capture missed them"
            + (f" ({'; '.join(hints)})" if hints else "")
            + "; the holes they leave are not the receiver's")

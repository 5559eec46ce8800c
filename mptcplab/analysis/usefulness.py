"""Which copy of the data reached the receiver first: MPTCP-level re-sends qualified as useful
or redundant, and the data bytes each subflow delivered first (its part of the goodput).

What mptcpanalyzer's ``qualify_reinjections`` and ``summary_extended`` (goodput contribution)
show, on our tables: the re-sends of depth.py (mptcp_retransmissions.csv) and each subflow's
data segments at its receiver point (delivery.Delivery.received). Hand-written numpy on
elementary intervals (intervals.py). Definitions:

* A data byte's first arrival on a subflow: the earliest arrival, at the subflow's receiver
  point, of a data segment of that subflow whose data range covers it. Arrivals at the
  receiver points of different subflows compare as the HoL delay's do (one node, one clock).
* A re-send on another subflow than its first carrier is *useful* when the first byte it
  re-sends arrived on the re-sending subflow before it arrived on the first carrier (or never
  arrived there), *redundant* when after (or the re-send never arrived); ``gain_ms`` is the
  first carrier's arrival minus the re-send's (> 0: the re-send arrived that much earlier;
  mptcpanalyzer's ``reinj_delta``). Unknown (empty) without receiver points, and for a
  re-send on its first carrier's own subflow: both copies then arrive on one subflow, and
  which is which would need the subflow sequence numbers at the receiver. A window probe
  (depth.py) is left unqualified too: its byte had arrived before it was sent.
* A subflow's ``first_bytes``: the data bytes whose first arrival over all subflows was on
  it. Their sum is the data the receiver got, each byte once; a redundant copy counts nowhere.
"""

from __future__ import annotations

import numpy as np

from .intervals import at, cover, first_arrival
from .table import Kind, Table, constant

#: the columns qualify() adds to the re-sends table (mptcp_retransmissions.csv)
COLUMNS = ["arrival_t", "first_arrival_t", "gain_ms", "useful"]
KINDS: dict[str, Kind] = {"arrival_t": "float", "first_arrival_t": "float", "gain_ms": "float", "useful": "object"}

Received = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]


def _relative(start: np.ndarray, origin: int) -> np.ndarray:
    # modulo 2^64, then signed, as depth.py makes its DSNs relative
    return (start.astype(np.uint64) - np.uint64(origin % 2**64)).view(np.int64)


def qualify(reinj: Table, received: Received, origin: int | None, t0: float) -> Table:
    """``reinj`` (depth.REINJECTION_COLUMNS, DSNs relative to ``origin``) with COLUMNS added:
    the arrival (s since t0) of its first re-sent byte on the re-sending subflow and on the
    first carrier, the gain and whether the re-send was useful (see the module docstring)."""
    n = len(reinj)
    if reinj.is_empty or not received or origin is None:
        return reinj.with_columns(arrival_t=np.full(n, np.nan), first_arrival_t=np.full(n, np.nan),
                                  gain_ms=np.full(n, np.nan), useful=constant(None, n))
    firsts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, (st, ln, ts) in received.items():
        if len(st):
            bounds, _, first = first_arrival(_relative(st, origin), ln.astype(np.int64), ts)
            firsts[name] = (bounds, first)
    x = reinj.arr("dsn").astype(np.int64)
    arr = np.full(len(reinj), np.inf)
    orig = np.full(len(reinj), np.inf)
    for col, dest in (("subflow", arr), ("first_subflow", orig)):
        names = reinj.arr(col).astype(str)
        for name, (bounds, first) in firsts.items():
            m = names == name
            dest[m] = at(bounds, first, x[m])
    cross = ~reinj.arr("same_subflow").astype(bool)
    if "window_probe" in reinj:              # a probe's byte had arrived: nothing to qualify
        cross &= ~reinj.arr("window_probe").astype(bool)
    known = cross & (np.isfinite(arr) | np.isfinite(orig))
    both = known & np.isfinite(arr) & np.isfinite(orig)
    useful = np.empty(n, dtype=object)
    useful[:] = [bool(a < o) if k else None for a, o, k in zip(arr, orig, known, strict=True)]
    return reinj.with_columns(
        arrival_t=np.where(known & np.isfinite(arr), np.round(arr - t0, 6), np.nan),
        first_arrival_t=np.where(known & np.isfinite(orig), np.round(orig - t0, 6), np.nan),
        gain_ms=np.where(both, np.round((orig - arr) * 1e3, 3), np.nan),
        useful=useful)


def first_copies(received: Received, origin: int | None
                 ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(names, owner, arrival, width) over the elementary intervals of all subflows' data at
    the receiver: which subflow (index into names) delivered each interval first, when, and
    its bytes (ties: the subflow listed first)."""
    names = [n for n, (st, _, _) in received.items() if len(st)]
    if not names:
        return [], np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.int64)
    base = origin if origin is not None else int(min(int(received[n][0].min()) for n in names))
    start = np.concatenate([_relative(received[n][0], base) for n in names])
    length = np.concatenate([received[n][1].astype(np.int64) for n in names])
    arrival = np.concatenate([received[n][2] for n in names])
    owner = np.repeat(np.arange(len(names)), [len(received[n][0]) for n in names])
    bounds, _, n, idx = cover(start, length)
    when = np.repeat(arrival, n)
    o = np.lexsort((when, idx))                          # by interval, then arrival
    k = idx[o]
    head = np.r_[True, k[1:] != k[:-1]] if len(k) else np.zeros(0, dtype=bool)
    return names, np.repeat(owner, n)[o][head], when[o][head], bounds[k[head] + 1] - bounds[k[head]]


def first_bytes(received: Received, origin: int | None) -> dict[str, int]:
    """Subflow name -> the data bytes whose first arrival over all subflows was on it.
    Empty without receiver points."""
    names, owner, _, width = first_copies(received, origin)
    got = np.bincount(owner, weights=width, minlength=len(names))
    return {name: int(b) for name, b in zip(names, got, strict=True)}

"""Each subflow's TCP sequence and acknowledgment numbers over time (mptcpanalyzer's
``plot tcp_attr``: tcpseq, tcpack, tcplen, rwnd, tsval, tsecr), as dsn.csv is for the data
sequence numbers.

Hand-written numpy on the oriented packet table, each subflow at its chosen capture point
(flows.find_subflows). Definitions:

* ``seq`` is relative to the ISN of the packet's sender on that subflow (its SYN's sequence
  number, so the first payload byte is 1, as tshark's relative numbers), across wrap-arounds;
  ``ack`` relative to the other side's ISN, absent on a packet without the ACK flag. Without
  a captured SYN the first sequence number seen (or the first ACK, for ``ack``) stands in.
* One row per packet where something moves: a packet whose (seq, len, ack, win, SYN/FIN/RST)
  equals the previous packet's from the same side is left out (the sender's pure ACKs, the
  receiver's duplicate ACKs), so a bulk transfer keeps every data segment and every ACK that
  advanced or changed the window.
* ``win`` is the raw window field: the window scale of the SYN options is not decoded, so it
  is in units of 2^wscale bytes (tshark's ``tcp.window_size_value``, not ``tcp.window_size``).
* ``tsval``, ``tsecr``: the timestamps option (RFC 7323), absent when the packet has none.
"""

from __future__ import annotations

import numpy as np

from .flows import Subflow
from .packets import ACK, FIN, RST, SYN
from .stats import unwrap32
from .table import Kind, Nullable, Table, constant

COLUMNS = ["t", "path", "subflow", "side", "seq", "len", "ack", "win", "tsval", "tsecr", "flags"]
#: the nullable integer columns (absent: empty in the CSV)
_NULLABLE = ("ack", "win", "tsval", "tsecr")


def empty() -> Table:
    kinds: dict[str, Kind] = {c: "nullable" if c in _NULLABLE else "object" for c in COLUMNS}
    return Table.empty(kinds)


def _isn(seq: np.ndarray, flags: np.ndarray) -> float | None:
    """The side's ISN: its first SYN's sequence number, else its first sequence number."""
    if not len(seq):
        return None
    syn = np.flatnonzero((flags & SYN) != 0)
    return float(seq[syn[0]] if len(syn) else seq[0])


def _moves(cols: list[np.ndarray]) -> np.ndarray:
    """Rows whose values differ from the row before (the first row always); NaN equals NaN."""
    keep = np.zeros(len(cols[0]), dtype=bool)
    if len(keep):
        keep[0] = True
    for c in cols:
        v = np.where(np.isnan(c), -1.0, c) if c.dtype.kind == "f" else c
        keep[1:] |= v[1:] != v[:-1]
    return keep


def tcp_seq(pk: Table, t: Table, conn: list[Subflow], paths: dict[str, str], upload: bool,
            t0: float) -> Table:
    """The table (COLUMNS, see the module docstring) of the connection ``conn``: ``side`` is
    ``sender`` for the data sender's packets, ``receiver`` for the other side's; ``t`` in s
    from ``t0``."""
    times, seq_t, ack_t = t.arr("t"), t.arr("seq"), t.arr("ack")
    fl, tl, fc, prow = t.arr("flags").astype(np.int64), t.arr("tlen"), t.arr("from_client"), t.arr("row")
    win, tsval, tsecr = pk.arr("win"), pk.arr("tsval"), pk.arr("tsecr")
    parts: list[Table] = []
    for sf in conn:
        idx = sf.rows[sf.point]
        idx = idx[~np.isnan(seq_t[idx])]
        sides = {"sender": idx[fc[idx] == upload], "receiver": idx[fc[idx] != upload]}
        isn = {s: _isn(seq_t[r], fl[r]) for s, r in sides.items()}
        for side, r in sides.items():
            if not len(r):
                continue
            other = isn["receiver" if side == "sender" else "sender"]
            rel = unwrap32(seq_t[r], isn[side] or 0.0)
            has_ack = ((fl[r] & ACK) != 0) & ~np.isnan(ack_t[r])
            ack = np.zeros(len(r), dtype=np.int64)
            if has_ack.any():
                a = ack_t[r][has_ack]
                ack[has_ack] = unwrap32(a, other if other is not None else a[0])
            ack_f = np.where(has_ack, ack, np.nan)
            w, tv, te = win[prow[r]], tsval[prow[r]], tsecr[prow[r]]
            keep = _moves([rel, tl[r], ack_f, w, fl[r] & (SYN | FIN | RST)])
            k = r[keep]
            n = len(k)
            parts.append(Table({
                "t": times[k] - t0, "path": constant(paths.get(sf.cip), n),
                "subflow": constant(f"{sf.cip}:{sf.cport}", n), "side": constant(side, n),
                "seq": rel[keep], "len": tl[k].astype(np.int64),
                "ack": Nullable(np.where(has_ack[keep], ack[keep], 0), has_ack[keep]),
                **{name: Nullable(np.nan_to_num(v[keep]).astype(np.int64), ~np.isnan(v[keep]))
                   for name, v in (("win", w), ("tsval", tv), ("tsecr", te))},
                "flags": fl[k],
            }))
    if not parts:
        return empty()
    return Table.concat(parts).sort(["t"]).select(COLUMNS)

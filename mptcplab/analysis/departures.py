"""The scheduler's rhythm at the sender: gaps between consecutive data segments of one
connection, on one subflow and where the next segment goes out on another (mptcpanalyzer's
``interarrival`` and ``xinterarrival``).

Hand-written numpy on the oriented packet table: every data segment (payload > 0, TCP
retransmissions included) of the connection's subflows, each at its chosen capture point
(flows.find_subflows: the one nearest the data's sender), merged in time order. Each segment
after the first gives one gap, from the segment before it: from that segment's subflow to its
own. Gaps from a subflow to itself are its inter-departure times; to another subflow, the time
the scheduler took to switch. The subflows' points must share a clock (one sender host, like
the HoL delay's receiver points).
"""

from __future__ import annotations

import numpy as np

from .flows import Subflow
from .stats import data_rows
from .table import Table

COLUMNS = ["from_path", "from_subflow", "to_path", "to_subflow", "gaps", "gap_p50_ms", "gap_p95_ms",
           "gap_max_ms"]


def departures(t: Table, conn: list[Subflow], paths: dict[str, str], upload: bool) -> Table:
    """One row per ordered pair of subflows (COLUMNS) that followed each other: how many gaps,
    and their median, 95th percentile and largest, ms (see the module docstring)."""
    times = t.arr("t")
    parts = [(times[data_rows(t, sf, upload)[1]], i) for i, sf in enumerate(conn)]
    ts = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0)
    if len(ts) < 2:
        return Table.from_records([], COLUMNS)
    who = np.concatenate([np.full(len(p[0]), p[1]) for p in parts])
    o = np.argsort(ts, kind="stable")
    ts, who = ts[o], who[o]
    gap = np.diff(ts) * 1e3
    pair = who[:-1] * len(conn) + who[1:]
    rows: list[dict[str, object]] = []
    for code in np.unique(pair):
        g = gap[pair == code]
        a, b = conn[int(code) // len(conn)], conn[int(code) % len(conn)]
        p50, p95 = np.percentile(g, [50, 95])
        rows.append({"from_path": paths.get(a.cip), "from_subflow": f"{a.cip}:{a.cport}",
                     "to_path": paths.get(b.cip), "to_subflow": f"{b.cip}:{b.cport}", "gaps": int(len(g)),
                     "gap_p50_ms": round(float(p50), 3), "gap_p95_ms": round(float(p95), 3),
                     "gap_max_ms": round(float(g.max()), 3)})
    return Table.from_records(rows, COLUMNS)

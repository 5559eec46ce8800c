"""Every TCP and MPTCP connection in a capture, one row per subflow (mptcpanalyzer's
``list_tcp_connections``, ``list_mptcp_connections`` and ``list_subflows``).

The analysis proper (analyze.py) follows one connection, the one a lab ran or, for
``mptcplab analyze``, the one with most payload; this lists all of them, so a capture with
several (iperf3's control and data connections, a browser's) shows what else is there.
Hand-written on flows.py: a server port is a port a client SYN (SYN without ACK) went to;
the packets to and from all of them are grouped into subflows and MP_JOINs matched to their
connection by token, as for the analyzed connection. A connection to a port no captured SYN
went to is not listed.
"""

from __future__ import annotations

import numpy as np

from .flows import find_subflows, group_connections, orient_tcp
from .packets import SYN
from .table import Kind, Table

COLUMNS = ["connection", "mptcp", "subflow", "server", "kind", "established", "point", "first_t",
           "bytes_to_server", "bytes_to_client"]
_KINDS: dict[str, Kind] = {"connection": "object", "mptcp": "bool", "subflow": "object", "server": "object",
                           "kind": "object", "established": "bool", "point": "object", "first_t": "float",
                           "bytes_to_server": "int", "bytes_to_client": "int"}


def list_connections(pk: Table, points: list[str]) -> Table:
    """One row per subflow of every connection to a port a client SYN went to (COLUMNS):
    its connection's id (the initial subflow's 4-tuple), whether that connection negotiated
    MP_CAPABLE in its SYN, the subflow (client address:port), the server address:port, what
    its SYN carried (``mp_capable``, ``mp_join``, ``tcp``), whether its handshake completed,
    the capture point its numbers come from, its first SYN (s from the capture's first
    packet) and the payload bytes each way at that point. Connections in order of first
    SYN, their subflows likewise."""
    tcp = ~np.isnan(pk.arr("sport")) & np.isnan(pk.arr("icmp_type"))
    syn = tcp & ((np.nan_to_num(pk.arr("flags")).astype(np.int64) & 0x12) == SYN)
    ports = sorted({int(p) for p in pk.arr("dport")[syn]})
    if not ports:
        return Table.from_records([], COLUMNS, _KINDS)
    t = orient_tcp(pk, ports[0], ports[1:])
    conns = group_connections(find_subflows(t, points))
    t_first = float(pk.arr("t").min())
    fc = t.arr("from_client")
    tlen = t.arr("tlen")
    rows: list[dict[str, object]] = []
    for cid, subs in conns.items():
        mptcp = subs[0].kind == "mp_capable"
        for sf in subs:
            r = sf.rows[sf.point]
            rows.append({
                "connection": cid, "mptcp": mptcp, "subflow": f"{sf.cip}:{sf.cport}", "server": f"{sf.sip}:{sf.sport}",
                "kind": sf.kind, "established": sf.established, "point": sf.point,
                "first_t": None if sf.syn_first_t is None else round(sf.syn_first_t - t_first, 6),
                "bytes_to_server": int(tlen[r][fc[r]].sum()), "bytes_to_client": int(tlen[r][~fc[r]].sum()),
            })
    # connections by their first SYN (none: last), then id; subflows by theirs, stable
    inf = float("inf")
    first: dict[object, float] = {}
    def t_of(row: dict[str, object]) -> float:
        v = row["first_t"]
        return inf if v is None else float(v)  # type: ignore[arg-type]

    for row in rows:
        first[row["connection"]] = min(first.get(row["connection"], inf), t_of(row))
    rows.sort(key=lambda row: (first[row["connection"]], str(row["connection"]), t_of(row)))
    return Table.from_records(rows, COLUMNS, _KINDS)

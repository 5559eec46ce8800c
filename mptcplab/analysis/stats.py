"""Per-subflow numbers, the throughput time series and the ICMP events.

Hand-written with numpy on the rows of each subflow's chosen capture point.

Retransmissions are counted from sequence numbers, not from tshark's TCP analysis (switched
off for speed and so files can be dissected in chunks): in the data direction, a segment
whose first byte lies below the highest sequence number already sent is a retransmission,
and all its payload counts as retransmitted. At a capture point on the receiving side this
also counts reordered segments; the sending host's capture point has none.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from .flows import Subflow
from .table import Kind, Nullable, Table

_WRAP = 1 << 32


def unwrap32(x: np.ndarray, base: float) -> np.ndarray:
    """32-bit sequence numbers as int64 offsets from ``base``, across wrap-arounds."""
    if len(x) == 0:
        return np.zeros(0, dtype=np.int64)
    s = x.astype(np.int64)
    first = (s[0] - int(base) + (1 << 31)) % _WRAP - (1 << 31)
    d = np.diff(s)
    d = (d + (1 << 31)) % _WRAP - (1 << 31)
    return first + np.concatenate(([0], np.cumsum(d)))


def data_rows(t: Table, sf: Subflow, upload: bool) -> tuple[np.ndarray, np.ndarray]:
    """(row positions of all packets in the data direction, of those with payload)."""
    idx = sf.rows[sf.point]
    fc = t.arr("from_client")[idx]
    d = idx[fc == upload]
    seg = d[t.arr("tlen")[d] > 0]
    return d, seg


def syn_mss(t: Table, sf: Subflow) -> int | None:
    """The MSS option of the subflow's first SYN from the client (a join's SYN says what the
    client's interface allows, whatever the path behind it: labs/mtu), at its capture point;
    None when that SYN or its option was not captured."""
    if "mss" not in t:
        return None
    idx = sf.rows[sf.point]
    flags = t.arr("flags")[idx]
    syn = idx[((flags & 0x12) == 0x02) & t.arr("from_client")[idx].astype(bool)]
    if not len(syn):
        return None
    v = t.arr("mss")[syn[0]]
    return None if np.isnan(v) else int(v)


def subflow_numbers(t: Table, sf: Subflow, upload: bool, t0: float) -> dict:
    """Bytes, segments, retransmissions, acked bytes, times for one subflow."""
    d, seg = data_rows(t, sf, upload)
    tlen = t.arr("tlen")
    ip_len = t.arr("ip_len")
    times = t.arr("t")
    out: dict = {"bytes": 0, "retrans_bytes": 0, "retransmissions": 0, "segments": 0,
                 "median_seg": None, "max_seg": None, "max_frame": None,
                 "first_data_t": None, "last_data_t": None, "acked_bytes": None,
                 "last_ack_advance_t": None, "syn_mss": syn_mss(t, sf)}
    if len(d):
        lens = ip_len[d]
        lens = lens[~np.isnan(lens)]
        out["max_frame"] = int(lens.max()) if len(lens) else None
    # the receiver's ACKs: everything at this point going the other way with ACK set
    idx = sf.rows[sf.point]
    fc = t.arr("from_client")[idx]
    back = idx[fc != upload]
    back = back[(t.arr("flags")[back] & 0x10) != 0]
    if len(seg) == 0:
        out["acked_bytes"] = 0 if len(back) else None
        return out
    sl = tlen[seg]
    st = times[seg]
    seq = t.arr("seq")[seg]
    rel = unwrap32(seq, seq[0])
    end = rel + sl
    # highest byte sent before each segment (the first segment has nothing before it)
    prev_max = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(end)[:-1]))
    re = rel < prev_max
    lo = int(rel.min())
    out.update({
        "bytes": int(sl.sum()),
        "retransmissions": int(re.sum()),
        "retrans_bytes": int(sl[re].sum()),
        "segments": int(len(sl)),
        "median_seg": float(np.median(sl)),
        "max_seg": int(sl.max()),
        "first_data_t": float(st.min() - t0),
        "last_data_t": float(st.max() - t0),
    })
    if len(back):
        acks = t.arr("ack")[back]
        have = ~np.isnan(acks)
        acks = acks[have]
        if len(acks):
            arel = unwrap32(acks, seq[0])
            # cap at the highest byte sent: a FIN also takes one sequence number
            top = min(int(arel.max()), int(end.max()))
            out["acked_bytes"] = int(max(0, top - lo))
            # the first ACK that reached the final cumulative value: after it the
            # subflow delivered nothing more
            if top > lo:
                first_top = int(np.flatnonzero(arel >= top)[0])
                out["last_ack_advance_t"] = float(times[back][have][first_top] - t0)
    return out


#: timeseries.csv's columns and kinds
TIMESERIES_KINDS: dict[str, Kind] = {"t": "float", "path": "object", "subflow": "object", "bytes": "int",
                                     "mbps": "float", "packets": "int"}


def timeseries(t: Table, subs: list[Subflow], paths: dict[str, str],
               upload: bool, t0: float, bin_s: float) -> Table:
    """Payload bytes and data segments per bin per subflow; every subflow gets every bin
    from 0 to the last bin with data in the connection, so a stalled subflow shows as zeros,
    not as a gap. ``packets`` counts the captured data segments (retransmissions included),
    the packets/s a Wireshark I/O graph of the subflow shows, divided by the bin."""
    parts = []
    last_bin = -1
    binned: list[tuple[Subflow, np.ndarray, np.ndarray]] = []
    times = t.arr("t")
    tlen = t.arr("tlen")
    for sf in subs:
        _, seg = data_rows(t, sf, upload)
        b = np.floor((times[seg] - t0) / bin_s).astype(np.int64)
        b = np.maximum(b, 0)
        if len(b):
            last_bin = max(last_bin, int(b.max()))
        binned.append((sf, b, tlen[seg]))
    nb = last_bin + 1
    for sf, b, ln in binned:
        by = np.bincount(b, weights=ln, minlength=nb)[:nb] if nb > 0 else np.zeros(0)
        npk = np.bincount(b, minlength=nb)[:nb] if nb > 0 else np.zeros(0, dtype=np.int64)
        parts.append(Table({
            "t": np.round(np.arange(nb) * bin_s, 9),
            "path": np.full(nb, paths.get(sf.cip), dtype=object),
            "subflow": np.full(nb, f"{sf.cip}:{sf.cport}", dtype=object),
            "bytes": by.astype(np.int64),
            "mbps": by * 8 / bin_s / 1e6,
            "packets": npk.astype(np.int64),
        }))
    if not parts:
        return Table.empty(TIMESERIES_KINDS)
    return Table.concat(parts)


ICMP_COLUMNS = ["t", "src", "dst", "type", "code", "mtu", "quoted_src", "quoted_sport", "path",
                "point", "subflow", "icmp6"]


ICMP_KINDS: dict[str, Kind] = {"t": "float", "src": "object", "dst": "object", "type": "int", "code": "int",
                               "mtu": "nullable", "quoted_src": "object", "quoted_sport": "int", "path": "object",
                               "point": "object", "subflow": "object", "icmp6": "bool"}


def is_v6(icmp: Table) -> np.ndarray:
    # icmp.csv files from before the icmp6 column hold ICMPv4 only
    if "icmp6" not in icmp:
        return np.zeros(len(icmp), dtype=bool)
    v = icmp.arr("icmp6")
    if v.dtype == bool:
        return v
    return np.isin(np.char.lower(v.astype(str)), ["true", "1"])


def _numbers(icmp: Table, name: str) -> np.ndarray:
    """A column read as float64 (NaN where not a number: a CSV's empty field)."""
    v = icmp.arr(name)
    if v.dtype.kind in "iuf":
        return v.astype(np.float64)
    out = np.full(len(v), np.nan)
    for i, x in enumerate(v.tolist()):
        try:
            out[i] = float(x)
        except (TypeError, ValueError):
            pass
    return out


def too_big(icmp: Table) -> np.ndarray:
    """Rows of ICMP events (ICMP_COLUMNS) that ask for a smaller packet: ICMPv4 "fragmentation
    needed" (type 3 code 4) or ICMPv6 "packet too big" (type 2), as packets.frag_needed."""
    ty, code = _numbers(icmp, "type"), _numbers(icmp, "code")
    return np.where(is_v6(icmp), ty == 2, (ty == 3) & (code == 4))


def unreachable(icmp: Table) -> np.ndarray:
    """Rows that are "destination unreachable" other than frag-needed (ICMPv4 type 3, ICMPv6
    type 1)."""
    ty, code = _numbers(icmp, "type"), _numbers(icmp, "code")
    return np.where(is_v6(icmp), ty == 1, (ty == 3) & (code != 4))


def icmp_for_subflows(pk: Table, subs: list[Subflow], server_ports: Collection[int],
                      paths: dict[str, str], t0: float) -> Table:
    """ICMP errors quoting a packet of one of ``subs``; for each subflow only the capture
    point that saw the most of them, so an error seen twice is counted once.
    ``server_ports``: the flow's server port and the ports its joins went to."""
    rows = np.flatnonzero(~np.isnan(pk.arr("icmp_type")) & ~np.isnan(pk.arr("sport")))
    ic = pk.take(rows)          # ICMP errors are few: select them before any other work
    ic = ic.take(ic.strings("q_src") != "")
    if ic.is_empty or not subs:
        return Table.empty(ICMP_KINDS)
    to_srv = np.isin(ic.arr("dport"), list(server_ports))
    q_src, q_dst = ic.strings("q_src"), ic.strings("q_dst")
    cip = np.where(to_srv, q_src, q_dst)
    cport = np.where(to_srv, ic.arr("sport"), ic.arr("dport"))
    sip = np.where(to_srv, q_dst, q_src)
    point = ic.strings("point")
    keep: list[np.ndarray] = []
    names: list[str] = []
    for sf in subs:
        m = np.flatnonzero((cip == sf.cip) & (cport == sf.cport) & (sip == sf.sip))
        if not len(m):
            continue
        # the point that saw most of them (a tie: the first counted, as pandas' value_counts)
        pts, first, counts = np.unique(point[m], return_index=True, return_counts=True)
        best = pts[sorted(range(len(pts)), key=lambda k: (-counts[k], first[k]))[0]]
        mine = m[point[m] == best]
        keep.append(mine)
        names += [f"{sf.cip}:{sf.cport}"] * len(mine)
    if not keep:
        return Table.empty(ICMP_KINDS)
    ev = np.concatenate(keep)
    code = ic.arr("icmp_code")[ev]
    mtu = ic.arr("icmp_mtu")[ev]
    out = Table({
        "t": ic.arr("t")[ev] - t0,
        "src": ic.strings("ip_src")[ev],
        "dst": ic.strings("ip_dst")[ev],
        "type": ic.arr("icmp_type")[ev].astype(np.int64),
        "code": np.where(np.isnan(code), -1, code).astype(np.int64),
        "mtu": Nullable(np.nan_to_num(mtu).astype(np.int64), ~np.isnan(mtu)),
        "quoted_src": q_src[ev],
        "quoted_sport": ic.arr("sport")[ev].astype(np.int64),
        "path": np.asarray([paths.get(str(c)) for c in cip[ev]], dtype=object),
        "point": point[ev],
        "subflow": np.asarray(names, dtype=object),
        "icmp6": ic.arr("icmp6")[ev],
    })
    return out.sort(["t"])

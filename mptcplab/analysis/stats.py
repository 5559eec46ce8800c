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
import pandas as pd

from .flows import Subflow

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


def data_rows(t: pd.DataFrame, sf: Subflow, upload: bool) -> tuple[np.ndarray, np.ndarray]:
    """(row positions of all packets in the data direction, of those with payload)."""
    idx = sf.rows[sf.point]
    fc = t["from_client"].to_numpy()[idx]
    d = idx[fc == upload]
    seg = d[t["tlen"].to_numpy()[d] > 0]
    return d, seg


def syn_mss(t: pd.DataFrame, sf: Subflow) -> int | None:
    """The MSS option of the subflow's first SYN from the client (a join's SYN says what the
    client's interface allows, whatever the path behind it: labs/mtu), at its capture point;
    None when that SYN or its option was not captured."""
    if "mss" not in t.columns:
        return None
    idx = sf.rows[sf.point]
    flags = t["flags"].to_numpy()[idx]
    syn = idx[((flags & 0x12) == 0x02) & t["from_client"].to_numpy()[idx].astype(bool)]
    if not len(syn):
        return None
    v = t["mss"].to_numpy()[syn[0]]
    return None if pd.isna(v) else int(v)


def subflow_numbers(t: pd.DataFrame, sf: Subflow, upload: bool, t0: float) -> dict:
    """Bytes, segments, retransmissions, acked bytes, times for one subflow."""
    d, seg = data_rows(t, sf, upload)
    tlen = t["tlen"].to_numpy()
    ip_len = t["ip_len"].to_numpy()
    times = t["t"].to_numpy()
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
    fc = t["from_client"].to_numpy()[idx]
    back = idx[fc != upload]
    back = back[(t["flags"].to_numpy()[back] & 0x10) != 0]
    if len(seg) == 0:
        out["acked_bytes"] = 0 if len(back) else None
        return out
    sl = tlen[seg]
    st = times[seg]
    seq = t["seq"].to_numpy()[seg]
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
        acks = t["ack"].to_numpy()[back]
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


def timeseries(t: pd.DataFrame, subs: list[Subflow], paths: dict[str, str],
               upload: bool, t0: float, bin_s: float) -> pd.DataFrame:
    """Payload bytes and data segments per bin per subflow; every subflow gets every bin
    from 0 to the last bin with data in the connection, so a stalled subflow shows as zeros,
    not as a gap. ``packets`` counts the captured data segments (retransmissions included),
    the packets/s a Wireshark I/O graph of the subflow shows, divided by the bin."""
    parts = []
    last_bin = -1
    binned: list[tuple[Subflow, np.ndarray, np.ndarray]] = []
    times = t["t"].to_numpy()
    tlen = t["tlen"].to_numpy()
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
        parts.append(pd.DataFrame({
            "t": np.round(np.arange(nb) * bin_s, 9),
            "path": paths.get(sf.cip),
            "subflow": f"{sf.cip}:{sf.cport}",
            "bytes": by.astype(np.int64),
            "mbps": by * 8 / bin_s / 1e6,
            "packets": npk.astype(np.int64),
        }))
    if not parts:
        return pd.DataFrame({"t": pd.Series(dtype=float), "path": pd.Series(dtype=object),
                             "subflow": pd.Series(dtype=object), "bytes": pd.Series(dtype=np.int64),
                             "mbps": pd.Series(dtype=float), "packets": pd.Series(dtype=np.int64)})
    return pd.concat(parts, ignore_index=True)


ICMP_COLUMNS = ["t", "src", "dst", "type", "code", "mtu", "quoted_src", "quoted_sport", "path",
                "point", "subflow", "icmp6"]


def is_v6(icmp: pd.DataFrame) -> np.ndarray:
    # icmp.csv files from before the icmp6 column hold ICMPv4 only
    if "icmp6" not in icmp.columns:
        return np.zeros(len(icmp), dtype=bool)
    return icmp["icmp6"].astype(str).str.lower().isin(["true", "1"]).to_numpy()


def too_big(icmp: pd.DataFrame) -> np.ndarray:
    """Rows of ICMP events (ICMP_COLUMNS) that ask for a smaller packet: ICMPv4 "fragmentation
    needed" (type 3 code 4) or ICMPv6 "packet too big" (type 2), as packets.frag_needed."""
    ty = pd.to_numeric(icmp["type"], errors="coerce").to_numpy()
    code = pd.to_numeric(icmp["code"], errors="coerce").to_numpy()
    return np.where(is_v6(icmp), ty == 2, (ty == 3) & (code == 4))


def unreachable(icmp: pd.DataFrame) -> np.ndarray:
    """Rows that are "destination unreachable" other than frag-needed (ICMPv4 type 3, ICMPv6
    type 1)."""
    ty = pd.to_numeric(icmp["type"], errors="coerce").to_numpy()
    code = pd.to_numeric(icmp["code"], errors="coerce").to_numpy()
    return np.where(is_v6(icmp), ty == 1, (ty == 3) & (code != 4))


def icmp_for_subflows(pk: pd.DataFrame, subs: list[Subflow], server_ports: Collection[int],
                      paths: dict[str, str], t0: float) -> pd.DataFrame:
    """ICMP errors quoting a packet of one of ``subs``; for each subflow only the capture
    point that saw the most of them, so an error seen twice is counted once.
    ``server_ports``: the flow's server port and the ports its joins went to."""
    rows = np.flatnonzero(~np.isnan(pk["icmp_type"].to_numpy()) & ~np.isnan(pk["sport"].to_numpy()))
    ic = pk.take(rows)          # ICMP errors are few: select them before any other work
    ic = ic[(ic["q_src"].astype(object) != "").to_numpy()]
    if ic.empty or not subs:
        return pd.DataFrame(columns=ICMP_COLUMNS)
    to_srv = ic["dport"].isin(list(server_ports)).to_numpy()
    cip = np.where(to_srv, ic["q_src"], ic["q_dst"])
    cport = np.where(to_srv, ic["sport"], ic["dport"])
    sip = np.where(to_srv, ic["q_dst"], ic["q_src"])
    ic = ic.assign(_cip=cip, _cport=cport, _sip=sip)
    keep = []
    for sf in subs:
        m = ((ic["_cip"] == sf.cip) & (ic["_cport"] == sf.cport) & (ic["_sip"] == sf.sip)).to_numpy()
        if not m.any():
            continue
        mine = ic[m]
        best = mine["point"].value_counts().idxmax()
        keep.append(mine[mine["point"] == best].assign(subflow=f"{sf.cip}:{sf.cport}"))
    if not keep:
        return pd.DataFrame(columns=ICMP_COLUMNS)
    ev = pd.concat(keep)
    out = pd.DataFrame({
        "t": ev["t"].to_numpy() - t0,
        "src": ev["ip_src"].to_numpy(),
        "dst": ev["ip_dst"].to_numpy(),
        "type": ev["icmp_type"].astype(int).to_numpy(),
        "code": ev["icmp_code"].fillna(-1).astype(int).to_numpy(),
        "mtu": ev["icmp_mtu"].astype("Int64").to_numpy(),
        "quoted_src": ev["q_src"].to_numpy(),
        "quoted_sport": ev["sport"].astype(int).to_numpy(),
        "path": [paths.get(c) for c in ev["_cip"]],
        "point": ev["point"].to_numpy(),
        "subflow": ev["subflow"].to_numpy(),
        "icmp6": ev["icmp6"].to_numpy(),
    })
    return out.sort_values("t", kind="stable").reset_index(drop=True)

"""Which packets belong to which subflow, and which subflows form the data connection.

Hand-written: tshark's own MPTCP stream analysis (``mptcp.analyze_mptcp``) would do the
grouping too, but the packet table comes from the native reader (pcapread.py), and the
grouping needs only the handshakes:

* A subflow is a TCP 4-tuple with the server port on one side; the other side is the
  client. A packet is "from the client" when it goes to the server port (sides.py: when
  both ports are server ports, the SYN decides).
* MPTCP v1 (RFC 8684): the SYN/ACK of the MP_CAPABLE handshake carries the server's key
  (the third ACK repeats it as the receiver's key). The server's *token* is the most
  significant 32 bits of SHA-256 of that key (SHA-1 in MPTCP v0, RFC 6824: the version is the
  one the handshake's MP_CAPABLE carries, both are tried when none was captured). An MP_JOIN SYN
  names the connection it joins by that token, so joins are matched to connections exactly,
  even with two MPTCP connections on the same ports (iperf3's control and data connections).
* A client may reuse a 4-tuple for a new connection (a port taken again within one run):
  a SYN with a new ISN. Callers that see many short connections (traffic/connections.py)
  label each packet with its connection's ISN (label_isn, column ``isn``); find_subflows then
  keeps one subflow per 4-tuple and ISN. Without that column a subflow is a 4-tuple.
* A subflow seen at several capture points is counted from one point only (see
  find_subflows: most data segments, then nearest the sender by TTL); handshake facts (SYN
  answered, RST, ...) are taken from all points.
* A NAT between capture points gives one subflow another 4-tuple beyond it. Two 4-tuples
  seen at disjoint sets of points whose handshakes carry the same client and server ISNs
  are one subflow (merge_translated); it keeps the 4-tuple of the client's side.

The data connection is the connection (MP_CAPABLE subflow plus its joins, or a plain TCP
connection) whose subflows carry the most TCP payload, both directions summed, at their
chosen points. iperf3's control connection carries a few hundred bytes; the data
connection carries the test.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np

from . import mpversion, packets, sides
from .packets import ACK, ADD_ADDR, DSS, MP_CAPABLE, MP_FAIL, MP_JOIN, MP_TCPRST, RST, SYN
from .table import Cat, Column, Nullable, Table, factorize, factorize_rows


@dataclass
class Subflow:
    """Evidence about one TCP 4-tuple, gathered over all capture points."""

    cip: str
    cport: int
    sip: str
    sport: int
    #: the client's ISN when the table was split by it (label_isn; None: not split, or the
    #: packets before the 4-tuple's first captured SYN)
    isn: int | None = None
    #: point -> row positions (into the oriented TCP table) of this subflow at that point
    rows: dict[str, np.ndarray] = field(default_factory=dict)
    point: str = ""                 # the point its numbers come from (see find_subflows)
    kind: str = "tcp"               # "mp_capable", "mp_join", "tcp" (what the SYN carried)
    syn_first_t: float | None = None
    syn_attempts: int = 0           # client SYNs, max over points (a retransmitted SYN counts)
    #: the first client SYN without an MPTCP option after one with MP_CAPABLE: the client
    #: gave up on MPTCP (net.mptcp.syn_retrans_before_tcp_fallback)
    syn_plain_t: float | None = None
    synack_seen: bool = False
    synack_mp: bool = False         # the SYN/ACK carried the same MPTCP option as the SYN
    #: the client's third ACK carried MP_CAPABLE (or v1's MP_CAPABLE with data arrived later)
    third_ack_mpc: bool = False
    client_acked: bool = False      # a client packet without SYN after the SYN/ACK
    server_acked: bool = False      # then a server packet without SYN/RST (a join's 4th ACK)
    server_key: int | None = None
    #: MPTCP version of an MP_CAPABLE subflow (mpversion.connection_version; None: not seen)
    version: int | None = None
    join_token: int | None = None
    rst_t: float | None = None      # first RST from either side
    rst_server_t: float | None = None   # first RST from the server side (or a router forging it)
    rst_before_synack: bool = False     # the server side answered the SYN with RST
    #: MP_TCPRST reason of the server side's first RST, else of the first RST that carried one
    rst_reason: int | None = None
    rst_reason_from: str | None = None  # "server" or "client": who sent rst_reason
    mp_fail_t: float | None = None
    add_addrs: list[str] = field(default_factory=list)
    #: point -> whether the client's first SYN there carried an MPTCP option
    syn_mp_at: dict[str, bool] = field(default_factory=dict)
    #: point -> whether the client's first segment after the SYN/ACK (the third ACK) did
    ack_mp_at: dict[str, bool] = field(default_factory=dict)
    payload: int = 0                # both directions, at the chosen point
    conn: str = ""                  # connection id
    #: point -> "addr:port" of the client side where a NAT made this subflow another
    #: 4-tuple (merge_translated); empty without one
    translated: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int, str, int]:
        return (self.cip, self.cport, self.sip, self.sport)

    @property
    def established(self) -> bool:
        if self.syn_attempts == 0:
            # handshake before the capture started: traffic both ways proves it
            return self.payload > 0 or self.client_acked
        ok = self.synack_seen and self.client_acked
        if self.kind == "mp_join":
            # RFC 8684 3.2: a join is established when the third ACK (with the HMAC) is
            # acknowledged; a server refusing the join answers it with RST instead
            ok = ok and self.synack_mp and self.server_acked
        return ok


def tokens_of_key(key: int, version: int | None = None) -> tuple[int, ...]:
    """The tokens a 64-bit MPTCP key stands for: that of ``version``, or without one (v1
    SHA-256, v0 SHA-1), RFC 8684 / RFC 6824."""
    return mpversion.tokens(key, version)


def orient_tcp(pk: Table, server_port: int, join_ports: Collection[int] = ()) -> Table:
    """TCP packets to/from the server port (and the ``join_ports``, see only_joins_off_port),
    with client/server sides. ICMP rows (which carry a quoted TCP header) are left out.
    ``row``: the packet's position in ``pk``."""
    sp = pk.arr("sport")
    dp = pk.arr("dport")
    ports = np.array(sorted({server_port, *join_ports}), dtype=float)
    to_srv = sides.to_server(pk, {server_port, *join_ports})
    keep = np.flatnonzero(np.isnan(pk.arr("icmp_type")) & (to_srv | np.isin(sp, ports)))
    fc = to_srv[keep]
    (src, dst), names = packets.address_codes(pk, "ip_src", "ip_dst")
    src, dst = src[keep], dst[keep]
    tlen = pk.arr("tlen")[keep]
    point = pk.column("point")
    cols: dict[str, Column] = {
        "t": pk.arr("t")[keep],
        "point": point.take(keep) if isinstance(point, Cat) else Cat.of(pk.strings("point")[keep]),
        "from_client": fc,
        "cip": Cat(np.where(fc, src, dst), names),
        "cport": np.where(fc, sp[keep], dp[keep]).astype(np.int64),
        "sip": Cat(np.where(fc, dst, src), names),
        "sport": np.where(fc, dp[keep], sp[keep]).astype(np.int64),
        "ip_len": pk.arr("ip_len")[keep],
        "ttl": pk.arr("ip_ttl")[keep],
        "tlen": np.where(np.isnan(tlen), 0, tlen).astype(np.int64),
        "seq": pk.arr("seq")[keep],
        "ack": pk.arr("ack")[keep],
        "flags": pk.arr("flags")[keep],
        "mp": pk.arr("mp")[keep],
        "sendkey": pk.nullable("sendkey").take(keep),
        "recvkey": pk.nullable("recvkey").take(keep),
        "recvtok": pk.nullable("recvtok").take(keep),
        "mpc_ver": pk.nullable("mpc_ver").take(keep),
        "addaddr": pk.cat("addaddr").take(keep),
        "rst_reason": pk.nullable("rst_reason").take(keep),
        # the MSS option (SYN, SYN/ACK): stats.syn_mss; absent in tables built before it
        "mss": pk.arr("mss")[keep] if "mss" in pk else np.full(len(keep), np.nan),
        "row": keep,
    }
    return Table(cols)


class _Columns:
    """The oriented table's columns find_subflows, merge_translated and _handshake read,
    taken out of the table once (a lookup per subflow and point was two thirds of
    find_subflows on an http run's 93,071 subflows)."""

    def __init__(self, t: Table) -> None:
        self.flags = t.arr("flags")
        self.fc = t.arr("from_client")
        self.mp = t.arr("mp")
        self.t = t.arr("t")
        self.seq = t.arr("seq")
        self.tlen = t.arr("tlen")
        self.ttl = t.arr("ttl").astype(float)
        self.cport, self.sport = t.arr("cport"), t.arr("sport")
        self.addaddr = t.cat("addaddr")
        self._opts: dict[str, Nullable] = {c: t.nullable(c) for c in ("recvtok", "sendkey", "recvkey", "rst_reason",
                                                                       "mpc_ver")}

    def opt(self, col: str, i: int) -> int | None:
        """An MPTCP option value (nullable integer column) of row ``i``, None if absent."""
        return self._opts[col].get(i)


def _handshake(sf: Subflow, c: _Columns, idx: np.ndarray, point: str = "") -> None:
    """Fill handshake facts from one point's rows of this subflow (merged over points)."""
    flags = c.flags[idx]
    fc = c.fc[idx]
    mp = c.mp[idx]
    times = c.t[idx]
    is_syn = (flags & SYN) != 0
    is_ack = (flags & ACK) != 0
    syn = is_syn & ~is_ack & fc
    synack = is_syn & is_ack & ~fc
    n_syn = int(syn.sum())
    sf.syn_attempts = max(sf.syn_attempts, n_syn)
    if n_syn:
        i0 = np.flatnonzero(syn)[0]
        sf.syn_mp_at[point] = bool(mp[i0] & ((1 << MP_CAPABLE) | (1 << MP_JOIN)))
        t_syn = float(times[i0])
        sf.syn_first_t = t_syn if sf.syn_first_t is None else min(sf.syn_first_t, t_syn)
        if mp[i0] & (1 << MP_CAPABLE):
            sf.kind = "mp_capable"
            plain = syn & ((mp & ((1 << MP_CAPABLE) | (1 << MP_JOIN))) == 0)
            if plain.any():
                tp = float(times[np.flatnonzero(plain)[0]])
                sf.syn_plain_t = tp if sf.syn_plain_t is None else min(sf.syn_plain_t, tp)
        elif mp[i0] & (1 << MP_JOIN):
            sf.kind = "mp_join"
            tok = c.opt("recvtok", idx[i0])
            if tok is not None:
                sf.join_token = tok
    t_synack = None
    if synack.any():
        sf.synack_seen = True
        j = np.flatnonzero(synack)[0]
        t_synack = float(times[j])
        want = MP_CAPABLE if sf.kind == "mp_capable" else MP_JOIN if sf.kind == "mp_join" else None
        if want is not None and mp[j] & (1 << want):
            sf.synack_mp = True
        if sf.kind == "mp_capable":
            k = c.opt("sendkey", idx[j])
            if k is not None:
                sf.server_key = k
        if mp[j] & (1 << MP_CAPABLE):
            sf.version = c.opt("mpc_ver", idx[j])      # the version the server agreed to
    mpc = np.flatnonzero((mp & (1 << MP_CAPABLE)) != 0)
    if sf.version is None and len(mpc):
        sf.version = c.opt("mpc_ver", idx[mpc[0]])    # no SYN/ACK: the client's SYN or third ACK
    elif n_syn == 0 and (mp & (1 << MP_JOIN)).any():
        sf.kind = "mp_join"   # SYN not captured, but its third ACK shows it was a join
    if t_synack is not None:
        # a client RST answering the SYN/ACK (a client that gave up) does not establish
        after = fc & ~is_syn & ((flags & RST) == 0) & (times >= t_synack)
        if after.any():
            sf.client_acked = True
            first = np.flatnonzero(after)[0]
            if n_syn:
                sf.ack_mp_at[point] = bool(mp[first] & ((1 << MP_CAPABLE) | (1 << MP_JOIN)))
            if mp[first] & (1 << MP_CAPABLE):
                sf.third_ack_mpc = True
            elif (after & ((mp & (1 << MP_CAPABLE)) != 0) & (c.tlen[idx] > 0)).any():
                # v1's MP_CAPABLE with data came later: it was lost before this point (a
                # receiver-side capture sees its retransmission after DSS segments the client
                # sent behind it); a client sends that form only on a connection it keeps as
                # MPTCP, and the server establishes on it (RFC 8684 3.1): not a fallback
                sf.third_ack_mpc = True
            fourth = ~fc & ~is_syn & ((flags & RST) == 0) & (times >= times[first])
            if fourth.any():
                sf.server_acked = True
    elif n_syn == 0:
        sf.client_acked = sf.client_acked or bool((fc & is_ack).any() and (~fc & is_ack).any())
    # the server key is also echoed in the client's MP_CAPABLE ACKs (v1 third ACK, first data)
    if sf.server_key is None:
        mpc_client = fc & ((mp & (1 << MP_CAPABLE)) != 0) & ~is_syn
        for j in np.flatnonzero(mpc_client)[:3]:
            k = c.opt("recvkey", idx[j])
            if k is not None:
                sf.server_key = k
                if sf.kind == "tcp":
                    sf.kind = "mp_capable"
                break
    rst = (flags & RST) != 0
    if rst.any():
        j = np.flatnonzero(rst)[0]
        sf.rst_t = float(times[j]) if sf.rst_t is None else min(sf.rst_t, float(times[j]))
        srv_rst = rst & ~fc
        if srv_rst.any():
            j = np.flatnonzero(srv_rst)[0]
            if sf.rst_server_t is None or times[j] < sf.rst_server_t:
                sf.rst_server_t = float(times[j])
                sf.rst_before_synack = t_synack is None or times[j] < t_synack
                sf.rst_reason = c.opt("rst_reason", idx[j])
                sf.rst_reason_from = None if sf.rst_reason is None else "server"
        # either end may reset a subflow with a reason (RFC 8684 3.6): the client's counts too
        told = np.flatnonzero(rst & ((mp & (1 << MP_TCPRST)) != 0))
        if sf.rst_reason is None and len(told):
            sf.rst_reason = c.opt("rst_reason", idx[told[0]])
            sf.rst_reason_from = "client" if fc[told[0]] else "server"
    fail = (mp & (1 << MP_FAIL)) != 0
    if fail.any():
        tf = float(times[np.flatnonzero(fail)[0]])
        sf.mp_fail_t = tf if sf.mp_fail_t is None else min(sf.mp_fail_t, tf)
    adds = (mp & (1 << ADD_ADDR)) != 0
    for j in np.flatnonzero(adds):
        a = c.addaddr.get(int(idx[j]))
        if a and a not in sf.add_addrs:
            sf.add_addrs.append(a)


#: the oriented table's optional column splitting a 4-tuple into its connections (label_isn)
ISN = "isn"


def _group_codes(t: Table, point: bool = True, isn: bool = True) -> np.ndarray:
    """One int64 per row, equal for the rows of one (cip, cport, sip, sport[, point][, isn])
    group (isn when asked and the table has that column). Numpy on integer codes: pandas' groupby on
    these columns took 0.1 s for 120k rows, most of it factorizing the address and point
    columns again."""
    n = len(t)
    cip, sip = t.cat("cip"), t.cat("sip")
    parts = [(cip.codes.astype(np.int64), len(cip.names) + 1),
             (t.arr("cport"), 1 << 16),
             (sip.codes.astype(np.int64), len(sip.names) + 1),
             (t.arr("sport"), 1 << 16)]
    if point:
        pt = t.cat("point")
        parts.append((pt.codes.astype(np.int64), len(pt.names) + 1))
    if isn and ISN in t:
        # dense codes of the ISNs (NaN: -1 -> 0), not the 32-bit values: the key stays in 62 bits
        dense, _ = factorize(t.arr(ISN))
        parts.append((dense.astype(np.int64) + 1, int(dense.max()) + 2 if n else 1))
    key = np.zeros(n, dtype=np.int64)
    span = 1
    for vals, width in parts:
        span *= width
        if span >= 1 << 62:       # would overflow: fall back to factorizing tuples
            return factorize_rows([v for v, _ in parts])
        key = key * width + vals
    return key


def group_rows(t: Table) -> dict[tuple[str, int, str, int, str, int | None], np.ndarray]:
    """(cip, cport, sip, sport, point, isn) -> row positions (ascending), groups in order of
    first appearance; isn is None without the ``isn`` column (and for its NaN rows)."""
    if len(t) == 0:
        return {}
    codes, _ = factorize(_group_codes(t))             # in order of first appearance
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(codes.max() + 2))
    isn = t.arr(ISN) if ISN in t else np.full(len(t), np.nan)
    # each group's first row, its fields as Python values in one pass (not a lookup per group)
    first = order[bounds[:-1]]
    fields = zip(_strings(t.cat("cip"), first), t.arr("cport")[first].tolist(), _strings(t.cat("sip"), first),
                 t.arr("sport")[first].tolist(), _strings(t.cat("point"), first),
                 [None if np.isnan(v) else int(v) for v in isn[first]], strict=True)
    return {key: order[bounds[g]:bounds[g + 1]] for g, key in enumerate(fields)}


def _strings(col: Cat, rows: np.ndarray) -> list[str]:
    """``str`` of a categorical column's values at ``rows``."""
    names = [str(c) for c in col.names.tolist()]
    return [names[k] for k in col.codes[rows].tolist()]


def label_isn(t: Table) -> np.ndarray:
    """Each row's connection on its 4-tuple, for the ``isn`` column: the ISN of the latest
    client SYN at or before it, at any capture point (NaN before the 4-tuple's first captured
    SYN). A client reusing a 4-tuple opens a new connection with a new ISN; a retransmitted
    SYN keeps its ISN, so it stays in its connection. float64 holds a 32-bit ISN exactly.
    The capture points share one clock (one host's kernel): the old connection on a 4-tuple
    is over at every point before its reuse's SYN."""
    n = len(t)
    flags = t.arr("flags")
    syn = ((flags & SYN) != 0) & ((flags & ACK) == 0) & t.arr("from_client")
    g = _group_codes(t, point=False, isn=False)
    order = np.lexsort((t.arr("t"), g))   # by 4-tuple, then time (stable: capture order)
    go = g[order]
    last = np.maximum.accumulate(np.where(syn[order], np.arange(n), -1))
    prev = np.maximum(last, 0)
    out = np.full(n, np.nan)
    out[order] = np.where((last >= 0) & (go[prev] == go), t.arr("seq")[order][prev], np.nan)
    return out


#: a point that saw at least this share of the most data segments any point saw counts as
#: having seen them all (see find_subflows)
NEAR_ALL = 0.98


def find_subflows(t: Table, point_order: list[str], upload: bool = True) -> list[Subflow]:
    """Group the oriented TCP table into subflows, pick each one's capture point.

    The point chosen for a subflow is the one nearest its data's sender (the highest IP TTL
    on its data segments) among the points that saw nearly all of them (at least
    ``NEAR_ALL`` of the most any point saw): the sender's side sees segments in the order they
    were sent, even those lost further on, and its RTT samples are the sender's (a
    receiver-side point sees reordering, which would look like retransmissions, and ACKs
    leaving right after the data). A sender-side capture can count a few segments fewer than
    the receiver's (a GSO burst captured before the router splits it), so the raw count alone
    would sometimes pick the receiver. Then the point with the most rows, then the point
    listed first."""
    subs: dict[tuple, Subflow] = {}
    if t.is_empty:
        return []
    rank = {p: i for i, p in enumerate(point_order)}
    cols = _Columns(t)
    fc, tlen, ttl = cols.fc, cols.tlen, cols.ttl
    for (cip, cport, sip, sport, point, isn), idx in group_rows(t).items():
        sf = subs.setdefault((cip, cport, sip, sport, isn), Subflow(cip, cport, sip, sport, isn))
        sf.rows[str(point)] = np.asarray(idx)
    merge_translated(subs, t, cols)

    def score(sf: Subflow, p: str) -> tuple[int, float, int, int]:
        idx = sf.rows[p]
        data = idx[(fc[idx] == upload) & (tlen[idx] > 0)]
        tt = ttl[data]
        tt = tt[~np.isnan(tt)]
        return (len(data), float(np.median(tt)) if len(tt) else -1.0, len(idx), -rank.get(p, 0))

    for sf in subs.values():
        scores = {p: score(sf, p) for p in sf.rows}
        most = max(s[0] for s in scores.values())
        near = [p for p, s in scores.items() if s[0] >= NEAR_ALL * most]
        sf.point = max(near, key=lambda p: scores[p][1:])
        for p, idx in sf.rows.items():
            _handshake(sf, cols, idx, p)
        sf.payload = int(tlen[sf.rows[sf.point]].sum())
    return sorted(subs.values(), key=lambda s: (s.syn_first_t or np.inf, s.key))


def merge_translated(subs: dict[tuple, Subflow], t: Table, c: _Columns) -> None:
    """Subflows that are one subflow seen through a NAT, merged in place (module docstring).

    The client's SYN and the server's SYN/ACK name a subflow by their ISNs (64 random bits
    together); a NAT rewrites addresses and ports, not sequence numbers. The 4-tuples are
    merged only when no point saw two of them (one point seeing both would be two
    connections) and only with both ISNs captured. The merged subflow keeps the 4-tuple
    whose client SYN came with the highest IP TTL: the one nearest the client, before the
    NAT, whose address the lab's paths know."""
    syn, ack = (c.flags & SYN) != 0, (c.flags & ACK) != 0
    cs, sa = np.flatnonzero(syn & ~ack & c.fc), np.flatnonzero(syn & ack & ~c.fc)
    if not len(cs) or not len(sa):
        return
    # vectorised first: a run with 90,000 connections and no NAT has no candidate
    key = _group_codes(t, point=False)
    ttl = np.nan_to_num(c.ttl, nan=-1.0)
    # per 4-tuple key: its first client SYN's ISN and row, the highest TTL of its client
    # SYNs; its first SYN/ACK's ISN
    kc, first_c = np.unique(key[cs], return_index=True)
    max_ttl = np.maximum.reduceat(ttl[cs][np.argsort(key[cs], kind="stable")],
                                  np.searchsorted(np.sort(key[cs], kind="stable"), kc))
    ks, first_s = np.unique(key[sa], return_index=True)
    _, ic, is_ = np.intersect1d(kc, ks, assume_unique=True, return_indices=True)
    row = cs[first_c[ic]]
    isn_c, isn_s, ttl_c = c.seq[row], c.seq[sa[first_s[is_]]], max_ttl[ic]
    ok = ~np.isnan(isn_c) & ~np.isnan(isn_s)
    row, isn_c, isn_s, ttl_c = row[ok], isn_c[ok], isn_s[ok], ttl_c[ok]
    if not len(row):
        return
    pair = factorize_rows([isn_c.astype(np.int64), isn_s.astype(np.int64)])
    shared = np.bincount(pair)[pair] > 1          # an ISN pair seen on two 4-tuples or more
    if not shared.any():
        return
    isn = t.arr(ISN) if ISN in t else np.full(len(t), np.nan)
    cip, sip = t.cat("cip"), t.cat("sip")

    def sub_key(i: int) -> tuple:
        return (cip.get(i), int(c.cport[i]), sip.get(i), int(c.sport[i]),
                None if np.isnan(isn[i]) else int(isn[i]))

    # groups in the order of their first client SYN; in a group, the highest TTL first
    cand = np.flatnonzero(shared)
    first_row = {int(g): int(row[cand][pair[cand] == g].min()) for g in np.unique(pair[cand])}
    groups: dict[int, list[int]] = {g: [] for g in sorted(first_row, key=first_row.__getitem__)}
    for i in cand[np.lexsort((row[cand], -ttl_c[cand]))].tolist():
        groups[int(pair[i])].append(int(row[i]))
    for rows in groups.values():
        keys = [sub_key(r) for r in rows]
        points = [p for k in keys for p in subs[k].rows]
        if len(points) != len(set(points)):
            continue
        keep = subs[keys[0]]                      # the highest TTL on its client SYN
        for k in keys[1:]:
            other = subs.pop(k)
            keep.rows.update(other.rows)
            keep.translated.update({p: f"{other.cip}:{other.cport}" for p in other.rows})


def only_joins_off_port(subs: list[Subflow], server_port: int) -> list[Subflow]:
    """The subflows to the flow's server port, and the MP_JOIN subflows to other ports.

    A server endpoint with a port (``ip mptcp endpoint add ADDR port P signal``) announces
    ADDR:P, and the client's joins go to P (RFC 8684 3.4.1): they belong to the connection
    their token names, whatever the port (group_connections). Anything else on P (another
    application's connection) is not this flow's."""
    return [s for s in subs if s.sport == server_port or s.kind == "mp_join"]


def group_connections(subs: list[Subflow]) -> dict[str, list[Subflow]]:
    """Connection id -> subflows (initial first). Joins are matched by token."""
    by_token: dict[int, str] = {}
    conns: dict[str, list[Subflow]] = {}
    for sf in subs:
        if sf.kind == "mp_join":
            continue
        cid = f"{sf.cip}:{sf.cport}->{sf.sip}:{sf.sport}" + (f"#{sf.isn}" if sf.isn is not None else "")
        sf.conn = cid
        conns[cid] = [sf]
        if sf.kind == "mp_capable" and sf.server_key is not None:
            for tok in tokens_of_key(sf.server_key, sf.version):
                by_token[tok] = cid
    for sf in subs:
        if sf.kind != "mp_join":
            continue
        found = by_token.get(sf.join_token) if sf.join_token is not None else None
        # else a join to a connection whose handshake was not captured
        cid = found or (f"token:{sf.join_token}" if sf.join_token is not None
                        else f"join:{sf.cip}:{sf.cport}")
        sf.conn = cid
        conns.setdefault(cid, []).append(sf)
    return conns


def pick_data_connection(conns: dict[str, list[Subflow]]) -> str | None:
    """The connection carrying most payload; connections with a captured initial subflow
    first (an orphan join can only win when no initial subflow was captured at all)."""
    if not conns:
        return None
    def weight(cid: str) -> tuple[bool, int]:
        has_initial = any(s.kind != "mp_join" for s in conns[cid])
        return (has_initial, sum(s.payload for s in conns[cid]))
    return max(conns, key=weight)


def dss_missing(t: Table, sf: Subflow, from_client: bool, point: str | None = None) -> tuple[int, int, bool]:
    """Data segments in one direction at ``point`` (default: the chosen one): (total, without
    any MPTCP option, whether the last ten all lack one). Linux stops sending MPTCP options
    after a fallback."""
    idx = sf.rows[sf.point if point is None else point]
    sel = (t.arr("from_client")[idx] == from_client) & (t.arr("tlen")[idx] > 0)
    mp = t.arr("mp")[idx][sel]
    n = len(mp)
    if n == 0:
        return 0, 0, False
    bare = (mp & ((1 << DSS) | (1 << MP_CAPABLE))) == 0
    return n, int(bare.sum()), bool(bare[-10:].all())


def dss_removed(t: Table, sf: Subflow, from_client: bool,
                at_sender: tuple[int, int, bool]) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """The capture points where the subflow's data segments in one direction stopped carrying
    an MPTCP option although they still carry it at the chosen point (the sender's side): an
    option removed on the way mid-connection (NSDI 2012 row d), so the receiver takes the
    connection for a fallback while the sender does not. ``at_sender``: dss_missing at the
    chosen point. (points, {point: (data segments, without an option)})."""
    if at_sender[2]:
        return [], {}  # the sender itself stopped sending options: its own fallback
    at = {p: dss_missing(t, sf, from_client, p) for p in sf.rows if p != sf.point}
    bare = sorted(p for p, (_, _, tail) in at.items() if tail)
    return bare, {p: at[p][:2] for p in bare}


def option_removed(sf: Subflow) -> list[tuple[str, list[str], list[str]]]:
    """Handshake segments seen with an MPTCP option at some capture points and without it at
    others: (which segment, points with, points without). The same segment losing its
    option between two points was rewritten on the path between them (a middlebox)."""
    out = []
    for what, seen in (("SYN", sf.syn_mp_at), ("third ACK", sf.ack_mp_at)):
        with_ = sorted(p for p, v in seen.items() if v)
        without = sorted(p for p, v in seen.items() if not v)
        if with_ and without:
            out.append((what, with_, without))
    return out

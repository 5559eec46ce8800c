"""One-way delay per subflow and, at the receiver, reordering and head-of-line (HoL) delay.

Hand-written with numpy on the packet table, like depth.py (tshark has no equivalent of the
HoL delay; its MPTCP analysis only marks reinjections). Definitions:

* One-way delay (OWD): a data segment of a subflow seen at two capture points, matched by the
  subflow's 4-tuple, raw TCP sequence number and payload length (a key seen more than once at
  a point, a TCP retransmission, is ambiguous and left out, Karn-like), minus the time at the
  point nearer the sender from the time at the point nearer the receiver. Of a subflow's
  points, the pair with the largest median difference (sender side to receiver side). Needs
  both points on one clock: the netns and containerlab backends capture on one host kernel
  clock; captures from two machines do not (``FlowSpec.same_clock`` False: no OWD).
* Receiver point: where the lab names the receiver's node, a point on it (none: no HoL
  analysis, said in ``hol_unavailable``); otherwise (``mptcplab analyze``) the OWD pair's
  receiver-side point, else the subflow's chosen point, which is the receiver's view only when
  the capture was taken there (``point`` in the output says which).
* Receiver-side figures (out-of-order share, HoL delay, never readable, which copy arrived
  first): only at the data receiver, or at a point between the ends (order as far as that
  point). receiver_figures() is the one rule: a receiver point the handshake places at the
  data sender (sides.capture_end) withholds them all (None, the reason in
  ``hol_unavailable``, a coded warning): there segments are seen before the network
  reorders or loses them, and a hole "never filled" is data whose fate the capture cannot
  know. A point the handshake cannot place keeps them, with the note that they assume a
  receiver-side capture (``hol_assumed``). Where a lab names the receiver's node, its points are the receiver.
* Each data segment's data range: its DSS mapping, or else the mapping whose subflow sequence
  range holds its first byte (mapping.py; the subflow's ISN from its SYN, else from the
  mappings; the first data in an MP_CAPABLE is data byte 1), shifted by the segment's offset
  in the mapping, from its TCP sequence number. A segment no mapping covers is left out.
* HoL delay of a segment arriving at the receiver point at time t: from t until every data
  byte before its range has arrived (first copy of each byte counts), i.e. when the
  application could read it; 0 when nothing before it is missing. Out of order: HoL delay
  > 0, a hole before it. A hole never filled in the capture: no HoL value (``never``).
  Data bytes before the lowest range seen at the receiver count as delivered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .flows import Subflow
from .intervals import first_arrival
from .mapping import data_starts
from .model import DATA_NOT_CAPTURED, HOL_AT_SENDER, Remark
from .mpversion import widen_rows
from .packets import MP_CAPABLE
from .sides import capture_end
from .table import Kind, Table, constant
from .usefulness import first_copies

OWD_COLUMNS = ["t", "path", "subflow", "from_point", "to_point", "samples", "owd_min_ms", "owd_median_ms",
               "owd_max_ms"]
HOL_COLUMNS = ["t", "path", "subflow", "point", "segments", "bytes", "ooo_bytes", "never", "hol_median_ms",
               "hol_max_ms", "first_bytes"]
OWD_KINDS: dict[str, Kind] = {"t": "float", "path": "object", "subflow": "object", "from_point": "object",
                              "to_point": "object", "samples": "int", "owd_min_ms": "float",
                              "owd_median_ms": "float", "owd_max_ms": "float"}
HOL_KINDS: dict[str, Kind] = {"t": "float", "path": "object", "subflow": "object", "point": "object",
                              "segments": "int", "bytes": "int", "ooo_bytes": "int", "never": "int",
                              "hol_median_ms": "float", "hol_max_ms": "float", "first_bytes": "int"}

#: the connection's HoL numbers (Delivery.connection, MptcpVerdict)
HOL_KEYS = ("hol_segments", "ooo_share", "hol_never", "hol_p50_ms", "hol_p95_ms", "hol_p99_ms", "hol_max_ms")

#: the receiver-side figures receiver_figures() withholds, in words for the reasons
RECEIVER_FIGURES = "out-of-order share, head-of-line delay, never readable, which copy arrived first"
#: how a receiver-side figure measured at the data sender reads (hol_unavailable, warnings)
AT_SENDER = "not measurable at the sender's capture"


@dataclass
class Delivery:
    """What delivery() found for one connection."""

    #: per subflow and time bin (t: bin start, s from t0): OWD_COLUMNS
    owd: Table
    #: per subflow and time bin at the receiver point: HOL_COLUMNS (HoL over the bin's
    #: out-of-order segments; ooo_bytes: their bytes)
    hol: Table
    #: subflow name -> owd_*/hol_*/ooo_* numbers (SubflowResult fields)
    per_subflow: dict[str, dict[str, float | int | str | None]] = field(default_factory=dict)
    #: the connection's numbers over all its subflows' segments at the receiver points
    connection: dict[str, float | int | None] = field(default_factory=dict)
    #: why OWD is missing, when it is
    owd_unavailable: str | None = None
    #: why the HoL analysis is missing, when it is
    hol_unavailable: str | None = None
    #: receiver_figures()' coded warning when it withheld the figures at the sender
    remarks: list[Remark] = field(default_factory=list)
    #: receiver_figures()' note that the figures assume a receiver-side capture (end unknown)
    hol_assumed: str | None = None
    #: subflow name -> its data segments at its receiver point: (64-bit DSN of the first
    #: byte, length, arrival time in epoch s); empty when the HoL analysis is missing
    received: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)


def _ms(x: np.ndarray, q: float) -> float | None:
    return round(float(np.percentile(x, q)) * 1e3, 3) if len(x) else None


def _data_rows(t: Table, sf: Subflow, point: str, upload: bool) -> np.ndarray:
    """Row positions in ``t`` of the subflow's data segments at ``point``, in capture order."""
    r = sf.rows[point]
    return r[(t.arr("from_client")[r] == upload) & (t.arr("tlen")[r] > 0)]


def _keys(t: Table, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(key, time) of the segments whose (raw seq, length) occurs once at this point."""
    key = t.arr("seq")[rows].astype(np.int64) * 65536 + t.arr("tlen")[rows].astype(np.int64)
    u, first, count = np.unique(key, return_index=True, return_counts=True)
    once = count == 1
    return u[once], t.arr("t")[rows][first[once]]


def one_way(t: Table, sf: Subflow, upload: bool) -> tuple[str, str, np.ndarray, np.ndarray] | None:
    """(sender-side point, receiver-side point, send times, delays in s) of the subflow, or
    None without two points that saw the same segments."""
    data = {p: _data_rows(t, sf, p, upload) for p in sf.rows}
    pts = [p for p in sf.rows if len(data[p])]
    keyed = {p: _keys(t, data[p]) for p in pts}
    best: tuple[float, str, str, np.ndarray, np.ndarray] | None = None
    for i, a in enumerate(pts):
        for b in pts[i + 1:]:
            _, ia, ib = np.intersect1d(keyed[a][0], keyed[b][0], assume_unique=True, return_indices=True)
            if not len(ia):
                continue
            ta, tb = keyed[a][1][ia], keyed[b][1][ib]
            med = float(np.median(tb - ta))
            cand = (med, a, b, ta, tb - ta) if med >= 0 else (-med, b, a, tb, ta - tb)
            if best is None or cand[0] > best[0]:
                best = cand
    if best is None:
        return None
    order = np.argsort(best[3], kind="stable")
    return best[1], best[2], best[3][order], best[4][order]


def data_isn(t: Table, sf: Subflow, upload: bool) -> int | None:
    """The data sender's ISN on the subflow, from its SYN (upload) or SYN/ACK (download) at
    any point; None when not captured."""
    for rows in sf.rows.values():
        fl = t.arr("flags")[rows]
        fc = t.arr("from_client")[rows]
        want = (fl & 0x12) == (0x02 if upload else 0x12)
        hit = np.flatnonzero(want & (fc == upload))
        if len(hit):
            return int(t.arr("seq")[rows[hit[0]]])
    return None


@dataclass
class _Mapped:
    """A subflow's data segments at one point and the mappings they carry (_mappings)."""

    times: np.ndarray       # arrival (epoch s)
    seq: np.ndarray         # raw TCP sequence numbers
    tlen: np.ndarray
    has: np.ndarray         # the segment carries a mapping (a DSS, or v1's MP_CAPABLE with data)
    raw: np.ndarray         # its DSN as sent (4 or 8 octets; IDSN + 1 for MP_CAPABLE data)
    is64: np.ndarray
    ssn: np.ndarray
    dll: np.ndarray


def _mappings(pk: Table, t: Table, rows: np.ndarray, base: int | None) -> _Mapped:
    """The segments at ``rows`` (positions in ``t``) and their own mappings, DSNs not widened."""
    prow = t.arr("row")[rows]
    # take the subflow's rows of the nullable columns first: converting whole columns costs more
    dsn_a = pk.nullable("dsn").take(prow)
    dll_a = pk.nullable("dll").take(prow)
    dll_na = ~dll_a.present
    dsn_na = ~dsn_a.present
    mpc = (pk.arr("mp")[prow] & (1 << MP_CAPABLE)) != 0
    has = ~dsn_na | (mpc & ~dll_na & (base is not None))
    raw = dsn_a.filled(0).astype(np.uint64)
    is64 = pk.arr("dsn64")[prow]
    ssn = pk.nullable("ssn").take(prow).filled(0).astype(np.int64)
    if base is not None:                   # MP_CAPABLE with data: data byte 1 at subflow byte 1
        first = dsn_na & has
        raw = np.where(first, np.uint64((base + 1) % 2**64), raw)
        is64 = is64 | first
        ssn = np.where(first, 1, ssn)
    return _Mapped(times=t.arr("t")[rows], seq=t.arr("seq")[rows].astype(np.int64),
                   tlen=t.arr("tlen")[rows].astype(np.int64), has=has, raw=raw, is64=is64, ssn=ssn,
                   dll=dll_a.filled(0).astype(np.int64))


def _place(m: _Mapped, wide: np.ndarray, isn: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times, 64-bit DSN of the first byte, lengths) of the segments a mapping covers;
    ``wide``: the 64-bit DSNs of the segments carrying one (m.has), in order."""
    if not m.has.any():
        return np.zeros(0), np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    d = np.zeros(len(m.has), dtype=np.uint64)
    d[m.has] = wide
    if isn is None:
        # seq - ssn of a segment carrying a mapping is ISN + its offset in the mapping (>= 0),
        # so the lowest one (modulo 2^32, near the first) is the ISN
        v = (m.seq[m.has] - m.ssn[m.has]) % 2**32
        isn = (int(v[0]) + int(((v - v[0] + 2**31) % 2**32 - 2**31).min())) % 2**32
    # each segment under the mapping whose subflow sequence range holds it (mapping.py)
    start, found = data_starts((m.seq - isn) % 2**32, m.has, d, m.ssn, m.dll)
    return m.times[found], start[found], m.tlen[found]


def _widen_all(parts: list[_Mapped], base: int | None) -> list[np.ndarray]:
    """The 64-bit DSNs of every subflow's mappings, widened together in arrival order: the
    data sequence space is the connection's, so a subflow's first 4-octet DSN is placed next
    to what the others carried before it, not next to the IDSN (a join that starts after
    2 GB would otherwise land 4 GB too low; mpversion.widen_rows)."""
    vals = [m.raw[m.has] for m in parts]
    bounds = np.cumsum([0] + [len(v) for v in vals])
    if bounds[-1] == 0:
        return [np.zeros(0, dtype=np.uint64) for _ in parts]
    idx = [np.arange(bounds[i], bounds[i + 1]) for i in range(len(parts))]
    return widen_rows(idx, np.concatenate(vals), np.concatenate([m.is64[m.has] for m in parts]),
                      np.concatenate([m.times[m.has] for m in parts]), base)


def segment_ranges(pk: Table, t: Table, rows: np.ndarray, base: int | None,
                   isn: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times, 64-bit data sequence numbers of the first byte, lengths) of the data segments at
    ``rows`` (positions in ``t``, one subflow) that a mapping covers (see the module
    docstring). ``isn``: the data sender's ISN on the subflow (data_isn), else estimated from
    the mappings. delivery() widens all subflows' DSNs together instead."""
    m = _mappings(pk, t, rows, base)
    return _place(m, _widen_all([m], base)[0], isn)


def hol_delays(start: np.ndarray, length: np.ndarray, arrival: np.ndarray) -> np.ndarray:
    """HoL delay (s; inf: a hole before the segment never filled) of each segment, ranges
    [start, start + length) as signed integers (see the module docstring).

    Vectorised: the range boundaries cut the data space into elementary intervals; each
    interval's first arrival is the minimum over the segments covering it; the application
    can read up to interval k once all intervals up to k have arrived (running maximum)."""
    if len(start) == 0:
        return np.zeros(0)
    _, si, first = first_arrival(start, length, arrival)
    ready = np.maximum.accumulate(first[:-1])          # all data up to interval k has arrived
    before = np.where(si > 0, ready[np.maximum(si - 1, 0)], -np.inf)
    return np.maximum(before - arrival, 0.0)


def _bin_index(t: np.ndarray, t0: float, bin_s: float) -> np.ndarray:
    return np.floor((t - t0) / bin_s).astype(np.int64)


def _bin_stats(k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per bin index in ``k``: (bin, count, min, median, max) of ``v`` (no NaN). numpy
    instead of a pandas groupby: it runs on every data segment of every repetition."""
    o = np.lexsort((v, k))
    ks, vs = k[o], v[o]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    n = np.diff(np.r_[starts, len(ks)])
    med = (vs[starts + (n - 1) // 2] + vs[starts + n // 2]) / 2
    return ks[starts], n, vs[starts], med, vs[starts + n - 1]


def capture_side(t: Table, sf: Subflow, point: str, upload: bool, receiver_node: str | None) -> str:
    """Where ``point`` sits on the subflow's data path: "receiver", "middle", "sender" or
    "unknown". A point on the lab's named receiver node is the receiver (known, not read
    from the handshake, whose gaps a lab path without delay leaves too short to tell);
    otherwise its handshake there places it (sides.capture_end)."""
    if receiver_node is not None and point.split(":", 1)[0] == receiver_node:
        return "receiver"
    rows = sf.rows[point]
    end = capture_end(t.arr("t")[rows], t.arr("flags")[rows].astype(np.int64),
                      t.arr("from_client")[rows].astype(bool))
    if end is None:
        return "unknown"
    if end == "middle":
        return "middle"
    return "sender" if (end == "client") == upload else "receiver"


def receiver_figures(where: dict[str, tuple[str, str]]) -> tuple[str | None, str | None]:
    """The rule for the receiver-side figures (module docstring), from each subflow's name ->
    (receiver point, capture_side there): (why they are withheld, or None; the note that
    they assume a receiver-side capture, or None). Withheld for the whole connection when
    any subflow's point is at the sender: a hole that subflow fills would be invisible to
    the others' numbers."""
    sender = sorted(f"{n} at {p}" for n, (p, side) in where.items() if side == "sender")
    if sender:
        return (f"{AT_SENDER} ({RECEIVER_FIGURES}): the handshake places the capture of "
                f"{', '.join(sender)} at the data sender, where segments are seen before the network "
                "reorders or loses them"), None
    unknown = sorted(f"{n} at {p}" for n, (p, side) in where.items() if side == "unknown")
    if unknown:
        return None, (f"the receiver-side figures ({RECEIVER_FIGURES}) assume a receiver-side capture: "
                      f"the handshake cannot place the capture of {', '.join(unknown)}")
    return None, None


def delivery(pk: Table, t: Table, conn: list[Subflow], paths: dict[str, str], upload: bool,
             t0: float, base: int | None, same_clock: bool, bin_s: float = 0.1,
             receiver_node: str | None = None, uncaptured: str | None = None) -> Delivery:
    """OWD and HoL tables of the connection ``conn`` (base: the data sender's IDSN, or None).
    ``receiver_node``: the data receiver's node, where a lab names it; the HoL analysis then
    uses only points on it (``node:iface``), and none when a subflow was not captured there
    (a sender-side point would show the sender's scheduling order, not the receiver's).
    Without one, receiver_figures() decides from the handshake at each receiver point.
    ``uncaptured``: why the files lack data the connection carried (coverage.py), which
    withholds the figures too: a hole another subflow filled outside the files is no hole."""
    owd_rows: list[Table] = []
    per: dict[str, dict[str, float | int | str | None]] = {}
    segs: list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]] = []
    mapped: list[tuple[str, str, _Mapped, int | None]] = []
    why: str | None = None if same_clock else ("the capture points are not known to share one clock "
                                               "(captures from two machines)")
    any_pair = False
    hol_why: str | None = None
    where: dict[str, tuple[str, str]] = {}
    for sf in conn:
        name = f"{sf.cip}:{sf.cport}"
        path = paths.get(sf.cip)
        ow = one_way(t, sf, upload) if same_clock else None
        p: dict[str, float | int | str | None] = {"owd_samples": 0}
        recv_point: str | None = sf.point
        if ow is not None:
            any_pair = True
            a, b, ts, dl = ow
            recv_point = b
            p.update(owd_samples=int(len(dl)), owd_min_ms=_ms(dl, 0), owd_median_ms=_ms(dl, 50),
                     owd_p95_ms=_ms(dl, 95), owd_points=f"{a}->{b}")
            bs = _bin_stats(_bin_index(ts, t0, bin_s), dl * 1e3)
            n = len(bs[0])
            owd_rows.append(Table({"t": np.round(bs[0] * bin_s, 6), "path": constant(path, n),
                                   "subflow": constant(name, n), "from_point": constant(a, n),
                                   "to_point": constant(b, n),
                                   "samples": bs[1].astype(np.int64), "owd_min_ms": bs[2].round(3),
                                   "owd_median_ms": bs[3].round(3), "owd_max_ms": bs[4].round(3)}))
        if receiver_node is not None:
            mine = [q for q in sf.rows if q.split(":", 1)[0] == receiver_node]
            recv_point = recv_point if recv_point in mine else (mine[0] if mine else None)
        per[name] = p
        if recv_point is None:
            if len(_data_rows(t, sf, sf.point, upload)):
                hol_why = f"subflow {name} was not captured at the receiver ({receiver_node})"
            continue
        p["hol_point"] = recv_point
        where[name] = (recv_point, capture_side(t, sf, recv_point, upload, receiver_node))
        mapped.append((name, path or "", _mappings(pk, t, _data_rows(t, sf, recv_point, upload), base),
                       data_isn(t, sf, upload)))
    wide = _widen_all([m[2] for m in mapped], base)
    for (name, path_, m, isn), w in zip(mapped, wide, strict=True):
        segs.append((name, path_, *_place(m, w, isn)))
    if same_clock and not any_pair:
        why = "no subflow was captured at two points"
    remarks: list[Remark] = []
    assumed: str | None = None
    if hol_why is None:
        hol_why, assumed = receiver_figures(where)
        remarks = [Remark(hol_why, HOL_AT_SENDER)] if hol_why is not None else []
    if hol_why is None and uncaptured is not None:
        hol_why, assumed = uncaptured, None
        remarks = [Remark(hol_why, DATA_NOT_CAPTURED)]
    if hol_why is not None:         # holes one subflow fills are invisible without all of them
        segs = []
        for p in per.values():      # None, not 0: not measured is no count
            p.update(dict.fromkeys(HOL_KEYS), hol_point=None)

    hol_rows: list[Table] = []
    conn_nums: dict[str, float | int | None] = {}
    if any(len(s[2]) for s in segs):
        allst = np.concatenate([s[3] for s in segs])
        origin = np.uint64(base) if base is not None else allst.min()
        rel = [(s[3] - origin).view(np.int64) for s in segs]
        lo = min(int(r.min()) for r in rel if len(r))
        hol = hol_delays(np.concatenate(rel) - lo, np.concatenate([s[4] for s in segs]),
                         np.concatenate([s[2] for s in segs]))
        # which subflow delivered each byte first, and when (usefulness.py): goodput per subflow
        names, owner, when, width = first_copies({s[0]: (s[3], s[4], s[2]) for s in segs}, base)
        k = 0
        for (name, path, ts_, _, ln), pt in zip(segs, [per[s[0]]["hol_point"] for s in segs], strict=True):
            h = hol[k:k + len(ts_)]
            k += len(ts_)
            per[name].update(_hol_numbers(h, ln))
            mine = owner == (names.index(name) if name in names else -1)
            per[name]["first_bytes"] = int(width[mine].sum())
            if len(ts_):
                hol_rows.append(_hol_bins(h, ln, ts_, t0, bin_s, path or None, name, str(pt),
                                          (when[mine], width[mine])))
        conn_nums = _hol_numbers(hol, np.concatenate([s[4] for s in segs]))
    elif hol_why is not None:
        conn_nums = dict.fromkeys(HOL_KEYS)
    owd = Table.concat(owd_rows) if owd_rows else Table.empty(OWD_KINDS)
    holt = Table.concat(hol_rows) if hol_rows else Table.empty(HOL_KINDS)
    return Delivery(owd=owd, hol=holt, per_subflow=per, connection=conn_nums, owd_unavailable=why,
                    hol_unavailable=hol_why, remarks=remarks, hol_assumed=assumed,
                    received={s[0]: (s[3], s[4], s[2]) for s in segs})


def _hol_numbers(h: np.ndarray, ln: np.ndarray) -> dict[str, float | int | None]:
    ooo = h > 0
    fin = h[np.isfinite(h)]
    q = np.percentile(fin, [50, 95, 99, 100]) * 1e3 if len(fin) else [None] * 4   # one sort
    p50, p95, p99, mx = (None if v is None else round(float(v), 3) for v in q)
    return {"hol_segments": int(len(h)), "ooo_share": round(float(ln[ooo].sum() / ln.sum()), 4) if ln.sum() else None,
            "hol_never": int(np.isinf(h).sum()), "hol_p50_ms": p50, "hol_p95_ms": p95, "hol_p99_ms": p99,
            "hol_max_ms": mx}


def _hol_bins(h: np.ndarray, ln: np.ndarray, ts: np.ndarray, t0: float, bin_s: float, path: str | None,
              name: str, point: str, firsts: tuple[np.ndarray, np.ndarray]) -> Table:
    """One subflow's HOL_COLUMNS per bin; ``firsts``: (arrival, bytes) of the data it delivered
    first (the arrivals are some of ``ts``, so their bins are among the subflow's)."""
    k = _bin_index(ts, t0, bin_s)
    lo = int(k.min())
    cnt = np.bincount(k - lo)
    used = np.flatnonzero(cnt)
    ooo = h > 0
    med = np.full(len(cnt), np.nan)
    mx = np.full(len(cnt), np.nan)
    late = ooo & np.isfinite(h)
    if late.any():
        kb, _, _, m, x = _bin_stats(k[late] - lo, h[late] * 1e3)
        med[kb], mx[kb] = m, x
    n = len(used)
    return Table({
        "t": np.round((used + lo) * bin_s, 6), "path": constant(path, n), "subflow": constant(name, n),
        "point": constant(point, n), "segments": cnt[used].astype(np.int64),
        "bytes": np.bincount(k - lo, ln)[used].astype(np.int64),
        "ooo_bytes": np.bincount(k - lo, np.where(ooo, ln, 0))[used].astype(np.int64),
        "never": np.bincount(k - lo, np.isinf(h))[used].astype(np.int64),
        "hol_median_ms": med[used].round(3), "hol_max_ms": mx[used].round(3),
        "first_bytes": np.bincount(_bin_index(firsts[0], t0, bin_s) - lo, firsts[1],
                                   minlength=len(cnt))[used].astype(np.int64),
    })


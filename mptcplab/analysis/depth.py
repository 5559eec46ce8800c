"""MPTCP depth of one connection: data sequence numbers, MPTCP-level retransmissions, RTT per
subflow, MPTCP signalling events.

Hand-written with numpy on the packet table (packets.py), each subflow at its chosen capture
point (flows.find_subflows), so a packet seen at two points counts once. Definitions:

* Data sequence numbers are made relative to the data sender's initial DSN (IDSN: the low
  64 bits of SHA-256 of its MP_CAPABLE key, RFC 8684 3.1; SHA-1 in v0, RFC 6824, the version
  the handshake agreed), so the first data byte is 1 and numbers compare across subflows;
  without a captured key, relative to the lowest mapped DSN. 4-octet DSNs and data ACKs are
  widened to 64 bits in sending order, each next to the value before it (mpversion.widen).
* A mapping is a DSS (DSN, subflow sequence number, data-level length) on a segment with
  payload (a DATA_FIN alone is not data), as first seen on a subflow; Linux repeats one
  mapping on every segment of a chunk, and a TCP retransmission
  repeats the segment's mapping, so repeats of the same (subflow, DSN, SSN, length) are one
  mapping.
* MPTCP-level retransmission: a mapping whose data range overlaps that of an earlier mapping
  (on any subflow, not the same chunk): the same data sent again at the MPTCP level, on
  another subflow (a reinjection) or on the same one under a new subflow sequence number.
  One row per re-sending mapping, with the bytes of it that were mapped before and the
  earliest carrier of its first such byte. A one-byte mapping of a byte the receiver had
  already acknowledged at the data level is a *window probe*, not a retransmission: Linux
  probes a zero MPTCP-level window with the byte below its data ACK (``mptcp_sendmsg_frag``,
  ``zero_window_probe``). It keeps its row (``window_probe``) and counts nowhere else; the
  kernel's MPTcpExtMPTCPRetrans leaves it out too.
* Which copy is the re-send is decided by when each left the host, as the capture shows
  it; the sender decides by when it queued each. The two differ when a slow subflow holds
  data in its send queue (queued on it, unsent behind its window) and the sender re-sends
  an earlier range on another subflow with that data in the same chunk: the other copy
  leaves first, and the queued one, sent later in its subflow's order, reads as a re-send
  here while the sender (and MPTcpExtMPTCPRetrans) counts only the other. Such a row is
  marked ``late_original``: the mapping continues its subflow's data in place (the same
  subflow and DSN-to-subflow-sequence offset as the mappings before it on that subflow, in
  subflow sequence order, since one that was not a re-send). Counted, it stays: the
  bytes were carried twice all the same. Rows minus window probes minus late originals is
  the count comparable with the kernel's (measured within 1 on labs/rcvbuf's TB-EMU2, where
  the 50 kbit/s 3G subflow queues data for seconds; docs/labs/rcvbuf.md).
* RTT per subflow: time from a data segment (never retransmitted, Karn) to the first ACK
  from the receiver covering it, at the chosen point. The path RTT only at a point on the
  sender's side (the data direction's sender); at the receiver's side it is only the
  receiver's ACK delay, so each subflow's numbers carry what they measure (``rtt_kind``,
  RTT_KINDS), from where its handshake places the point (sides.capture_end).
* Events: MP_PRIO, ADD_ADDR, REMOVE_ADDR, MP_FASTCLOSE, MP_TCPRST, MP_FAIL, DATA_FIN, an
  infinite mapping (data-level length 0: fallback, RFC 8684 3.7, first one only); DATA_FIN
  first seen from each side.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .flows import Subflow
from .mpversion import V1, idsn, widen_rows
from .packets import ADD_ADDR, MP_CAPABLE, MP_FAIL, MP_FASTCLOSE, MP_PRIO, MP_TCPRST, REMOVE_ADDR
from .sides import capture_end
from .stats import unwrap32
from .table import Kind, Table, constant, factorize, factorize_rows

DSN_COLUMNS = ["t", "path", "subflow", "kind", "dsn", "length", "ssn"]
REINJECTION_COLUMNS = ["t", "path", "subflow", "dsn", "length", "first_t", "first_path", "first_subflow",
                       "same_subflow", "window_probe", "late_original"]
EVENT_COLUMNS = ["t", "path", "subflow", "event", "detail"]
DSN_KINDS: dict[str, Kind] = {"t": "float", "path": "object", "subflow": "object", "kind": "object", "dsn": "int",
                              "length": "int", "ssn": "int"}
REINJECTION_KINDS: dict[str, Kind] = {
    "t": "float", "path": "object", "subflow": "object", "dsn": "int", "length": "int", "first_t": "float",
    "first_path": "object", "first_subflow": "object", "same_subflow": "bool", "window_probe": "bool",
    "late_original": "bool"}
EVENT_KINDS: dict[str, Kind] = {"t": "float", "path": "object", "subflow": "object", "event": "object",
                                "detail": "object"}

#: what a subflow's data segment -> ACK times measure, by where the capture was taken:
#: at the data sender, the path RTT (plus the receiver's ACK delay); at the data receiver,
#: only the receiver's ACK delay (the segment arrived there, the ACK left there: no path
#: crossed); between the two, the RTT of the part from the point to the receiver; unknown
#: without a captured handshake to place the point
RTT_KINDS = {"path": "path RTT", "ack_delay": "receiver's ACK delay, not the path RTT",
             "partial": "RTT from the capture point to the receiver only", "unknown": "capture end unknown"}


def rtt_kind(end: str | None, upload: bool) -> str:
    """RTT_KINDS key for a capture at ``end`` (sides.capture_end) of a subflow whose data the
    client sends (``upload``) or the server sends."""
    if end is None:
        return "unknown"
    if end == "middle":
        return "partial"
    return "path" if (end == "client") == upload else "ack_delay"


@dataclass
class Depth:
    """What depth() found for one connection."""

    #: t (s from t0), path, subflow, kind ("map": a mapping, one row where it changes from
    #: segment to segment; "ack": the receiver's data ACK, one row where it moves), dsn
    #: (relative; for "ack" the data ACK), length (mapping length), ssn
    dsn: Table
    #: one row per MPTCP-level retransmission (REINJECTION_COLUMNS)
    reinjections: Table
    #: t, path, subflow, event, detail (EVENT_COLUMNS)
    events: Table
    #: subflow name -> {"rtt_min_ms", "rtt_median_ms", "rtt_p95_ms", "rtt_samples",
    #: "mptcp_retransmissions", "mptcp_retrans_bytes"}
    per_subflow: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    #: a DSS mapping carried a checksum (None: no mapping seen)
    dss_checksum: bool | None = None
    #: the MP_CAPABLE handshake asked for checksums (flag A)
    checksum_required: bool | None = None
    #: the data sender's IDSN (None: its key was not captured)
    idsn: int | None = None
    #: subflow name -> what its rtt_* numbers measure (RTT_KINDS), from where its capture
    #: point sits (sides.capture_end)
    rtt_kind: dict[str, str] = field(default_factory=dict)
    #: the MPTCP version the handshake agreed (None: no MP_CAPABLE captured)
    version: int | None = None
    #: the 64-bit DSN that ``dsn`` 0 stands for (the IDSN, else the lowest mapped DSN - 1;
    #: None: nothing mapped)
    origin: int | None = None


def _rtt(t: np.ndarray, seq: np.ndarray, tlen: np.ndarray, ack_t: np.ndarray, ack: np.ndarray) -> np.ndarray:
    """RTT samples (s) of the data segments (times t, raw seq, lengths) against the receiver's
    ACKs (times, raw ack numbers), by Karn's rule."""
    if len(t) == 0 or len(ack_t) == 0:
        return np.zeros(0)
    rel = unwrap32(seq, seq[0])
    end = rel + tlen
    prev = np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(end)[:-1]))
    fresh = rel >= prev                        # never sent before
    # a range sent again later is ambiguous too: keep segments whose end no later start undercuts
    later_min = np.minimum.accumulate(rel[::-1])[::-1]
    later_min = np.concatenate((later_min[1:], [np.iinfo(np.int64).max]))
    fresh &= later_min >= end
    arel = np.maximum.accumulate(unwrap32(ack, seq[0]))
    j = np.searchsorted(arel, end[fresh], side="left")
    ok = j < len(arel)
    j = j[ok]
    sample = ack_t[j] - t[fresh][ok]
    return sample[sample >= 0]


def depth(pk: Table, t: Table, conn: list[Subflow], paths: dict[str, str], upload: bool,
          t0: float) -> Depth:
    """The depth tables of the connection ``conn`` (its subflows from flows.find_subflows on
    the oriented table ``t`` of ``pk``)."""
    rows_t = t.arr("row")
    mp_all = pk.arr("mp")
    times = pk.arr("t")
    # the nullable columns as plain arrays once (indexing them per subflow costs more)
    dsn_na = ~pk.nullable("dsn").present
    pk_dsn_na = dsn_na               # a DSS's own mapping (an MP_CAPABLE's is no infinite mapping)
    dsn_all = pk.nullable("dsn").filled(0).astype(np.uint64)
    dsn64 = pk.arr("dsn64")
    dack_na = ~pk.nullable("data_ack").present
    dack_all = pk.nullable("data_ack").filled(0).astype(np.uint64)
    ssn_all = pk.nullable("ssn").filled(0).astype(np.int64)
    dll_na = ~pk.nullable("dll").present
    dll_all = pk.nullable("dll").filled(0).astype(np.int64)
    csum_all = pk.arr("csum")
    tlen_pk = np.nan_to_num(pk.arr("tlen"))
    fc_t = t.arr("from_client")
    tlen_t = t.arr("tlen")
    t_t, flags_t, seq_t, ack_t = t.arr("t"), t.arr("flags"), t.arr("seq"), t.arr("ack")
    # the data sender's key -> IDSN (upload: the client's key, sent in its MP_CAPABLE ACK)
    base: int | None = None
    checksum_required: bool | None = None
    ini = next((s for s in conn if s.kind == "mp_capable"), None)
    if ini is not None:
        idx = rows_t[ini.rows[ini.point]]
        fc = fc_t[ini.rows[ini.point]]
        mpc = (mp_all[idx] & (1 << MP_CAPABLE)) != 0
        sendkey = pk.nullable("sendkey")
        sender = mpc & (fc == upload) & sendkey.present[idx]
        if sender.any():
            key = int(sendkey.values[idx[np.flatnonzero(sender)[0]]])
            base = idsn(key, V1 if ini.version is None else ini.version)
        mpc_flags = pk.nullable("mpc_flags").take(idx[mpc])
        flags = mpc_flags.values[mpc_flags.present]
        if len(flags):
            checksum_required = bool(int(flags[0]) & 0x80)

    maps: list[Table] = []
    acks: list[Table] = []
    events: list[dict[str, object]] = []
    csum_seen: bool | None = None
    per: dict[str, dict[str, float | int | None]] = {}
    rtt_kinds: dict[str, str] = {}
    # each subflow's mapping rows (data direction; a mapping on a segment without payload
    # carries only the DATA_FIN, one DSN sent on every subflow: not data) and data ACK rows
    # (the other direction) at its chosen point, widened over the whole connection
    map_rows, ack_rows = [], []
    mpc_data = _mpc_data_rows(pk, rows_t, fc_t, ini, upload, dsn_na, dll_na, tlen_pk)
    if base is not None and len(mpc_data):
        # v1's implicit mapping (RFC 8684 3.1): data on the MP_CAPABLE ACK (or first data
        # packet) is data byte 1 (IDSN + 1) at subflow byte 1, for the MP_CAPABLE's data-level
        # length; filled into copies of the columns so it reads as any 8-octet mapping
        dsn_all, dsn64, ssn_all = dsn_all.copy(), dsn64.copy(), ssn_all.copy()
        dsn_all[mpc_data] = np.uint64((base + 1) % 2**64)
        dsn64[mpc_data] = True
        ssn_all[mpc_data] = 1
        dsn_na = dsn_na.copy()
        dsn_na[mpc_data] = False
    for sf in conn:
        prow = rows_t[sf.rows[sf.point]]
        data_dir = fc_t[sf.rows[sf.point]] == upload
        map_rows.append(prow[data_dir & ~dsn_na[prow] & (tlen_pk[prow] > 0)])
        ack_rows.append(prow[~data_dir & ~dack_na[prow]])
    map_wide = widen_rows(map_rows, dsn_all, dsn64, times, base)
    ack_wide = widen_rows(ack_rows, dack_all, pk.arr("dack64"), times, base)
    for k, sf in enumerate(conn):
        name = f"{sf.cip}:{sf.cport}"
        path = paths.get(sf.cip)
        trows = sf.rows[sf.point]
        prow = rows_t[trows]
        data_dir = fc_t[trows] == upload
        mr = map_rows[k]
        if len(mr):
            d = map_wide[k]
            ssn = ssn_all[mr]
            dll = dll_all[mr]
            # one row per mapping where it changes from segment to segment (Linux repeats a
            # chunk's mapping on each of its segments): the series stays small
            new = np.r_[True, (d[1:] != d[:-1]) | (ssn[1:] != ssn[:-1]) | (dll[1:] != dll[:-1])]
            csum = csum_all[mr]
            csum_seen = bool(csum.any()) or bool(csum_seen)
            n = int(new.sum())
            maps.append(Table({
                "t": times[mr][new] - t0, "path": constant(path, n), "subflow": constant(name, n),
                "kind": constant("map", n), "dsn64": d[new], "length": dll[new], "ssn": ssn[new],
            }))
        # data ACKs from the receiver (the other direction)
        ar = ack_rows[k]
        if len(ar):
            w = ack_wide[k]
            new = np.r_[True, w[1:] != w[:-1]]          # only where the data ACK moves
            n = int(new.sum())
            acks.append(Table({"t": times[ar][new] - t0, "path": constant(path, n), "subflow": constant(name, n),
                               "kind": constant("ack", n), "dsn64": w[new], "length": np.zeros(n, dtype=np.int64),
                               "ssn": np.zeros(n, dtype=np.int64)}))
        # RTT at the chosen point, and what it measures there
        rtt_kinds[name] = rtt_kind(capture_end(t_t[trows], flags_t[trows].astype(np.int64),
                                               fc_t[trows].astype(bool)), upload)
        seg = trows[data_dir & (tlen_t[trows] > 0)]
        back = trows[~data_dir & ((flags_t[trows] & 0x10) != 0)]
        back = back[~np.isnan(ack_t[back])]
        samples = _rtt(t_t[seg], seq_t[seg], tlen_t[seg], t_t[back], ack_t[back])
        per[name] = {
            "rtt_min_ms": round(float(samples.min()) * 1e3, 3) if len(samples) else None,
            "rtt_median_ms": round(float(np.median(samples)) * 1e3, 3) if len(samples) else None,
            "rtt_p95_ms": round(float(np.percentile(samples, 95)) * 1e3, 3) if len(samples) else None,
            "rtt_samples": int(len(samples)),
            "mptcp_retransmissions": 0, "mptcp_retrans_bytes": 0,
        }
        infinite = ~pk_dsn_na[prow] & ~dll_na[prow] & (dll_all[prow] == 0)
        events += _events(pk, prow, data_dir, infinite, name, path, t0)

    dsn: Table | None = Table.concat(maps + acks) if maps or acks else None
    reinj = Table.empty(REINJECTION_KINDS)
    origin: int | None = None
    if dsn is not None:
        m = dsn.arr("kind") == "map"
        lo = int(dsn.arr("dsn64")[m].min()) if m.any() else 0
        origin = base if base is not None else (lo - 1 if m.any() else 0) % 2**64
        # modulo 2^64, then signed: a data ACK just below the origin stays a small negative
        rel = (dsn.arr("dsn64").astype(np.uint64) - np.uint64(origin)).view(np.int64)
        dsn = dsn.with_columns(dsn=rel).select(DSN_COLUMNS).sort(["t"])
        kind = dsn.arr("kind")
        reinj = _reinjections(dsn.take(kind == "map"), dsn.take(kind == "ack"))
        resent = reinj.take(~reinj.arr("window_probe").astype(bool))
        subs, lens = resent.arr("subflow"), resent.arr("length")
        for sub in dict.fromkeys(subs.tolist()):
            mine = subs == sub
            per[str(sub)].update(mptcp_retransmissions=int(mine.sum()), mptcp_retrans_bytes=int(lens[mine].sum()))
    ev = Table.from_records(events, EVENT_COLUMNS, EVENT_KINDS)
    if not ev.is_empty:
        ev = ev.sort(["t"])
    return Depth(dsn=dsn if dsn is not None else Table.empty(DSN_KINDS), reinjections=reinj, events=ev,
                 per_subflow=per, dss_checksum=csum_seen, checksum_required=checksum_required,
                 idsn=base, origin=origin, rtt_kind=rtt_kinds, version=ini.version if ini is not None else None)


def _mpc_data_rows(pk: Table, rows_t: np.ndarray, fc_t: np.ndarray, ini: Subflow | None, upload: bool,
                   dsn_na: np.ndarray, dll_na: np.ndarray, tlen: np.ndarray) -> np.ndarray:
    """Packet table rows of the initial subflow (at its chosen point) whose data an MP_CAPABLE
    maps (RFC 8684 3.1: the initiator's ACK or first data packet carries the data-level length
    and no DSS). Only the client sends that form, so only an upload has such rows."""
    if ini is None or not upload:
        return np.zeros(0, dtype=np.int64)
    trows = ini.rows[ini.point]
    prow = rows_t[trows]
    mpc = (pk.arr("mp")[prow] & (1 << MP_CAPABLE)) != 0
    return prow[mpc & (fc_t[trows] == upload) & dsn_na[prow] & ~dll_na[prow] & (tlen[prow] > 0)]


def _reinjections(maps: Table, acks: Table | None = None) -> Table:
    """MPTCP-level retransmissions among the mappings (see the module docstring).

    Subflows take data ranges out of order (a range queued on a slow subflow goes out after
    a later range on a fast one), so "below the highest byte mapped so far" is not a re-send;
    two mappings whose data ranges overlap are. Mappings with the same subflow and the same
    DSN-to-subflow-sequence offset place the same data at the same place (Linux repeats a
    chunk's mapping on each of its segments and grows the mapping of an unsent chunk), so
    their overlaps are not re-sends. Of two overlapping mappings, the later one re-sends.
    One row per re-sending mapping, in the order of its time: ``dsn`` its first byte sent
    before, ``length`` its bytes sent before (the union of its overlaps with earlier
    mappings, so data re-sent k times counts k times, not once per pair), ``first_*`` the
    earliest mapping that carried that first byte (tshark's ``mptcp.reinjection_of`` points
    at the earliest frame too). ``window_probe``: a one-byte mapping whose byte is below the
    highest data ACK in ``acks`` (the dsn table's "ack" rows) at or before its time.

    Cost O(n log n + overlapping pairs): with the mappings sorted by data sequence, those
    overlapping mapping a from above are the contiguous run after a that starts below a's
    end (_overlapping_pairs)."""
    if maps.is_empty:
        return Table.empty(REINJECTION_KINDS)
    # a mapping repeated (same subflow, DSN, SSN and length): its first row
    sub_all, _ = factorize(maps.arr("subflow").astype(str))
    rep = factorize_rows([sub_all, maps.arr("dsn"), maps.arr("ssn"), maps.arr("length")])
    _, first_row = np.unique(rep, return_index=True)
    u = maps.take(np.sort(first_row))
    u = u.take(u.arr("length") > 0).sort(["dsn", "t"])
    if u.is_empty:
        return Table.empty(REINJECTION_KINDS)
    start = u.arr("dsn").astype(np.int64)
    end = start + u.arr("length").astype(np.int64)
    # (subflow, DSN - SSN) as one integer: factorizing the pair as tuples costs more than the rest
    sub_code, _ = factorize(u.arr("subflow").astype(str))
    off_code, _ = factorize(start - u.arr("ssn").astype(np.int64))
    key = sub_code.astype(np.int64) * (int(off_code.max()) + 1) + off_code
    a, b = _overlapping_pairs(start, end, key)          # a < b in data sequence order
    if not len(a):
        return Table.empty(REINJECTION_KINDS)
    times = u.arr("t")
    later = np.where(times[b] >= times[a], b, a)         # equal times: the one further in sequence
    first = a + b - later
    lo, hi = start[b], np.minimum(end[a], end[b])        # a < b by start: the overlap is [lo, hi)
    # the pairs grouped by re-send, its overlaps by start; of those starting at its first
    # re-sent byte (they cover it), the earliest carrier first: each group's head row
    o = np.lexsort((first, times[first], lo, later))
    later, first, lo, hi = later[o], first[o], lo[o], hi[o]
    head = np.r_[True, later[1:] != later[:-1]]
    # bytes re-sent = the union of a re-send's overlaps: sorted by start, each overlap adds
    # what reaches past the furthest end before it in its group
    reach = _group_cummax(hi, np.cumsum(head) - 1)
    before = np.where(head, lo, np.r_[lo[:1], reach[:-1]])
    covered = np.add.reduceat(np.maximum(hi - np.maximum(lo, before), 0), np.flatnonzero(head))
    rs, fc, dsn = later[head], first[head], lo[head]
    order = np.lexsort((rs, times[rs]))                  # by re-send time, ties in data sequence
    rs, fc, dsn, covered = rs[order], fc[order], dsn[order], covered[order]
    sub = u.arr("subflow")
    path = u.arr("path")
    probe = (end[rs] - start[rs] == 1) & (dsn < _acked_below(acks, times[rs]))
    late = _late_originals(u.arr("ssn").astype(np.int64), sub_code, off_code, rs)
    return Table({
        "t": times[rs], "path": path[rs], "subflow": sub[rs], "dsn": dsn.astype(np.int64),
        "length": covered.astype(np.int64), "first_t": times[fc], "first_path": path[fc], "first_subflow": sub[fc],
        "same_subflow": sub[fc].astype(str) == sub[rs].astype(str), "window_probe": probe,
        "late_original": late,
    })


def _group_cummax(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """The running maximum of ``values`` within each run of equal ``group`` (non-decreasing
    group numbers from 0): each value's rank, offset by its group past every rank of the
    groups before, so one running maximum never carries over a group's end."""
    uniq, rank = np.unique(values, return_inverse=True)
    m = len(uniq)
    key = group.astype(np.int64) * m + rank.ravel()
    return uniq[np.maximum.accumulate(key) - group.astype(np.int64) * m]


def _late_originals(ssn: np.ndarray, sub_code: np.ndarray, off_code: np.ndarray, rs: np.ndarray) -> np.ndarray:
    """For each re-sending mapping ``rs`` (indexes of the mappings): does it continue, in place,
    a run of its subflow's data that began with a mapping that was not a re-send (module
    docstring, late originals)? A run: the subflow's mappings in subflow sequence order
    while their DSN-to-SSN offset stays the same."""
    order = np.lexsort((ssn, sub_code))
    new_run = np.r_[True, (sub_code[order][1:] != sub_code[order][:-1]) | (off_code[order][1:] != off_code[order][:-1])]
    run_of = np.empty(len(order), dtype=np.int64)
    run_of[order] = np.cumsum(new_run) - 1
    head = order[new_run]                                  # each run's first mapping
    resend = np.zeros(len(order), dtype=bool)
    resend[rs] = True
    return ~resend[head[run_of[rs]]]


def _acked_below(acks: Table | None, at: np.ndarray) -> np.ndarray:
    """The highest data ACK (relative DSN: every byte below it acknowledged) seen at or before
    each time in ``at``, over all subflows; the lowest int64 where none was."""
    low = np.iinfo(np.int64).min
    if acks is None or acks.is_empty:
        return np.full(len(at), low, dtype=np.int64)
    a = acks.sort(["t"])
    best = np.maximum.accumulate(a.arr("dsn").astype(np.int64))
    i = np.searchsorted(a.arr("t"), at, side="right") - 1
    return np.where(i >= 0, best[np.maximum(i, 0)], low)


PAIR_BLOCK = 1 << 22      # candidate pairs made at once (bounds memory, not the result)


def _overlapping_pairs(start: np.ndarray, end: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (a, b), a < b, of intervals [start, end) sorted by start that overlap and
    have different keys, ordered by a then b. The intervals after a that overlap it are the
    run up to the first one starting at or past a's end, so the candidates are exactly the
    overlapping pairs (same-key ones too: a chunk's mapping seen at a few lengths)."""
    n = len(start)
    idx = np.arange(n)
    cnt = np.searchsorted(start, end, side="left") - idx - 1   # >= 0: start[a] < end[a]
    cum = np.cumsum(cnt)
    before = cum - cnt
    out_a: list[np.ndarray] = []
    out_b: list[np.ndarray] = []
    s = 0
    while s < n:
        e = max(s + 1, int(np.searchsorted(cum, before[s] + PAIR_BLOCK, side="right")))
        c = cnt[s:e]
        pa = np.repeat(idx[s:e], c)
        pb = pa + 1 + np.arange(len(pa)) - np.repeat(before[s:e] - before[s], c)
        keep = key[pa] != key[pb]
        out_a.append(pa[keep])
        out_b.append(pb[keep])
        s = e
    return np.concatenate(out_a), np.concatenate(out_b)


def _na(v: object) -> str:
    """A nullable value as the tables have always printed it (pandas' ``<NA>`` when absent)."""
    return "<NA>" if v is None else str(v)



def _events(pk: Table, prow: np.ndarray, data_dir: np.ndarray, infinite: np.ndarray, name: str,
            path: str | None, t0: float) -> list[dict[str, object]]:
    mp = pk.arr("mp")[prow]
    out: list[dict[str, object]] = []
    times = pk.arr("t")[prow]
    backup, addaddr, addr_id = pk.nullable("backup"), pk.cat("addaddr"), pk.nullable("addr_id")
    add_echo, rm_ids = pk.arr("add_echo"), pk.cat("rm_ids")
    rst_reason, fail_dsn = pk.nullable("rst_reason"), pk.nullable("fail_dsn")

    def add(mask: np.ndarray, event: str, detail: object) -> None:
        for i in np.flatnonzero(mask):
            out.append({"t": float(times[i] - t0), "path": path, "subflow": name, "event": event,
                        "detail": detail(int(prow[i])) if callable(detail) else detail})

    side = np.where(data_dir, "sender", "receiver")
    add((mp & (1 << MP_PRIO)) != 0, "MP_PRIO",
        lambda r: f"backup={_na(backup.get(r))}")
    add((mp & (1 << ADD_ADDR)) != 0, "ADD_ADDR",
        lambda r: f"{addaddr.get(r)} id={_na(addr_id.get(r))}" + (" echo" if add_echo[r] else ""))
    add((mp & (1 << REMOVE_ADDR)) != 0, "REMOVE_ADDR", lambda r: f"ids={rm_ids.get(r)}")
    add((mp & (1 << MP_FASTCLOSE)) != 0, "MP_FASTCLOSE", "")
    add((mp & (1 << MP_TCPRST)) != 0, "MP_TCPRST", lambda r: f"reason={_na(rst_reason.get(r))}")
    add((mp & (1 << MP_FAIL)) != 0, "MP_FAIL", lambda r: f"dsn={_na(fail_dsn.get(r))}")
    fin = pk.arr("datafin")[prow]
    first_fin = np.zeros(len(prow), dtype=bool)
    for s in ("sender", "receiver"):
        k = np.flatnonzero(fin & (side == s))
        if len(k):
            first_fin[k[0]] = True
    add(first_fin, "DATA_FIN", lambda r: "")
    k = np.flatnonzero(infinite)
    add(np.isin(np.arange(len(prow)), k[:1]), "infinite mapping", "fallback (RFC 8684 3.7)")
    return out

"""Every connection to a flow's server port, from the capture: was it MPTCP, and how long
did its SYN wait for the SYN/ACK. For kinds that open many connections (http, churn),
where analysis.analyze_flow, which follows one data connection, does not apply.

Uses the capture analysis' own extraction and handshake reading (analysis.pcapread,
analysis.flows); only the per-connection table is built here. A connection is a 4-tuple and
the client's ISN (flows.label_isn): a client reusing a source port within the run opens a
second connection on the same 4-tuple, counted and timed on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..analysis import CaptureFile
from ..analysis.analyze import file_remarks
from ..analysis.flows import ISN, find_subflows, group_connections, label_isn, only_joins_off_port, orient_tcp
from ..analysis.model import Remark
from ..analysis.packets import ACK, SYN
from ..analysis.pcapread import extract, read_raw
from ..analysis.table import Table

#: the NSDI 2012 paper's reading of its Fig 10: the share of SYNs answered within 6 us
WITHIN_MS = 0.006


@dataclass(frozen=True)
class Connection:
    client: str            # client address:port
    isn: int | None        # the client's ISN (None: its SYN was not captured)
    kind: str              # what the SYN carried: mp_capable, tcp (mp_join rows are joins)
    mptcp: bool            # MP_CAPABLE in SYN, SYN/ACK and third ACK
    established: bool
    joins: int             # MP_JOIN subflows matched to it by token
    #: capture points where the initial subflow carried data segments: 2+ when its packets
    #: were striped over several links (the balance-rr emulation, mptcplab/net/bonding.py)
    points_with_data: int
    syn_synack_ms: float | None  # its first SYN -> the first SYN/ACK acking it, at ``point``


@dataclass
class ConnectionsReport:
    point: str | None                 # where SYN -> SYN/ACK was timed
    connections: list[Connection] = field(default_factory=list)
    warnings: list[Remark] = field(default_factory=list)

    @property
    def seen(self) -> int:
        """Connections whose handshake completed: the ones MPTCP must be proved for."""
        return sum(1 for c in self.connections if c.established)

    @property
    def mptcp(self) -> int:
        return sum(1 for c in self.connections if c.established and c.mptcp)

    @property
    def unfinished(self) -> int:
        """Handshakes that never completed (a client that gave up at its duration's end
        answers a late SYN/ACK with RST): no data, so neither MPTCP nor a fallback."""
        return sum(1 for c in self.connections if not c.established)

    def _count(self, test: Callable[[Connection], bool]) -> int:
        return sum(1 for c in self.connections if c.established and test(c))

    def latencies_ms(self) -> list[float]:
        return [c.syn_synack_ms for c in self.connections if c.syn_synack_ms is not None]

    def frame(self) -> pd.DataFrame:
        cols = list(Connection.__dataclass_fields__)
        return pd.DataFrame([asdict(c) for c in self.connections], columns=cols)

    def summary(self) -> dict[str, Any]:
        lat = np.array(self.latencies_ms())
        # 6 decimals of a millisecond: a nanosecond, what a nano capture resolves (labs/setup
        # times handshakes of a few microseconds)
        q = (lambda p: round(float(np.percentile(lat, p)), 6)) if lat.size else (lambda p: None)
        return {"connections_seen": self.seen, "connections_mptcp": self.mptcp,
                "connections_unfinished": self.unfinished,
                "connections_joined": self._count(lambda c: c.joins > 0),
                "connections_striped": self._count(lambda c: c.points_with_data > 1),
                "syn_synack_point": self.point, "syn_synack_n": int(lat.size),
                "syn_synack_ms_p50": q(50), "syn_synack_ms_p90": q(90), "syn_synack_ms_p91": q(91),
                "syn_synack_ms_p99": q(99),
                "syn_synack_within_6us": round(float((lat <= WITHIN_MS).mean()), 6) if lat.size else None,
                "syn_synack_ms_max": round(float(lat.max()), 6) if lat.size else None}


def timing_point(points: Sequence[str], server_node: str) -> str | None:
    """The capture point on the server's node (the SYN/ACK leaves there at once), else the first."""
    return next((p for p in points if p.startswith(server_node + ":")), points[0] if points else None)


def exact_ns(capture: CaptureFile, pk: Table) -> np.ndarray:
    """Each packet's capture time in integer nanoseconds, row-aligned with ``pk``, for the
    packets of ``capture`` (0 elsewhere). The packet table's ``t`` is float64 epoch seconds,
    which rounds to 2**-22 s (0.24 us) today: too coarse for handshakes of a few
    microseconds. The C reader keeps the file's nanoseconds (t_ns); the file is read once
    more for them (a second pass over one capture, cheap beside the analysis)."""
    raw = read_raw(Path(capture.path))
    by_frame = np.zeros(int(raw.rows["frame"].max()) + 1 if len(raw.rows["frame"]) else 1, dtype=np.int64)
    by_frame[raw.rows["frame"].astype(np.int64)] = raw.rows["t_ns"].astype(np.int64)
    out = np.zeros(len(pk), dtype=np.int64)
    here = pk.cat("point").eq(capture.point)
    out[here] = by_frame[pk.arr("frame")[here]]
    return out


def handshake_times(t: Table, point: str, t_ns: np.ndarray | None = None) -> pd.DataFrame:
    """One row per handshake at ``point``: a client ISN on its 4-tuple (``cip``, ``cport``,
    ``sip``, ``sport``, ``isn``), ``ms`` from its first SYN (a retransmission keeps the ISN,
    so a retransmitted SYN's wait counts from the first) to the first SYN/ACK after it that
    acknowledges ISN + 1 (NaN: none did). ``t_ns``: exact times row-aligned with the packet
    table ``t`` came from (exact_ns); else the table's float seconds."""
    here = t.take(t.cat("point").eq(point)).to_pandas()
    flags = here["flags"].to_numpy()
    fc = here["from_client"].to_numpy()
    is_syn, is_ack = (flags & SYN) != 0, (flags & ACK) != 0
    # whole nanoseconds (int64: differences are exact), or float seconds
    when = t_ns[here["row"].to_numpy()] if t_ns is not None else here["t"].to_numpy()
    seq, ack = here["seq"].to_numpy(), here["ack"].to_numpy()
    syn = is_syn & ~is_ack & fc & ~np.isnan(seq)
    synack = is_syn & is_ack & ~fc & ~np.isnan(ack)
    keys = ["cip", "cport", "sip", "sport", "isn"]

    def side(sel: np.ndarray, isn: np.ndarray) -> pd.DataFrame:
        # address codes: both sides come from ``here``, one category list
        return pd.DataFrame({"cip": here["cip"].cat.codes.to_numpy()[sel], "cport": here["cport"].to_numpy()[sel],
                             "sip": here["sip"].cat.codes.to_numpy()[sel], "sport": here["sport"].to_numpy()[sel],
                             "isn": isn[sel].astype(np.int64), "t": when[sel]})

    syns = side(syn, seq).groupby(keys, sort=False, as_index=False)["t"].min()
    # the SYN/ACK answering ISN x acknowledges x + 1 (mod 2**32)
    answers = side(synack, (ack - 1) % 2**32).rename(columns={"t": "t_synack"})
    m = syns.merge(answers, on=keys)
    m = m.assign(wait=m["t_synack"] - m["t"])
    first = m[m["wait"] >= 0].groupby(keys, sort=False, as_index=False)["wait"].min()
    out = syns.merge(first, on=keys, how="left").drop(columns="t")
    out["ms"] = out.pop("wait") * (1e-6 if t_ns is not None else 1e3)
    for col in ("cip", "sip"):
        out[col] = np.asarray(here[col].cat.categories, dtype=object)[out[col].to_numpy()]
    return out


def syn_synack_ms(t: Table, point: str,
                  t_ns: np.ndarray | None = None) -> dict[tuple[str, int, str, int, int], float]:
    """(cip, cport, sip, sport, isn) -> ms of every answered handshake (handshake_times)."""
    h = handshake_times(t, point, t_ns).dropna(subset=["ms"])
    return {(str(a), int(b), str(c), int(d), int(e)): float(ms)
            for a, b, c, d, e, ms in zip(h["cip"], h["cport"], h["sip"], h["sport"], h["isn"], h["ms"], strict=True)}


def check_connections(captures: Sequence[CaptureFile], server_ip: str, server_port: int, server_node: str,
                      workers: int | None = None, join_ports: Sequence[int] = ()) -> ConnectionsReport:
    """``join_ports``: the server's other ports joins go to (analysis FlowSpec.join_ports)."""
    points = [c.point for c in captures]
    point = timing_point(points, server_node)
    pk = extract(captures, workers=workers)
    t = orient_tcp(pk, server_port, join_ports)
    t = t.with_columns(**{ISN: label_isn(t)})   # one connection per 4-tuple and client ISN (port reuse)
    # every server address: a connection's joins may go to another of the server's addresses
    # (ADD_ADDR); connections are kept by their initial subflow's address below
    report = ConnectionsReport(point, warnings=file_remarks(pk))
    if t.is_empty:
        return report
    # upload: which side's data picks a subflow's capture point; these kinds exchange both ways
    conns = group_connections(only_joins_off_port(find_subflows(t, points, upload=True), server_port))
    timed = next((c for c in captures if c.point == point), None)
    lat = syn_synack_ms(t, timed.point, exact_ns(timed, pk)) if timed is not None else {}
    tlen = t.arr("tlen")
    for subs in conns.values():
        ini = next((s for s in subs if s.kind != "mp_join"), None)
        if ini is None or ini.syn_attempts == 0 or ini.sip != server_ip:
            continue  # an orphan join, or a connection whose SYN the capture missed: nothing to prove
        report.connections.append(Connection(
            client=f"{ini.cip}:{ini.cport}", isn=ini.isn, kind=ini.kind,
            mptcp=bool(ini.kind == "mp_capable" and ini.synack_mp and ini.third_ack_mpc),
            established=ini.established, joins=len(subs) - 1,
            points_with_data=sum(1 for idx in ini.rows.values() if bool((tlen[idx] > 0).any())),
            syn_synack_ms=lat.get((ini.cip, ini.cport, ini.sip, ini.sport, ini.isn))
            if ini.isn is not None else None))
    return report

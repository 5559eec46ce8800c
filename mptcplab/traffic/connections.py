"""Every connection to a flow's server port, from the capture: was it MPTCP, and how long
did its SYN wait for the SYN/ACK. For kinds that open many connections (http, churn),
where analysis.analyze_flow, which follows one data connection, does not apply.

Uses the capture analysis' own extraction and handshake reading (analysis.pcapread,
analysis.flows); only the per-connection table is built here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..analysis import CaptureFile
from ..analysis.flows import find_subflows, group_connections, only_joins_off_port, orient_tcp
from ..analysis.packets import ACK, SYN
from ..analysis.pcapread import extract, read_raw

#: the NSDI 2012 paper's reading of its Fig 10: the share of SYNs answered within 6 us
WITHIN_MS = 0.006


@dataclass(frozen=True)
class Connection:
    client: str            # client address:port
    kind: str              # what the SYN carried: mp_capable, tcp (mp_join rows are joins)
    mptcp: bool            # MP_CAPABLE in SYN, SYN/ACK and third ACK
    established: bool
    joins: int             # MP_JOIN subflows matched to it by token
    #: capture points where the initial subflow carried data segments: 2+ when its packets
    #: were striped over several links (the balance-rr emulation, mptcplab/striping.py)
    points_with_data: int
    syn_synack_ms: float | None  # first SYN -> first SYN/ACK at ``point``


@dataclass
class ConnectionsReport:
    point: str | None                 # where SYN -> SYN/ACK was timed
    connections: list[Connection] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

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


def exact_ns(capture: CaptureFile, pk: pd.DataFrame) -> np.ndarray:
    """Each packet's capture time in integer nanoseconds, row-aligned with ``pk``, for the
    packets of ``capture`` (0 elsewhere). The packet table's ``t`` is float64 epoch seconds,
    which rounds to 2**-22 s (0.24 us) today: too coarse for handshakes of a few
    microseconds. The C reader keeps the file's nanoseconds (t_ns); the file is read once
    more for them (a second pass over one capture, cheap beside the analysis)."""
    raw = read_raw(Path(capture.path))
    by_frame = np.zeros(int(raw.rows["frame"].max()) + 1 if len(raw.rows["frame"]) else 1, dtype=np.int64)
    by_frame[raw.rows["frame"].astype(np.int64)] = raw.rows["t_ns"].astype(np.int64)
    out = np.zeros(len(pk), dtype=np.int64)
    here = (pk["point"] == capture.point).to_numpy()
    out[here] = by_frame[pk["frame"].to_numpy()[here]]
    return out


def syn_synack_ms(t: pd.DataFrame, point: str, t_ns: np.ndarray | None = None) -> dict[tuple[str, int], float]:
    """(client ip, client port) -> ms from its first SYN to the first SYN/ACK, at ``point``.
    ``t_ns``: exact times row-aligned with the packet table ``t`` came from (exact_ns)."""
    here = t[t["point"] == point]
    if t_ns is not None:
        # whole nanoseconds, so differences are exact; "t" in seconds for the ordering below
        here = here.assign(t=t_ns[here["row"].to_numpy()])
    flags = here["flags"].to_numpy()
    syn = ((flags & SYN) != 0) & ((flags & ACK) == 0) & here["from_client"].to_numpy()
    synack = ((flags & SYN) != 0) & ((flags & ACK) != 0) & ~here["from_client"].to_numpy()
    first_syn = here[syn].groupby(["cip", "cport"])["t"].min()
    first_synack = here[synack].groupby(["cip", "cport"])["t"].min()
    both = pd.concat([first_syn.rename("syn"), first_synack.rename("synack")], axis=1).dropna()
    both = both[both["synack"] >= both["syn"]]
    per_ms = 1e-6 if t_ns is not None else 1e3
    return {(str(ip), int(port)): float((r.synack - r.syn) * per_ms) for (ip, port), r in both.iterrows()}


def check_connections(captures: Sequence[CaptureFile], server_ip: str, server_port: int, server_node: str,
                      workers: int | None = None, join_ports: Sequence[int] = ()) -> ConnectionsReport:
    """``join_ports``: the server's other ports joins go to (analysis FlowSpec.join_ports)."""
    points = [c.point for c in captures]
    point = timing_point(points, server_node)
    pk = extract(captures, workers=workers)
    t = orient_tcp(pk, server_port, join_ports)
    # every server address: a connection's joins may go to another of the server's addresses
    # (ADD_ADDR); connections are kept by their initial subflow's address below
    report = ConnectionsReport(point, warnings=list(pk.attrs.get("warnings", [])))
    if t.empty:
        return report
    # upload: which side's data picks a subflow's capture point; these kinds exchange both ways
    conns = group_connections(only_joins_off_port(find_subflows(t, points, upload=True), server_port))
    timed = next((c for c in captures if c.point == point), None)
    lat = syn_synack_ms(t, timed.point, exact_ns(timed, pk)) if timed is not None else {}
    tlen = t["tlen"].to_numpy()
    for subs in conns.values():
        ini = next((s for s in subs if s.kind != "mp_join"), None)
        if ini is None or ini.syn_attempts == 0 or ini.sip != server_ip:
            continue  # an orphan join, or a connection whose SYN the capture missed: nothing to prove
        report.connections.append(Connection(
            client=f"{ini.cip}:{ini.cport}", kind=ini.kind,
            mptcp=bool(ini.kind == "mp_capable" and ini.synack_mp and ini.third_ack_mpc),
            established=ini.established, joins=len(subs) - 1,
            points_with_data=sum(1 for idx in ini.rows.values() if bool((tlen[idx] > 0).any())),
            syn_synack_ms=lat.get((ini.cip, ini.cport))))
    return report

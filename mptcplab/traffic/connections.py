"""Every connection to a flow's server port, from the capture: was it MPTCP, and how long
did its SYN wait for the SYN/ACK. For kinds that open many connections (http, churn),
where analysis.analyze_flow, which follows one data connection, does not apply.

Uses the capture analysis' own extraction and handshake reading (analysis.pcapread,
analysis.flows); only the per-connection table is built here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..analysis import CaptureFile
from ..analysis.flows import find_subflows, group_connections, orient_tcp
from ..analysis.packets import ACK, SYN
from ..analysis.pcapread import extract


@dataclass(frozen=True)
class Connection:
    client: str            # client address:port
    kind: str              # what the SYN carried: mp_capable, tcp (mp_join rows are joins)
    mptcp: bool            # MP_CAPABLE in SYN, SYN/ACK and third ACK
    established: bool
    joins: int             # MP_JOIN subflows matched to it by token
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

    def latencies_ms(self) -> list[float]:
        return [c.syn_synack_ms for c in self.connections if c.syn_synack_ms is not None]

    def frame(self) -> pd.DataFrame:
        cols = list(Connection.__dataclass_fields__)
        return pd.DataFrame([asdict(c) for c in self.connections], columns=cols)

    def summary(self) -> dict[str, Any]:
        lat = np.array(self.latencies_ms())
        q = (lambda p: round(float(np.percentile(lat, p)), 3)) if lat.size else (lambda p: None)
        return {"connections_seen": self.seen, "connections_mptcp": self.mptcp,
                "connections_unfinished": self.unfinished,
                "syn_synack_point": self.point, "syn_synack_n": int(lat.size),
                "syn_synack_ms_p50": q(50), "syn_synack_ms_p90": q(90), "syn_synack_ms_p99": q(99),
                "syn_synack_ms_max": round(float(lat.max()), 3) if lat.size else None}


def timing_point(points: Sequence[str], server_node: str) -> str | None:
    """The capture point on the server's node (the SYN/ACK leaves there at once), else the first."""
    return next((p for p in points if p.startswith(server_node + ":")), points[0] if points else None)


def syn_synack_ms(t: pd.DataFrame, point: str) -> dict[tuple[str, int], float]:
    """(client ip, client port) -> ms from its first SYN to the first SYN/ACK, at ``point``."""
    here = t[t["point"] == point]
    flags = here["flags"].to_numpy()
    syn = ((flags & SYN) != 0) & ((flags & ACK) == 0) & here["from_client"].to_numpy()
    synack = ((flags & SYN) != 0) & ((flags & ACK) != 0) & ~here["from_client"].to_numpy()
    first_syn = here[syn].groupby(["cip", "cport"])["t"].min()
    first_synack = here[synack].groupby(["cip", "cport"])["t"].min()
    both = pd.concat([first_syn.rename("syn"), first_synack.rename("synack")], axis=1).dropna()
    both = both[both["synack"] >= both["syn"]]
    return {(str(ip), int(port)): float((r.synack - r.syn) * 1e3) for (ip, port), r in both.iterrows()}


def check_connections(captures: Sequence[CaptureFile], server_ip: str, server_port: int, server_node: str,
                      workers: int | None = None) -> ConnectionsReport:
    points = [c.point for c in captures]
    point = timing_point(points, server_node)
    pk = extract(captures, workers=workers)
    t = orient_tcp(pk, server_port)
    t = t[t["sip"] == server_ip].reset_index(drop=True)
    report = ConnectionsReport(point, warnings=list(pk.attrs.get("warnings", [])))
    if t.empty:
        return report
    # upload: which side's data picks a subflow's capture point; these kinds exchange both ways
    conns = group_connections(find_subflows(t, points, upload=True))
    lat = syn_synack_ms(t, point) if point else {}
    for subs in conns.values():
        ini = next((s for s in subs if s.kind != "mp_join"), None)
        if ini is None or ini.syn_attempts == 0:
            continue  # an orphan join, or a connection whose SYN the capture missed: nothing to prove
        report.connections.append(Connection(
            client=f"{ini.cip}:{ini.cport}", kind=ini.kind,
            mptcp=bool(ini.kind == "mp_capable" and ini.synack_mp and ini.third_ack_mpc),
            established=ini.established, joins=len(subs) - 1,
            syn_synack_ms=lat.get((ini.cip, ini.cport))))
    return report

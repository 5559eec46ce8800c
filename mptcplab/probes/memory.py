"""``ss_interval``: socket memory sampled during the traffic. Every interval, ``ss -tinmM``
in each node that is an end of a flow: per socket its skmem (rmem_alloc, rcvbuf,
wmem_alloc, sndbuf, wmem_queued, ...) and, where ss gives them, cwnd, srtt, snd_wnd and
rcv_space. Subflows and the MPTCP socket (msk) of one connection share its local token,
so the table can sum a connection's memory across them: the send side's data mostly
waits in the msk (wmem_queued), the receive side's in the msk's receive queue.

Only this repetition's connections are kept: a socket belongs to flow F when, in F's
server node, its local port is F's port, and in F's client node, its peer port is F's
port and its peer one of the server's addresses (the loader allows one flow per server
and port). The repetition's namespaces hold nothing else that could match, and other
runs are in other namespaces.

Why a thread calling ``ss`` rather than the application's getsockopt: it sees every kind
(iperf3, http, latency) and both ends alike, with the same fields the kernel reports.
The sampling runs on the host's clock: ``t`` is epoch seconds (the capture's clock, as in
the other probe tables), ``t_run`` seconds from the measured flow's start (the timeline's zero).
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import pandas as pd
from pydantic import AfterValidator

from ..steps.base import Planned, Rep
from ..tools.ss import SKMEM_FIELDS, SS_MEM_ARGV, SocketMem, parse_ss_sockets, ss_mem_cmd
from ..units import parse_time
from ..values.fields import check_unit
from ..warncodes import PROBE_DEGRADED
from .base import Joined, Probe, Setting, probes_dir

if TYPE_CHECKING:
    from ..lab.network import Network
    from ..lab.schema import ExperimentBody
TABLE = "ss.csv"
MEM_COLUMNS = list(SKMEM_FIELDS.values())
COLUMNS = ["t", "t_run", "node", "role", "flow", "conn", "socket", "local", "lport", "peer", "pport", "recv_q",
           "send_q", *MEM_COLUMNS, "cwnd", "srtt_ms", "snd_wnd", "rcv_space"]


#: warn when the median interval between a node's samples exceeds the asked one by this factor
SLOW_FACTOR = 1.5


def achieved_interval_s(samples: list[tuple[float, str, str]]) -> float | None:
    """The median time between consecutive samples of one node, over all nodes (None:
    fewer than two samples anywhere)."""
    gaps: list[float] = []
    for node in dict.fromkeys(n for _, n, _ in samples):
        ts = sorted(t for t, n, _ in samples if n == node)
        gaps += [b - a for a, b in zip(ts, ts[1:], strict=False)]
    return statistics.median(gaps) if gaps else None


def raw_name(node: str) -> str:
    return f"ss-{node}.txt"


@dataclass(frozen=True)
class FlowEnds:
    """What identifies one flow's sockets in its two nodes."""

    name: str
    client: str
    server: str
    port: int
    server_addresses: frozenset[str]


def flow_ends(body: ExperimentBody, net: Network) -> list[FlowEnds]:
    out = []
    for name, f in body.traffic.flows.items():
        addrs = frozenset(str(link.addr(ep).ip) for ep, link in net.interfaces(f.server))
        out.append(FlowEnds(name, f.client, f.server, f.port, addrs | {str(net.address(f.server_address))}))
    return out


def end_nodes(ends: list[FlowEnds]) -> list[str]:
    return list(dict.fromkeys(n for e in ends for n in (e.client, e.server)))


def attribute(sock: SocketMem, node: str, ends: list[FlowEnds]) -> tuple[str, str] | None:
    """(flow, role of ``node`` in it) for a socket of this repetition's flows, else None."""
    for e in ends:
        if node == e.server and sock.lport == e.port:
            return e.name, "server"
        if node == e.client and sock.pport == e.port and sock.peer in e.server_addresses:
            return e.name, "client"
    return None


def rows(samples: list[tuple[float, str, str]], ends: list[FlowEnds], t_zero: float | None) -> pd.DataFrame:
    """Raw ``ss`` outputs (epoch time, node, text) -> the table of this run's sockets."""
    out: list[dict[str, Any]] = []
    for t, node, text in samples:
        for s in parse_ss_sockets(text, t):
            owner = attribute(s, node, ends)
            if owner is None:
                continue
            out.append({"t": round(t, 6), "t_run": round(t - t_zero, 4) if t_zero is not None else None,
                        "node": node, "role": owner[1], "flow": owner[0], "conn": s.conn, "socket": s.kind,
                        "local": s.local, "lport": s.lport, "peer": s.peer, "pport": s.pport, "recv_q": s.recv_q,
                        "send_q": s.send_q, **{k: s.skmem.get(k) for k in MEM_COLUMNS}, "cwnd": s.cwnd,
                        "srtt_ms": s.srtt_ms, "snd_wnd": s.snd_wnd, "rcv_space": s.rcv_space})
    return pd.DataFrame(out, columns=COLUMNS)


def connection_totals(table: pd.DataFrame) -> pd.DataFrame:
    """Per sample instant, flow, node role and connection: the sum over its sockets
    (subflows + msk). ``rcv_bytes``: rmem_alloc (received, not yet read by the
    application); ``snd_bytes``: wmem_queued (written, not yet acknowledged: the send
    buffer's occupancy). wmem_alloc is left out of the sum: it counts the clones of those
    same segments still below the socket (qdisc, device), so adding it would count them twice."""
    if table.empty:
        return pd.DataFrame(columns=["t", "flow", "role", "conn", "rcv_bytes", "snd_bytes"])
    g = table.groupby(["t", "flow", "role", "conn"], as_index=False)
    return g.agg(rcv_bytes=("rmem_alloc", "sum"), snd_bytes=("wmem_queued", "sum"))


def sender_role(body: ExperimentBody, flow: str) -> str:
    """Which end of ``flow`` sends its data: the client, or the server of a download."""
    f = body.traffic.flows.get(flow)
    return "server" if f is not None and f.data_direction() == "download" else "client"


def summary(table: pd.DataFrame, body: ExperimentBody) -> dict[str, Any]:
    """For the record (rep.json ``probes.ss_interval``): per flow and node role, the
    largest total over the run of one connection's memory, receive and send side, and
    which role sends (metrics/memory.py reads the sender's send side and the receiver's
    receive side)."""
    tot = connection_totals(table)
    # each node is sampled at its own instant: the count is the most samples one node had
    samples = int(table.groupby("node")["t"].nunique().max()) if not table.empty else 0
    out: dict[str, Any] = {"samples": samples, "flows": {}}
    for (flow, role), g in tot.groupby(["flow", "role"]):
        entry = out["flows"].setdefault(str(flow), {"sender": sender_role(body, str(flow))})
        entry[str(role)] = {"rcv_max_bytes": int(g["rcv_bytes"].max()), "snd_max_bytes": int(g["snd_bytes"].max())}
    return out


def _interval(v: Any) -> Any:
    """A time with its unit (check_unit's message for a bad one), above zero."""
    check_unit(parse_time, v)
    if v is not None and parse_time(v) <= 0:
        raise ValueError("ss_interval must be positive")
    return v


class SsMemoryProbe(Probe):
    name = "ss_interval"
    table: ClassVar[str] = TABLE
    setting = Setting(Annotated[str | float | None, AfterValidator(_interval)], None,
                      "sample every flow end's socket memory (`ss -tinmM`) at this interval, e.g. 100ms")

    def __init__(self) -> None:
        self._samples: list[tuple[float, str, str]] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._nodes: list[str] = []
        self._interval = 0.0
        self.errors = 0

    def artifacts(self) -> list[str]:
        return [TABLE, *(raw_name(n) for n in self._nodes)]

    def commands(self, rep: Rep) -> list[Planned]:
        every = self.value(rep.body)
        return [Planned(ss_mem_cmd(n), note=f"every {every} during the traffic (a thread of the runner): "
                        f"probes/{TABLE}") for n in end_nodes(flow_ends(rep.body, rep.plan.net))]

    def start(self, rep: Rep) -> None:
        every = self.value(rep.body)
        assert every is not None
        interval = self._interval = parse_time(every)
        self._nodes = end_nodes(flow_ends(rep.body, rep.plan.net))
        backend = rep.backend

        def sample(node: str) -> None:
            next_t = time.monotonic()
            while not self._stop.is_set():
                t = time.time()
                try:
                    p = backend.run([ss_mem_cmd(node)])[0]
                    self._samples.append((t, node, p.stdout))  # list.append: atomic across threads
                except Exception:  # noqa: BLE001 - a lost sample is counted, the run goes on
                    self.errors += 1
                # a fixed schedule: a slow sample delays the next, it does not shift all later ones
                next_t += interval
                self._stop.wait(max(0.0, next_t - time.monotonic()))

        # one thread per node: a node's interval does not grow with the number of nodes (one
        # `ip netns exec ... ss` costs 50-300 ms on this 2-core host under load)
        self._threads = [threading.Thread(target=sample, args=(n,), name=f"probe-ss-{n}", daemon=True)
                         for n in self._nodes]
        for th in self._threads:
            th.start()

    def stop(self, rep: Rep) -> None:
        self.close()
        d = probes_dir(rep.out)
        for node in self._nodes:
            with (d / raw_name(node)).open("w") as f:
                for t, n, text in self._samples:
                    if n == node:
                        f.write(f"# t={t:.6f} {' '.join(SS_MEM_ARGV)}\n{text}")
        rows(self._samples, flow_ends(rep.body, rep.plan.net), rep.traffic.t_zero).to_csv(d / TABLE, index=False)
        if self.errors:
            rep.warn(PROBE_DEGRADED, f"probe ss_interval: {self.errors} sample(s) failed")
        got = achieved_interval_s(self._samples)
        if got is not None and got > SLOW_FACTOR * self._interval:
            rep.warn(PROBE_DEGRADED, f"probe ss_interval: one sample every {got * 1e3:.0f} ms (median) instead of "
                     f"{self._interval * 1e3:.0f} ms: ss in a node costs that much on this host now")

    def close(self) -> None:
        self._stop.set()
        for th in self._threads:
            th.join(timeout=10)

    @classmethod
    def analyze(cls, rep_dir: Path) -> pd.DataFrame:
        path = probes_dir(rep_dir) / TABLE
        try:
            return pd.read_csv(path)
        except (OSError, pd.errors.EmptyDataError):
            return pd.DataFrame(columns=COLUMNS)

    @classmethod
    def summarise(cls, table: pd.DataFrame, joined: Joined) -> tuple[Any, list[str]]:
        return summary(table, joined.body), []

"""Metrics of the ``http`` flow kind (traffic/http.py: wrk against busybox httpd) and of the
web-serving lab's receiver-cost questions (labs/http, NSDI 2012 Figs 8 and 11).

``flow`` selects a flow of experiment.yml by name (default the primary measured flow). A flow
that is not an http flow has no value (None), which the aggregates leave out.

Requests/s does not scale with the links (``scales`` False): with small files the server's
forks and the shared CPU bound it, with large ones the links; the lab's findings are ratios
between scenarios run at the same scale.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import Select, register
from .buffers import nstat_delta
from .flows import kind_field, selected_flow

if TYPE_CHECKING:
    from ..record.model import Repetition


def _http(field: str) -> Callable[[Repetition, Select], float | None]:
    return kind_field("http", field)


def _connection_share(field: str) -> Callable[[Repetition, Select], float | None]:
    def per_rep(r: Repetition, sel: Select) -> float | None:
        f = selected_flow(r, sel)
        c = f.connections if f is not None else None
        v = getattr(c, field) if c is not None else None
        return None if c is None or v is None or not c.connections_seen else v / c.connections_seen
    return per_rep


def _client_cpu_per_gbit(r: Repetition, sel: Select) -> float | None:
    # iperf3's own process CPU at the client (getrusage, user + system, % of one core over the
    # test) per Gbit/s of goodput; a download's client is the data receiver. Relative only:
    # softirq work lands on whichever process the CPU was running (on veth often the sender),
    # and 2 shared cores carry every other process of the machine too.
    f = selected_flow(r, sel)
    if f is None or not f.goodput_mbps or f.kind != "iperf3":
        return None
    cpu = f.cpu.get("client")
    return None if cpu is None else cpu / (f.goodput_mbps / 1000.0)


def _joins(r: Repetition, _sel: Select) -> float | None:
    # MP_JOIN handshakes the SYN sender completed (its SYN/ACK with a valid HMAC): extra subflows
    v = nstat_delta(r, "MPTcpExtMPJoinSynAckRx")
    return None if v is None else float(v)


register("requests_per_s", _http("requests_per_s"))
register("http_latency_p50_ms", _http("latency_p50_ms"))
register("http_latency_p99_ms", _http("latency_p99_ms"))
register("mptcp_connection_share", _connection_share("connections_mptcp"))
register("joined_connection_share", _connection_share("connections_joined"))
register("striped_connection_share", _connection_share("connections_striped"))
register("client_cpu_per_gbit", _client_cpu_per_gbit)
register("mp_joins", _joins)

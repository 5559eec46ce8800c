"""The web-serving lab's receiver-cost questions (labs/http, NSDI 2012 Figs 8 and 11), for
the kinds that open many connections: the shares of a flow's connections the capture proved
MPTCP, joined or striped, and the MP_JOINs the SYN sender completed. (The http kind's own
numbers, requests/s and latency, are its metrics: traffic/http_metrics.py.)

``flow`` selects a flow of experiment.yml by name (default the primary measured flow). A flow
without a connections analysis has no value (None), which the aggregates leave out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import Select, register
from .buffers import nstat_delta
from .flows import selected_flow

if TYPE_CHECKING:
    from ..record.model import Repetition


def _connection_share(field: str) -> Callable[[Repetition, Select], float | None]:
    def per_rep(r: Repetition, sel: Select) -> float | None:
        f = selected_flow(r, sel)
        c = f.connections if f is not None else None
        v = getattr(c, field) if c is not None else None
        return None if c is None or v is None or not c.connections_seen else v / c.connections_seen
    return per_rep


def _joins(r: Repetition, _sel: Select) -> float | None:
    # MP_JOIN handshakes the SYN sender completed (its SYN/ACK with a valid HMAC): extra subflows
    v = nstat_delta(r, "MPTcpExtMPJoinSynAckRx")
    return None if v is None else float(v)


register("mptcp_connection_share", _connection_share("connections_mptcp"))
register("joined_connection_share", _connection_share("connections_joined"))
register("striped_connection_share", _connection_share("connections_striped"))
register("mp_joins", _joins)

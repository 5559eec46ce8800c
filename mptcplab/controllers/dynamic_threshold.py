"""dynamic_threshold: Algorithm 3 of the asymmetric-subflows paper (Karunarathne et
al., ICTer 2024) as a controller on the sending node, without kernel patches.

Every Δ (the controller's ``interval``) it reads each subflow's cwnd, MSS and
smoothed RTT from ``ss -tinM`` (tools/ss.py) for the node's busiest MPTCP
connection, computes m = cwnd·MSS/RTT, keeps each subflow's maximum and the best
single-path rate, and when the sum of the current rates falls below that best rate
it demotes the bad path (the weakest subflow in use): ``ip mptcp endpoint change
ADDRESS backup`` on the subflow's local address. The kernel sends MP_PRIO on the
subflows of that address, and the default scheduler stops sending new data on them
while a non-backup subflow is available. Algorithm 3 never restores a demoted path
(dynamic_threshold_ext does). The decision logic, and every choice made where the
paper is ambiguous, is in _dynthresh.py; docs/controllers.md says how this differs
from the paper's in-kernel scheduler.

Why the endpoint flag and not the userspace path manager (per connection): it works
with the in-kernel path manager the labs use, it is one command of the timeline's
own ``endpoint_flags`` action, and the kernel applies it to the existing subflows at
once (MP_PRIO). The price is that it is per endpoint: every connection of the node
from that address is demoted too, which a lab with one data connection does not see.
The subflow's local address must be an endpoint of the node (``ip mptcp endpoint``):
a join subflow's always is; the initial subflow's only when the lab declares it.

A subflow takes part once it is fully established (ss flag ``e``): measured here, an
endpoint change made while a join subflow was still in its handshake never reached it
(no MP_PRIO; it went on carrying data). And when a subflow of a demoted (or re-probed)
address does not show the flag the controller set (ss ``b``), the controller sets it
again (``decision=reassert``, at most 3 times per decision).

Every decision is a row of events.csv (source ``controller:dynamic_threshold``) with
the numbers in ``detail``: ``decision=demote address=... subflow=... total_mbps=...
threshold_mbps=... threshold_subflow=... m_mbps[subflow]=...``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..lab.events import EndpointFlags, Event
from ..units import parse_size, parse_time
from ..values.fields import check_unit
from . import _dynthresh as dt
from .base import Controller, Decision, View


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    #: no decision before this time after the measured flow's start (maxima are recorded
    #: from the start); the paper's algorithm has none: 0
    warmup: str | float = Field(default="0s", description="no decision before this long into the measured flow")
    #: the connection is followed once it has moved this much: iperf3's control connection
    #: (an MPTCP connection too under mptcpize) moves under 1 KB, and an idle connection's
    #: cwnd·MSS/RTT (a full initial window over a tiny RTT) would set a threshold no
    #: transfer reaches
    min_bytes: str | int = Field(default="100KB", description="follow the busiest connection once it has moved this")

    _w = field_validator("warmup")(classmethod(lambda cls, v: check_unit(parse_time, v)))
    _b = field_validator("min_bytes")(classmethod(lambda cls, v: check_unit(parse_size, v)))

    @property
    def warmup_s(self) -> float:
        return parse_time(self.warmup)


#: how many times a flag the kernel did not apply is set again before the controller
#: leaves it (a failing command, e.g. an address without an endpoint, would otherwise
#: repeat every step)
MAX_REASSERTS = 3


class DynamicThreshold(Controller):
    Params = Params

    def __init__(self, *a: object, **kw: object) -> None:
        super().__init__(*a, **kw)  # type: ignore[arg-type]
        self._token: str | None = None
        self.algo: dt.DynamicThreshold | None = None
        self._want: dict[str, bool] = {}  # address -> the backup flag our decisions set
        self._reasserts: dict[str, int] = {}
        self._trace: list[dict[str, Any]] = []

    def trace(self) -> list[dict[str, Any]]:
        return self._trace

    def new_core(self) -> dt.DynamicThreshold:
        return dt.DynamicThreshold(warmup=self.params.warmup_s)

    def step(self, view: View) -> Sequence[Event | Decision]:
        subs = view.subflows
        if not subs or sum(s.bytes_acked or 0 for s in subs) < parse_size(self.params.min_bytes):
            return []
        out: list[Event | Decision] = []
        token = subs[0].token
        if self.algo is None or token != self._token:
            if self.algo is not None:
                # another connection became the busiest: give back the endpoints the old one's
                # decisions flagged (the flag is per endpoint), and start afresh
                for addr in sorted(self.algo.demoted):
                    out.append(Decision(f"decision=reset address={addr} connection={self._token}->{token}",
                                        self._flags(view.node, addr, "nobackup")))
            self._token, self.algo = token, self.new_core()
            self._want, self._reasserts = {}, {}
        out += self._reassert(view)
        # a subflow whose handshake is not over takes no part: its m is the handshake's, and
        # a flag change does not reach it yet (measured on 6.18: lost, the subflow went on
        # carrying data as a non-backup one)
        rates = [dt.SubflowRate(f"{s.local}:{s.lport}", s.local, s.est_rate_bps if s.established else None)
                 for s in subs]
        verdicts = self.algo.step(view.t, rates)
        self._record(view, rates)
        for v in verdicts:
            flags = v.flags
            if flags is not None:
                self._want[v.address] = flags == "backup"
                self._reasserts[v.address] = 0
            out.append(Decision(v.detail(), self._flags(view.node, v.address, flags) if flags else None,
                                target=f"{view.node} {v.address}"))
        return out

    def _record(self, view: View, rates: list[dt.SubflowRate]) -> None:
        """One trace row per subflow: its sample, its m and maximum, the step's sum and
        threshold, and its address's role after this step's decisions."""
        algo = self.algo
        assert algo is not None

        def mbps(v: float | None) -> float | None:
            return None if v is None else round(v / 1e6, 6)

        for s, r in zip(view.subflows, rates, strict=True):
            self._trace.append({
                "t": round(view.t, 6), "epoch_s": round(s.t, 6), "token": s.token, "subflow": r.key,
                "address": s.local, "established": s.established, "backup": s.backup, "cwnd": s.cwnd,
                "mss": s.mss, "rtt_ms": s.rtt_ms, "m_mbps": mbps(r.rate_bps), "max_mbps": mbps(algo.maxima.get(r.key)),
                "total_mbps": mbps(algo.total_bps), "threshold_mbps": mbps(algo.threshold_bps),
                "role": algo.role(s.local)})

    def _reassert(self, view: View) -> list[Event | Decision]:
        """Set a flag again when the subflows of its address do not show it (ss ``b``):
        the kernel did not apply the earlier change to them."""
        out: list[Event | Decision] = []
        for addr, backup in sorted(self._want.items()):
            wrong = [s for s in view.subflows if s.local == addr and s.established and s.backup != backup]
            if not wrong or self._reasserts.get(addr, 0) >= MAX_REASSERTS:
                continue
            self._reasserts[addr] = self._reasserts.get(addr, 0) + 1
            flags = "backup" if backup else "nobackup"
            out.append(Decision(f"decision=reassert address={addr} subflow={wrong[0].local}:{wrong[0].lport} "
                                f"flags={flags} (the subflow does not show it)",
                                self._flags(view.node, addr, flags)))
        return out

    @staticmethod
    def _flags(node: str, address: str, flags: str) -> EndpointFlags:
        return EndpointFlags.model_validate({"action": "endpoint_flags", "at": 0, "node": node,
                                             "address": address, "flags": flags})


CONTROLLER = DynamicThreshold

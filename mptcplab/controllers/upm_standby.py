"""upm_standby: a subflow on a standby path, opened through the userspace path manager
while the connection's other paths are slow, closed when they are fast again.

Every step it reads the smoothed RTT (ss ``rtt``) of the established subflows of the
node's busiest MPTCP connection that are not the standby's (their local address id is
not ``local_id``), and takes the smallest: the best path the connection has without the
standby. When that RTT has stayed above ``rtt_above`` for ``dwell`` it opens a subflow
from ``local`` (address id ``local_id``) to ``remote`` on flow ``flow``'s connection
(the timeline's ``upm_subflow_create``: MPTCP_PM_CMD_SUBFLOW_CREATE). When the RTT has
stayed below ``rtt_below`` for ``dwell``, and the standby subflow has existed for at least
``keep``, it closes it (``upm_subflow_destroy``). Two thresholds and two time guards, so
an RTT near one threshold, or a single sample, does not open and close subflows step
after step.

The node runs the userspace path manager (nodes.<node>.mptcp.path_manager: userspace)
and is the flow's client or server; the lab's loader checks it, and the addresses, like a
timeline ``upm_*`` event's (``planned_actions``). A path that is down is not seen: its
subflow's RTT stays at its last value while no ack comes (a stall would need another
signal). When another connection becomes the busiest the state starts afresh (the old
connection's subflow, if any, is left to it).

events.csv rows (source ``controller:upm_standby``): ``upm_subflow_create`` and
``upm_subflow_destroy`` with ``detail`` ``decision=create|destroy rtt_ms=... rtt_above_ms=...
rtt_below_ms=... for_s=... subflow=...`` (``subflow``: the subflow whose RTT was the
smallest), and ``decision=reset connection=OLD->NEW open=...`` (no command). Each step is a row of
controller-upm_standby-<node>.csv: the RTT watched, the state, whether ss shows the standby
(with ``capture_s``, the capture's axis, after the analysis).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..lab.events import ControllerSpec, Event, UpmSubflowCreate, UpmSubflowDestroy
from ..tools.ss import SubflowSample
from ..units import parse_time
from ..values.fields import NAME_RE, address_ref, check_unit
from .base import Controller, Decision, View


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    flow: Annotated[str, Field(pattern=NAME_RE)] = Field(description="the traffic flow whose connection it acts on")
    local: str = Field(description="the standby path's local end: 'node:iface' of the node, or an address of it")
    local_id: int = Field(ge=1, le=255, description="the address id of the standby subflow's local end")
    remote: str = Field(description="'node:iface' of the flow's other host, or an address of it")
    remote_port: int | None = Field(default=None, ge=1, le=65535, description="default: the flow's port")
    backup: bool = Field(default=False, description="open the standby subflow as a backup one")
    rtt_above: str | float = Field(default="100ms", description="open when the best other RTT is above this")
    rtt_below: str | float = Field(default="50ms", description="close when the best other RTT is below this")
    dwell: str | float = Field(default="300ms", description="how long a condition must last before acting")
    keep: str | float = Field(default="1s", description="the standby subflow lives at least this long")
    warmup: str | float = Field(default="0s", description="no decision before this long into the measured flow")

    _refs = field_validator("local", "remote")(classmethod(lambda cls, v: address_ref(v)))
    _times = field_validator("rtt_above", "rtt_below", "dwell", "keep", "warmup")(
        classmethod(lambda cls, v: check_unit(parse_time, v)))

    @model_validator(mode="after")
    def _order(self) -> Params:
        if not 0 < parse_time(self.rtt_below) < parse_time(self.rtt_above):
            raise ValueError(f"rtt_below ({self.rtt_below}) must be above 0 and below rtt_above ({self.rtt_above})")
        return self


@dataclass(frozen=True)
class Watched:
    """The step's input: the smallest RTT of the connection's non-standby subflows."""

    rtt_ms: float | None
    subflow: str  # address:port of that subflow ("" without one)
    standby_seen: bool  # ss shows a subflow from the standby's address id


def watched(subflows: Sequence[SubflowSample], local_id: int) -> Watched:
    others = [s for s in subflows if s.local_id != local_id and s.established and s.rtt_ms]
    seen = any(s.local_id == local_id for s in subflows)
    if not others:
        return Watched(None, "", seen)
    best = min(others, key=lambda s: s.rtt_ms or 0.0)
    return Watched(best.rtt_ms, f"{best.local}:{best.lport}", seen)


class UpmStandby(Controller):
    Params = Params

    def __init__(self, spec: ControllerSpec) -> None:
        super().__init__(spec)
        self._token: str | None = None
        self.open = False  # the state our decisions set: the standby subflow was created
        self.opened_at = 0.0
        self._since: float | None = None  # when the condition for the next action began
        self._trace: list[dict[str, Any]] = []

    @classmethod
    def planned_actions(cls, spec: ControllerSpec) -> list[Event]:
        """The actions this controller takes, for the loader's reference checks."""
        p = cls.Params.model_validate(spec.params)
        return [create_action(spec.node, p), destroy_action(spec.node, p)]

    def trace(self) -> list[dict[str, Any]]:
        return self._trace

    def step(self, view: View) -> Sequence[Event | Decision]:
        p = self.params
        if not view.subflows:
            return []
        out: list[Event | Decision] = []
        token = view.subflows[0].token
        if token != self._token:
            if self._token is not None:
                out.append(Decision(f"decision=reset connection={self._token}->{token} open={self.open}",
                                    target=f"{view.node} flow {p.flow}"))
            self._token, self.open, self._since = token, False, None
        w = watched(view.subflows, p.local_id)
        out += self._decide(view.t, w)
        # epoch_s: the sample's time, which the analysis puts on the capture's axis (capture_s)
        self._trace.append({"t": round(view.t, 6), "epoch_s": round(view.subflows[0].t, 6), "token": token,
                            "rtt_ms": w.rtt_ms, "subflow": w.subflow,
                            "open": self.open, "standby_seen": w.standby_seen})
        return out

    def _decide(self, t: float, w: Watched) -> list[Event | Decision]:
        p = self.params
        if t < parse_time(p.warmup) or w.rtt_ms is None:
            self._since = None
            return []
        above, below = parse_time(p.rtt_above) * 1000, parse_time(p.rtt_below) * 1000
        wanted = w.rtt_ms > above if not self.open else w.rtt_ms < below
        if not wanted:
            self._since = None
            return []
        if self._since is None:
            self._since = t
        held = t - self._since
        # a nanosecond of slack: step times are sums of floats (0.6 - 0.4 < 0.2)
        if held + 1e-9 < parse_time(p.dwell) or (self.open and t - self.opened_at + 1e-9 < parse_time(p.keep)):
            return []
        detail = (f"decision={'destroy' if self.open else 'create'} rtt_ms={w.rtt_ms:g} rtt_above_ms={above:g} "
                  f"rtt_below_ms={below:g} for_s={held:.3f} subflow={w.subflow}")
        self._since = None
        if self.open:
            self.open = False
            return [Decision(detail, destroy_action(self.spec.node, p))]
        self.open, self.opened_at = True, t
        return [Decision(detail, create_action(self.spec.node, p))]


def create_action(node: str, p: Params) -> UpmSubflowCreate:
    return UpmSubflowCreate.model_validate({
        "action": "upm_subflow_create", "at": 0, "node": node, "flow": p.flow, "local": p.local,
        "local_id": p.local_id, "remote": p.remote, "remote_port": p.remote_port, "backup": p.backup})


def destroy_action(node: str, p: Params) -> UpmSubflowDestroy:
    return UpmSubflowDestroy.model_validate({
        "action": "upm_subflow_destroy", "at": 0, "node": node, "flow": p.flow, "local": p.local,
        "remote": p.remote, "remote_port": p.remote_port})


CONTROLLER = UpmStandby

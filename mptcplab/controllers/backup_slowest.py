"""backup_slowest: after a warm-up, mark the endpoint of the subflow with the lower
cwnd x MSS / RTT as backup, once.

A simple instance of the asymmetric-subflows paper's idea (demote the subflow
whose window allows the least): the estimate is ss's cwnd, mss and smoothed rtt
of each subflow of the node's busiest MPTCP connection. The endpoint is named by
the subflow's local address (``ip mptcp endpoint change ADDRESS backup``), so the
subflow must come from an endpoint of this node (a join subflow does).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..lab.events import EndpointFlags, Event
from ..units import UnitError, parse_time
from .base import Controller, View


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    warmup: str | float = Field(default="1s", description="decide after this long into the measured flow")
    #: act only when the slower estimate is below this fraction of the faster one
    max_ratio: float = Field(default=0.9, gt=0, le=1)

    @field_validator("warmup")
    @classmethod
    def _time(cls, v: str | float) -> str | float:
        try:
            parse_time(v)
        except UnitError as e:
            raise ValueError(str(e)) from None
        return v


class BackupSlowest(Controller):
    Params = Params

    def __init__(self, *a: object, **kw: object) -> None:
        super().__init__(*a, **kw)  # type: ignore[arg-type]
        self.done = False

    def step(self, view: View) -> list[Event]:
        if self.done or view.t < parse_time(self.params.warmup):
            return []
        live = [s for s in view.subflows if s.est_rate_bps and not s.backup]
        if len(live) < 2:
            return []
        slow = min(live, key=lambda s: s.est_rate_bps or 0.0)
        fast = max(live, key=lambda s: s.est_rate_bps or 0.0)
        if (slow.est_rate_bps or 0.0) > self.params.max_ratio * (fast.est_rate_bps or 0.0):
            return []
        self.done = True
        return [EndpointFlags(action="endpoint_flags", at=0, node=view.node, address=slow.local, flags="backup")]


CONTROLLER = BackupSlowest

"""The hold kind's lab schema: connections held open in the background (traffic/hold.py runs it)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..values.flowbase import FlowBase

#: connections a hold flow may keep open (the tool raises its open-files limit to fit)
HOLD_MAX_CONNECTIONS = 20000


class HoldFlow(FlowBase):
    """``connections`` established connections opened before the other flows start and held
    open, idle, until they end (traffic/hold.py): a server with N established MPTCP
    connections. Always competing: it is the background, not the measurement."""

    kind: Literal["hold"]
    port: int = Field(default=7100, ge=1024, le=65535)
    role: Literal["competing"] = "competing"
    #: 0 holds none (ready at once): a scenario without held connections keeps the flow
    connections: int = Field(ge=0, le=HOLD_MAX_CONNECTIONS, description="connections held open")

"""The controller interface: typed params, an interval, and ``step(view)``.

Every ``interval`` during the traffic the runner (timeline/controller.py) samples
the controller's node (``ss -tinM``, tools/ss.py) and calls ``step`` with what it
saw; the actions it returns are the timeline's own (lab/events.py: endpoint_flags,
link_change, sysctl, ...) and run at once, each recorded in events.csv with source
``controller:<name>``. A controller holds its own state between steps. It may wrap
an action in a ``Decision`` to record why (events.csv ``detail``: the numbers behind
it), or record a decision that needs no command (``action`` None).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from ..lab.events import ControllerSpec, Event
from ..tools.ss import SubflowSample


@dataclass(frozen=True)
class Decision:
    """An action with the reason for it, or a decision without an action."""

    detail: str  # events.csv ``detail``: why, with the numbers (one line)
    action: Event | None = None  # None: nothing to run (recorded as action ``decision``)
    target: str = ""  # for ``action`` None: what the decision concerns (events.csv ``target``)


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class View:
    """What a controller sees at one step."""

    t: float  # seconds since the timeline's zero (the measured flow's start)
    node: str
    #: the subflows of the node's busiest MPTCP connection (probes/ss.busiest_connection)
    subflows: list[SubflowSample]
    #: every subflow ss listed on the node
    all_subflows: list[SubflowSample]


class Controller(ABC):
    #: the controller's parameters (experiment.yml ``params``), validated at load time
    Params: ClassVar[type[BaseModel]] = NoParams

    def __init__(self, spec: ControllerSpec) -> None:
        self.spec = spec
        self.params: Any = self.Params.model_validate(spec.params)

    @property
    def name(self) -> str:
        return self.spec.name

    @classmethod
    def planned_actions(cls, spec: ControllerSpec) -> list[Event]:
        """The actions the controller may take whose references (node, flow, addresses) are
        known from its params: the loader checks them as it checks the timeline's events, so
        a wrong name fails the lab before anything runs. None by default."""
        return []

    def trace(self) -> list[dict[str, Any]]:
        """What the controller saw and computed at each step, one dict per row, written
        as controller-<name>-<node>.csv at the end of the repetition; none by default."""
        return []

    @abstractmethod
    def step(self, view: View) -> Sequence[Event | Decision]:
        """The actions to take now (``at`` is ignored: they run at once)."""

"""What the timeline's actions resolve against and resolve to: the run's network, emulator
and links' current shapes (ActionEnv), and one action ready to run (Resolved: its
commands, or an in-process call, with what it must read on the node first: Lookup)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..commands import Cmd
from ..emulation.linkmodel import LinkShape
from ..lab.network import Network

if TYPE_CHECKING:
    from ..emulation.base import Emulator
    from ..lab.events import Event
    from ..lab.schema import ExperimentBody


class FlowControl(Protocol):
    """Starts and stops named flows (the traffic step provides it: traffic/control.py)."""

    def start(self, name: str) -> None: ...

    def stop(self, name: str) -> None: ...


@dataclass(frozen=True)
class Lookup:
    """What an action must read on a node when it runs, before its commands: ``cmd``'s
    output, turned by ``values`` into the values of the commands' placeholders (a
    connection's token, a subflow's port, an endpoint's id; LookupError or ValueError when
    not found: the action is then recorded as failed, its commands not run)."""

    cmd: Cmd
    values: Callable[[str], dict[str, str]]
    #: what the dry run says of the placeholders
    note: str


def fill(c: Cmd, values: dict[str, str]) -> Cmd:
    """``c`` with each placeholder argument replaced by its value."""
    return Cmd(tuple(values.get(a, a) for a in c.argv), node=c.node, check=c.check, why=c.why)


@dataclass(frozen=True)
class Resolved:
    """One action ready to run: its commands, or an in-process call (flows)."""

    planned_s: float
    action: str
    target: str
    cmds: tuple[Cmd, ...] = ()
    #: an effect that is no command (start/stop a flow); returns its result text
    call: Callable[[], str] | None = None
    #: what the dry run prints for ``call``
    call_text: str = ""
    source: str = "timeline"
    #: why (a controller's decision and its numbers): events.csv ``detail``
    detail: str = ""
    #: the lab's typed action this was resolved from (None: a decision, a controller's
    #: error): events.csv's typed columns come from it (subject below)
    event: Event | None = None
    #: read on the node first, to fill the placeholders of ``cmds`` (run-time values)
    lookup: Lookup | None = None


@dataclass
class ActionEnv:
    net: Network
    emulator: Emulator
    #: routers get their routes from FRR (containerlab): zebra re-installs them on link up
    frr_routers: bool = False
    #: set by the traffic step once its clients can be started (None: dry run)
    flow_control: Callable[[], FlowControl | None] = lambda: None
    shapes: dict[tuple[str, str], LinkShape] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: the scenario's experiment: the flows a userspace path-manager event names
    body: ExperimentBody | None = None

    def __post_init__(self) -> None:
        for link in self.net.links:
            for dl in link.directions():
                self.shapes.setdefault((str(dl.src), str(dl.dst)), dl.shape)

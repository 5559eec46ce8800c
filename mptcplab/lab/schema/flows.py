"""Traffic: the ``Flow`` union of the kinds' schema classes (each in its kind's module,
mptcplab/traffic/<kind>_schema.py, listed once in mptcplab/traffic/registry.py), chosen by
``kind``, and the timeline of events. The registry is found by name (mptcplab/plugins.py):
the kinds build on this package, not it on them; the code sees any flow as a FlowBase."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, Union

from pydantic import Discriminator, Field, Tag

from ... import plugins
from ...values.flowbase import FlowBase
from ...values.types import Name, Strict
from ..events import Event

_KINDS = plugins.registry("traffic")
FLOW_CLASSES: tuple[type[FlowBase], ...] = _KINDS.FLOW_CLASSES
FLOW_KINDS: tuple[str, ...] = _KINDS.FLOW_KINDS
DEFAULT_KIND: str = _KINDS.DEFAULT_KIND


def _kind_of(v: Any) -> str:
    # labs written before kinds existed have no ``kind``: they are iperf3 bulk flows
    kind = v.get("kind", DEFAULT_KIND) if isinstance(v, dict) else getattr(v, "kind", DEFAULT_KIND)
    return str(kind)


if TYPE_CHECKING:
    Flow: TypeAlias = FlowBase
else:
    #: A flow of any kind; ``kind`` picks the class (default: the registry's first).
    Flow = Annotated[Union[tuple(Annotated[c, Tag(k)] for c, k in zip(FLOW_CLASSES, FLOW_KINDS, strict=True))],  # noqa: UP007
                     Discriminator(_kind_of, custom_error_type="flow_kind",
                                   custom_error_message=f"kind must be one of {', '.join(FLOW_KINDS)}")]


#: ``traffic.timeline_zero``'s values
TimelineZero: TypeAlias = Literal["spawn", "connection"]


class Traffic(Strict):
    flows: dict[Name, Flow] = Field(min_length=1)
    #: the timeline (lab/events.py): typed actions at times relative to the measured flow's start
    events: list[Event] = []
    #: what that start is, the timeline's and the controllers' zero: ``spawn``, the measured
    #: flow's client spawned; ``connection``, its connection ESTABLISHED on the client (the
    #: traffic step polls ``ss`` for it, at most 30 s, traffic/control.py)
    timeline_zero: TimelineZero = "spawn"

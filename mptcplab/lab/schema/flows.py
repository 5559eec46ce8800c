"""Traffic: the ``Flow`` union of the kinds' schema classes (each in its kind's module,
mptcplab/traffic/<kind>_schema.py, listed once in mptcplab/traffic/registry.py), chosen by
``kind``, and the timeline of events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, TypeAlias, Union

from pydantic import Discriminator, Field, Tag

from ...traffic.registry import DEFAULT_KIND, FLOW_CLASSES, FLOW_KINDS, AnyFlow, kind_name
from ..events import Event
from .base import Name, Strict


def _kind_of(v: Any) -> str:
    # labs written before kinds existed have no ``kind``: they are iperf3 bulk flows
    kind = v.get("kind", DEFAULT_KIND) if isinstance(v, dict) else getattr(v, "kind", DEFAULT_KIND)
    return str(kind)


if TYPE_CHECKING:
    Flow: TypeAlias = AnyFlow
else:
    #: A flow of any kind; ``kind`` picks the class (default: the registry's first).
    Flow = Annotated[Union[tuple(Annotated[c, Tag(kind_name(c))] for c in FLOW_CLASSES)],  # noqa: UP007
                     Discriminator(_kind_of, custom_error_type="flow_kind",
                                   custom_error_message=f"kind must be one of {', '.join(FLOW_KINDS)}")]


class Traffic(Strict):
    flows: dict[Name, Flow] = Field(min_length=1)
    #: the timeline (lab/events.py): typed actions at times relative to the measured flow's start
    events: list[Event] = []

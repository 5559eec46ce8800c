"""Kind name -> the object that runs flows of that kind (its ``TrafficKind``), for every
kind of the registry (registry.py): traffic/<kind>.py exports it as ``KIND``, so a kind is
listed once, in the registry, and this table follows."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ..lab.schema import Flow
from .base import TrafficKind
from .registry import FLOW_KINDS


def _runner(name: str) -> TrafficKind[Any]:
    kind = getattr(import_module(f"{__package__}.{name}"), "KIND", None)
    if not isinstance(kind, TrafficKind) or kind.name != name:
        raise TypeError(f"mptcplab/traffic/{name}.py exports no KIND, the TrafficKind named {name!r}")
    return kind


#: kind name -> the object that runs flows of that kind, in the registry's order
KINDS: dict[str, TrafficKind[Any]] = {name: _runner(name) for name in FLOW_KINDS}


def kind_of(flow: Flow) -> TrafficKind[Any]:
    """The kind that runs this flow (its schema class's ``kind`` field)."""
    return KINDS[flow.kind]

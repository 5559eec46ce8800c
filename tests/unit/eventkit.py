"""What the unit tests of timeline events share: typed events from keyword arguments and the
bad-lab suite's valid base lab."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from mptcplab.lab.events import Event

BASE = Path(__file__).resolve().parents[1] / "data" / "bad-labs" / "_base"
EVENT: TypeAdapter[Any] = TypeAdapter(Event)


def ev(**kw: Any) -> Any:
    """An event as a lab file gives it (``at`` defaults to 1 s)."""
    return EVENT.validate_python({"at": kw.pop("at", 1), **kw})

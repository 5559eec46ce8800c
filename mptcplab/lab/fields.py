"""Field rules the lab schema and the timeline's event schema share (lab/schema.py
imports lab/events.py, so they live here rather than in either)."""

from __future__ import annotations

from typing import Any

from ..units import UnitError

#: node, flow and scenario names
NAME_RE = r"^[a-z][a-z0-9_-]{0,30}$"


def check_unit(parser: Any, value: Any) -> Any:
    """``value`` unchanged if ``parser`` accepts it; its UnitError as a ValueError (pydantic's)."""
    if value is None:
        return value
    try:
        parser(value)
    except UnitError as e:
        raise ValueError(str(e)) from None
    return value

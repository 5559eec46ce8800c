"""The hold kind's numbers in the record (FlowResult.hold; traffic/hold.py reads them)."""

from __future__ import annotations

from pydantic import Field

from ..values.types import Lenient


class HoldMetrics(Lenient):
    """The hold client's report (traffic/hold.py): connections asked for, established and
    held until the run stopped it, and how long opening them took."""

    requested: int | None = None
    held: int | None = None
    failed: int | None = None
    open_s: float | None = None
    errors: dict[str, int] = Field(default_factory=dict)

"""The churn kind's numbers in the record (FlowResult.churn; traffic/churn.py reads them)."""

from __future__ import annotations

from pydantic import Field

from ..values.types import Lenient


class ChurnMetrics(Lenient):
    """The churn client's report (the application's view)."""

    attempted: int | None = None
    completed: int | None = None
    failed: int | None = None
    rate_per_s: float | None = None
    connect_ms_p50: float | None = None
    connect_ms_p99: float | None = None
    errors: dict[str, int] = Field(default_factory=dict)

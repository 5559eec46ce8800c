"""The churn kind's lab schema: many short connections (traffic/churn.py runs it)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from ..units import parse_size
from ..values.fields import check_unit
from ..values.flowbase import FlowBase


class ChurnFlow(FlowBase):
    """Many short connections (connect, send ``size`` bytes, read them back, close) at
    ``rate`` per second, or ``count`` of them, by the project's own client."""

    kind: Literal["churn"]
    port: int = Field(default=7000, ge=1024, le=65535)
    rate: float | None = Field(default=None, gt=0, le=10000, description="connections per second")
    count: int | None = Field(default=None, ge=1, le=1000000, description="stop after this many connections")
    size: str | int = Field(default=64, description="bytes each connection sends and reads back "
                            "(0: connect and close, nothing sent)")

    _size = field_validator("size")(classmethod(lambda cls, v: check_unit(parse_size, v)))

    @field_validator("size")
    @classmethod
    def _size_range(cls, v: Any) -> Any:
        if not 0 <= parse_size(v) <= 1024 * 1024:
            raise ValueError(f"{v!r}: size is between 0 bytes and 1 MB")
        return v

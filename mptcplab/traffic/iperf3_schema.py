"""The iperf3 kind's lab schema: a bulk TCP/MPTCP flow (traffic/iperf3.py runs it)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from ..units import parse_size
from ..values.fields import check_unit
from ..values.flowbase import FlowBase, iperf3_size
from ..values.types import IPERF3_MAX_LENGTH, IPERF3_MAX_WINDOW, KernelName


class IperfFlow(FlowBase):
    """Bulk TCP/MPTCP with iperf3 for ``duration``, or until ``bytes`` are sent."""

    kind: Literal["iperf3"] = "iperf3"
    cc: KernelName | None = None
    window: str | int | None = Field(default=None, description="iperf3 -w: socket buffer size")
    length: str | int | None = Field(default=None, description="iperf3 -l: write size")
    bytes: str | int | None = Field(default=None, description="iperf3 -n: send this many bytes, then stop "
                                    "(duration is then the limit after which the flow is stopped)")

    _size = field_validator("window", "length", "bytes")(classmethod(lambda cls, v: check_unit(parse_size, v)))

    @field_validator("window", "length")
    @classmethod
    def _iperf3_sizes(cls, v: Any, info: Any) -> Any:
        return iperf3_size(v, IPERF3_MAX_WINDOW if info.field_name == "window" else IPERF3_MAX_LENGTH)

    @field_validator("bytes")
    @classmethod
    def _bytes(cls, v: Any) -> Any:
        if v is not None and parse_size(v) < 1:
            raise ValueError("bytes must be at least 1")
        return v

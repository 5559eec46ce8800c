"""The udp kind's lab schema: an iperf3 UDP stream (traffic/udp.py runs it)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from ..units import parse_rate, parse_size
from ..values.fields import check_unit
from ..values.flowbase import FlowBase, iperf3_size


class UdpFlow(FlowBase):
    """An iperf3 UDP stream at ``rate`` (a flood when the rate exceeds the path's)."""

    kind: Literal["udp"]
    mptcp: Literal[False] = False
    scaled_rates = ("rate",)
    rate: str | int = Field(description="iperf3 -u -b: the sending rate ('50Mbit')")
    length: str | int | None = Field(default=None, description="iperf3 -l: datagram payload size")

    _rate = field_validator("rate")(classmethod(lambda cls, v: check_unit(parse_rate, v)))
    _size = field_validator("length")(classmethod(lambda cls, v: check_unit(parse_size, v)))

    @field_validator("length")
    @classmethod
    def _datagram(cls, v: Any) -> Any:
        return iperf3_size(v, 65507)

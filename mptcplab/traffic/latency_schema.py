"""The latency kind's lab schema: the project's block-latency tool (traffic/latency.py runs it)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..units import parse_rate, parse_size
from ..values.fields import check_unit
from ..values.flowbase import FlowBase
from ..values.types import KernelName

#: the latency tool's block size range, header included (native/latency: --block 32..64 MiB)
LATENCY_MIN_BLOCK = 32
LATENCY_MAX_BLOCK = 64 * 1024 * 1024
#: the latency tool refuses a buffer above INT_MAX / 2 (the kernel stores twice the value)
LATENCY_MAX_BUFFER = (2**31 - 1) // 2


class LatencyFlow(FlowBase):
    """The project's latency tool (native/latency, mptcplab/tools/latency): the client
    writes timestamped ``block``-byte blocks for ``duration``, back to back or at ``rate``
    (or ``blocks_per_s``); the server records each block's delay. ``sndbuf`` (the client's)
    and ``rcvbuf`` (the server's) set SO_SNDBUF/SO_RCVBUF, which locks them (no autotuning)."""

    kind: Literal["latency"]
    # the client is always the sender: there is no download mode
    direction: Literal["upload"] = "upload"
    port: int = Field(default=5301, ge=1024, le=65535)
    block: str | int = Field(default="8KB", description="bytes per block, the 32-byte header included")
    rate: str | int | None = Field(default=None, description="application rate ('2Mbit'); none: back to back")
    blocks_per_s: float | None = Field(default=None, gt=0, le=10_000_000, description="blocks per second")
    sndbuf: str | int | None = Field(default=None, description="the client's SO_SNDBUF (locked)")
    rcvbuf: str | int | None = Field(default=None, description="the server's SO_RCVBUF (locked)")
    cc: KernelName | None = Field(default=None, description="the sender's congestion control, set on its socket "
                                  "(TCP_CONGESTION; MPTCP applies it to every subflow)")

    _rate = field_validator("rate")(classmethod(lambda cls, v: check_unit(parse_rate, v)))
    _size = field_validator("block", "sndbuf", "rcvbuf")(classmethod(lambda cls, v: check_unit(parse_size, v)))

    @field_validator("block")
    @classmethod
    def _block_range(cls, v: Any) -> Any:
        if not LATENCY_MIN_BLOCK <= parse_size(v) <= LATENCY_MAX_BLOCK:
            raise ValueError(f"{v!r} is outside the latency tool's block range {LATENCY_MIN_BLOCK} to "
                             f"{LATENCY_MAX_BLOCK} bytes")
        return v

    @field_validator("sndbuf", "rcvbuf")
    @classmethod
    def _buffer_range(cls, v: Any) -> Any:
        if v is not None and not 1 <= parse_size(v) <= LATENCY_MAX_BUFFER:
            raise ValueError(f"{v!r} is outside 1 to {LATENCY_MAX_BUFFER} bytes (the kernel stores twice it)")
        return v

    @field_validator("rate")
    @classmethod
    def _rate_positive(cls, v: Any) -> Any:
        if v is not None and parse_rate(v) <= 0:
            raise ValueError("rate must be positive")
        return v

    @model_validator(mode="after")
    def _one_rate(self) -> LatencyFlow:
        if self.rate is not None and self.blocks_per_s is not None:
            raise ValueError("rate and blocks_per_s exclude each other (give one, or neither for back to back)")
        return self

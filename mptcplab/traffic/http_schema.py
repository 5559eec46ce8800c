"""The http kind's lab schema: a static web server loaded by wrk (traffic/http.py runs it)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..units import parse_size
from ..values.fields import check_unit
from ..values.flowbase import FlowBase


class HttpFlow(FlowBase):
    """A static web server (busybox httpd, under mptcpize for MPTCP) serving files of
    ``sizes``, loaded by wrk with ``connections`` connections for ``duration``."""

    kind: Literal["http"]
    direction: Literal["download"] = "download"
    port: int = Field(default=8080, ge=1024, le=65535)
    sizes: list[str | int] = Field(default=["10KB"], min_length=1, max_length=16,
                                   description="sizes of the files served; wrk asks for the first")
    connections: int = Field(default=8, ge=1, le=1000, description="wrk -c: concurrent connections")
    threads: int = Field(default=1, ge=1, le=16, description="wrk -t")

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, v: list[Any]) -> list[Any]:
        for x in v:
            check_unit(parse_size, x)
            if not 1 <= parse_size(x) <= 2**31:
                raise ValueError(f"{x!r}: a file size is between 1 byte and 2 GB")
        return v

    @model_validator(mode="after")
    def _threads(self) -> HttpFlow:
        if self.bind is not None:
            raise ValueError("bind: wrk cannot choose its source address; routing picks the initial path")
        if self.threads > self.connections:
            raise ValueError("wrk needs at least one connection per thread (threads <= connections)")
        return self

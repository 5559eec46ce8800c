"""The containerlab topology file: the subset of its schema the engine uses; containerlab's
own fields pass through."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...values.fields import IFACE_RE, NAME_RE
from ...values.types import Name


class ClabNode(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    kind: Literal["linux"] = Field(description="only 'linux' nodes are supported")
    image: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_./:@-]{0,200}$")


class ClabLink(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    endpoints: list[str] = Field(min_length=2, max_length=2)
    mtu: int | None = Field(default=None, ge=68, le=65535)

    @field_validator("endpoints")
    @classmethod
    def _endpoint_syntax(cls, v: list[str]) -> list[str]:
        for ep in v:
            node, sep, iface = ep.partition(":")
            if not sep or not re.match(NAME_RE, node) or not re.match(IFACE_RE, iface):
                raise ValueError(f"endpoint {ep!r} is not 'node:interface'")
        return v


class ClabTopologyBody(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    nodes: dict[Name, ClabNode] = Field(min_length=2)
    links: list[ClabLink] = Field(min_length=1)


class ClabTopology(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    name: Name
    topology: ClabTopologyBody

"""The transfer kind's lab schema: a verified transfer (traffic/transfer.py runs it)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from ..units import parse_size
from ..values.fields import check_unit
from ..values.flowbase import FlowBase
from ..values.types import AddressRef


class TransferFlow(FlowBase):
    """A verified transfer (traffic/transfer_tool.py): ``bytes`` of the pseudo-random stream
    seeded with ``seed``; the server hashes what it received. ``duration`` is the limit.
    The client's socket family follows ``server_address``; the server listens on every
    address of both families unless ``server_bind`` names one (mptcp_join.sh's bind_addr)."""

    kind: Literal["transfer"]
    port: int = Field(default=7100, ge=1024, le=65535)
    bytes: str | int = Field(description="how many bytes the client sends ('1MB')")
    seed: int = Field(default=1, ge=0, le=2**32 - 1, description="the stream's seed (random.Random)")
    server_bind: AddressRef | None = Field(
        default=None, description="the one address the server listens on ('node:iface' of the server: its address "
        "of server_address's family; or a literal address of the server); default: every address of both families")
    server_addresses: ClassVar[tuple[str, ...]] = ("server_bind",)
    bind_follows_family: ClassVar[bool] = True

    _size = field_validator("bytes")(classmethod(lambda cls, v: check_unit(parse_size, v)))

    @field_validator("bytes")
    @classmethod
    def _bytes(cls, v: Any) -> Any:
        if not 1 <= parse_size(v) <= 2**34:
            raise ValueError(f"{v!r}: bytes is between 1 byte and 16 GB")
        return v

    @model_validator(mode="after")
    def _upload(self) -> TransferFlow:
        if self.direction != "upload":
            raise ValueError("direction: a transfer flows from client to server (upload)")
        return self

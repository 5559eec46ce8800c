"""The transfer kind's lab schema: a verified transfer (traffic/transfer.py runs it)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from ..units import UnitError, parse_rate, parse_size
from ..values.fields import check_unit
from ..values.flowbase import FlowBase
from ..values.types import AddressRef

#: direction -> the sides that send (the client, the server)
SENDERS: dict[str, tuple[str, ...]] = {"upload": ("client",), "download": ("server",), "both": ("client", "server")}


def parse_pace(value: str | int | float) -> int:
    """A sender's pace in bit/s: a rate as units.py reads it ('400kbit', '1mbit'), or a size per
    second ('50KB/s', the size read by units.parse_size): mptcp_connect's pacing is in bytes."""
    if isinstance(value, str) and value.strip().lower().endswith("/s"):
        n = parse_size(value.strip()[:-2])
        if n <= 0:
            raise UnitError(f"rate must be positive, got {value!r}")
        return n * 8
    return parse_rate(value)


class TransferFlow(FlowBase):
    """A verified transfer (traffic/transfer_tool.py): ``bytes`` of the pseudo-random stream
    seeded with ``seed`` in each ``direction`` (both: each side sends at once on the one
    connection); the receiving side hashes what it received. ``duration`` is the limit.
    The client's socket family follows ``server_address``; the server listens on every
    address of both families unless ``server_bind`` names one (mptcp_join.sh's bind_addr).
    ``rate``: each sender paces itself; ``fastclose``: that side closes after ``bytes`` with
    the peer's data unread, which MPTCP answers with MP_FASTCLOSE (mptcp_connect -f)."""

    kind: Literal["transfer"]
    # wider than FlowBase's: the core asks data_direction() which way the analysis follows
    direction: Literal["upload", "download", "both"] = "upload"  # type: ignore[assignment]
    port: int = Field(default=7100, ge=1024, le=65535)
    bytes: str | int = Field(description="how many bytes each sending side sends ('1MB')")
    seed: int = Field(default=1, ge=0, le=2**32 - 1, description="the stream's seed (random.Random)")
    rate: str | int | None = Field(default=None, description="each sender's pace ('50KB/s', '400kbit'); "
                                   "default: as fast as the connection takes it")
    fastclose: Literal["client", "server"] | None = Field(
        default=None, description="this side closes after `bytes` sent and received with the peer's data "
        "unread: the kernel resets the connection with MP_FASTCLOSE (TCP: RST); the peer sends until then")
    server_bind: AddressRef | None = Field(
        default=None, description="the one address the server listens on ('node:iface' of the server: its address "
        "of server_address's family; or a literal address of the server); default: every address of both families")
    server_addresses: ClassVar[tuple[str, ...]] = ("server_bind",)
    bind_follows_family: ClassVar[bool] = True

    _size = field_validator("bytes")(classmethod(lambda cls, v: check_unit(parse_size, v)))
    _pace = field_validator("rate")(classmethod(lambda cls, v: check_unit(parse_pace, v)))

    @field_validator("bytes")
    @classmethod
    def _bytes(cls, v: Any) -> Any:
        if not 1 <= parse_size(v) <= 2**34:
            raise ValueError(f"{v!r}: bytes is between 1 byte and 16 GB")
        return v

    @field_validator("fastclose")
    @classmethod
    def _closer_has_data_unread(cls, v: Any, info: ValidationInfo) -> Any:
        # net/mptcp/protocol.c __mptcp_close: MP_FASTCLOSE only when data is left unread
        # (SO_LINGER 0 does not make it), so the peer must be sending to the closing side
        direction = info.data.get("direction")
        peer = "server" if v == "client" else "client"
        if v is not None and direction is not None and peer not in SENDERS[direction]:
            need = "download or both" if v == "client" else "upload or both"
            raise ValueError(f"{v} closes with data unread only when the {peer} sends to it (direction {need}, "
                             f"not {direction}): MPTCP sends MP_FASTCLOSE when a socket is closed with data unread")
        return v

    def rate_bps(self) -> int | None:
        return None if self.rate is None else parse_pace(self.rate)

    def data_direction(self) -> Literal["upload", "download"]:
        """Both ways: the client's data (upload), unless the server closes fast: then the
        server's, its ``bytes`` acknowledged before its close (the peer's data, sent until the
        reset, may have only a segment or two acknowledged by then)."""
        if self.direction == "both":
            return "download" if self.fastclose == "server" else "upload"
        return self.direction

    def senders(self) -> tuple[str, ...]:
        return SENDERS[self.direction]

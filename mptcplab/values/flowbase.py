"""What every traffic kind's schema class builds on: ``FlowBase`` (two hosts, the server's
address and port, when the flow starts, whether it is measured).

The kinds' own schema classes live in their modules (mptcplab/traffic/<kind>_schema.py) and
import this module, not the package face: lab/schema/flows.py builds the ``Flow`` union from
the kinds, so the kinds may only depend on the leaves of lab/schema (base.py and this)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator

from ..units import parse_size, parse_time
from .fields import check_unit
from .types import IPERF3_MAX_SECONDS, AddressRef, EndpointRef, Name, Strict


class FlowBase(Strict):
    """What every traffic kind has: two hosts, the server's address and port, when it
    starts and whether it is measured. One subclass per kind (mptcplab/traffic/<kind>_schema.py);
    ``kind`` selects the class, default ``iperf3`` (docs/lab-format.md)."""

    client: Name
    server: Name
    server_address: AddressRef = Field(description="'node:iface' of the server, or an IPv4 address")
    bind: EndpointRef | None = Field(default=None,
                                     description="client source 'node:iface' (the initial subflow's path)")
    mptcp: bool = True
    direction: Literal["upload", "download"] = "upload"
    duration: str | float = "10s"
    port: int = Field(default=5201, ge=1024, le=65535)
    start: str | float = "0s"
    role: Literal["measured", "competing"] = "measured"
    #: the kind's fields that are bit rates: a scaled run multiplies them by its factor
    #: (lab/scale.py, which asks this instead of naming kinds); a rate of connections or
    #: blocks per second is not one
    scaled_rates: ClassVar[tuple[str, ...]] = ()
    #: the kind's fields besides ``server_address`` that name an address of the server node
    #: ('node:iface' or a literal): the loader checks each is one of the server's, of the
    #: family ``server_address`` is (lab/loader.py, lab/limits.py ask this instead of naming kinds)
    server_addresses: ClassVar[tuple[str, ...]] = ()
    #: ``bind`` stands for the interface's address of server_address's family (the transfer
    #: kind); False: its IPv4 address when it has one, whatever the server's (lab/joinwarnings.py)
    bind_follows_family: ClassVar[bool] = False
    if TYPE_CHECKING:
        #: the kind's name: each kind's class declares it as a Literal (the union's tag), so
        #: pydantic sees it there; the code that takes any flow reads it here
        kind: str

    _dur = field_validator("duration", "start")(classmethod(lambda cls, v: check_unit(parse_time, v)))

    @field_validator("duration")
    @classmethod
    def _positive(cls, v: Any) -> Any:
        if parse_time(v) <= 0:
            raise ValueError("duration must be positive")
        if parse_time(v) > IPERF3_MAX_SECONDS:
            raise ValueError(f"{v!r} is longer than iperf3's limit of {IPERF3_MAX_SECONDS} s")
        return v

    def data_direction(self) -> Literal["upload", "download"]:
        """The direction whose data the capture analysis follows (the receiver, the paths'
        rates, the sender's socket memory); a kind whose ``direction`` has more (transfer's
        ``both``) says which one it is."""
        return self.direction

    @field_validator("start")
    @classmethod
    def _start_range(cls, v: Any) -> Any:
        if parse_time(v) > IPERF3_MAX_SECONDS:
            raise ValueError(f"{v!r} is later than {IPERF3_MAX_SECONDS} s")
        return v


def iperf3_size(v: Any, limit: int) -> Any:
    """A size an iperf3 option takes (-w, -l): None, or 1 to ``limit`` bytes (iperf3-based kinds)."""
    if v is None:
        return v
    n = parse_size(v)
    if not 1 <= n <= limit:
        raise ValueError(f"{v!r} is outside iperf3's range 1 to {limit} bytes")
    return v

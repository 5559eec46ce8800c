"""Typed timeline events of experiment.yml (``traffic.events``) and controller specs.

One class per action, discriminated by ``action``: each class has only the fields
its action uses, so a typo or a field of another action is a one-line error naming
it (the loader reports ``traffic.events[k].<field>``). Times (``at``) are seconds
relative to the measured flow's start (the timeline's zero, steps.base.TrafficState.t_zero).

What each action does on the nodes is mptcplab/timeline/actions.py's job; this
module only says what a lab may write.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from ..units import parse_fraction, parse_rate, parse_time
from ..values.fields import (
    NAME_RE,
    EndpointFlag,
    address_ref,
    check_endpoint_flags,
    check_unit,
    endpoint_ref,
    sysctl_key,
    sysctl_value,
)

#: a timeline longer than iperf3's own limit could never run
MAX_AT_SECONDS = 86400.0


_check = check_unit


def _at(v: Any) -> Any:
    _check(parse_time, v)
    if not 0 <= parse_time(v) <= MAX_AT_SECONDS:
        raise ValueError(f"{v!r}: an event time must be between 0 and {MAX_AT_SECONDS:g} s")
    return v


At = Annotated[str | float, AfterValidator(_at)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Timed(_Strict):
    at: At = Field(description="seconds after the measured flow's start ('2s', '1500ms', 2.5)")

    @property
    def at_s(self) -> float:
        return parse_time(self.at)

    def target(self) -> str:
        """What the action acts on, in words (events.csv ``target``)."""
        raise NotImplementedError(type(self).__name__)

    def columns(self) -> dict[str, Any]:
        """The action's typed columns of events.csv (record.model.Event: node, link,
        address, endpoint_id, flags, flow, direction), those it has."""
        return {}


class _OnLink(_Timed):
    link: str = Field(description="'node:iface' of one end of the link")
    #: both: the two directions; one: only the egress of ``link``'s end
    direction: Literal["both", "one"] = "both"

    def target(self) -> str:
        return f"{self.link} ({self.direction})"

    def columns(self) -> dict[str, Any]:
        return {"node": self.link.split(":", 1)[0], "link": self.link, "direction": self.direction}

    @field_validator("link")
    @classmethod
    def _ref(cls, v: str) -> str:
        return endpoint_ref(v)


LinkDownHow = Literal["ip-link", "drop"]
#: ip-link: which interfaces go down, both ends or only ``link``'s
LinkEnds = Literal["both", "one"]


class _LinkOnOff(_OnLink):
    how: LinkDownHow = "ip-link"
    #: one: ``ip link set down`` on ``link``'s end only, as mptcp_join.sh's link_failure
    #: (``ip link set ns1ethN down``): its peer loses carrier and stays administratively up
    ends: LinkEnds = "both"

    @model_validator(mode="after")
    def _how_fits(self) -> _LinkOnOff:
        if self.direction == "one" and self.how != "drop":
            raise ValueError("direction: one needs how: drop (ip link set down stops both directions; "
                             "ends: one takes only this end down)")
        if self.ends == "one" and self.how != "ip-link":
            raise ValueError("ends: one needs how: ip-link (how: drop chooses the egress with direction)")
        return self

    def target(self) -> str:
        # one end: how is ip-link, which has no direction to show
        return f"{self.link} this end only" if self.ends == "one" else super().target()


class LinkDown(_LinkOnOff):
    """Take a link out. ``how: ip-link`` (default) is Mininet's "link down": ``ip link
    set down`` on both ends; the kernel removes every route through the interfaces,
    and link_up puts the lab's routes back. ``ends: one`` takes only ``link``'s end down
    (its routes go; the peer interface loses carrier, keeps its routes and stays up), as
    mptcp_join.sh's link_failure does. ``how: drop`` keeps the interfaces and routes and
    drops every packet in nftables at the egress of the chosen end(s); ``direction: one``
    (one end's egress only) needs it."""

    action: Literal["link_down"]


class LinkUp(_LinkOnOff):
    """Undo a link_down of the same link, ``direction``, ``how`` and ``ends``."""

    action: Literal["link_up"]


class LinkChange(_OnLink):
    """New rate / delay / loss / queue limit on a link, through the emulator that
    installed it (Emulator.change_cmds). Unnamed parameters keep their value.

    ``trace`` / ``trace_offset`` switch a trace link's delivery trace now (mobility:
    a path that fades, a handover), ``trace_offset`` into it (default 0); an offset
    alone restarts the current trace there. Only a direction that replays a trace from
    the start can switch (the delay line's trace stage: Emulator.trace_switch_cmds);
    the name is resolved like a link's ``trace`` (lab/network.py loads it)."""

    action: Literal["link_change"]
    rate: str | int | None = None
    delay: str | float | None = None
    loss: str | float | None = None
    queue: str | int | None = Field(default=None, description="bytes ('150KB') or time at the link rate ('80ms')")
    trace: str | None = Field(default=None, description="a shipped trace's name or a path, as a link's trace")
    trace_offset: str | float | None = Field(default=None, description="where in the trace it starts ('0s')")

    _rate = field_validator("rate")(classmethod(lambda cls, v: _check(parse_rate, v)))
    _delay = field_validator("delay")(classmethod(lambda cls, v: _check(parse_time, v)))
    _loss = field_validator("loss")(classmethod(lambda cls, v: _check(parse_fraction, v)))
    _offset = field_validator("trace_offset")(classmethod(lambda cls, v: _check(parse_time, v)))

    @field_validator("trace")
    @classmethod
    def _trace(cls, v: str | None) -> str | None:
        if v is not None and (not v.strip() or "\n" in v):
            raise ValueError(f"{v!r}: a trace is a shipped trace's name or a path")
        return v

    @property
    def switches_trace(self) -> bool:
        return self.trace is not None or self.trace_offset is not None

    @field_validator("queue")
    @classmethod
    def _queue(cls, v: Any) -> Any:
        from ..emulation.linkmodel import QueueLimit

        return _check(QueueLimit.parse, v)

    @model_validator(mode="after")
    def _something(self) -> LinkChange:
        if all(getattr(self, f) is None for f in ("rate", "delay", "loss", "queue", "trace", "trace_offset")):
            raise ValueError("link_change needs at least one of rate, delay, loss, queue, trace, trace_offset")
        if self.switches_trace and (self.rate is not None or self.queue is not None):
            raise ValueError("trace and trace_offset exclude rate and queue: a trace link's capacity is its trace")
        return self


class _OnNode(_Timed):
    node: Annotated[str, Field(pattern=NAME_RE)]

    def target(self) -> str:
        return self.node

    def columns(self) -> dict[str, Any]:
        return {"node": self.node}


def _opt_address(v: str | None) -> str | None:
    return None if v is None else address_ref(v)


class EndpointAdd(_OnNode):
    """``ip mptcp endpoint add ADDRESS [dev IF] [id ID] [port P] FLAGS`` on ``node``."""

    action: Literal["endpoint_add"]
    address: str = Field(description="'node:iface' of this node, or an IPv4 or IPv6 address")
    flags: list[EndpointFlag] = []
    id: int | None = Field(default=None, ge=1, le=255)
    port: int | None = Field(default=None, ge=1024, le=65535, description="announce address:port (signal only)")

    _addr = field_validator("address")(classmethod(lambda cls, v: address_ref(v)))
    _flags = field_validator("flags")(classmethod(lambda cls, v: check_endpoint_flags(v)))

    @model_validator(mode="after")
    def _port_signal(self) -> EndpointAdd:
        if self.port is not None and "signal" not in self.flags:
            raise ValueError("port: only a signal endpoint announces a port")
        return self

    def target(self) -> str:
        return f"{self.node} {self.address}"

    def columns(self) -> dict[str, Any]:
        return {"node": self.node, "address": self.address, "endpoint_id": self.id,
                "flags": " ".join(self.flags) or None}


class EndpointDelete(_OnNode):
    """``ip mptcp endpoint delete id ID [ADDRESS]``: the kernel deletes by id. Without
    ``id`` the endpoint is named by ``address`` and its id is read from ``ip mptcp endpoint
    show`` when the event runs (an endpoint the kernel numbered itself). Id 0 is the
    initial subflow's address, which has no endpoint of its own: the kernel needs the
    ``address`` then (it removes that address from the connections, REMOVE_ADDR with id 0)."""

    action: Literal["endpoint_delete"]
    id: int | None = Field(default=None, ge=0, le=255)
    address: str | None = Field(default=None, description="'node:iface' of this node, or an IPv4 or IPv6 address")

    _addr = field_validator("address")(classmethod(lambda cls, v: _opt_address(v)))

    @model_validator(mode="after")
    def _id_or_address(self) -> EndpointDelete:
        if self.id is None and self.address is None:
            raise ValueError("endpoint_delete needs id, address, or both")
        if self.id == 0 and self.address is None:
            raise ValueError("id 0 (the initial subflow's address) needs its address: "
                             "the kernel deletes id 0 by address")
        return self

    def target(self) -> str:
        return f"{self.node} id {self.id}" if self.id is not None else f"{self.node} {self.address}"

    def columns(self) -> dict[str, Any]:
        return {"node": self.node, "endpoint_id": self.id, "address": self.address}


class EndpointFlush(_OnNode):
    """``ip mptcp endpoint flush``: every endpoint of the node deleted at once (the kernel
    removes their addresses from the connections and closes the subflows they made)."""

    action: Literal["endpoint_flush"]


class EndpointFlags(_OnNode):
    """``ip mptcp endpoint change [id ID] [ADDRESS] [port P] FLAG``: backup|nobackup makes
    the kernel send MP_PRIO on the subflows of that address, and its scheduler stops (or
    resumes) sending new data on them while a non-backup subflow is available;
    fullmesh|nofullmesh changes whether a subflow endpoint makes a subflow to every address
    the peer announces (or one), for the subflows made from then on."""

    action: Literal["endpoint_flags"]
    address: str | None = Field(default=None, description="'node:iface' of this node, or an IPv4 or IPv6 address")
    id: int | None = Field(default=None, ge=1, le=255, description="the endpoint's id (instead of, or with, address)")
    port: int | None = Field(default=None, ge=1024, le=65535, description="the endpoint's port (a signal endpoint's)")
    flags: Literal["backup", "nobackup", "fullmesh", "nofullmesh"]

    _addr = field_validator("address")(classmethod(lambda cls, v: _opt_address(v)))

    @model_validator(mode="after")
    def _named(self) -> EndpointFlags:
        if self.id is None and self.address is None:
            raise ValueError("endpoint_flags needs the endpoint's address or id")
        return self

    def target(self) -> str:
        return f"{self.node} {self.address}"

    def columns(self) -> dict[str, Any]:
        return {"node": self.node, "address": self.address, "endpoint_id": self.id, "flags": self.flags}


class LimitsSet(_OnNode):
    """``ip mptcp limits set [subflows N] [add_addr_accepted M]``: the in-kernel path
    manager's limits from now on (connections already open keep the limits they took)."""

    action: Literal["limits"]
    subflows: int | None = Field(default=None, ge=0, le=8)
    add_addr_accepted: int | None = Field(default=None, ge=0, le=8)

    @model_validator(mode="after")
    def _something(self) -> LimitsSet:
        if self.subflows is None and self.add_addr_accepted is None:
            raise ValueError("limits needs subflows, add_addr_accepted or both")
        return self


class _OnConnection(_OnNode):
    """A userspace path-manager command for one MPTCP connection of ``node``: the busiest
    connection of traffic flow ``flow`` there (its local token is read from ``ss -tinM``
    when the event runs). ``node`` is the flow's client or server and selects the
    userspace path manager (nodes.<node>.mptcp.path_manager: userspace)."""

    flow: Annotated[str, Field(pattern=NAME_RE)]

    def columns(self) -> dict[str, Any]:
        return {"node": self.node, "flow": self.flow}


class UpmAnnounce(_OnConnection):
    """Announce ``address`` (ADD_ADDR) with address id ``id`` (and ``port``) to the peer."""

    action: Literal["upm_announce"]
    address: str = Field(description="'node:iface' of this node, or an IPv4 or IPv6 address")
    id: int = Field(ge=1, le=255)
    port: int | None = Field(default=None, ge=1024, le=65535)

    _addr = field_validator("address")(classmethod(lambda cls, v: address_ref(v)))

    def target(self) -> str:
        return f"{self.node} flow {self.flow} {self.address} id {self.id}"

    def columns(self) -> dict[str, Any]:
        return {**super().columns(), "address": self.address, "endpoint_id": self.id}


class UpmRemove(_OnConnection):
    """Withdraw address id ``id`` (REMOVE_ADDR; the kernel closes the subflows that use it).
    Id 0 is the initial subflow's address."""

    action: Literal["upm_remove"]
    id: int = Field(ge=0, le=255)

    def target(self) -> str:
        return f"{self.node} flow {self.flow} id {self.id}"

    def columns(self) -> dict[str, Any]:
        return {**super().columns(), "endpoint_id": self.id}


class UpmSubflowCreate(_OnConnection):
    """Open a subflow (MP_JOIN) from ``local`` (address id ``local_id``) to ``remote`` port
    ``remote_port`` (default: the flow's port)."""

    action: Literal["upm_subflow_create"]
    local: str = Field(description="'node:iface' of this node, or an address of it")
    local_id: int = Field(ge=1, le=255)
    remote: str = Field(description="'node:iface' of the flow's other host, or an address of it")
    remote_port: int | None = Field(default=None, ge=1, le=65535)
    backup: bool = False

    _refs = field_validator("local", "remote")(classmethod(lambda cls, v: address_ref(v)))

    def target(self) -> str:
        return f"{self.node} flow {self.flow} {self.local} -> {self.remote}"

    def columns(self) -> dict[str, Any]:
        return {**super().columns(), "address": self.local, "endpoint_id": self.local_id,
                "flags": "backup" if self.backup else None}


class UpmSubflowDestroy(_OnConnection):
    """Close the subflow between ``local`` and ``remote`` port ``remote_port`` (default: the
    flow's port); its local port is read from ``ss -tinM`` when the event runs."""

    action: Literal["upm_subflow_destroy"]
    local: str = Field(description="'node:iface' of this node, or an address of it")
    remote: str = Field(description="'node:iface' of the flow's other host, or an address of it")
    remote_port: int | None = Field(default=None, ge=1, le=65535)

    _refs = field_validator("local", "remote")(classmethod(lambda cls, v: address_ref(v)))

    def target(self) -> str:
        return f"{self.node} flow {self.flow} {self.local} -> {self.remote}"

    def columns(self) -> dict[str, Any]:
        return {**super().columns(), "address": self.local}


UPM_ACTIONS = (UpmAnnounce, UpmRemove, UpmSubflowCreate, UpmSubflowDestroy)
UpmEvent = UpmAnnounce | UpmRemove | UpmSubflowCreate | UpmSubflowDestroy


class SysctlWrite(_OnNode):
    """``sysctl -w key=value`` in ``node``'s namespace (net.* only)."""

    action: Literal["sysctl"]
    key: str
    value: str | int

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        return sysctl_key(v)

    @field_validator("value", mode="before")
    @classmethod
    def _value(cls, v: Any) -> Any:
        return sysctl_value(v)

    def target(self) -> str:
        return f"{self.node} {self.key}"


class FlowStart(_Timed):
    """Start a named flow (its ``start`` offset is then ignored)."""

    action: Literal["flow_start"]
    flow: Annotated[str, Field(pattern=NAME_RE)]

    def target(self) -> str:
        return self.flow

    def columns(self) -> dict[str, Any]:
        return {"flow": self.flow}


class FlowStop(_Timed):
    """Stop a running flow: SIGINT to its client, which then writes its JSON."""

    action: Literal["flow_stop"]
    flow: Annotated[str, Field(pattern=NAME_RE)]

    def target(self) -> str:
        return self.flow

    def columns(self) -> dict[str, Any]:
        return {"flow": self.flow}


Event = Annotated[LinkDown | LinkUp | LinkChange | EndpointAdd | EndpointDelete | EndpointFlush | EndpointFlags
                  | LimitsSet | UpmAnnounce | UpmRemove | UpmSubflowCreate | UpmSubflowDestroy
                  | SysctlWrite | FlowStart | FlowStop, Field(discriminator="action")]
#: what a controller may decide: the same actions, without a time (it acts now)
ACTIONS_OF_CONTROLLERS = ("endpoint_add", "endpoint_delete", "endpoint_flush", "endpoint_flags", "limits", "sysctl",
                          "link_change", "upm_announce", "upm_remove", "upm_subflow_create", "upm_subflow_destroy")


class ControllerSpec(_Strict):
    """A controller run on ``node`` during the traffic: mptcplab/controllers/<name>.py."""

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,30}$")] = Field(
        description="module mptcplab/controllers/<name>.py")
    node: Annotated[str, Field(pattern=NAME_RE)]
    interval: str | float = Field(default="100ms", description="how often it samples and decides")
    params: dict[str, Any] = {}

    @field_validator("interval")
    @classmethod
    def _interval(cls, v: Any) -> Any:
        _check(parse_time, v)
        if not 0.01 <= parse_time(v) <= 60:
            raise ValueError(f"{v!r}: a controller interval must be between 10 ms and 60 s")
        return v

    @property
    def interval_s(self) -> float:
        return parse_time(self.interval)

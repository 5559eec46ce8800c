"""A node of experiment.yml: role, sysctls, MPTCP endpoints and limits, middleboxes,
balance-rr striping; and the addressing plan."""

from __future__ import annotations

from ipaddress import IPv4Interface, IPv4Network, IPv6Interface, IPv6Network
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from ...values.fields import IFACE_RE, EndpointFlag, check_endpoint_flags
from ...values.types import AddressRef, EndpointRef, KernelName, Strict, Sysctls
from .middleboxes import REWRITING_KINDS, ROUTER_ONLY_KINDS, Middlebox


class MptcpLimits(Strict):
    subflows: int = Field(default=2, ge=0, le=8)
    add_addr_accepted: int = Field(default=0, ge=0, le=8)


class MptcpEndpoint(Strict):
    address: AddressRef = Field(description="'node:iface' of this node (its IPv4 address when the link has "
                                            "one, else its IPv6 address), or an IPv4 or IPv6 address")
    flags: list[EndpointFlag] = Field(min_length=1)
    id: int | None = Field(default=None, ge=1, le=255)
    port: int | None = Field(default=None, ge=1024, le=65535,
                             description="announce address:port (signal only): the kernel listens on that port "
                                         "too, so one address can take several subflows of one connection")

    _flags = field_validator("flags")(classmethod(lambda cls, v: check_endpoint_flags(v)))

    @model_validator(mode="after")
    def _port_signal(self) -> MptcpEndpoint:
        if self.port is not None and "signal" not in self.flags:
            raise ValueError("port: only a signal endpoint announces a port")
        return self


class MptcpNode(Strict):
    limits: MptcpLimits = MptcpLimits()
    endpoints: list[MptcpEndpoint] = []
    scheduler: KernelName | None = None
    path_manager: Literal["kernel", "userspace"] | None = None
    listener: bool = Field(
        default=True, description="with the userspace path manager: the engine runs its event listener "
                                  "(`ip mptcp monitor`) in this node; false runs none, and the kernel then "
                                  "refuses joins and echoes no ADD_ADDR (the selftests' cases without a daemon)")




class BalanceRr(Strict):
    """Bonding's balance-rr, emulated (this kernel has no bonding driver): every packet this
    host sends to ``to`` leaves by the next interface of ``via`` in turn (nftables numgen ->
    fwmark -> a routing table per interface, mptcplab/net/bonding.py). One address, reachable
    over every interface; no bond device and no shared MAC."""

    to: AddressRef = Field(description="the peer address whose packets are striped ('node:iface' or IPv4)")
    via: list[Annotated[str, Field(pattern=IFACE_RE)]] = Field(
        min_length=2, max_length=8, description="this host's interfaces, one packet each in turn")

    @model_validator(mode="after")
    def _distinct(self) -> BalanceRr:
        if len(set(self.via)) != len(self.via):
            raise ValueError("via: an interface is listed twice")
        return self


class NodeSpec(Strict):
    role: Literal["host", "router"]
    sysctls: Sysctls = {}
    mptcp: MptcpNode | None = None
    drop_icmp_frag_needed: bool = Field(
        default=False, description="this node drops the ICMP frag-needed it would send: a PMTUD black hole")
    middlebox: list[Middlebox] = Field(
        default=[], description="what this router does to forwarded MPTCP segments, or this host to the "
                                "segments it sends and receives (nftables; mptcplab-mbox)")
    balance_rr: BalanceRr | None = Field(
        default=None, description="stripe this host's packets to one peer address over several interfaces")

    @model_validator(mode="after")
    def _middlebox_on_router(self) -> NodeSpec:
        for i, b in enumerate(self.middlebox):
            if self.role == "router" and b.direction is not None:
                raise ValueError(f"middlebox.{i}.direction: a router's box sees forwarded segments of both "
                                 "directions (host only; iface: limits it to one interface)")
            if self.role == "host" and b.kind in ROUTER_ONLY_KINDS:
                raise ValueError(f"middlebox.{i}.kind: {b.kind} on a router only (a host's boxes: "
                                 "the nftables kinds but nat, and modify-payload)")
            if self.role == "host" and b.kind in REWRITING_KINDS and b.direction not in (None, "out"):
                raise ValueError(f"middlebox.{i}.direction: {b.kind} on a host rewrites what it sends (out)")
        if sum(b.kind in REWRITING_KINDS for b in self.middlebox) > 1:
            # an NFQUEUE accept verdict leaves the hook: a second queue rule would never see the packet
            raise ValueError(f"middlebox: at most one rewriting box ({', '.join(REWRITING_KINDS)}) per node")
        if self.balance_rr and self.role != "host":
            raise ValueError("balance_rr: a host stripes the packets it sends (role: host)")
        return self


class Addressing(Strict):
    """Each link's IPv4 subnet and, for a lab that sets ``pool6`` or ``addresses6``, its IPv6
    prefix: the same rules in both families (lab/network.py). ``pool: null`` leaves the links
    the pool would number without IPv4 (a v6-only lab)."""

    pool: IPv4Network | None = IPv4Network("10.0.0.0/16")
    prefixlen: int = Field(default=24, ge=8, le=30)
    addresses: dict[EndpointRef, IPv4Interface] = {}
    pool6: IPv6Network | None = Field(default=None, description="IPv6 prefixes for the links (none: no IPv6)")
    prefixlen6: int = Field(default=64, ge=16, le=126)
    addresses6: dict[EndpointRef, IPv6Interface] = {}

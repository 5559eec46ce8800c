"""Field rules the lab schema and the timeline's event schema share (lab/schema/
imports lab/events.py, so they live here rather than in either): names, interfaces,
'node:iface' and address references, sysctl keys and values, units."""

from __future__ import annotations

import re
from ipaddress import ip_address
from typing import Any, Literal

from ..units import UnitError

#: node, flow and scenario names
NAME_RE = r"^[a-z][a-z0-9_-]{0,30}$"
IFACE_RE = r"^[a-zA-Z][a-zA-Z0-9_.-]{0,14}$"


def check_unit(parser: Any, value: Any) -> Any:
    """``value`` unchanged if ``parser`` accepts it; its UnitError as a ValueError (pydantic's)."""
    if value is None:
        return value
    try:
        parser(value)
    except UnitError as e:
        raise ValueError(str(e)) from None
    return value


# sysctls are applied inside each node's network namespace, so only net.* keys belong
# there: any other key (kernel.*, vm.*) is global and would change the host itself.
_SYSCTL_KEY = re.compile(r"net(?:[./][a-z0-9_-]+)+")
# values are numbers, names and space-separated lists of them (tcp_rmem "4096 87380 6291456")
_SYSCTL_TOKEN = r"[A-Za-z0-9_.,:/+-]+"
_SYSCTL_VALUE = re.compile(rf"{_SYSCTL_TOKEN}(?:[ \t]{_SYSCTL_TOKEN})*")


def sysctl_key(k: str) -> str:
    if len(k) > 200 or not _SYSCTL_KEY.fullmatch(k):
        raise ValueError(f"{k!r} is not a sysctl name: net.<segment>[.<segment>...] with segments of "
                         "a-z 0-9 _ - (only net.* sysctls belong to a node's network namespace)")
    return k


def sysctl_value(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError(f"{v!r}: write a sysctl value as a number or a string (true is not 1)")
    if isinstance(v, str) and (len(v) > 200 or not _SYSCTL_VALUE.fullmatch(v)):
        raise ValueError(f"{v!r} is not a sysctl value: numbers and names separated by single spaces, "
                         "no shell metacharacters")
    return v


def endpoint_ref(v: str) -> str:
    node, sep, iface = v.partition(":")
    if not sep or not re.fullmatch(NAME_RE, node) or not re.fullmatch(IFACE_RE, iface):
        raise ValueError(f"{v!r} is not 'node:interface'")
    return v


def is_endpoint_ref(v: str) -> bool:
    """Whether an address reference names an interface ('node:iface') rather than giving an
    address: a 'node:iface' has one colon, an IPv6 address at least two, an IPv4 one none."""
    return v.count(":") == 1


def address_ref(v: str) -> str:
    if is_endpoint_ref(v):
        return endpoint_ref(v)
    try:
        ip_address(v)
    except ValueError:
        raise ValueError(f"{v!r} is neither 'node:interface' nor an IPv4 or IPv6 address") from None
    return v


#: an endpoint's flags: those ``ip mptcp endpoint add`` takes (iproute2 6.1) and ``laminar``
#: (Linux 6.18), which iproute2 6.1 does not: an endpoint with it is added through the
#: kernel's mptcp_pm generic netlink (net/mptcp.py, NETLINK_ONLY_FLAGS); ``implicit`` is
#: set by the kernel only
EndpointFlag = Literal["subflow", "signal", "backup", "fullmesh", "laminar"]


def check_endpoint_flags(flags: list[str]) -> list[str]:
    """What the kernel refuses of an endpoint's flags, said before anything runs."""
    if len(set(flags)) != len(flags):
        raise ValueError(f"{flags}: a flag is listed twice")
    if "signal" in flags and "fullmesh" in flags:
        # pm_netlink.c: "flags mustn't have both signal and fullmesh"
        raise ValueError("signal and fullmesh together are refused by the kernel "
                         "(a fullmesh endpoint makes subflows, a signal one is announced)")
    return flags

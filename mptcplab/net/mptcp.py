"""MPTCP configuration of a node: limits, endpoints, scheduler, path manager."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address, ip_address
from pathlib import Path

from ..commands import Cmd, cmd
from ..lab.network import Network, wire_address
from ..lab.schema import ExperimentBody
from ..values.fields import is_endpoint_ref


def mptcp_sysctls(body: ExperimentBody, name: str) -> dict[str, str]:
    spec = body.nodes[name].mptcp
    out: dict[str, str] = {}
    if spec and spec.scheduler:
        out["net.mptcp.scheduler"] = spec.scheduler
    if spec and spec.path_manager:
        out["net.mptcp.pm_type"] = "0" if spec.path_manager == "kernel" else "1"
    return out


def endpoint_dev(net: Network, node: str, ref: str) -> str | None:
    """The ``dev`` of ``ip mptcp endpoint add``: the interface a 'node:iface' names, or the
    one of ``node``'s interfaces that has a literal address, as mptcp_join.sh writes
    ``dead:beef:3::2 dev ns2eth3``. Without it the kernel binds a subflow to no interface
    and its join leaves by the route to the peer (client:eth1 in labs/selftests), its answer
    coming back by the endpoint's own interface. An IPv4 or IPv4-mapped literal (the IPv4
    address it maps) gets it always: IPv4 sends to a peer it has no route for through a
    bound interface as if on its link. An IPv6 literal only when the node routes that source
    by its own table (a per-source table's default route through the interface): IPv6 finds
    no route for a bound interface otherwise, and the join fails to connect. None: no dev."""
    if is_endpoint_ref(ref):
        return ref.split(":", 1)[1]
    wire = wire_address(ip_address(ref))
    if wire.version == 6 and not any(r.src == wire for r in net.nodes[node].rules):
        return None
    return next((ep.iface for ep, link in net.interfaces(node) if any(a.ip == wire for a in link.addrs(ep))), None)


#: endpoint flags iproute2 6.1 cannot set: an endpoint with one is added by the engine's
#: mptcp_pm generic netlink tool instead of ``ip mptcp endpoint add`` (every other endpoint
#: keeps ``ip``)
NETLINK_ONLY_FLAGS = frozenset({"laminar"})
#: timeline/upm_tool.py, named by path (a program run in the node: nothing imported)
ENDPOINT_TOOL = Path(__file__).resolve().parents[1] / "timeline" / "upm_tool.py"


def needs_netlink(flags: Sequence[str]) -> bool:
    return not NETLINK_ONLY_FLAGS.isdisjoint(flags)


def netlink_endpoint_argv(addr: str, *, dev: str | None, eid: int | None, port: int | None,
                          flags: Sequence[str]) -> tuple[str, ...]:
    """``upm_tool.py endpoint-add``: what ``ip mptcp endpoint add ADDR [dev IF] [id N]
    [port P] FLAGS`` would send, as the kernel's MPTCP_PM_CMD_ADD_ADDR (the engine's
    Python, isolated; on containerlab the node's python3). The tool refuses, in one line,
    a flag this kernel is too old to act on."""
    opts = _options(("--dev", dev), ("--id", eid), ("--port", port))
    return (sys.executable, "-I", str(ENDPOINT_TOOL), "endpoint-add", "--address", addr, *opts, "--flags",
            ",".join(flags))


def _options(*pairs: tuple[str, str | int | None]) -> tuple[str, ...]:
    """``name value`` for each pair whose value is given, in order."""
    return tuple(a for name, v in pairs if v is not None for a in (name, str(v)))


def endpoint_add_argv(addr: str, *, dev: str | None, eid: int | None, port: int | None,
                      flags: Sequence[str]) -> tuple[str, ...]:
    """The command that adds an endpoint: ``ip mptcp endpoint add ADDR [dev IF] [port P]
    [id N] FLAGS``, or the netlink tool's when a flag is one iproute2 6.1 cannot set. One
    maker for the node's endpoints at set-up and the timeline's endpoint_add."""
    if needs_netlink(flags):
        return netlink_endpoint_argv(addr, dev=dev, eid=eid, port=port, flags=flags)
    return ("ip", "mptcp", "endpoint", "add", addr, *_options(("dev", dev), ("port", port), ("id", eid)), *flags)


def mptcp_cmds(body: ExperimentBody, net: Network, name: str) -> list[Cmd]:
    spec = body.nodes[name].mptcp
    if spec is None:
        return []
    out = [
        cmd("ip", "mptcp", "endpoint", "flush", node=name),
        cmd("ip", "mptcp", "limits", "set", "subflow", spec.limits.subflows,
            "add_addr_accepted", spec.limits.add_addr_accepted, node=name,
            why="in-kernel path manager: how many extra subflows / accepted ADD_ADDRs"),
    ]
    for e in spec.endpoints:
        addr = net.address(e.address)
        dev = endpoint_dev(net, name, e.address)
        where = f"{addr}" if e.port is None else f"{addr} port {e.port}"
        why = f"endpoint {where}: {' '.join(e.flags)}"
        if needs_netlink(e.flags):
            why += " (mptcp_pm netlink: iproute2 6.1 has no laminar)"
        out.append(Cmd(endpoint_add_argv(str(addr), dev=dev, eid=e.id, port=e.port, flags=e.flags), node=name,
                       why=why))
    return out


def endpoint_show_cmd(node: str) -> Cmd:
    return cmd("ip", "mptcp", "endpoint", "show", node=node, check=False, why="the node's endpoints and their ids")


@dataclass(frozen=True)
class ShownEndpoint:
    """One line of ``ip mptcp endpoint show``: ``ADDR [port P] id N FLAGS... [dev IF]``."""

    address: IPv4Address | IPv6Address
    id: int
    port: int | None
    flags: tuple[str, ...]


#: flag bits iproute2 6.1 prints as ``rawflags HEX`` (MPTCP_PM_ADDR_FLAG_* it does not know)
_RAW_FLAGS = {0x20: "laminar"}


def _named_flags(words: list[str]) -> list[str]:
    """``ip mptcp endpoint show``'s flags, ``rawflags 20`` (iproute2 6.1) named: laminar."""
    if "rawflags" not in words:
        return words
    i = words.index("rawflags")
    try:
        raw = int(words[i + 1], 16)
    except (IndexError, ValueError):
        return words
    named = [name for bit, name in _RAW_FLAGS.items() if raw & bit]
    rest = raw & ~sum(_RAW_FLAGS)
    return words[:i] + named + ([f"rawflags {rest:02x}"] if rest else []) + words[i + 2:]


def parse_endpoints(text: str) -> list[ShownEndpoint]:
    out = []
    for line in text.splitlines():
        words = line.split()
        if len(words) < 3 or "id" not in words:
            continue
        try:
            addr = ip_address(words[0])
            i = words.index("id")
            eid = int(words[i + 1])
            port = int(words[words.index("port") + 1]) if "port" in words else None
        except (ValueError, IndexError):
            continue
        flags = words[i + 2:]
        if "dev" in flags:
            flags = flags[:flags.index("dev")]
        out.append(ShownEndpoint(addr, eid, port, tuple(_named_flags(flags))))
    return out


def endpoint_id_of(text: str, address: str) -> int:
    """The id of the endpoint with ``address`` in ``ip mptcp endpoint show`` output
    (LookupError when the node has none)."""
    want = ip_address(address)
    ids = [e.id for e in parse_endpoints(text) if e.address == want]
    if not ids:
        raise LookupError(f"no endpoint with address {address} (ip mptcp endpoint show: {text.strip()!r})")
    return ids[0]

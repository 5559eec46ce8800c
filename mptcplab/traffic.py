"""iperf3 command lines, and reading goodput from iperf3's JSON.

MPTCP: iperf3 >= 3.19 has ``-m/--multipath``; older ones (Debian 12's 3.12) are
wrapped with ``mptcpize run``, which turns their TCP sockets into MPTCP sockets.
"""

from __future__ import annotations

import functools
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .lab.network import Network
from .lab.schema import Flow
from .units import parse_size, parse_time

IPERF3_HELP = ("iperf3", "--help")


def help_has_multipath(help_text: str) -> bool:
    return "--multipath" in help_text


@functools.cache
def iperf3_has_multipath() -> bool:
    """Whether the *host's* iperf3 has -m; nodes in containers have their own
    iperf3, asked through the backend (runner.py)."""
    try:
        out = subprocess.run(list(IPERF3_HELP), capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return help_has_multipath(out.stdout + out.stderr)


def _mptcp_prefix(mptcp: bool, multipath: bool) -> list[str]:
    return ["mptcpize", "run"] if mptcp and not multipath else []


def _mptcp_flag(mptcp: bool, multipath: bool) -> list[str]:
    return ["-m"] if mptcp and multipath else []


@dataclass(frozen=True)
class FlowCommands:
    server_node: str
    server_argv: tuple[str, ...]
    client_node: str
    client_argv: tuple[str, ...]
    duration_s: float


def flow_commands(flow: Flow, net: Network, duration_s: float | None = None,
                  multipath: bool | None = None) -> FlowCommands:
    """``multipath``: whether the iperf3 that will run has -m (default: the host's)."""
    dur = duration_s if duration_s is not None else parse_time(flow.duration)
    mp = iperf3_has_multipath() if multipath is None else multipath
    server = [*_mptcp_prefix(flow.mptcp, mp), "iperf3", "-s", "-1", "-p", str(flow.port), "-J",
              *_mptcp_flag(flow.mptcp, mp)]
    client = [*_mptcp_prefix(flow.mptcp, mp), "iperf3", "-c", str(net.address(flow.server_address)),
              "-p", str(flow.port), "-t", f"{dur:g}", "-J", "--connect-timeout", "5000", *_mptcp_flag(flow.mptcp, mp)]
    if flow.bind:
        client += ["-B", str(net.address(flow.bind))]
    if flow.direction == "download":
        client += ["-R"]
    if flow.cc:
        client += ["-C", flow.cc]
    if flow.window is not None:
        client += ["-w", str(parse_size(flow.window))]
    if flow.length is not None:
        client += ["-l", str(parse_size(flow.length))]
    return FlowCommands(flow.server, tuple(server), flow.client, tuple(client), dur)


@dataclass(frozen=True)
class IperfResult:
    goodput_mbps: float
    sender_mbps: float
    retransmits: int | None
    seconds: float
    cpu_host: float | None
    cpu_remote: float | None
    error: str | None


def read_iperf3(path: Path) -> IperfResult:
    """Goodput is what the receiver counted (sum_received), whatever the direction."""
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return IperfResult(0.0, 0.0, None, 0.0, None, None, f"no iperf3 JSON: {e}")
    if "error" in data and not data.get("end", {}).get("sum_received"):
        return IperfResult(0.0, 0.0, None, 0.0, None, None, str(data["error"]))
    end = data.get("end", {})
    recv = end.get("sum_received", {})
    sent = end.get("sum_sent", {})
    cpu = end.get("cpu_utilization_percent", {})
    return IperfResult(
        goodput_mbps=recv.get("bits_per_second", 0.0) / 1e6,
        sender_mbps=sent.get("bits_per_second", 0.0) / 1e6,
        retransmits=sent.get("retransmits"),
        seconds=recv.get("seconds", 0.0),
        cpu_host=cpu.get("host_total"),
        cpu_remote=cpu.get("remote_total"),
        error=data.get("error"),
    )

"""Kind ``iperf3``: bulk TCP/MPTCP for a duration or a byte count, upload or download.

MPTCP: iperf3 >= 3.19 has ``-m/--multipath``; older ones (Debian 12's 3.12) are
wrapped with ``mptcpize run``, which turns their TCP sockets into MPTCP sockets.
"""

from __future__ import annotations

import functools
import json
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..units import parse_size
from ..values.flowbase import FlowBase
from .base import KindContext, Outcome, TrafficKind
from .iperf3_schema import IperfFlow

IPERF3_HELP = ("iperf3", "--help")
#: iperf3's errors when its control connection broke before the test began (seen under load
#: with mptcpize: the server never got the client's parameters and closed)
IPERF3_SETUP_ERRORS = ("control socket has closed unexpectedly", "unable to receive parameters",
                       "unable to receive control message")


def help_has_multipath(help_text: str) -> bool:
    return "--multipath" in help_text


@functools.cache
def iperf3_has_multipath() -> bool:
    """Whether the *host's* iperf3 has -m; nodes in containers have their own
    iperf3, asked through the backend (steps.Traffic)."""
    try:
        out = subprocess.run(list(IPERF3_HELP), capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return help_has_multipath(out.stdout + out.stderr)


def mptcp_prefix(mptcp: bool, multipath: bool) -> list[str]:
    return ["mptcpize", "run"] if mptcp and not multipath else []


def mptcp_flag(mptcp: bool, multipath: bool) -> list[str]:
    return ["-m"] if mptcp and multipath else []


def _mp(ctx: KindContext) -> bool:
    return iperf3_has_multipath() if ctx.multipath is None else ctx.multipath


def server_argv(flow: FlowBase, ctx: KindContext) -> tuple[str, ...]:
    """One test (-1), JSON: the same for TCP and UDP (the client says -u)."""
    mp = _mp(ctx)
    return (*mptcp_prefix(flow.mptcp, mp), "iperf3", "-s", "-1", "-p", str(flow.port), "-J",
            *mptcp_flag(flow.mptcp, mp))


def client_common(flow: FlowBase, ctx: KindContext, length: list[str]) -> list[str]:
    """The client argv up to the kind's own options: address, port, JSON, bind, direction."""
    mp = _mp(ctx)
    argv = [*mptcp_prefix(flow.mptcp, mp), "iperf3", "-c", str(ctx.net.address(flow.server_address)),
            "-p", str(flow.port), *length, "-J", "--connect-timeout", "5000", *mptcp_flag(flow.mptcp, mp)]
    if flow.bind:
        argv += ["-B", str(ctx.net.address(flow.bind))]
    if flow.direction == "download":
        argv += ["-R"]
    return argv


class Iperf3Kind(TrafficKind[IperfFlow]):
    name = "iperf3"
    capture_analysis = "connection"
    uses_iperf3 = True
    server_exits = True
    setup_errors = IPERF3_SETUP_ERRORS

    def server_argv(self, flow: IperfFlow, name: str, ctx: KindContext) -> tuple[str, ...]:
        return server_argv(flow, ctx)

    def client_argv(self, flow: IperfFlow, name: str, ctx: KindContext) -> tuple[str, ...]:
        # -n: iperf3 stops when the bytes are sent; -t would stop it at the duration
        length = ["-n", str(parse_size(flow.bytes))] if flow.bytes is not None else ["-t", f"{ctx.duration_s:g}"]
        argv = client_common(flow, ctx, length)
        if flow.cc:
            argv += ["-C", flow.cc]
        if flow.window is not None:
            argv += ["-w", str(parse_size(flow.window))]
        if flow.length is not None:
            argv += ["-l", str(parse_size(flow.length))]
        return tuple(argv)

    def stopped_outcome(self, flow: IperfFlow, name: str, outcome: Outcome, client_out: Path,
                        rep_dir: Path) -> Outcome:
        # an interrupted upload client never got the receiver's count: the server's report has it
        if flow.direction == "upload" and not outcome.goodput_mbps:
            return receiver_count(outcome, client_out, rep_dir / iperf3_server_output(name))
        return outcome

    def server_output_name(self, name: str) -> str:
        return iperf3_server_output(name)

    def output_name(self, name: str, primary: bool) -> str:
        # iperf3.json: the measured flow's file name since the first format (readers rely on it)
        return "iperf3.json" if primary else f"iperf3-{name}.json"

    def read(self, path: Path) -> Outcome:
        r = read_iperf3(path)
        return Outcome(goodput_mbps=r.goodput_mbps, sender_mbps=r.sender_mbps, retransmits=r.retransmits,
                       seconds=r.seconds, cpu_host=r.cpu_host, cpu_remote=r.cpu_remote, error=r.error,
                       metrics={"bytes_received": r.bytes_received}, interval_bytes=r.interval_bytes)


# ------------------------------------------------------------------ reading
@dataclass(frozen=True)
class IperfResult:
    goodput_mbps: float
    sender_mbps: float
    retransmits: int | None
    seconds: float
    cpu_host: float | None
    cpu_remote: float | None
    error: str | None
    bytes_received: int | None = None
    interval_bytes: int = 0


def interval_bytes(data: dict[str, Any]) -> int:
    """Bytes of the completed report intervals (each second by default): kept in the JSON
    when an error (a server gone mid-transfer) leaves ``end`` empty."""
    total = 0
    for iv in data.get("intervals") or []:
        b = (iv.get("sum") or {}).get("bytes") if isinstance(iv, dict) else None
        total += int(b) if isinstance(b, (int, float)) else 0
    return total


def load_json(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return None, f"no iperf3 JSON: {e}"
    if not isinstance(data, dict):
        return None, "iperf3 JSON is not an object"
    return data, None


def iperf3_server_output(name: str) -> str:
    """The iperf3 server's JSON report of flow ``name`` (every iperf3-based kind's)."""
    return f"iperf3-server-{name}.json"


def receiver_count(client: Outcome, client_json: Path, server_json: Path) -> Outcome:
    """The goodput of an upload whose client the run stopped (a byte-count flow at its
    duration limit): interrupted, iperf3's client never gets the server's count and
    reports 0 bytes received, while the server, the receiver, wrote its own report. The
    bytes are the server's; the time is the client's own sending time (its sum_sent
    seconds, up to the interrupt), because iperf3 3.12's server, when its client goes
    away mid-interval, reports the end of its last complete interval as ``seconds`` while
    counting the partial interval's bytes (measured: 118.7 MB over "9.0 s", 105 Mbit/s on a
    100 Mbit/s link; the client sent for 9.9 s). The client's other fields (sender rate,
    retransmits, CPU) stay. Unchanged when the server's report has no count."""
    r = read_iperf3(server_json)
    if r.bytes_received is None or r.bytes_received <= 0:
        return client
    data, _ = load_json(client_json)
    sent = (data or {}).get("end", {}).get("sum_sent", {})
    seconds = sent.get("seconds") if isinstance(sent.get("seconds"), int | float) and sent["seconds"] > 0 \
        else r.seconds
    return replace(client, goodput_mbps=r.bytes_received * 8 / seconds / 1e6 if seconds else r.goodput_mbps,
                   seconds=seconds,
                   metrics={**client.metrics, "bytes_received": r.bytes_received, "counted_by": "server"})


def read_iperf3(path: Path) -> IperfResult:
    """Goodput is what the receiver counted (sum_received), whatever the direction."""
    data, err = load_json(path)
    if data is None:
        return IperfResult(0.0, 0.0, None, 0.0, None, None, err)
    if "error" in data and not data.get("end", {}).get("sum_received"):
        return IperfResult(0.0, 0.0, None, 0.0, None, None, str(data["error"]), interval_bytes=interval_bytes(data))
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
        bytes_received=recv.get("bytes"),
        interval_bytes=interval_bytes(data),
    )


#: the kind this module runs (traffic/kinds.py finds it by the module's name)
KIND = Iperf3Kind()

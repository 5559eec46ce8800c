"""Kind ``udp``: iperf3 -u at a rate, e.g. a flood on one path (``bind``) while an
MPTCP flow runs. Its result is iperf3's UDP report: rate achieved at the receiver,
lost packets, jitter. UDP has no connection to prove, so no capture analysis."""

from __future__ import annotations

from pathlib import Path

from ..units import parse_rate, parse_size
from .base import KindContext, Outcome, TrafficKind
from .iperf3 import IPERF3_SETUP_ERRORS, client_common, interval_bytes, iperf3_server_output, load_json, server_argv
from .udp_schema import UdpFlow


class UdpKind(TrafficKind[UdpFlow]):
    name = "udp"
    capture_analysis = "none"
    result_field = "udp"
    uses_iperf3 = True
    server_exits = True
    setup_errors = IPERF3_SETUP_ERRORS

    def server_argv(self, flow: UdpFlow, name: str, ctx: KindContext) -> tuple[str, ...]:
        return server_argv(flow, ctx)

    def client_argv(self, flow: UdpFlow, name: str, ctx: KindContext) -> tuple[str, ...]:
        argv = client_common(flow, ctx, ["-t", f"{ctx.duration_s:g}"])
        argv += ["-u", "-b", str(int(parse_rate(flow.rate)))]
        if flow.length is not None:
            argv += ["-l", str(parse_size(flow.length))]
        return tuple(argv)

    def server_output_name(self, name: str) -> str:
        return iperf3_server_output(name)

    def output_name(self, name: str, primary: bool) -> str:
        return f"iperf3-{name}.json"

    def read(self, path: Path) -> Outcome:
        data, err = load_json(path)
        if data is None:
            return Outcome(error=err)
        end = data.get("end", {})
        # sum_received: what the server counted (iperf3 3.12 reports it to the client)
        recv = end.get("sum_received") or end.get("sum") or {}
        sent = end.get("sum_sent", {})
        error = data.get("error")
        if not recv and error is None:
            error = "iperf3 UDP report has no receiver summary"
        return Outcome(
            goodput_mbps=recv.get("bits_per_second", 0.0) / 1e6 if recv else None,
            sender_mbps=sent.get("bits_per_second", 0.0) / 1e6 if sent else None,
            seconds=recv.get("seconds"), error=str(error) if error is not None else None,
            cpu_host=end.get("cpu_utilization_percent", {}).get("host_total"),
            cpu_remote=end.get("cpu_utilization_percent", {}).get("remote_total"),
            metrics={"packets": recv.get("packets"), "lost_packets": recv.get("lost_packets"),
                     "lost_percent": recv.get("lost_percent"), "jitter_ms": recv.get("jitter_ms"),
                     "sent_packets": sent.get("packets")},
            interval_bytes=interval_bytes(data),
        )


#: the kind this module runs (traffic/kinds.py finds it by the module's name)
KIND = UdpKind()
